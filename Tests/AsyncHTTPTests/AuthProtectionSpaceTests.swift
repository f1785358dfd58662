import Logging
import XCTest

@testable import AsyncHTTP

/// What is presented before a challenge, and what a challenge removes, when one origin has several realms
/// (RFC 7617 §2.2, URLSession's protection spaces): driven through the authenticator's internal API, no network.
final class AuthProtectionSpaceTests: XCTestCase {
    let alice = HTTPCredentials(username: "alice", password: "a-pw")
    let bob = HTTPCredentials(username: "bob", password: "b-pw")

    func space(_ realm: String?) -> ProtectionSpace {
        ProtectionSpace(scheme: "https", host: "two.test", port: 443, realm: realm, authenticationScheme: .basic)
    }

    func exchange(_ path: String, own: HTTPCredentials? = nil) throws -> AuthExchange {
        AuthExchange(isProxy: false, scheme: "https", host: "two.test", port: 443, target: try HTTPURL("https://two.test\(path)"),
                     urlCredentials: nil, requestCredentials: own, allowedSchemes: nil)
    }

    func basicChallenge(_ realm: String) -> [AuthChallenge] {
        [AuthChallenge(scheme: "basic", parameters: ["realm": realm])]
    }

    /// An authenticator whose session store holds alice for realm "Admin", and which has seen her accepted there
    /// on `path`.
    func aliceAccepted(on path: String) async throws -> (Authenticator, InMemoryCredentialStore) {
        let store = InMemoryCredentialStore()
        await store.store(alice, for: space("Admin"))
        var configuration = AuthenticationConfiguration()
        configuration.sessionStore = store
        let authenticator = Authenticator(configuration: configuration, logger: Logger(label: "test"))
        var first = try exchange(path)
        let value = try await authenticator.respond(to: basicChallenge("Admin"), exchange: &first, method: "GET",
                                                    uri: path, body: [])
        XCTAssertEqual(value?.value, Authenticator.basic(alice))
        await authenticator.succeeded(first, status: 200)
        return (authenticator, store)
    }

    func preemptive(_ authenticator: Authenticator, _ exchange: inout AuthExchange) async throws -> String? {
        try await authenticator.preemptiveAuthorization(for: &exchange, method: "GET", uri: "/", body: [], basicRequested: false)
    }

    /// Basic credentials are presented before a challenge only at or below the directory they were accepted in.
    func testBasicIsPresentedOnlyUnderTheDirectoryItSucceededIn() async throws {
        let (authenticator, _) = try await aliceAccepted(on: "/admin/users")
        var below = try exchange("/admin/groups/1")
        let presented = try await preemptive(authenticator, &below)
        XCTAssertEqual(presented, Authenticator.basic(alice))
        var elsewhere = try exchange("/api/items")
        let none = try await preemptive(authenticator, &elsewhere)
        XCTAssertNil(none, "/api is not under /admin/: it may be another realm (RFC 7617 §2.2)")
    }

    /// Credentials presented before the challenge for one realm, and challenged for another, did not apply: they
    /// stay in the store and remembered (they used to be removed as refused, though never tried in their realm).
    func testAChallengeForAnotherRealmRemovesNothing() async throws {
        let (authenticator, store) = try await aliceAccepted(on: "/index.html")
        var api = try exchange("/api/items")
        let presented = try await preemptive(authenticator, &api)
        XCTAssertEqual(presented, Authenticator.basic(alice), "the root's directory covers /api/ (RFC 7617 §2.2)")
        let answer = try await authenticator.respond(to: basicChallenge("API"), exchange: &api, method: "GET",
                                                     uri: "/api/items", body: [])
        XCTAssertNil(answer, "nothing is known for realm API")
        XCTAssertEqual(api.failures, 0, "not a refusal")
        let kept = await store.credentials(for: space("Admin"))
        XCTAssertEqual(kept, alice, "alice's credentials for Admin were never refused")
        var again = try exchange("/admin/x")
        let still = try await preemptive(authenticator, &again)
        XCTAssertEqual(still, Authenticator.basic(alice), "and still presented where they apply")
    }

    /// A refusal in the realm presented still removes them.
    func testARefusalInTheSameRealmStillRemoves() async throws {
        let (authenticator, store) = try await aliceAccepted(on: "/admin/users")
        var again = try exchange("/admin/users")
        _ = try await preemptive(authenticator, &again)
        _ = try await authenticator.respond(to: basicChallenge("Admin"), exchange: &again, method: "GET",
                                            uri: "/admin/users", body: [])
        XCTAssertEqual(again.failures, 1)
        let kept = await store.credentials(for: space("Admin"))
        XCTAssertNil(kept, "refused in their own realm: removed")
    }

    /// A request's own credentials, accepted without a challenge, are not saved under the realm an earlier user
    /// was challenged in: no challenge named their realm (they used to replace alice's entry in the store).
    func testAPreemptiveSuccessDoesNotReplaceAnotherUsersStoredCredentials() async throws {
        let (authenticator, store) = try await aliceAccepted(on: "/index.html")
        var bobs = try exchange("/reports/q1", own: bob)
        let presented = try await preemptive(authenticator, &bobs)
        XCTAssertEqual(presented, Authenticator.basic(bob), "the request's own credentials win")
        await authenticator.succeeded(bobs, status: 200)
        let kept = await store.credentials(for: space("Admin"))
        XCTAssertEqual(kept, alice, "bob was never challenged for realm Admin")
        let count = await store.count
        XCTAssertEqual(count, 1)
    }
}
