import Logging
import XCTest

@testable import AsyncHTTP

/// RFC 7616 §3.3's `domain`: the URIs of a Digest protection space, which decide where credentials that
/// succeeded are presented before the next challenge. Driven through the authenticator's internal API.
final class DigestDomainTests: XCTestCase {
    let credentials = HTTPCredentials(username: "u", password: "p")

    func exchange(_ url: String, own: Bool) throws -> AuthExchange {
        let target = try HTTPURL(url)
        return AuthExchange(isProxy: false, scheme: target.scheme, host: target.host, port: target.port, target: target,
                            urlCredentials: nil, requestCredentials: own ? credentials : nil, allowedSchemes: nil)
    }

    /// An authenticator that answered a Digest challenge (with `domain` when given) for `url`, accepted.
    func authenticated(at url: String, domain: String?) async throws -> Authenticator {
        let authenticator = Authenticator(configuration: AuthenticationConfiguration(), logger: Logger(label: "test"))
        var parameters = ["realm": "r", "nonce": "n1", "qop": "auth"]
        parameters["domain"] = domain
        var exchange = try exchange(url, own: true)
        let value = try await authenticator.respond(to: [AuthChallenge(scheme: "digest", parameters: parameters)],
                                                    exchange: &exchange, method: "GET", uri: try HTTPURL(url).requestTarget, body: [])
        XCTAssertNotNil(value)
        await authenticator.succeeded(exchange, status: 200)
        return authenticator
    }

    /// Whether a request for `url` without credentials of its own gets Digest before any challenge.
    func presents(_ authenticator: Authenticator, _ url: String) async throws -> Bool {
        var probe = try exchange(url, own: false)
        let value = try await authenticator.preemptiveAuthorization(
            for: &probe, method: "GET", uri: try HTTPURL(url).requestTarget, body: [], basicRequested: false)
        return value?.hasPrefix("Digest ") ?? false
    }

    func testWithoutADomainTheSpaceIsTheWholeOrigin() async throws {
        let authenticator = try await authenticated(at: "https://h.test/api/login", domain: nil)
        for url in ["https://h.test/api/users", "https://h.test/static/a.css", "https://h.test/"] {
            let presented = try await presents(authenticator, url)
            XCTAssertTrue(presented, url)
        }
        let otherServer = try await presents(authenticator, "https://other.test/api/users")
        XCTAssertFalse(otherServer)
    }

    /// The old code presented Digest anywhere on the origin whatever the challenge's `domain` said.
    func testADomainLimitsTheSpaceToItsURIsOnThisServer() async throws {
        let authenticator = try await authenticated(
            at: "https://h.test/api/login", domain: "/api/ https://h.test/docs/private https://other.test/x http://h.test/plain/")
        for (url, inSpace) in [
            ("https://h.test/api/users", true),            // an absolute path
            ("https://h.test/docs/private/page", true),    // an absolute URI naming this server
            ("https://h.test/static/a.css", false),        // not listed
            ("https://h.test/plain/x", false),             // listed for http://h.test, another origin
            ("https://h.test/x", false),                   // listed for other.test only
        ] {
            let presented = try await presents(authenticator, url)
            XCTAssertEqual(presented, inSpace, url)
        }
    }

    /// A domain that names only other servers says nothing of this one: the URL's directory, as for Basic.
    func testADomainOfOtherServersOnlyFallsBackToTheDirectory() async throws {
        let authenticator = try await authenticated(at: "https://h.test/api/login", domain: "https://other.test/")
        let below = try await presents(authenticator, "https://h.test/api/users")
        let outside = try await presents(authenticator, "https://h.test/static/a.css")
        XCTAssertTrue(below)
        XCTAssertFalse(outside)
    }
}
