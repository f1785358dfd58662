// NTLM over HTTP: the NTLMv2 client side of [MS-NLMP], in the three-message handshake HTTP carries as
// `Authorization: NTLM <base64>` / `WWW-Authenticate: NTLM <base64>` (the same token68 form RFC 4559 gives
// Negotiate).
//
//     client                                     server
//     NEGOTIATE_MESSAGE (type 1)  ---------->
//                                 <----------   CHALLENGE_MESSAGE (type 2): flags, server challenge, TargetInfo
//     AUTHENTICATE_MESSAGE (type 3) -------->   NTLMv2 responses, names, (encrypted session key)
//
// Sans-IO: bytes in, bytes out. The client challenge, the timestamp and the session key are parameters so that
// tests reproduce [MS-NLMP] §4.2.4 exactly; the middleware passes `secureRandomBytes` and the clock.
//
// Left out, on purpose:
// - NTLMv1 and LM (§3.3.1): broken; Windows itself has sent only NTLMv2 by default since Vista
//   (LmCompatibilityLevel 3).
// - The MIC and MsvAvFlags (§3.1.5.1.2): the MIC binds the three messages with HMAC-MD5 under the exported
//   session key, but a server checks it only when the client's MsvAvFlags says one is present; we send neither,
//   as curl does. Servers accept this unless a policy demands a MIC.
// - Channel bindings (MsvAvChannelBindings, "Extended Protection") and MsvAvTargetName: servers that require
//   them refuse us; curl has the same limit.
// - Signing and sealing: HTTP uses NTLM only to authenticate the connection.

/// NTLMv2 messages ([MS-NLMP]).
///
/// ```swift
/// // 1. Send the negotiate message.
/// request.headers[.authorization] = NTLM.authorizationValue(NTLM.negotiateMessage(domain: nil, workstation: nil))
/// // 2. The 401 carries the challenge.
/// let challenge = try NTLM.Challenge(AuthChallenge.parse(values).first { $0.scheme == "ntlm" }!)
/// // 3. Answer it on the same connection.
/// let (user, domain) = NTLM.splitUsername("EXAMPLE\\alice")
/// let message = try NTLM.authenticateMessage(
///     challenge: challenge, username: user, password: password, domain: domain, workstation: "",
///     clientChallenge: secureRandomBytes(8), timestamp: NTLM.fileTime(unixSeconds: now),
///     exportedSessionKey: secureRandomBytes(16))
/// request.headers[.authorization] = NTLM.authorizationValue(message)
/// ```
enum NTLM {
    /// NegotiateFlags ([MS-NLMP] §2.2.2.5).
    struct Flags: OptionSet, Sendable, Hashable {
        let rawValue: UInt32
        init(rawValue: UInt32) { self.rawValue = rawValue }

        static let negotiateUnicode = Flags(rawValue: 0x0000_0001)
        static let negotiateOEM = Flags(rawValue: 0x0000_0002)
        static let requestTarget = Flags(rawValue: 0x0000_0004)
        static let negotiateSign = Flags(rawValue: 0x0000_0010)
        static let negotiateSeal = Flags(rawValue: 0x0000_0020)
        static let negotiateLMKey = Flags(rawValue: 0x0000_0080)
        static let negotiateNTLM = Flags(rawValue: 0x0000_0200)
        static let anonymous = Flags(rawValue: 0x0000_0800)
        static let oemDomainSupplied = Flags(rawValue: 0x0000_1000)
        static let oemWorkstationSupplied = Flags(rawValue: 0x0000_2000)
        static let negotiateAlwaysSign = Flags(rawValue: 0x0000_8000)
        static let targetTypeDomain = Flags(rawValue: 0x0001_0000)
        static let targetTypeServer = Flags(rawValue: 0x0002_0000)
        static let negotiateExtendedSessionSecurity = Flags(rawValue: 0x0008_0000)
        static let negotiateIdentify = Flags(rawValue: 0x0010_0000)
        static let requestNonNTSessionKey = Flags(rawValue: 0x0040_0000)
        static let negotiateTargetInfo = Flags(rawValue: 0x0080_0000)
        static let negotiateVersion = Flags(rawValue: 0x0200_0000)
        static let negotiate128 = Flags(rawValue: 0x2000_0000)
        static let negotiateKeyExchange = Flags(rawValue: 0x4000_0000)
        static let negotiate56 = Flags(rawValue: 0x8000_0000)
    }

    /// "NTLMSSP\0", the first eight bytes of every message (§2.2.1).
    static let signature: [UInt8] = Array("NTLMSSP".utf8) + [0]

    /// What the NEGOTIATE_MESSAGE asks for. OEM besides Unicode, as Windows and Chromium send, so that a server
    /// without Unicode can still answer; NTLMv2 itself needs only NTLM and extended session security.
    static let negotiateFlags: Flags = [
        .negotiateUnicode, .negotiateOEM, .requestTarget, .negotiateNTLM, .negotiateAlwaysSign,
        .negotiateExtendedSessionSecurity, .negotiate128, .negotiate56,
    ]

    /// The VERSION structure (§2.2.2.10) sent when the server negotiates NEGOTIATE_VERSION: "for debugging
    /// purposes only". We are no Windows release, so the product fields are zero; the last byte is
    /// NTLMSSP_REVISION_W2K3 (0x0F), the only revision there is.
    static let defaultVersion: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0x0F]

    // MARK: - NEGOTIATE_MESSAGE (§2.2.1.1)

    /// The NEGOTIATE_MESSAGE (type 1) that opens the handshake.
    ///
    /// The domain and workstation are optional hints, sent in the OEM character set (here ASCII), and only when
    /// they are ASCII; NTLM works without them, and most clients (curl, Chromium) send neither.
    static func negotiateMessage(domain: String?, workstation: String?) -> [UInt8] {
        var flags = negotiateFlags
        // A hint that is not ASCII, or absurdly long, is left out rather than mangled.
        let domainBytes = domain.flatMap(oemBytes).flatMap { $0.count <= 255 ? $0 : nil } ?? []
        let workstationBytes = workstation.flatMap(oemBytes).flatMap { $0.count <= 255 ? $0 : nil } ?? []
        if !domainBytes.isEmpty { flags.insert(.oemDomainSupplied) }
        if !workstationBytes.isEmpty { flags.insert(.oemWorkstationSupplied) }

        // Signature(8) MessageType(4) NegotiateFlags(4) DomainNameFields(8) WorkstationFields(8), then payload.
        // No Version field: we do not ask for NEGOTIATE_VERSION.
        var writer = MessageWriter(messageType: 1, headerLength: 32)
        writer.putUInt32(flags.rawValue, at: 12)
        writer.putPayload(domainBytes, fieldsAt: 16)
        writer.putPayload(workstationBytes, fieldsAt: 24)
        return writer.bytes
    }

    // MARK: - CHALLENGE_MESSAGE (§2.2.1.2)

    /// A decoded CHALLENGE_MESSAGE (type 2).
    struct Challenge: Sendable, Equatable {
        /// The flags the server negotiated.
        let flags: Flags
        /// The server's 8-byte nonce.
        let serverChallenge: [UInt8]
        /// The server's name or domain (TargetName), when it sent one.
        let targetName: String?
        /// The TargetInfo AV_PAIR list exactly as sent; NTLMv2 hashes it into its response (§3.3.2).
        let targetInfo: [UInt8]
        /// MsvAvTimestamp from TargetInfo (a FILETIME), when present. When it is, the client uses it in place of
        /// its own clock and sends an all-zero LmChallengeResponse (§3.1.5.1.2).
        let timestamp: UInt64?

        /// Decodes a CHALLENGE_MESSAGE. Every length and offset is checked against the message, so malformed or
        /// hostile input throws `HTTPClientError.Code.authenticationFailed` rather than reading out of bounds.
        init(decoding bytes: [UInt8]) throws(HTTPClientError) {
            // Signature(8) MessageType(4) TargetNameFields(8) NegotiateFlags(4) ServerChallenge(8): 32 bytes
            // that every version has. Reserved(8) and TargetInfoFields(8) follow from Windows NT 4.0 SP4 on;
            // Version(8) when negotiated.
            guard bytes.count >= 32 else {
                throw malformed("the message is \(bytes.count) bytes, shorter than the 32-byte header")
            }
            guard Array(bytes[0..<8]) == NTLM.signature else { throw malformed("no NTLMSSP signature") }
            let messageType = readUInt32(bytes, at: 8)
            guard messageType == 2 else { throw malformed("message type \(messageType), expected 2") }

            let flags = Flags(rawValue: readUInt32(bytes, at: 20))
            self.flags = flags
            self.serverChallenge = Array(bytes[24..<32])

            let targetName = try payload(bytes, fieldsAt: 12, name: "TargetName")
            if targetName.isEmpty {
                self.targetName = nil
            } else if flags.contains(.negotiateUnicode) {
                guard let name = utf16LEString(targetName) else { throw malformed("TargetName is not UTF-16") }
                self.targetName = name
            } else {
                self.targetName = String(decoding: targetName, as: UTF8.self)
            }

            if bytes.count >= 48 && flags.contains(.negotiateTargetInfo) {
                self.targetInfo = try payload(bytes, fieldsAt: 40, name: "TargetInfo")
                self.timestamp = try NTLM.timestamp(inTargetInfo: targetInfo)
            } else {
                self.targetInfo = []
                self.timestamp = nil
            }
        }

        /// Decodes the CHALLENGE_MESSAGE in an `NTLM <base64>` challenge.
        init(_ challenge: AuthChallenge) throws(HTTPClientError) {
            guard challenge.scheme == "ntlm" else { throw malformed("the challenge is \(challenge.scheme), not NTLM") }
            guard let token = challenge.token68 else { throw malformed("the NTLM challenge carries no message") }
            guard let bytes = Base64.decode(token) else { throw malformed("the NTLM challenge is not base64") }
            try self.init(decoding: bytes)
        }
    }

    /// Finds MsvAvTimestamp (AvId 7) in an AV_PAIR list (§2.2.2.1), checking every pair's bounds.
    static func timestamp(inTargetInfo targetInfo: [UInt8]) throws(HTTPClientError) -> UInt64? {
        var offset = 0
        var timestamp: UInt64?
        while offset < targetInfo.count {
            guard offset + 4 <= targetInfo.count else { throw malformed("TargetInfo ends inside an AV_PAIR header") }
            let id = readUInt16(targetInfo, at: offset)
            let length = Int(readUInt16(targetInfo, at: offset + 2))
            let value = offset + 4
            guard value + length <= targetInfo.count else { throw malformed("an AV_PAIR runs past TargetInfo") }
            if id == AvId.eol { return timestamp }
            if id == AvId.timestamp {
                guard length == 8 else { throw malformed("MsvAvTimestamp is \(length) bytes, not 8") }
                timestamp = readUInt64(targetInfo, at: value)
            }
            offset = value + length
        }
        // No MsvAvEOL: tolerated when the pairs end exactly at the end of the list.
        return timestamp
    }

    /// AV_PAIR identifiers used here (§2.2.2.1).
    enum AvId {
        static let eol: UInt16 = 0
        static let timestamp: UInt16 = 7
    }

    // MARK: - AUTHENTICATE_MESSAGE (§2.2.1.3, §3.1.5.1.2)

    /// The AUTHENTICATE_MESSAGE (type 3) answering `challenge` with NTLMv2 responses.
    ///
    /// - Parameters:
    ///   - username, domain: as the account is known to the server; see ``splitUsername(_:)``.
    ///     The domain may be empty (for example with a `user@realm` name).
    ///   - workstation: this machine's name, or empty.
    ///   - clientChallenge: 8 random bytes (`secureRandomBytes(8)`).
    ///   - timestamp: now, as a FILETIME (``fileTime(unixSeconds:)``); ignored when the server sent
    ///     MsvAvTimestamp.
    ///   - exportedSessionKey: 16 random bytes, sent RC4-encrypted when the server negotiated KEY_EXCH.
    ///   - version: the VERSION structure, sent only when the server negotiated NEGOTIATE_VERSION.
    /// - Throws: `HTTPClientError.Code.authenticationFailed` when OpenSSL refuses HMAC-MD5, or a field would
    ///   not fit the message's 16-bit lengths (a TargetInfo near 64 KiB makes the NT response too long).
    static func authenticateMessage(
        challenge: Challenge, username: String, password: String, domain: String, workstation: String,
        clientChallenge: [UInt8], timestamp: UInt64, exportedSessionKey: [UInt8], version: [UInt8] = defaultVersion
    ) throws(HTTPClientError) -> [UInt8] {
        precondition(clientChallenge.count == 8, "NTLM client challenge must be 8 bytes")
        precondition(exportedSessionKey.count == 16, "NTLM session key must be 16 bytes")
        precondition(version.count == 8, "NTLM VERSION must be 8 bytes")

        // The negotiated flags, as curl does: the server's, less what only a server may say (the target type),
        // with one character set, plus REQUEST_TARGET, which we asked for. For §4.2.4's challenge (0xe28a8233)
        // this gives the spec's 0xe2888235.
        var flags = challenge.flags
        flags.subtract([.targetTypeDomain, .targetTypeServer])
        if flags.contains(.negotiateUnicode) { flags.remove(.negotiateOEM) }
        flags.insert(.requestTarget)

        let responseKey = try ntowfV2(password: password, username: username, domain: domain)
        let responses = try v2Responses(
            responseKey: responseKey, serverChallenge: challenge.serverChallenge, clientChallenge: clientChallenge,
            timestamp: challenge.timestamp ?? timestamp, targetInfo: challenge.targetInfo)
        // §3.1.5.1.2: with MsvAvTimestamp, "the client SHOULD NOT send the LmChallengeResponse and SHOULD send
        // Z(24) instead".
        let lmResponse = challenge.timestamp != nil ? [UInt8](repeating: 0, count: 24) : responses.lm

        // §3.4.5.1 KXKEY: for NTLMv2 the key exchange key is the session base key. §3.1.5.1.2: with KEY_EXCH the
        // exported session key is random and goes to the server under RC4 with that key.
        var encryptedSessionKey: [UInt8] = []
        if flags.contains(.negotiateKeyExchange) {
            var rc4 = RC4(key: responses.sessionBaseKey)
            encryptedSessionKey = rc4.process(exportedSessionKey)
        }

        let unicode = flags.contains(.negotiateUnicode)
        func encode(_ text: String) -> [UInt8] { unicode ? utf16LE(text) : oemBytes(text, lossy: true) ?? [] }

        // Signature(8) MessageType(4) LmChallengeResponseFields(8) NtChallengeResponseFields(8) DomainNameFields(8)
        // UserNameFields(8) WorkstationFields(8) EncryptedRandomSessionKeyFields(8) NegotiateFlags(4) = 64 bytes,
        // then Version(8) when negotiated. No MIC (see the top of the file). The payload in §4.2.4.3's order.
        let includesVersion = flags.contains(.negotiateVersion)
        let fields: [(value: [UInt8], fieldsAt: Int, name: String)] = [
            (encode(domain), 28, "the domain"), (encode(username), 36, "the user name"),
            (encode(workstation), 44, "the workstation name"), (lmResponse, 12, "the LM response"),
            (responses.nt, 20, "the NTLMv2 response"), (encryptedSessionKey, 52, "the session key"),
        ]
        var writer = MessageWriter(messageType: 3, headerLength: includesVersion ? 72 : 64)
        for field in fields {
            guard field.value.count <= Int(UInt16.max) else {
                throw HTTPClientError(.authenticationFailed, "NTLM: \(field.name) is too long for the message")
            }
            writer.putPayload(field.value, fieldsAt: field.fieldsAt)
        }
        writer.putUInt32(flags.rawValue, at: 60)
        if includesVersion { writer.put(version, at: 64) }
        return writer.bytes
    }

    // MARK: - NTLMv2 (§3.3.2)

    /// NTOWFv2 = HMAC_MD5(MD4(UNICODE(Passwd)), UNICODE(ConcatenationOf(Uppercase(User), UserDom))) (§3.3.2).
    /// The same function is LMOWFv2, so this is both ResponseKeyNT and ResponseKeyLM.
    static func ntowfV2(password: String, username: String, domain: String) throws(HTTPClientError) -> [UInt8] {
        let ntHash = MD4.hash(utf16LE(password))
        return try HashFunction.md5.hmac(key: ntHash, utf16LE(uppercased(username) + domain))
    }

    /// The NTLMv2 and LMv2 responses and the session base key (§3.3.2):
    ///
    ///     temp         = 0x01 0x01 Z(6) Time ClientChallenge Z(4) ServerName Z(4)
    ///     NTProofStr   = HMAC_MD5(ResponseKeyNT, ServerChallenge ‖ temp)
    ///     NtResponse   = NTProofStr ‖ temp
    ///     LmResponse   = HMAC_MD5(ResponseKeyLM, ServerChallenge ‖ ClientChallenge) ‖ ClientChallenge
    ///     SessionBaseKey = HMAC_MD5(ResponseKeyNT, NTProofStr)
    ///
    /// ServerName is the server's TargetInfo, unchanged.
    static func v2Responses(
        responseKey: [UInt8], serverChallenge: [UInt8], clientChallenge: [UInt8], timestamp: UInt64, targetInfo: [UInt8]
    ) throws(HTTPClientError) -> (lm: [UInt8], nt: [UInt8], sessionBaseKey: [UInt8]) {
        // NTLMv2_CLIENT_CHALLENGE (§2.2.2.7): RespType 1, HiRespType 1, Reserved1(2), Reserved2(4), TimeStamp(8),
        // ChallengeFromClient(8), Reserved3(4), AvPairs, and the final Z(4) of §3.3.2's temp.
        var temp: [UInt8] = [0x01, 0x01, 0, 0, 0, 0, 0, 0]
        temp.reserveCapacity(32 + targetInfo.count)
        appendUInt64(timestamp, to: &temp)
        temp += clientChallenge
        temp += [0, 0, 0, 0]
        temp += targetInfo
        temp += [0, 0, 0, 0]

        let ntProof = try HashFunction.md5.hmac(key: responseKey, serverChallenge + temp)
        let lm = try HashFunction.md5.hmac(key: responseKey, serverChallenge + clientChallenge) + clientChallenge
        let sessionBaseKey = try HashFunction.md5.hmac(key: responseKey, ntProof)
        return (lm, ntProof + temp, sessionBaseKey)
    }

    // MARK: - HTTP and credentials

    /// `NTLM <base64>`, for `Authorization` or `Proxy-Authorization`.
    static func authorizationValue(_ message: [UInt8]) -> String {
        "NTLM " + Base64.encode(message)
    }

    /// Splits `DOMAIN\user` into its parts. Any other form, `user@example.com` (a UPN) included, is the user
    /// name with an empty domain: Windows sends a UPN whole in UserName with an empty DomainName, and NTOWFv2
    /// hashes it that way, so splitting at `@` would compute the wrong key.
    static func splitUsername(_ username: String) -> (user: String, domain: String) {
        guard let backslash = username.firstIndex(of: "\\") else { return (username, "") }
        return (String(username[username.index(after: backslash)...]), String(username[..<backslash]))
    }

    /// A FILETIME: 100-nanosecond ticks since 1601-01-01 UTC (§2.2.2.7 TimeStamp), from seconds since 1970.
    static func fileTime(unixSeconds: Double) -> UInt64 {
        // 11 644 473 600 s from 1601-01-01 to 1970-01-01 (369 years, 89 of them leap).
        let ticks = (unixSeconds + 11_644_473_600) * 10_000_000
        return ticks <= 0 ? 0 : ticks >= 1.8e19 ? UInt64.max : UInt64(ticks)
    }

    // MARK: - Encoding helpers

    /// UTF-16LE, as "UNICODE" means throughout [MS-NLMP] (§2.2: "little-endian byte order").
    static func utf16LE(_ string: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(string.utf16.count * 2)
        for unit in string.utf16 {
            bytes.append(UInt8(truncatingIfNeeded: unit))
            bytes.append(UInt8(truncatingIfNeeded: unit >> 8))
        }
        return bytes
    }

    /// Windows upper-cases the user name with a simple per-character mapping (RtlUpcaseUnicodeString), not
    /// Unicode's full mapping: `ß` stays `ß` rather than becoming `SS`. A character whose uppercase is more
    /// than one scalar is therefore kept as it is.
    static func uppercased(_ string: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in string.unicodeScalars {
            let mapped = scalar.properties.uppercaseMapping.unicodeScalars
            if mapped.count == 1, let upper = mapped.first { result.append(upper) } else { result.append(scalar) }
        }
        return String(result)
    }

    /// The OEM-character-set bytes of `string`: we know only ASCII. `nil` when it is not ASCII, unless `lossy`,
    /// which writes `?` for each non-ASCII character as Windows' best-fit conversion falls back to.
    static func oemBytes(_ string: String) -> [UInt8]? { oemBytes(string, lossy: false) }

    static func oemBytes(_ string: String, lossy: Bool) -> [UInt8]? {
        var bytes: [UInt8] = []
        for scalar in string.unicodeScalars {
            if scalar.isASCII {
                bytes.append(UInt8(scalar.value))
            } else if lossy {
                bytes.append(UInt8(ascii: "?"))
            } else {
                return nil
            }
        }
        return bytes
    }
}

// MARK: - RC4

/// RC4 (ARCFOUR), for NTLM's EncryptedRandomSessionKey (§3.4.5.1 / §3.1.5.1.2: RC4K(KeyExchangeKey,
/// ExportedSessionKey)). OpenSSL 3 keeps RC4 in the legacy provider, so it is here, in the few lines it takes.
/// Broken as a cipher; used only because the protocol names it.
struct RC4: Sendable {
    private var state: [UInt8]
    private var i: UInt8 = 0
    private var j: UInt8 = 0

    /// The key-scheduling algorithm. `key` must be 1...256 bytes.
    init(key: [UInt8]) {
        precondition(!key.isEmpty && key.count <= 256, "RC4 key must be 1...256 bytes")
        state = (0...255).map { UInt8($0) }
        var j: UInt8 = 0
        for i in 0..<256 {
            j = j &+ state[i] &+ key[i % key.count]
            state.swapAt(i, Int(j))
        }
    }

    /// Encrypts or decrypts (the same operation) `bytes`, continuing the keystream.
    mutating func process(_ bytes: [UInt8]) -> [UInt8] {
        bytes.map { byte in
            i = i &+ 1
            j = j &+ state[Int(i)]
            state.swapAt(Int(i), Int(j))
            return byte ^ state[Int(state[Int(i)] &+ state[Int(j)])]
        }
    }
}

// MARK: - Little-endian reading and writing

/// Builds a message: a fixed header, then each variable field appended to the payload with its
/// Len/MaxLen/BufferOffset triple (§2.2.1: "fields" of 8 bytes) written into the header.
private struct MessageWriter {
    var bytes: [UInt8]

    init(messageType: UInt32, headerLength: Int) {
        bytes = [UInt8](repeating: 0, count: headerLength)
        put(NTLM.signature, at: 0)
        putUInt32(messageType, at: 8)
    }

    mutating func put(_ value: [UInt8], at offset: Int) {
        bytes.replaceSubrange(offset..<(offset + value.count), with: value)
    }

    mutating func putUInt32(_ value: UInt32, at offset: Int) {
        for k in 0..<4 { bytes[offset + k] = UInt8(truncatingIfNeeded: value >> UInt32(8 * k)) }
    }

    mutating func putUInt16(_ value: UInt16, at offset: Int) {
        bytes[offset] = UInt8(truncatingIfNeeded: value)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
    }

    /// Appends `value` (at most 65 535 bytes: the callers check) to the payload and describes it at `fieldsAt`.
    /// An empty field gets length 0 and the offset where it would have been (§2.2.1.1: "SHOULD be set to the
    /// offset ... if it was present").
    mutating func putPayload(_ value: [UInt8], fieldsAt offset: Int) {
        let length = UInt16(value.count)
        putUInt16(length, at: offset)
        putUInt16(length, at: offset + 2)
        putUInt32(UInt32(bytes.count), at: offset + 4)
        bytes += value
    }
}

private func readUInt16(_ bytes: [UInt8], at offset: Int) -> UInt16 {
    UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
}

private func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
    UInt32(readUInt16(bytes, at: offset)) | UInt32(readUInt16(bytes, at: offset + 2)) << 16
}

private func readUInt64(_ bytes: [UInt8], at offset: Int) -> UInt64 {
    UInt64(readUInt32(bytes, at: offset)) | UInt64(readUInt32(bytes, at: offset + 4)) << 32
}

private func appendUInt64(_ value: UInt64, to bytes: inout [UInt8]) {
    for k in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * k))) }
}

/// A variable field of a received message: Len(2) MaxLen(2) BufferOffset(4) at `fieldsAt`, checked against the
/// message. MaxLen is ignored, as the spec says a receiver must (§2.2.1.2: "SHOULD be set to ... Len").
private func payload(_ bytes: [UInt8], fieldsAt offset: Int, name: String) throws(HTTPClientError) -> [UInt8] {
    let length = Int(readUInt16(bytes, at: offset))
    guard length > 0 else { return [] }
    let start = Int(readUInt32(bytes, at: offset + 4))
    // Int is 64-bit: start (< 2^32) + length (< 2^16) cannot overflow.
    guard start + length <= bytes.count else {
        throw malformed("\(name) (\(length) bytes at offset \(start)) lies outside the \(bytes.count)-byte message")
    }
    return Array(bytes[start..<(start + length)])
}

/// UTF-16LE bytes as a string, or `nil` for an odd length or unpaired surrogates.
private func utf16LEString(_ bytes: [UInt8]) -> String? {
    guard bytes.count % 2 == 0 else { return nil }
    let units = stride(from: 0, to: bytes.count, by: 2).map { UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8 }
    return String(validating: units, as: UTF16.self)
}

private func malformed(_ detail: String) -> HTTPClientError {
    HTTPClientError(.authenticationFailed, "malformed NTLM challenge: " + detail)
}
