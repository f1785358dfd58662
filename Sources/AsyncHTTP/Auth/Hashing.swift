// The hash functions HTTP authentication needs, as thin wrappers over OpenSSL 3's EVP interface,
// plus lowercase hex and secure random bytes.
//
// Digest (RFC 7616 §3.2) needs MD5, SHA-256 and SHA-512/256; NTLMv2 (MS-NLMP §3.3.2) needs HMAC-MD5.
// MD4, which NTLM also needs, is in MD4.swift: OpenSSL 3 keeps it in the legacy provider, which is not loaded
// by default.
//
// Everything works on contiguous bytes. The one failure OpenSSL can report here is a digest the configured
// providers refuse (MD5 on a system forced into FIPS mode); that becomes a typed
// `HTTPClientError.Code.authenticationFailed` rather than a crash, since it depends on the machine, not on us.

import COpenSSL

/// A message digest computed by OpenSSL.
///
/// ```swift
/// let digest = try HashFunction.sha256.hash(Array("abc".utf8))
/// hexString(digest)   // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// ```
enum HashFunction: Sendable, Hashable, CaseIterable {
    /// MD5 (RFC 1321): 16 bytes. Digest's default algorithm, and the hash inside NTLMv2's HMAC.
    case md5
    /// SHA-256 (FIPS 180-4): 32 bytes.
    case sha256
    /// SHA-512/256 (FIPS 180-4 §5.3.6): SHA-512 with its own initial values, cut to 32 bytes. Not the same as
    /// the first 32 bytes of SHA-512.
    case sha512_256

    /// The length of the digest in bytes.
    var outputByteCount: Int {
        switch self {
        case .md5: 16
        case .sha256, .sha512_256: 32
        }
    }

    /// OpenSSL's name, for error messages.
    var name: String {
        switch self {
        case .md5: "MD5"
        case .sha256: "SHA-256"
        case .sha512_256: "SHA-512/256"
        }
    }

    /// OpenSSL's implementation. These return static objects that are never freed.
    private var evp: OpaquePointer? {
        switch self {
        case .md5: EVP_md5()
        case .sha256: EVP_sha256()
        case .sha512_256: EVP_sha512_256()
        }
    }

    /// The digest of `bytes`.
    func hash(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) -> [UInt8] {
        guard let digest = digest(bytes) else {
            throw refused(name)
        }
        return digest
    }

    /// The digest of `bytes`.
    func hash(_ bytes: [UInt8]) throws(HTTPClientError) -> [UInt8] {
        guard let digest = bytes.withUnsafeBytes({ digest($0) }) else {
            throw refused(name)
        }
        return digest
    }

    /// `EVP_Digest`, or `nil` when OpenSSL refuses.
    private func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let status = withNonNullBase(bytes) { base, count in
            output.withUnsafeMutableBufferPointer { out in
                EVP_Digest(base, count, out.baseAddress, &length, evp, nil)
            }
        }
        guard status == 1, Int(length) == outputByteCount else { return nil }
        output.removeLast(output.count - Int(length))
        return output
    }

    /// The digest of the UTF-8 encoding of `string`.
    func hash(_ string: String) throws(HTTPClientError) -> [UInt8] {
        try hash(Array(string.utf8))
    }

    /// HMAC (RFC 2104) of `message` under `key`.
    func hmac(key: [UInt8], _ message: [UInt8]) throws(HTTPClientError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { keyBuffer in
            withNonNullBase(keyBuffer) { keyBase, keyCount in
                message.withUnsafeBytes { messageBuffer in
                    withNonNullBase(messageBuffer) { messageBase, messageCount in
                        output.withUnsafeMutableBufferPointer { out in
                            HMAC(
                                evp, keyBase, Int32(keyCount), messageBase.assumingMemoryBound(to: UInt8.self),
                                messageCount, out.baseAddress, &length
                            )
                        }
                    }
                }
            }
        }
        guard result != nil, Int(length) == outputByteCount else {
            throw refused("HMAC-" + name)
        }
        output.removeLast(output.count - Int(length))
        return output
    }
}

/// The error for a digest OpenSSL will not compute.
private func refused(_ name: String) -> HTTPClientError {
    HTTPClientError(.authenticationFailed, "OpenSSL could not compute \(name) (disabled by its configuration?)")
}

/// Calls `body` with a base address that is never `nil`: an empty buffer may have none, and OpenSSL's
/// one-shot functions are not all documented to accept `NULL` with a zero length.
private func withNonNullBase<Result>(
    _ buffer: UnsafeRawBufferPointer, _ body: (UnsafeRawPointer, Int) -> Result
) -> Result {
    if let base = buffer.baseAddress { return body(base, buffer.count) }
    var zero: UInt8 = 0
    return withUnsafeBytes(of: &zero) { body($0.baseAddress!, 0) }
}

/// The bytes as lowercase hexadecimal, two digits each: the form Digest puts its hashes in (RFC 7616 §3.4.1,
/// "a string of 32 hex digits" for MD5, lowercase as the RFC's examples show).
func hexString(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: text, as: UTF8.self)
}

/// `count` bytes from OpenSSL's cryptographically secure generator (`RAND_bytes`), for client nonces and
/// NTLM's client challenge and session key.
///
/// Traps if the generator fails, as Swift's `SystemRandomNumberGenerator` does: there is no safe fallback for
/// randomness that a protocol's security rests on, and OpenSSL 3 fails here only when the operating system has
/// no entropy to give.
func secureRandomBytes(_ count: Int) -> [UInt8] {
    precondition(count >= 0 && count <= Int(Int32.max), "secureRandomBytes: bad count \(count)")
    var bytes = [UInt8](repeating: 0, count: count)
    guard count > 0 else { return bytes }
    let status = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
    precondition(status == 1, "RAND_bytes failed: OpenSSL's random generator is unavailable")
    return bytes
}
