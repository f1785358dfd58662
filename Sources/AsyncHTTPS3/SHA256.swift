// SHA-256 and HMAC-SHA256, the two primitives of AWS Signature Version 4, from OpenSSL 3's EVP interface.
// The core's Auth/Hashing.swift has the same one-shot calls but keeps them internal to AsyncHTTP; this target
// also needs an incremental hash (a file body is hashed as it is read, never held whole), so it calls OpenSSL
// itself. This is the target's only OpenSSL file (scripts/check-layers.sh names it).

import AsyncHTTP
import COpenSSL

/// The failure OpenSSL can report here: a digest its configured providers refuse (a FIPS-only build without
/// SHA-256 is not known to exist, but the call can fail and must not crash).
private func refused(_ what: String) -> HTTPClientError {
    HTTPClientError(.authenticationFailed, "OpenSSL could not compute \(what) (AWS Signature Version 4, S3)")
}

/// An incremental hash over OpenSSL's `EVP_MD_CTX`: SHA-256 (FIPS 180-4) for signing, MD5 (RFC 1321) to compare a
/// file's bytes with the entity tag S3 gave a part it stored. One owner; `finish()` once.
final class DigestHasher {
    private let context: OpaquePointer
    private let name: String
    private let size: Int

    /// SHA-256.
    convenience init() throws(HTTPClientError) {
        try self.init(EVP_sha256(), name: "SHA-256", size: 32)
    }

    /// MD5: not for signing, only to recognise bytes S3 already holds.
    static func md5() throws(HTTPClientError) -> DigestHasher {
        try DigestHasher(EVP_md5(), name: "MD5", size: 16)
    }

    private init(_ algorithm: OpaquePointer?, name: String, size: Int) throws(HTTPClientError) {
        self.name = name
        self.size = size
        guard let context = EVP_MD_CTX_new() else { throw refused(name) }
        guard EVP_DigestInit_ex(context, algorithm, nil) == 1 else {
            EVP_MD_CTX_free(context)
            throw refused(name)
        }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    func update(_ bytes: some Collection<UInt8>) throws(HTTPClientError) {
        let status: Int32? = bytes.withContiguousStorageIfAvailable { buffer in
            buffer.isEmpty ? 1 : EVP_DigestUpdate(context, buffer.baseAddress, buffer.count)
        }
        if let status {
            guard status == 1 else { throw refused(name) }
            return
        }
        let copy = Array(bytes)
        let copied = copy.withUnsafeBytes { buffer in
            buffer.isEmpty ? 1 : EVP_DigestUpdate(context, buffer.baseAddress, buffer.count)
        }
        guard copied == 1 else { throw refused(name) }
    }

    func finish() throws(HTTPClientError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let status = output.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
        guard status == 1, length == size else { throw refused(name) }
        return Array(output[..<size])
    }
}

/// SHA-256 of `bytes`.
func sha256Digest(_ bytes: some Collection<UInt8>) throws(HTTPClientError) -> [UInt8] {
    let hasher = try DigestHasher()
    try hasher.update(bytes)
    return try hasher.finish()
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`.
func hmacSHA256(key: [UInt8], _ message: [UInt8]) throws(HTTPClientError) -> [UInt8] {
    var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    var zero: UInt8 = 0
    let result = key.withUnsafeBufferPointer { keyBuffer in
        message.withUnsafeBufferPointer { messageBuffer in
            output.withUnsafeMutableBufferPointer { out in
                // An empty array may have no base address; OpenSSL is handed a valid pointer with length 0.
                withUnsafeMutablePointer(to: &zero) { zeroPointer in
                    HMAC(
                        EVP_sha256(), UnsafeRawPointer(keyBuffer.baseAddress ?? UnsafePointer(zeroPointer)),
                        Int32(keyBuffer.count), messageBuffer.baseAddress ?? UnsafePointer(zeroPointer),
                        messageBuffer.count, out.baseAddress, &length)
                }
            }
        }
    }
    guard result != nil, length == 32 else { throw refused("HMAC-SHA256") }
    return Array(output[..<32])
}

/// Lowercase hexadecimal, as SigV4 writes hashes and signatures.
func hex(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: text, as: UTF8.self)
}
