import XCTest

@testable import AsyncHTTP

/// NTLMv2 against [MS-NLMP] §4.2 (its common values in §4.2.1 and the NTLMv2 example in §4.2.4), and against an
/// independent Python computation (hmac + pycryptodome's MD4) for what the spec has no example of.
final class NTLMTests: XCTestCase {
    // MARK: §4.2.1 common values

    let user = "User"
    let userDomain = "Domain"
    let password = "Password"
    let workstation = "COMPUTER"
    let randomSessionKey = [UInt8](repeating: 0x55, count: 16)
    let time: UInt64 = 0
    let clientChallenge = [UInt8](repeating: 0xAA, count: 8)
    let serverChallenge: [UInt8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF]
    /// The VERSION the spec's client sends: Windows 5.1 build 2600 (0x0a28), NTLM revision 15.
    let specVersion: [UInt8] = [0x05, 0x01, 0x28, 0x0A, 0x00, 0x00, 0x00, 0x0F]

    /// §4.2.4.3, the CHALLENGE_MESSAGE: flags 0xe28a8233, TargetName "Server", TargetInfo with
    /// MsvAvNbDomainName "Domain" and MsvAvNbComputerName "Server".
    let specChallenge = bytes(
        "4e544c4d53535000020000000c000c003800000033828ae20123456789abcdef"
            + "00000000000000002400240044000000060070170000000f5300650072007600"
            + "6500720002000c0044006f006d00610069006e0001000c005300650072007600"
            + "6500720000000000")

    /// §4.2.4.3, the AUTHENTICATE_MESSAGE (no MIC; the spec's example has none).
    let specAuthenticate = bytes(
        "4e544c4d5353500003000000180018006c00000054005400840000000c000c00"
            + "480000000800080054000000100010005c00000010001000d8000000358288e2"
            + "0501280a0000000f44006f006d00610069006e00550073006500720043004f00"
            + "4d005000550054004500520086c35097ac9cec102554764a57cccc19aaaaaaaa"
            + "aaaaaaaa68cd0ab851e51c96aabc927bebef6a1c010100000000000000000000"
            + "00000000aaaaaaaaaaaaaaaa0000000002000c0044006f006d00610069006e00"
            + "01000c005300650072007600650072000000000000000000c5dad2544fc97990"
            + "94ce1ce90bc9d03e")

    // MARK: §4.2.4 NTLMv2

    func testNTOWFv2MatchesSection4_2_4_1_1() throws {
        XCTAssertEqual(
            hexString(try NTLM.ntowfV2(password: password, username: user, domain: userDomain)),
            "0c868a403bfd7a93a3001ef22ef02e3f")
    }

    func testResponsesAndSessionKeysMatchSection4_2_4() throws {
        let challenge = try NTLM.Challenge(decoding: specChallenge)
        let key = try NTLM.ntowfV2(password: password, username: user, domain: userDomain)
        let responses = try NTLM.v2Responses(
            responseKey: key, serverChallenge: serverChallenge, clientChallenge: clientChallenge, timestamp: time,
            targetInfo: challenge.targetInfo)
        // §4.2.4.2.1 LMv2 Response.
        XCTAssertEqual(hexString(responses.lm), "86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa")
        // §4.2.4.2.2 NTLMv2 Response: NTProofStr is its first 16 bytes.
        XCTAssertEqual(hexString(responses.nt.prefix(16)), "68cd0ab851e51c96aabc927bebef6a1c")
        // §4.2.4.1.2 Session Base Key.
        XCTAssertEqual(hexString(responses.sessionBaseKey), "8de40ccadbc14a82f15cb0ad0de95ca3")
        // §4.2.4.2.3 Encrypted Session Key: RC4(KeyExchangeKey = SessionBaseKey, RandomSessionKey).
        var rc4 = RC4(key: responses.sessionBaseKey)
        XCTAssertEqual(hexString(rc4.process(randomSessionKey)), "c5dad2544fc9799094ce1ce90bc9d03e")
    }

    func testAuthenticateMessageMatchesSection4_2_4_3ByteForByte() throws {
        let message = try NTLM.authenticateMessage(
            challenge: try NTLM.Challenge(decoding: specChallenge), username: user, password: password,
            domain: userDomain, workstation: workstation, clientChallenge: clientChallenge, timestamp: time,
            exportedSessionKey: randomSessionKey, version: specVersion)
        XCTAssertEqual(hexString(message), hexString(specAuthenticate))
    }

    func testSpecChallengeDecodes() throws {
        let challenge = try NTLM.Challenge(decoding: specChallenge)
        XCTAssertEqual(challenge.flags.rawValue, 0xE28A_8233)
        XCTAssertTrue(challenge.flags.contains([.negotiateUnicode, .negotiateKeyExchange, .negotiateTargetInfo]))
        XCTAssertEqual(challenge.serverChallenge, serverChallenge)
        XCTAssertEqual(challenge.targetName, "Server")
        XCTAssertEqual(challenge.targetInfo, Array(specChallenge[68...]))
        XCTAssertNil(challenge.timestamp)
    }

    // MARK: MsvAvTimestamp (§3.1.5.1.2)

    func testServerTimestampIsUsedAndLMResponseIsZero() throws {
        let serverTime: UInt64 = 0x01D5_C3B7_E0D4_A000
        let targetInfo = Self.avPair(2, NTLM.utf16LE("Domain")) + Self.avPair(1, NTLM.utf16LE("Server"))
            + Self.avPair(7, Self.littleEndian(serverTime)) + Self.avPair(0, [])
        let challenge = try NTLM.Challenge(
            decoding: Self.challengeMessage(
                flags: 0xE28A_8235, serverChallenge: serverChallenge, targetName: NTLM.utf16LE("Server"),
                targetInfo: targetInfo))
        XCTAssertEqual(challenge.timestamp, serverTime)

        let message = try NTLM.authenticateMessage(
            challenge: challenge, username: user, password: password, domain: userDomain, workstation: workstation,
            clientChallenge: clientChallenge, timestamp: 12_345, exportedSessionKey: randomSessionKey)
        let fields = try Self.authenticateFields(message)
        XCTAssertEqual(fields.lm, [UInt8](repeating: 0, count: 24))
        // temp's TimeStamp (bytes 8..<16 of the blob after the 16-byte NTProofStr) is the server's, not ours.
        XCTAssertEqual(Array(fields.nt[24..<32]), Self.littleEndian(serverTime))
        // Python: NTProofStr = HMAC_MD5(NTOWFv2, ServerChallenge + temp) over this TargetInfo.
        XCTAssertEqual(hexString(fields.nt.prefix(16)), "45c22922a2e0c733bbfd0d081ed82691")
        XCTAssertEqual(Array(fields.nt[16...].suffix(targetInfo.count + 4)), targetInfo + [0, 0, 0, 0])
    }

    func testNonASCIICredentialsAreUTF16() throws {
        let serverTime: UInt64 = 0x01D5_C3B7_E0D4_A000
        let targetInfo = Self.avPair(2, NTLM.utf16LE("Domain")) + Self.avPair(1, NTLM.utf16LE("Server"))
            + Self.avPair(7, Self.littleEndian(serverTime)) + Self.avPair(0, [])
        let challenge = try NTLM.Challenge(
            decoding: Self.challengeMessage(
                flags: 0xE28A_8235, serverChallenge: serverChallenge, targetName: [], targetInfo: targetInfo))
        let username = "J\u{E4}s\u{F8}n"
        let domain = "Dom\u{E4}in"
        // Python: hmac md5 over MD4('Päss'.encode('utf-16le')) and ('JÄSØN' + 'Domäin').encode('utf-16le').
        XCTAssertEqual(
            hexString(try NTLM.ntowfV2(password: "P\u{E4}ss", username: username, domain: domain)),
            "bfd11e96c3980c70977646ae9c05267a")
        let message = try NTLM.authenticateMessage(
            challenge: challenge, username: username, password: "P\u{E4}ss", domain: domain, workstation: "",
            clientChallenge: clientChallenge, timestamp: 0, exportedSessionKey: randomSessionKey)
        let fields = try Self.authenticateFields(message)
        XCTAssertEqual(hexString(fields.nt.prefix(16)), "16cf9024718db68507bfeb5a3c267f1a")
        XCTAssertEqual(fields.user, NTLM.utf16LE(username))
        XCTAssertEqual(fields.domain, NTLM.utf16LE(domain))
        XCTAssertEqual(fields.workstation, [])
        // 0xE28A8235 includes NEGOTIATE_VERSION (0x02000000), so the header carries a Version field.
        XCTAssertEqual(fields.headerLength, 72)
    }

    // MARK: Flags and character sets

    func testAuthenticateFlagsEchoTheServerWithoutTargetTypeOrOEM() throws {
        let challenge = try NTLM.Challenge(decoding: specChallenge)
        let message = try NTLM.authenticateMessage(
            challenge: challenge, username: user, password: password, domain: userDomain, workstation: workstation,
            clientChallenge: clientChallenge, timestamp: time, exportedSessionKey: randomSessionKey)
        XCTAssertEqual(try Self.authenticateFields(message).flags, 0xE288_8235)
    }

    func testWithoutKeyExchangeThereIsNoEncryptedSessionKey() throws {
        let message = try NTLM.authenticateMessage(
            challenge: try NTLM.Challenge(
                decoding: Self.challengeMessage(
                    flags: NTLM.Flags([.negotiateUnicode, .negotiateNTLM, .negotiateTargetInfo]).rawValue,
                    serverChallenge: serverChallenge, targetName: [], targetInfo: Self.avPair(0, []))),
            username: user, password: password, domain: userDomain, workstation: workstation,
            clientChallenge: clientChallenge, timestamp: time, exportedSessionKey: randomSessionKey)
        let fields = try Self.authenticateFields(message)
        XCTAssertEqual(fields.sessionKey, [])
        XCTAssertEqual(fields.headerLength, 64, "no VERSION negotiated, so no Version field")
    }

    func testOEMServerGetsOEMNamesAndItsTargetNameIsRead() throws {
        let challenge = try NTLM.Challenge(
            decoding: Self.challengeMessage(
                flags: NTLM.Flags([.negotiateOEM, .negotiateNTLM, .negotiateTargetInfo]).rawValue,
                serverChallenge: serverChallenge, targetName: Array("SERVER".utf8), targetInfo: Self.avPair(0, [])))
        XCTAssertEqual(challenge.targetName, "SERVER")
        let message = try NTLM.authenticateMessage(
            challenge: challenge, username: "us\u{E9}r", password: password, domain: "DOM", workstation: "WS",
            clientChallenge: clientChallenge, timestamp: time, exportedSessionKey: randomSessionKey)
        let fields = try Self.authenticateFields(message)
        XCTAssertEqual(fields.user, Array("us?r".utf8))
        XCTAssertEqual(fields.domain, Array("DOM".utf8))
        XCTAssertEqual(fields.workstation, Array("WS".utf8))
    }

    // MARK: NEGOTIATE_MESSAGE

    func testNegotiateMessageWithoutHints() {
        // Flags 0xa0088207: UNICODE | OEM | REQUEST_TARGET | NTLM | ALWAYS_SIGN | EXTENDED_SESSIONSECURITY | 128 | 56.
        XCTAssertEqual(
            hexString(NTLM.negotiateMessage(domain: nil, workstation: nil)),
            "4e544c4d53535000" + "01000000" + "078208a0" + "0000000020000000" + "0000000020000000")
    }

    func testNegotiateMessageWithDomainAndWorkstation() {
        let message = NTLM.negotiateMessage(domain: "DOMAIN", workstation: "WS")
        // + OEM_DOMAIN_SUPPLIED (0x1000) | OEM_WORKSTATION_SUPPLIED (0x2000); "DOMAIN" at 32, "WS" at 38.
        XCTAssertEqual(
            hexString(message),
            "4e544c4d53535000" + "01000000" + "07b208a0" + "0600060020000000" + "0200020026000000"
                + hexString(Array("DOMAINWS".utf8)))
    }

    func testNegotiateMessageLeavesOutHintsThatAreNotASCII() {
        XCTAssertEqual(
            NTLM.negotiateMessage(domain: "Dom\u{E4}in", workstation: ""), NTLM.negotiateMessage(domain: nil, workstation: nil))
    }

    // MARK: Round trip

    func testHandBuiltChallengeRoundTrips() throws {
        let targetInfo = Self.avPair(2, NTLM.utf16LE("EXAMPLE")) + Self.avPair(0, [])
        let message = Self.challengeMessage(
            flags: 0x6289_8215, serverChallenge: [1, 2, 3, 4, 5, 6, 7, 8], targetName: NTLM.utf16LE("EXAMPLE\u{1F600}"),
            targetInfo: targetInfo)
        let challenge = try NTLM.Challenge(NTLM.Challenge.authChallenge(message))
        XCTAssertEqual(challenge.flags.rawValue, 0x6289_8215)
        XCTAssertEqual(challenge.serverChallenge, [1, 2, 3, 4, 5, 6, 7, 8])
        XCTAssertEqual(challenge.targetName, "EXAMPLE\u{1F600}")
        XCTAssertEqual(challenge.targetInfo, targetInfo)
        XCTAssertNil(challenge.timestamp)
    }

    func testOldStyleChallengeWithoutTargetInfoFields() throws {
        // 32 bytes: what servers before NT 4.0 SP4 sent. No TargetInfo.
        let message = Array(Self.challengeMessage(
            flags: NTLM.Flags([.negotiateUnicode, .negotiateNTLM]).rawValue, serverChallenge: serverChallenge,
            targetName: [], targetInfo: [])[..<32])
        let challenge = try NTLM.Challenge(decoding: message)
        XCTAssertEqual(challenge.targetInfo, [])
        XCTAssertNil(challenge.targetName)
    }

    func testAuthorizationValueIsBase64OfTheMessage() throws {
        let message = NTLM.negotiateMessage(domain: nil, workstation: nil)
        let value = NTLM.authorizationValue(message)
        XCTAssertEqual(value, "NTLM TlRMTVNTUAABAAAAB4IIoAAAAAAgAAAAAAAAACAAAAA=")
        let parsed = AuthChallenge.parse([value])
        XCTAssertEqual(parsed.first.flatMap { $0.token68.flatMap(Base64.decode) }, message)
    }

    // MARK: Malformed challenges

    func testEveryTruncationOfTheSpecChallengeIsATypedError() {
        for length in 0..<specChallenge.count {
            XCTAssertThrowsError(try NTLM.Challenge(decoding: Array(specChallenge[..<length])), "\(length) bytes") {
                XCTAssertEqual(($0 as? HTTPClientError)?.code, .authenticationFailed)
            }
        }
    }

    func testBadFieldsAreTypedErrors() {
        var cases: [(String, [UInt8])] = []
        var badSignature = specChallenge
        badSignature[7] = 0x20
        cases.append(("signature", badSignature))
        var type3 = specChallenge
        type3[8] = 3
        cases.append(("message type", type3))
        var hugeOffset = specChallenge
        hugeOffset.replaceSubrange(16..<20, with: [0xFF, 0xFF, 0xFF, 0xFF])
        cases.append(("TargetName offset 2^32-1", hugeOffset))
        var hugeLength = specChallenge
        hugeLength.replaceSubrange(40..<42, with: [0xFF, 0xFF])
        cases.append(("TargetInfo length 65535", hugeLength))
        var oddName = specChallenge
        oddName[12] = 11
        cases.append(("odd UTF-16 length", oddName))
        var loneSurrogate = specChallenge
        loneSurrogate.replaceSubrange(56..<58, with: [0x00, 0xD8])
        cases.append(("lone surrogate", loneSurrogate))
        var pairOverrun = specChallenge
        pairOverrun[70] = 0x40  // MsvAvNbDomainName claims 64 bytes
        cases.append(("AV_PAIR overrun", pairOverrun))
        let shortTimestamp = Self.challengeMessage(
            flags: 0xE28A_8235, serverChallenge: serverChallenge, targetName: [],
            targetInfo: Self.avPair(7, [1, 2, 3, 4]) + Self.avPair(0, []))
        cases.append(("4-byte MsvAvTimestamp", shortTimestamp))
        let cutPair = Self.challengeMessage(
            flags: 0xE28A_8235, serverChallenge: serverChallenge, targetName: [], targetInfo: [2, 0])
        cases.append(("AV_PAIR header cut", cutPair))

        for (name, message) in cases {
            XCTAssertThrowsError(try NTLM.Challenge(decoding: message), name) {
                XCTAssertEqual(($0 as? HTTPClientError)?.code, .authenticationFailed, name)
            }
        }
    }

    func testRandomCorruptionNeverTraps() {
        // Deterministic xorshift so that a failure reproduces.
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            seed ^= seed << 13
            seed ^= seed >> 7
            seed ^= seed << 17
            return seed
        }
        var decoded = 0
        for _ in 0..<5_000 {
            var message = specChallenge
            for _ in 0..<(1 + Int(next() % 4)) {
                message[12 + Int(next() % UInt64(message.count - 12))] = UInt8(truncatingIfNeeded: next())
            }
            if (try? NTLM.Challenge(decoding: message)) != nil { decoded += 1 }
        }
        XCTAssertGreaterThan(decoded, 0, "some corruptions (of the challenge or names) still decode")
    }

    func testAuthChallengeWithoutAValidMessage() {
        for header in ["NTLM", "NTLM a", "Basic realm=\"x\"", "NTLM \(Base64.encode([1, 2, 3]))"] {
            let challenge = AuthChallenge.parse([header])[0]
            XCTAssertThrowsError(try NTLM.Challenge(challenge), header) {
                XCTAssertEqual(($0 as? HTTPClientError)?.code, .authenticationFailed)
            }
        }
    }

    // MARK: Credentials and helpers

    func testSplitUsername() {
        XCTAssertTrue(NTLM.splitUsername("DOMAIN\\user") == ("user", "DOMAIN"))
        XCTAssertTrue(NTLM.splitUsername("user@example.com") == ("user@example.com", ""))
        XCTAssertTrue(NTLM.splitUsername("plain") == ("plain", ""))
        XCTAssertTrue(NTLM.splitUsername("a\\b\\c") == ("b\\c", "a"))
        XCTAssertTrue(NTLM.splitUsername("\\user") == ("user", ""))
    }

    func testUserNameIsUppercasedOneCharacterAtATime() {
        XCTAssertEqual(NTLM.uppercased("User"), "USER")
        XCTAssertEqual(NTLM.uppercased("j\u{E4}s\u{F8}n"), "J\u{C4}S\u{D8}N")
        XCTAssertEqual(NTLM.uppercased("stra\u{DF}e"), "STRA\u{DF}E", "ß has no one-character uppercase")
    }

    func testFileTime() {
        XCTAssertEqual(NTLM.fileTime(unixSeconds: 0), 116_444_736_000_000_000)
        XCTAssertEqual(NTLM.fileTime(unixSeconds: 1.5), 116_444_736_015_000_000)
        XCTAssertEqual(NTLM.fileTime(unixSeconds: -1e12), 0)
    }

    func testRC4MatchesKnownVectors() {
        // RFC 6229 §2, 40-bit key 0x0102030405, keystream bytes 0-15.
        var rfc6229 = RC4(key: [1, 2, 3, 4, 5])
        XCTAssertEqual(hexString(rfc6229.process([UInt8](repeating: 0, count: 16))), "b2396305f03dc027ccc3524a0a1118a8")
        // The classic examples (also pycryptodome's ARC4).
        var key = RC4(key: Array("Key".utf8))
        XCTAssertEqual(hexString(key.process(Array("Plaintext".utf8))), "bbf316e8d940af0ad3")
        var secret = RC4(key: Array("Secret".utf8))
        XCTAssertEqual(hexString(secret.process(Array("Attack at dawn".utf8))), "45a01f645fc35b383552544b9bf5")
    }

    // MARK: - Helpers

    static func avPair(_ id: UInt16, _ value: [UInt8]) -> [UInt8] {
        [UInt8(id & 0xFF), UInt8(id >> 8), UInt8(value.count & 0xFF), UInt8(value.count >> 8)] + value
    }

    static func littleEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    static func littleEndian32(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * UInt32($0))) }
    }

    /// A CHALLENGE_MESSAGE written field by field from §2.2.1.2, independently of the code under test:
    /// a 56-byte header (with a Version), then TargetName, then TargetInfo.
    static func challengeMessage(flags: UInt32, serverChallenge: [UInt8], targetName: [UInt8], targetInfo: [UInt8])
        -> [UInt8]
    {
        var message = Array("NTLMSSP".utf8) + [0] + littleEndian32(2)
        let nameOffset = 56
        let infoOffset = nameOffset + targetName.count
        message += [UInt8(targetName.count & 0xFF), UInt8(targetName.count >> 8)]
        message += [UInt8(targetName.count & 0xFF), UInt8(targetName.count >> 8)] + littleEndian32(UInt32(nameOffset))
        message += littleEndian32(flags) + serverChallenge + [UInt8](repeating: 0, count: 8)
        message += [UInt8(targetInfo.count & 0xFF), UInt8(targetInfo.count >> 8)]
        message += [UInt8(targetInfo.count & 0xFF), UInt8(targetInfo.count >> 8)] + littleEndian32(UInt32(infoOffset))
        message += [10, 0, 0x61, 0x4A, 0, 0, 0, 0x0F]  // Version: Windows 10.0 build 19041
        return message + targetName + targetInfo
    }

    struct AuthenticateFields {
        var flags: UInt32
        var headerLength: Int
        var lm, nt, domain, user, workstation, sessionKey: [UInt8]
    }

    /// Reads an AUTHENTICATE_MESSAGE back, by §2.2.1.3's layout.
    static func authenticateFields(_ message: [UInt8]) throws -> AuthenticateFields {
        XCTAssertEqual(Array(message[0..<12]), Array("NTLMSSP".utf8) + [0, 3, 0, 0, 0])
        func u16(_ at: Int) -> Int { Int(message[at]) | Int(message[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        var lowestOffset = message.count
        func field(_ at: Int) throws -> [UInt8] {
            let length = u16(at)
            let offset = u32(at + 4)
            XCTAssertEqual(u16(at + 2), length, "MaxLen = Len")
            lowestOffset = min(lowestOffset, offset)
            guard offset + length <= message.count else { throw HTTPClientError(.malformedResponse, "field out of bounds") }
            return Array(message[offset..<(offset + length)])
        }
        let lm = try field(12), nt = try field(20), domain = try field(28), user = try field(36)
        let workstation = try field(44), sessionKey = try field(52)
        // The payload starts where the header ends: at the lowest field offset.
        return AuthenticateFields(
            flags: UInt32(u32(60)), headerLength: lowestOffset, lm: lm, nt: nt, domain: domain, user: user,
            workstation: workstation, sessionKey: sessionKey)
    }
}

extension NTLM.Challenge {
    /// `NTLM <base64>` as the parser gives it.
    fileprivate static func authChallenge(_ message: [UInt8]) -> AuthChallenge {
        AuthChallenge.parse([NTLM.authorizationValue(message)])[0]
    }
}

/// Bytes from a hex string (test fixtures only).
private func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
}
