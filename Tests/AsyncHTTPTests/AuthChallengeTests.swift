import XCTest

@testable import AsyncHTTP

final class AuthChallengeTests: XCTestCase {
    private func parse(_ values: String...) -> [AuthChallenge] { AuthChallenge.parse(values) }

    // MARK: One challenge

    func testBasicWithRealm() {
        XCTAssertEqual(parse(#"Basic realm="simple""#), [AuthChallenge(scheme: "basic", parameters: ["realm": "simple"])])
        XCTAssertEqual(parse(#"Basic realm="simple""#).first?.realm, "simple")
    }

    func testSchemeAndParameterNamesAreCaseInsensitive() {
        let challenges = parse(#"DIGEST ReAlM="Mixed Case", NONCE=abc, Algorithm=SHA-256"#)
        XCTAssertEqual(challenges.count, 1)
        XCTAssertEqual(challenges.first?.scheme, "digest")
        XCTAssertEqual(challenges.first?.parameters, ["realm": "Mixed Case", "nonce": "abc", "algorithm": "SHA-256"])
    }

    func testQuotedStringEscapesAreUndone() {
        let challenges = parse(#"Basic realm="a \"quoted\" realm with a \\ backslash and \x""#)
        XCTAssertEqual(challenges.first?.realm, #"a "quoted" realm with a \ backslash and x"#)
    }

    func testCommasAndEqualsSignsInsideQuotedStringsStayInTheValue() {
        let challenges = parse(#"Digest realm="a, b=c", nonce="x", qop="auth,auth-int""#)
        XCTAssertEqual(challenges.count, 1)
        XCTAssertEqual(challenges.first?.parameters, ["realm": "a, b=c", "nonce": "x", "qop": "auth,auth-int"])
    }

    func testWhitespaceAroundTheEqualsSign() {
        // BWS on both sides of "=" (RFC 9110 §11.2).
        let challenges = parse("Digest realm = \"r\" ,\tnonce\t=\tabc ,qop=auth")
        XCTAssertEqual(challenges, [AuthChallenge(scheme: "digest", parameters: ["realm": "r", "nonce": "abc", "qop": "auth"])])
    }

    func testEmptyQuotedValueIsKept() {
        XCTAssertEqual(parse(#"Basic realm="""#).first?.realm, "")
    }

    func testNonASCIIInAQuotedStringIsReadAsUTF8() {
        XCTAssertEqual(parse(#"Basic realm="Zürich""#).first?.realm, "Zürich")
    }

    func testFirstOfARepeatedParameterWins() {
        XCTAssertEqual(parse(#"Basic realm="first", realm="second""#).first?.realm, "first")
    }

    func testSchemeAlone() {
        XCTAssertEqual(parse("NTLM"), [AuthChallenge(scheme: "ntlm")])
        XCTAssertEqual(parse("Negotiate, NTLM"), [AuthChallenge(scheme: "negotiate"), AuthChallenge(scheme: "ntlm")])
    }

    // MARK: token68

    func testNTLMToken68() {
        let token = "TlRMTVNTUAACAAAADAAMADAAAAA1goni"
        XCTAssertEqual(parse("NTLM \(token)"), [AuthChallenge(scheme: "ntlm", token68: token)])
    }

    func testToken68WithPaddingAndSlashes() {
        XCTAssertEqual(parse("Negotiate a+b/c=="), [AuthChallenge(scheme: "negotiate", token68: "a+b/c==")])
        // "abc=" then nothing: a token68, since an auth-param needs a value after "=".
        XCTAssertEqual(parse("Negotiate abc=, Basic realm=\"x\"").first?.token68, "abc=")
    }

    func testToken68FollowedByAnotherChallenge() {
        let challenges = parse(#"Negotiate YIIB, Basic realm="x""#)
        XCTAssertEqual(
            challenges,
            [AuthChallenge(scheme: "negotiate", token68: "YIIB"), AuthChallenge(scheme: "basic", parameters: ["realm": "x"])])
    }

    func testTokenEqualsTokenIsAParameterNotAToken68() {
        XCTAssertEqual(parse("Basic realm=simple"), [AuthChallenge(scheme: "basic", parameters: ["realm": "simple"])])
    }

    func testParametersAfterAToken68AreIgnored() {
        XCTAssertEqual(parse(#"Negotiate abc, realm="x""#), [AuthChallenge(scheme: "negotiate", token68: "abc")])
    }

    // MARK: Several challenges

    func testSeveralChallengesInOneFieldValue() {
        let challenges = parse(#"Basic realm="a", Digest realm="b", nonce="x", qop="auth,auth-int""#)
        XCTAssertEqual(
            challenges,
            [
                AuthChallenge(scheme: "basic", parameters: ["realm": "a"]),
                AuthChallenge(scheme: "digest", parameters: ["realm": "b", "nonce": "x", "qop": "auth,auth-int"]),
            ])
    }

    func testRFC9110Section11_6_1Example() {
        // RFC 9110 §11.6.1: two challenges in one field, the first of a made-up scheme.
        let challenges = parse(#"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple""#)
        XCTAssertEqual(
            challenges,
            [
                AuthChallenge(scheme: "newauth", parameters: ["realm": "apps", "type": "1", "title": #"Login to "apps""#]),
                AuthChallenge(scheme: "basic", parameters: ["realm": "simple"]),
            ])
    }

    func testChallengesAcrossSeveralFieldLinesKeepTheirOrder() {
        let challenges = parse("Negotiate", "NTLM", #"Basic realm="x""#)
        XCTAssertEqual(challenges.map(\.scheme), ["negotiate", "ntlm", "basic"])
    }

    func testAChallengeDoesNotContinueIntoTheNextFieldLine() {
        // `nonce=x` on the second line has no scheme of its own: it is dropped, not given to Digest.
        let challenges = parse(#"Digest realm="r""#, "nonce=x")
        XCTAssertEqual(challenges, [AuthChallenge(scheme: "digest", parameters: ["realm": "r"])])
    }

    func testEmptyListElementsAreSkipped() {
        // RFC 9110 §5.6.1.2: a recipient ignores empty list elements.
        let challenges = parse(#" , ,Basic realm="a",, ,Bearer , "#)
        XCTAssertEqual(challenges, [AuthChallenge(scheme: "basic", parameters: ["realm": "a"]), AuthChallenge(scheme: "bearer")])
    }

    func testRFC6750BearerChallenge() {
        let challenges = parse(
            #"Bearer realm="example", error="invalid_token", error_description="The access token expired""#)
        XCTAssertEqual(challenges.first?.scheme, "bearer")
        XCTAssertEqual(challenges.first?.parameters["error_description"], "The access token expired")
    }

    func testUnquotedBase64NonceIsTakenWhole() {
        // Not a token, but servers send it; curl reads up to the comma.
        let challenges = parse("Digest realm=r, nonce=dcd98b71+02d/d2f0==, qop=auth")
        XCTAssertEqual(challenges.first?.parameters["nonce"], "dcd98b71+02d/d2f0==")
        XCTAssertEqual(challenges.first?.parameters["qop"], "auth")
    }

    // MARK: Garbage

    func testGarbageIsSkippedAndTheRestStillParses() {
        XCTAssertEqual(parse(""), [])
        XCTAssertEqual(parse("   "), [])
        XCTAssertEqual(parse(#"="oops", Basic realm="ok""#), [AuthChallenge(scheme: "basic", parameters: ["realm": "ok"])])
        XCTAssertEqual(parse(#"realm="orphan""#), [])
        // `realm=` with no value is no auth-param, but it is a valid token68 (1*tchar68 *"="), so that is what
        // the grammar makes of it.
        XCTAssertEqual(
            parse(#"Basic realm=, Digest realm="d""#),
            [AuthChallenge(scheme: "basic", token68: "realm="), AuthChallenge(scheme: "digest", parameters: ["realm": "d"])])
        XCTAssertEqual(
            parse(#"Digest realm="d", nonce=, qop=auth"#),
            [AuthChallenge(scheme: "digest", parameters: ["realm": "d", "qop": "auth"])])
    }

    func testUnterminatedQuotedStringDropsTheParameter() {
        XCTAssertEqual(parse(#"Basic realm="never closed"#), [AuthChallenge(scheme: "basic")])
        XCTAssertEqual(parse(#"Basic realm="ends in a backslash\"#), [AuthChallenge(scheme: "basic")])
    }

    func testControlCharactersInAQuotedStringDropTheParameter() {
        XCTAssertEqual(
            parse("Basic realm=\"a\u{1}b\", charset=\"UTF-8\""),
            [AuthChallenge(scheme: "basic", parameters: ["charset": "UTF-8"])])
    }

    func testJunkAfterAValueIsDroppedButTheValueKept() {
        XCTAssertEqual(
            parse(#"Basic realm="a" junk "more", Digest realm="b""#),
            [
                AuthChallenge(scheme: "basic", parameters: ["realm": "a"]),
                AuthChallenge(scheme: "digest", parameters: ["realm": "b"]),
            ])
    }

    func testEveryPrefixOfARealHeaderParsesWithoutTrapping() {
        // The parser must never trap, whatever is cut off where; one byte at a time like h11's tests.
        let header = #"Basic realm="a\"b", Digest realm="b", nonce="x", qop="auth,auth-int", NTLM TlRMTVNT=="#
        let bytes = Array(header.utf8)
        for end in 0...bytes.count {
            _ = AuthChallenge.parse([String(decoding: bytes[..<end], as: UTF8.self)])
        }
        XCTAssertEqual(AuthChallenge.parse([header]).map(\.scheme), ["basic", "digest", "ntlm"])
    }

    // MARK: Quoting

    func testQuotedEscapesQuoteAndBackslash() {
        XCTAssertEqual(AuthChallenge.quoted(#"a"b\c"#), #""a\"b\\c""#)
        XCTAssertEqual(AuthChallenge.quoted(""), #""""#)
    }

    func testQuotedRoundTripsThroughTheParser() {
        let value = #"tricky " \ , = value"#
        XCTAssertEqual(parse("Basic realm=\(AuthChallenge.quoted(value))").first?.realm, value)
    }

    func testCanBeQuoted() {
        XCTAssertTrue(AuthChallenge.canBeQuoted("Mufasa"))
        XCTAssertTrue(AuthChallenge.canBeQuoted("tab\tand space"))
        XCTAssertFalse(AuthChallenge.canBeQuoted("Jäsøn"))
        XCTAssertFalse(AuthChallenge.canBeQuoted("line\nbreak"))
        XCTAssertFalse(AuthChallenge.canBeQuoted("del\u{7F}"))
    }
}
