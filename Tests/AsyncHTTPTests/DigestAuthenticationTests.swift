import XCTest

@testable import AsyncHTTP

/// Digest (RFC 7616, RFC 2617, RFC 2069). Expected responses are the RFCs' printed values where those are
/// right; every other value was computed independently with Python's hashlib, following RFC 7616 §3.4
/// (a one-off script; `hashlib.new('sha512_256')` for SHA-512-256), never with the code under test.
final class DigestAuthenticationTests: XCTestCase {
    // RFC 7616 §3.9.1.
    let nonce = "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v"
    let cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"
    let opaque = "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"

    /// The RFC 7616 §3.9.1 challenge with the given algorithm and qop.
    private func challenge(
        algorithm: String? = "MD5", qop: String? = "auth, auth-int", extra: String = ""
    ) throws -> DigestChallenge {
        var header = #"Digest realm="http-auth@example.org""#
        if let qop { header += #", qop="\#(qop)""# }
        if let algorithm { header += ", algorithm=\(algorithm)" }
        header += #", nonce="\#(nonce)", opaque="\#(opaque)""# + extra
        let parsed = AuthChallenge.parse([header])
        XCTAssertEqual(parsed.count, 1)
        return try XCTUnwrap(DigestChallenge(parsed[0]))
    }

    private func mufasa(
        _ state: inout DigestState, method: String = "GET", body: [UInt8]? = nil, cnonce: String? = nil,
        preferAuthInt: Bool = false
    ) throws -> String {
        try state.authorization(
            username: "Mufasa", password: "Circle of Life", method: method, uri: "/dir/index.html", body: body,
            cnonce: cnonce ?? self.cnonce, preferAuthInt: preferAuthInt)
    }

    /// The value of one parameter of an Authorization value, parsed back with the challenge parser.
    private func parameter(_ name: String, in authorization: String) -> String? {
        AuthChallenge.parse([authorization]).first?.parameters[name]
    }

    // MARK: RFC 7616 §3.9.1

    func testRFC7616MD5ExampleMatchesTheRFCExactly() throws {
        var state = DigestState(challenge: try challenge(algorithm: "MD5"))
        XCTAssertEqual(
            try mufasa(&state),
            #"Digest username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", algorithm=MD5, "#
                + #"nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", nc=00000001, "#
                + #"cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", qop=auth, "#
                + #"response="8ca523f5e9506fed4657c9700eebdbec", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#)
    }

    func testRFC7616SHA256Example() throws {
        var state = DigestState(challenge: try challenge(algorithm: "SHA-256"))
        let value = try mufasa(&state)
        XCTAssertEqual(
            parameter("response", in: value), "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")
        XCTAssertEqual(parameter("algorithm", in: value), "SHA-256")
        XCTAssertEqual(parameter("opaque", in: value), opaque)
        XCTAssertEqual(parameter("qop", in: value), "auth")
        XCTAssertEqual(parameter("nc", in: value), "00000001")
    }

    func testTheFirstSupportedChallengeIsPreferred() throws {
        // RFC 7616 §3.9.1 sends SHA-256 first, then MD5; §3.7: use the first one supported.
        let header1 = #"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=SHA-256, nonce="\#(nonce)""#
        let header2 = #"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=MD5, nonce="\#(nonce)""#
        XCTAssertEqual(DigestChallenge.preferred(in: AuthChallenge.parse([header1, header2]))?.algorithm, .sha256)
        let unsupportedFirst = #"Basic realm="x", Digest realm="r", nonce="n", algorithm=SHA-1024, "# + header2
        XCTAssertEqual(DigestChallenge.preferred(in: AuthChallenge.parse([unsupportedFirst]))?.algorithm, .md5)
        XCTAssertNil(DigestChallenge.preferred(in: AuthChallenge.parse([#"Basic realm="x""#])))
    }

    // MARK: RFC 2617 §3.5

    func testRFC2617Example() throws {
        let header = #"Digest realm="testrealm@host.com", qop="auth,auth-int", "#
            + #"nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#
        var state = DigestState(challenge: try XCTUnwrap(DigestChallenge.preferred(in: AuthChallenge.parse([header]))))
        let value = try state.authorization(
            username: "Mufasa", password: "Circle Of Life", method: "GET", uri: "/dir/index.html", body: nil,
            cnonce: "0a4f113b")
        // No algorithm in the challenge, so none in the answer (RFC 2617 servers predate it being echoed).
        XCTAssertEqual(
            value,
            #"Digest username="Mufasa", realm="testrealm@host.com", uri="/dir/index.html", "#
                + #"nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", nc=00000001, cnonce="0a4f113b", qop=auth, "#
                + #"response="6629fae49393a05397450978507c4ef1", opaque="5ccc069c403ebaf9f0171e9517f40e41""#)
    }

    // MARK: SHA-512-256 and RFC 7616 §3.9.2

    func testSHA512_256OnTheSection3_9_1Inputs() throws {
        var state = DigestState(challenge: try challenge(algorithm: "SHA-512-256"))
        let value = try mufasa(&state)
        // hashlib, RFC 7616 §3.4 with H = sha512_256.
        XCTAssertEqual(
            parameter("response", in: value), "430d05014cecc49cab6fbe03176d41a1da86cbfe24a16580e22aaad928d960d0")
        XCTAssertEqual(parameter("algorithm", in: value), "SHA-512-256")
    }

    func testRFC7616Section3_9_2WithUserhash() throws {
        // §3.9.2's inputs. The RFC prints username 488869477bf2... and response ae66e67d6b42...; both are wrong
        // (known errata: they were not computed with SHA-512/256). The values below come from Python:
        //   hashlib.new('sha512_256', 'J\u00e4s\u00f8n Doe:api@example.org'.encode()).hexdigest()
        // and RFC 7616 §3.4 with the same H, nc=00000001, qop=auth.
        let header = #"Digest realm="api@example.org", qop="auth", algorithm=SHA-512-256, "#
            + #"nonce="5TsQWLVdgBdmrQ0XsxbDODV+57QdFR34I9HAbC/RVvkK", "#
            + #"opaque="HRPCssKJSGjCrkzDg8OhwpzCiGPChXYjwrI2QmXDnsOS", charset=UTF-8, userhash=true"#
        let digest = try XCTUnwrap(DigestChallenge.preferred(in: AuthChallenge.parse([header])))
        XCTAssertTrue(digest.userhash)
        XCTAssertTrue(digest.charsetUTF8)
        var state = DigestState(challenge: digest)
        let value = try state.authorization(
            username: "J\u{E4}s\u{F8}n Doe", password: "Secret, or not?", method: "GET", uri: "/doe.json", body: nil,
            cnonce: "NTg6RKcb9boFIAS3KrFK9BGeh+iDa/sm6jUMp2wds69v")
        XCTAssertEqual(
            value,
            #"Digest username="793263caabb707a56211940d90411ea4a575adeccb7e360aeb624ed06ece9b0b", "#
                + #"realm="api@example.org", uri="/doe.json", algorithm=SHA-512-256, "#
                + #"nonce="5TsQWLVdgBdmrQ0XsxbDODV+57QdFR34I9HAbC/RVvkK", nc=00000001, "#
                + #"cnonce="NTg6RKcb9boFIAS3KrFK9BGeh+iDa/sm6jUMp2wds69v", qop=auth, "#
                + #"response="3798d4131c277846293534c3edc11bd8a5e4cdcbff78b05db9d95eeb1cec68a5", "#
                + #"opaque="HRPCssKJSGjCrkzDg8OhwpzCiGPChXYjwrI2QmXDnsOS", userhash=true"#)
    }

    func testNonASCIIUsernameWithoutUserhashGoesInUsernameStar() throws {
        let header = #"Digest realm="api@example.org", qop="auth", algorithm=SHA-256, "#
            + #"nonce="5TsQWLVdgBdmrQ0XsxbDODV+57QdFR34I9HAbC/RVvkK", charset=UTF-8"#
        var state = DigestState(challenge: try XCTUnwrap(DigestChallenge.preferred(in: AuthChallenge.parse([header]))))
        let value = try state.authorization(
            username: "J\u{E4}s\u{F8}n Doe", password: "Secret, or not?", method: "GET", uri: "/doe.json", body: nil,
            cnonce: "NTg6RKcb9boFIAS3KrFK9BGeh+iDa/sm6jUMp2wds69v")
        XCTAssertTrue(value.hasPrefix("Digest username*=UTF-8''J%C3%A4s%C3%B8n%20Doe, realm="), value)
        XCTAssertFalse(value.contains("username=\""))
        // hashlib: A1 hashes the username's UTF-8 bytes.
        XCTAssertEqual(
            parameter("response", in: value), "b6d5cb9c3000ea2385250005e294d7132b260b8fd08940d2377373493cee8cc4")
    }

    func testUsernameWithAQuoteIsEscapedNotStarred() throws {
        var state = DigestState(challenge: try challenge())
        let value = try state.authorization(
            username: #"say "hi"\"#, password: "p", method: "GET", uri: "/", body: nil, cnonce: cnonce)
        XCTAssertTrue(value.hasPrefix(#"Digest username="say \"hi\"\\", realm="#), value)
        XCTAssertEqual(parameter("username", in: value), #"say "hi"\"#)
    }

    func testExtValueMatchesRFC8187Examples() {
        // RFC 8187 §3.2.3: "€ rates" as UTF-8''%e2%82%ac%20rates (we write the hex in uppercase, §3.2.1 allows both).
        XCTAssertEqual(DigestState.extValue("\u{20AC} rates"), "UTF-8''%E2%82%AC%20rates")
        XCTAssertEqual(DigestState.extValue("a*b'c%d!~"), "UTF-8''a%2Ab%27c%25d!~")
    }

    // MARK: userhash with MD5

    func testUserhashHashesOnlyTheFieldNotA1() throws {
        var state = DigestState(challenge: try challenge(extra: ", userhash=true"))
        let value = try mufasa(&state)
        // hashlib.md5(b'Mufasa:http-auth@example.org'); the response is §3.9.1's, since A1 keeps the clear name.
        XCTAssertEqual(parameter("username", in: value), "4238f3a16167373febb9bc4d43db9cc4")
        XCTAssertEqual(parameter("response", in: value), "8ca523f5e9506fed4657c9700eebdbec")
        XCTAssertTrue(value.hasSuffix(", userhash=true"))
    }

    // MARK: -sess

    func testSessionAlgorithms() throws {
        // hashlib: A1 = H(user:realm:pass) ":" nonce ":" cnonce, the inner H in hex.
        let expected: [(String, String)] = [
            ("MD5-sess", "e783283f46242139c486a698fec7211d"),
            ("SHA-256-sess", "2fd51b3a77ad75bad6afad6003e818d767133c46d9e2749e7f5232ae1ea3efd7"),
            ("SHA-512-256-sess", "3f2a34f923c38b0fb26dce2fdfc2ce326c23cecf86fbb1444f3e51fbbc2cb92e"),
        ]
        for (algorithm, response) in expected {
            var state = DigestState(challenge: try challenge(algorithm: algorithm))
            let value = try mufasa(&state)
            XCTAssertEqual(parameter("response", in: value), response, algorithm)
            XCTAssertEqual(parameter("algorithm", in: value), algorithm)
        }
    }

    func testSessionAlgorithmKeepsTheFirstClientNonceForTheWholeNonce() throws {
        var state = DigestState(challenge: try challenge(algorithm: "md5-sess"))
        _ = try mufasa(&state)
        let second = try mufasa(&state, cnonce: "othercnonce")
        XCTAssertEqual(parameter("cnonce", in: second), cnonce)
        XCTAssertEqual(parameter("nc", in: second), "00000002")
        XCTAssertEqual(parameter("response", in: second), "6914b51e16f9459d9abc967ad41c4599")  // hashlib

        state.useNextNonce("nextNonce123")
        let third = try mufasa(&state, cnonce: "othercnonce")
        XCTAssertEqual(parameter("cnonce", in: third), "othercnonce", "a new nonce starts a new session")
        XCTAssertEqual(parameter("nc", in: third), "00000001")
    }

    // MARK: qop

    func testAuthIsPreferredWhenBothAreOffered() throws {
        var state = DigestState(challenge: try challenge())
        XCTAssertEqual(parameter("qop", in: try mufasa(&state, body: [1, 2, 3])), "auth")
    }

    func testAuthIntHashesTheBody() throws {
        let body = Array(#"{"hello": "world"}"#.utf8)
        var md5 = DigestState(challenge: try challenge())
        let value = try mufasa(&md5, method: "POST", body: body, preferAuthInt: true)
        XCTAssertEqual(parameter("qop", in: value), "auth-int")
        XCTAssertEqual(parameter("response", in: value), "556d801014708d21cb39704ae057f3ca")  // hashlib

        var sha256 = DigestState(challenge: try challenge(algorithm: "SHA-256"))
        let value256 = try mufasa(&sha256, method: "POST", body: body, preferAuthInt: true)
        XCTAssertEqual(
            parameter("response", in: value256), "852868cd7a34dd5136dee483b86a8d62039b66c838da134c62902678dcd4096d")
    }

    func testAuthIntOnlyWithAnEmptyBody() throws {
        var state = DigestState(challenge: try challenge(qop: "auth-int"))
        let value = try mufasa(&state, body: [])
        XCTAssertEqual(parameter("qop", in: value), "auth-int")
        XCTAssertEqual(parameter("response", in: value), "8804a53d3640a40a4f73cea12c5ba451")  // hashlib, H("")
    }

    func testAuthIntOnlyWithoutTheBodyFailsWithATypedError() throws {
        var state = DigestState(challenge: try challenge(qop: "auth-int"))
        XCTAssertThrowsError(try mufasa(&state, body: nil)) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .authenticationFailed)
        }
        XCTAssertEqual(state.nonceCount, 0, "nothing was sent")
    }

    func testPreferAuthIntWithoutABodyFallsBackToAuth() throws {
        var state = DigestState(challenge: try challenge())
        XCTAssertEqual(parameter("qop", in: try mufasa(&state, body: nil, preferAuthInt: true)), "auth")
    }

    func testNoQopIsRFC2069Style() throws {
        var state = DigestState(challenge: try challenge(qop: nil))
        let value = try mufasa(&state)
        XCTAssertEqual(parameter("response", in: value), "7b2cc3b30e75b4777ea31027084363fd")  // hashlib
        XCTAssertNil(parameter("nc", in: value))
        XCTAssertNil(parameter("cnonce", in: value))
        XCTAssertNil(parameter("qop", in: value))
        XCTAssertEqual(state.nonceCount, 0)
    }

    // MARK: Nonce count

    func testNonceCountGoesUpWithEachUseOfTheSameNonce() throws {
        var state = DigestState(challenge: try challenge())
        XCTAssertEqual(parameter("nc", in: try mufasa(&state)), "00000001")
        let second = try mufasa(&state)
        XCTAssertEqual(parameter("nc", in: second), "00000002")
        XCTAssertEqual(parameter("response", in: second), "4b5d595ecf2db9df612ea5b45cd97101")  // hashlib
        // A fresh cnonce on a non-session algorithm is used as given.
        let third = try mufasa(&state, cnonce: "othercnonce")
        XCTAssertEqual(parameter("nc", in: third), "00000003")
        XCTAssertEqual(parameter("cnonce", in: third), "othercnonce")
        XCTAssertEqual(state.nonceCount, 3)
    }

    func testNextNonceStartsCountingAgain() throws {
        var state = DigestState(challenge: try challenge())
        _ = try mufasa(&state)
        _ = try mufasa(&state)
        state.useNextNonce("nextNonce123")
        let value = try mufasa(&state)
        XCTAssertEqual(parameter("nonce", in: value), "nextNonce123")
        XCTAssertEqual(parameter("nc", in: value), "00000001")
        XCTAssertEqual(parameter("response", in: value), "bceae96e2f7f152e4c1d584f20b4e848")  // hashlib
    }

    func testNonceCountIsEightLowercaseHexDigits() {
        XCTAssertEqual(DigestState.eightHexDigits(1), "00000001")
        XCTAssertEqual(DigestState.eightHexDigits(0x1AB), "000001ab")
        XCTAssertEqual(DigestState.eightHexDigits(.max), "ffffffff")
    }

    // MARK: The challenge

    func testChallengeFields() throws {
        let header = #"Digest realm="r", nonce="n", opaque="o", algorithm=sha-256, qop="Auth , AUTH-INT", "#
            + #"stale=TRUE, userhash=false, domain="/a http://example.com/b", charset="utf-8""#
        let digest = try XCTUnwrap(DigestChallenge(AuthChallenge.parse([header])[0]))
        XCTAssertEqual(digest.realm, "r")
        XCTAssertEqual(digest.nonce, "n")
        XCTAssertEqual(digest.opaque, "o")
        XCTAssertEqual(digest.algorithm, .sha256)
        XCTAssertTrue(digest.algorithmIsExplicit)
        XCTAssertEqual(digest.qop, ["auth", "auth-int"])
        XCTAssertTrue(digest.stale)
        XCTAssertFalse(digest.userhash)
        XCTAssertEqual(digest.domain, ["/a", "http://example.com/b"])
        XCTAssertTrue(digest.charsetUTF8)
    }

    func testChallengeDefaults() throws {
        let digest = try XCTUnwrap(DigestChallenge(AuthChallenge.parse([#"Digest realm="r", nonce="n""#])[0]))
        XCTAssertEqual(digest.algorithm, .md5)
        XCTAssertFalse(digest.algorithmIsExplicit)
        XCTAssertEqual(digest.qop, [])
        XCTAssertNil(digest.opaque)
        XCTAssertFalse(digest.stale)
        XCTAssertFalse(digest.userhash)
        XCTAssertEqual(digest.domain, [])
        XCTAssertFalse(digest.charsetUTF8)
    }

    func testChallengesThisClientCannotAnswerAreNil() {
        let unusable = [
            #"Basic realm="r", nonce="n""#,  // not Digest
            #"Digest nonce="n""#,  // no realm
            #"Digest realm="r""#,  // no nonce
            #"Digest realm="r", nonce="n", algorithm=SHA-1"#,  // unknown algorithm
            #"Digest realm="r", nonce="n", qop="auth-conf""#,  // no qop we know
            #"Digest realm="r", nonce="n", algorithm=MD5-sess"#,  // -sess needs a cnonce, which needs a qop
            "Digest abc==",  // token68
        ]
        for header in unusable {
            let parsed = AuthChallenge.parse([header])
            XCTAssertNil(parsed.first.flatMap(DigestChallenge.init), header)
        }
    }

    func testAlgorithmNamesAreCaseInsensitive() {
        XCTAssertEqual(DigestAlgorithm(parameter: "md5-SESS"), .md5Sess)
        XCTAssertEqual(DigestAlgorithm(parameter: "sha-512-256"), .sha512_256)
        XCTAssertNil(DigestAlgorithm(parameter: "SHA-512"))
    }

    // MARK: Refusals

    func testBadMethodURIOrClientNonceAreTypedErrors() throws {
        var state = DigestState(challenge: try challenge())
        let bad: [(method: String, uri: String, cnonce: String)] = [
            ("GET /", "/", cnonce), ("", "/", cnonce), ("GET", "/a\r\nX: y", cnonce), ("GET", "", cnonce),
            ("GET", "/", ""), ("GET", "/", #"a"b"#), ("GET", "/", "caf\u{E9}"),
        ]
        for (method, uri, clientNonce) in bad {
            XCTAssertThrowsError(
                try state.authorization(
                    username: "u", password: "p", method: method, uri: uri, body: nil, cnonce: clientNonce)
            ) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .invalidRequest, "\(method) \(uri) \(clientNonce)")
            }
        }
        XCTAssertEqual(state.nonceCount, 0)
    }

    func testMadeClientNoncesAreFreshHex() {
        let a = DigestState.makeClientNonce()
        XCTAssertEqual(a.count, 32)
        XCTAssertTrue(a.allSatisfy(\.isHexDigit))
        XCTAssertNotEqual(a, DigestState.makeClientNonce())
    }
}
