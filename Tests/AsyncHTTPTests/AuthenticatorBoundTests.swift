import Logging
import XCTest

@testable import AsyncHTTP

/// The bound of the authenticator's remembered state (docs/authentication.md, "Bounds"), driven through its
/// internal API over many servers, without a network.
final class AuthenticatorBoundTests: XCTestCase {
    let credentials = HTTPCredentials(username: "u", password: "p")

    func exchange(host: String, own: Bool = true) throws -> AuthExchange {
        AuthExchange(isProxy: false, scheme: "https", host: host, port: 443, target: try HTTPURL("https://\(host)/"),
                     urlCredentials: nil, requestCredentials: own ? credentials : nil, allowedSchemes: nil)
    }

    func digestChallenge(realm: String) -> [AuthChallenge] {
        [AuthChallenge(scheme: "digest", parameters: ["realm": realm, "nonce": "n-\(realm)", "qop": "auth"])]
    }

    /// Answers a Digest challenge from `host` and has the server accept it: one `digest` and one `succeeded` entry.
    func authenticate(_ authenticator: Authenticator, host: String) async throws {
        var exchange = try exchange(host: host)
        let value = try await authenticator.respond(to: digestChallenge(realm: host), exchange: &exchange,
                                                    method: "GET", uri: "/", body: [])
        XCTAssertNotNil(value)
        await authenticator.succeeded(exchange, status: 200)
    }

    func testDigestAndSuccessMapsStayWithinTheDefaultLimit() async throws {
        XCTAssertEqual(Authenticator.stateLimit, 1_000)
        let authenticator = Authenticator(configuration: AuthenticationConfiguration(), logger: Logger(label: "test"))
        let hosts = (0..<1_500).map { "h\($0).test" }
        for host in hosts { try await authenticate(authenticator, host: host) }
        let counts = await authenticator.stateCounts
        XCTAssertEqual(counts.digest, 1_000)
        XCTAssertEqual(counts.succeeded, 1_000)

        // The most recent servers are remembered (credentials presented before the challenge), the oldest not.
        var recent = try exchange(host: hosts.last!, own: false)
        let preemptive = try await authenticator.preemptiveAuthorization(for: &recent, method: "GET", uri: "/",
                                                                         body: [], basicRequested: false)
        XCTAssertTrue(preemptive?.hasPrefix("Digest ") ?? false, "the newest server is still known")
        var oldest = try exchange(host: hosts.first!, own: false)
        let forgotten = try await authenticator.preemptiveAuthorization(for: &oldest, method: "GET", uri: "/",
                                                                        body: [], basicRequested: false)
        XCTAssertNil(forgotten, "the oldest server was evicted: it will be challenged again, nothing worse")
    }

    func testStoringAgainKeepsAnEntryRecent() async throws {
        let authenticator = Authenticator(configuration: AuthenticationConfiguration(), logger: Logger(label: "test"),
                                          stateLimit: 3)
        for host in ["a", "b", "c"] { try await authenticate(authenticator, host: host) }
        try await authenticate(authenticator, host: "a")  // a is stored again: b is now the oldest
        try await authenticate(authenticator, host: "d")
        for (host, known) in [("a", true), ("b", false), ("c", true), ("d", true)] {
            var probe = try exchange(host: host, own: false)
            let value = try await authenticator.preemptiveAuthorization(for: &probe, method: "GET", uri: "/",
                                                                        body: [], basicRequested: false)
            XCTAssertEqual(value != nil, known, host)
        }
        let counts = await authenticator.stateCounts
        XCTAssertEqual(counts.digest, 3)
        XCTAssertEqual(counts.succeeded, 3)
    }

    func testCallbackAnswersStayWithinTheLimit() async throws {
        var configuration = AuthenticationConfiguration()
        let given = credentials
        configuration.authenticationNeeded = { _ in given }
        let authenticator = Authenticator(configuration: configuration, logger: Logger(label: "test"), stateLimit: 10)
        // Answered by the callback and never confirmed: each leaves an `answered` entry (and a Digest one).
        for index in 0..<50 {
            var exchange = try exchange(host: "cb\(index).test", own: false)
            let value = try await authenticator.respond(to: digestChallenge(realm: "r\(index)"), exchange: &exchange,
                                                        method: "GET", uri: "/", body: [])
            XCTAssertNotNil(value)
        }
        let counts = await authenticator.stateCounts
        XCTAssertEqual(counts.answered, 10)
        XCTAssertEqual(counts.digest, 10)
        XCTAssertEqual(counts.asking, 0, "questions leave the map once answered")
    }

    func testMapEvictsLeastRecentlyStoredAndCompacts() {
        var map = RecentlyStoredMap<Int, String>(limit: 4)
        for key in 0..<10_000 { map[key % 7] = "\(key)" }  // many re-stores: the order queue must not grow
        XCTAssertEqual(map.count, 4)
        // The last four stored keys are 9996...9999 modulo 7.
        for key in 9_996..<10_000 { XCTAssertEqual(map[key % 7], "\(key)") }
        map[100] = nil
        map[9_999 % 7] = nil
        XCTAssertEqual(map.count, 3)
        map.removeAll { $0 == 9_998 % 7 }
        XCTAssertEqual(map.count, 2)
        map[1] = "x"; map[2] = "y"; map[3] = "z"
        XCTAssertEqual(map.count, 4)
        map.removeAll()
        XCTAssertTrue(map.isEmpty)
    }
}
