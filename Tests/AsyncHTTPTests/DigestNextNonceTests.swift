import Logging
import XCTest

@testable import AsyncHTTP

/// RFC 7616 §3.5: a server that rotates nonces names the next one in `Authentication-Info: nextnonce=…`, and the
/// client SHOULD use it for its next request, counting from `nc=00000001` again. Before, `nextnonce` was never read,
/// so the next request went out with the old nonce and cost a `stale=true` round trip. Driven through the
/// authenticator's internal API (the auth middleware hands it the final response's field).
final class DigestNextNonceTests: XCTestCase {
    let credentials = HTTPCredentials(username: "u", password: "p")
    let url = "https://h.test/api/login"

    private func parameter(_ name: String, in authorization: String?) -> String? {
        authorization.flatMap { AuthChallenge.parse([$0]).first?.parameters[name] }
    }

    private func exchange(own: Bool) throws -> AuthExchange {
        let target = try HTTPURL(url)
        return AuthExchange(isProxy: false, scheme: target.scheme, host: target.host, port: target.port, target: target,
                            urlCredentials: nil, requestCredentials: own ? credentials : nil, allowedSchemes: nil)
    }

    /// Answers a Digest challenge with nonce `nonce` on `exchange`; returns the `Authorization` value.
    private func answer(
        _ authenticator: Authenticator, _ exchange: inout AuthExchange, nonce: String, stale: Bool = false
    ) async throws -> String? {
        var parameters = ["realm": "r", "nonce": nonce, "qop": "auth"]
        if stale { parameters["stale"] = "true" }
        return try await authenticator.respond(
            to: [AuthChallenge(scheme: "digest", parameters: parameters)], exchange: &exchange, method: "GET",
            uri: "/api/login", body: [])?.value
    }

    /// What the next request without credentials of its own sends before any challenge.
    private func next(_ authenticator: Authenticator) async throws -> String? {
        var probe = try exchange(own: false)
        return try await authenticator.preemptiveAuthorization(
            for: &probe, method: "GET", uri: "/api/users", body: [], basicRequested: false)
    }

    func testNextNonceIsReadFromTheAuthenticationInfoList() {
        XCTAssertEqual(
            DigestState.nextNonce(inAuthenticationInfo: [
                #"qop=auth, rspauth="6629fae49393a05397450978507c4ef1", cnonce="0a4f113b", nc=00000001, nextnonce="n2""#,
            ]), "n2")
        XCTAssertEqual(DigestState.nextNonce(inAuthenticationInfo: [#"nextnonce="a\"b""#]), #"a"b"#)  // unescaped
        XCTAssertEqual(DigestState.nextNonce(inAuthenticationInfo: ["NextNonce=tok"]), "tok")  // names ignore case
        XCTAssertEqual(DigestState.nextNonce(inAuthenticationInfo: [#"rspauth="x""#, #"nextnonce="n3""#]), "n3")
        XCTAssertNil(DigestState.nextNonce(inAuthenticationInfo: [#"qop=auth, rspauth="x""#]))
        XCTAssertNil(DigestState.nextNonce(inAuthenticationInfo: [#"nextnonce="""#]))
        XCTAssertNil(DigestState.nextNonce(inAuthenticationInfo: []))
    }

    func testTheNextRequestUsesTheNextNonceFromCountOne() async throws {
        let authenticator = Authenticator(configuration: AuthenticationConfiguration(), logger: Logger(label: "test"))
        var first = try exchange(own: true)
        let sent = try await answer(authenticator, &first, nonce: "n1")
        XCTAssertEqual(parameter("nonce", in: sent), "n1")
        XCTAssertEqual(parameter("nc", in: sent), "00000001")
        await authenticator.succeeded(
            first, status: 200, authenticationInfo: [#"qop=auth, rspauth="abc", nextnonce="n2""#])

        let second = try await next(authenticator)
        XCTAssertEqual(parameter("nonce", in: second), "n2")
        XCTAssertEqual(parameter("nc", in: second), "00000001")
        let third = try await next(authenticator)
        XCTAssertEqual(parameter("nonce", in: third), "n2")
        XCTAssertEqual(parameter("nc", in: third), "00000002")
    }

    func testWithoutNextNonceTheNonceAndItsCountGoOn() async throws {
        let authenticator = Authenticator(configuration: AuthenticationConfiguration(), logger: Logger(label: "test"))
        var first = try exchange(own: true)
        _ = try await answer(authenticator, &first, nonce: "n1")
        await authenticator.succeeded(first, status: 200, authenticationInfo: [#"qop=auth, rspauth="abc""#])
        let second = try await next(authenticator)
        XCTAssertEqual(parameter("nonce", in: second), "n1")
        XCTAssertEqual(parameter("nc", in: second), "00000002")
    }

    /// A response whose request used a nonce the space has since left (another request met `stale=true` and moved
    /// on to a fresher nonce) does not take the space back to its own `nextnonce`.
    func testALateNextNonceDoesNotReplaceAFresherNonce() async throws {
        let authenticator = Authenticator(configuration: AuthenticationConfiguration(), logger: Logger(label: "test"))
        var first = try exchange(own: true)
        _ = try await answer(authenticator, &first, nonce: "n1")
        var other = try exchange(own: true)
        _ = try await answer(authenticator, &other, nonce: "n1")
        _ = try await answer(authenticator, &other, nonce: "n3", stale: true)
        await authenticator.succeeded(other, status: 200)
        await authenticator.succeeded(first, status: 200, authenticationInfo: [#"nextnonce="n2""#])
        let next = try await next(authenticator)
        XCTAssertEqual(parameter("nonce", in: next), "n3")
        XCTAssertEqual(parameter("nc", in: next), "00000002")
    }

    /// After a logout the space's Digest state is gone: a `nextnonce` arriving then brings nothing back.
    func testANextNonceAfterALogoutIsIgnored() async throws {
        let authenticator = Authenticator(configuration: AuthenticationConfiguration(), logger: Logger(label: "test"))
        var first = try exchange(own: true)
        _ = try await answer(authenticator, &first, nonce: "n1")
        await authenticator.clearSession()
        await authenticator.succeeded(first, status: 200, authenticationInfo: [#"nextnonce="n2""#])
        let counts = await authenticator.stateCounts
        XCTAssertEqual(counts.digest, 0)
        let next = try await next(authenticator)
        XCTAssertNil(next)
    }
}
