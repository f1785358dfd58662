// SHA-256 and HMAC-SHA256, the two primitives of AWS Signature Version 4, from OpenSSL 3's EVP interface.
// The core's Auth/Hashing.swift has the same one-shot calls but keeps them internal to AsyncHTTP; this target
// also needs an incremental hash (a file body is hashed as it is read, never held whole), so it calls OpenSSL
// itself. This is the target's only OpenSSL file (scripts/check-layers.sh names it).

import AsyncHTTP
import COpenSSL

/// The failure OpenSSL can report here: a digest its configured providers refuse (a FIPS-only build without
/// SHA-256 is not known to exist, but the call can fail and must not crash).
private func refused(_ what: String) -> HTTPClientError {
    HTTPClientError(.authenticationFailed, "OpenSSL could not compute \(what) for AWS Signature Version 4")
}

/// An incremental SHA-256 (FIPS 180-4) over OpenSSL's `EVP_MD_CTX`. One owner; `finish()` once.
final class SHA256Hasher {
    private let context: OpaquePointer

    init() throws(HTTPClientError) {
        guard let context = EVP_MD_CTX_new() else { throw refused("SHA-256") }
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            EVP_MD_CTX_free(context)
            throw refused("SHA-256")
        }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    func update(_ bytes: some Collection<UInt8>) throws(HTTPClientError) {
        let status: Int32? = bytes.withContiguousStorageIfAvailable { buffer in
            buffer.isEmpty ? 1 : EVP_DigestUpdate(context, buffer.baseAddress, buffer.count)
        }
        if let status {
            guard status == 1 else { throw refused("SHA-256") }
            return
        }
        let copy = Array(bytes)
        let copied = copy.withUnsafeBytes { buffer in
            buffer.isEmpty ? 1 : EVP_DigestUpdate(context, buffer.baseAddress, buffer.count)
        }
        guard copied == 1 else { throw refused("SHA-256") }
    }

    func finish() throws(HTTPClientError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let status = output.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
        guard status == 1, length == 32 else { throw refused("SHA-256") }
        return Array(output[..<32])
    }
}

/// SHA-256 of `bytes`.
func sha256Digest(_ bytes: some Collection<UInt8>) throws(HTTPClientError) -> [UInt8] {
    let hasher = try SHA256Hasher()
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
