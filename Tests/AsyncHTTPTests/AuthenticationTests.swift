import Foundation
import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// The auth middleware against real peers: httpbin's auth endpoints (Basic, hidden Basic, Bearer, Digest
/// with MD5 / SHA-256 / auth-int / stale nonces) and the NIO server's `/auth/basic`, which counts its
/// challenges and sets a cookie on each one.
final class AuthenticationTests: XCTestCase {
    func httpbin(_ path: String) throws -> String { try Peers.httpbin() + path }

    func makeClient(_ change: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        configuration.authentication.allowsBasicOverPlainHTTP = true  // the peers listen on plain loopback http
        change(&configuration)
        return HTTPClient(configuration: configuration)
    }

    func json(_ response: HTTPClientResponse) async throws -> [String: Any] {
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
                             String(decoding: bytes, as: UTF8.self))
    }

    // MARK: httpbin

    func testBasicFromTheURLUserinfoAndPerRequestCredentials() async throws {
        let client = trackedClient()
        let base = try Peers.httpbin()
        let withUserinfo = base.replacingOccurrences(of: "://", with: "://alice:wonder@") + "/basic-auth/alice/wonder"
        let first = try await client.send(HTTPClientRequest(url: withUserinfo))
        XCTAssertEqual(first.status, .ok)
        let firstUser = try await json(first)["user"] as? String
        XCTAssertEqual(firstUser, "alice")

        var request = HTTPClientRequest(url: try httpbin("/basic-auth/bob/builder"))
        request.credentials = HTTPCredentials(username: "bob", password: "builder")
        let second = try await client.send(request)
        XCTAssertEqual(second.status, .ok)
        let authenticated = try await json(second)["authenticated"] as? Bool
        XCTAssertEqual(authenticated, true)
    }

    func testNoCredentialsReturnsThe401AsItIs() async throws {
        let client = trackedClient()
        let response = try await client.send(HTTPClientRequest(url: try httpbin("/basic-auth/alice/wonder")))
        XCTAssertEqual(response.status.code, 401)
        XCTAssertNotNil(response.headers[.wwwAuthenticate])
    }

    func testWrongPasswordReturnsThe401AfterOneRetry() async throws {
        let client = trackedClient()
        var request = HTTPClientRequest(url: try httpbin("/basic-auth/alice/wonder"))
        request.credentials = HTTPCredentials(username: "alice", password: "wrong")
        let response = try await client.send(request)
        XCTAssertEqual(response.status.code, 401)
    }

    func testHiddenBasicAuthNeedsPreemptiveCredentials() async throws {
        let client = trackedClient()
        var request = HTTPClientRequest(url: try httpbin("/hidden-basic-auth/carol/secret"))
        request.credentials = HTTPCredentials(username: "carol", password: "secret")
        let unasked = try await client.send(request)
        XCTAssertEqual(unasked.status.code, 404, "hidden-basic-auth never challenges, so nothing is sent unasked")
        request.sendsCredentialsPreemptively = true
        let asked = try await client.send(request)
        XCTAssertEqual(asked.status, .ok)
        let askedUser = try await json(asked)["user"] as? String
        XCTAssertEqual(askedUser, "carol")
    }

    func testBearerTokenAndRefreshOnce() async throws {
        let refreshes = Counter()
        let client = trackedClient { configuration in
            configuration.authentication.refreshBearerToken = { _, rejected in
                refreshes.increment()
                return rejected == "expired" ? "fresh-token" : nil
            }
        }
        var request = HTTPClientRequest(url: try httpbin("/bearer"))
        request.bearerToken = "abc123"
        let ok = try await client.send(request)
        XCTAssertEqual(ok.status, .ok)
        let token = try await json(ok)["token"] as? String
        XCTAssertEqual(token, "abc123")
        XCTAssertEqual(refreshes.value, 0)

        // httpbin's /bearer accepts any token; a 401 comes only without one. Use the NIO route for a refusal.
        let server = try await NIOTestServer()
        var refused = HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p"))
        refused.bearerToken = "expired"
        let response = try await client.send(refused)
        XCTAssertEqual(response.status.code, 401, "the fresh token is refused too: returned as it is, after one refresh")
        XCTAssertEqual(refreshes.value, 1)
        XCTAssertEqual(server.challengesSent, 2)
        try await server.shutdown()
    }

    func testDigestMD5AndSHA256() async throws {
        let client = trackedClient()
        for algorithm in ["MD5", "SHA-256"] {
            var request = HTTPClientRequest(url: try httpbin("/digest-auth/auth/dave/pw-\(algorithm)/\(algorithm)"))
            request.credentials = HTTPCredentials(username: "dave", password: "pw-\(algorithm)")
            let response = try await client.send(request)
            XCTAssertEqual(response.status, .ok, algorithm)
            let digestUser = try await json(response)["user"] as? String
            XCTAssertEqual(digestUser, "dave", algorithm)
        }
    }

    func testDigestAuthInt() async throws {
        let client = trackedClient()
        var request = HTTPClientRequest(url: try httpbin("/digest-auth/auth-int/erin/pw/MD5"))
        request.credentials = HTTPCredentials(username: "erin", password: "pw")
        let response = try await client.send(request)
        XCTAssertEqual(response.status, .ok)
    }

    func testDigestStaleNonceIsAnsweredWithoutAskingAgain() async throws {
        let asked = Counter()
        let client = trackedClient { configuration in
            configuration.authentication.authenticationNeeded = { _ in
                asked.increment()
                return HTTPCredentials(username: "frank", password: "pw")
            }
        }
        // httpbin's stale_after=N: after N uses the nonce is reported stale.
        let url = try httpbin("/digest-auth/auth/frank/pw/MD5/never")
        for _ in 0..<3 {
            let response = try await client.send(HTTPClientRequest(url: url))
            XCTAssertEqual(response.status, .ok)
        }
        let staleURL = try httpbin("/digest-auth/auth/frank/pw/MD5/1")
        let stale = try await client.send(HTTPClientRequest(url: staleURL))
        XCTAssertEqual(stale.status, .ok)
        let again = try await client.send(HTTPClientRequest(url: staleURL))
        XCTAssertEqual(again.status, .ok, "a stale nonce is answered with the same credentials")
        XCTAssertEqual(asked.value, 1, "the callback was asked once; the session store answered the rest")
    }

    func testDigestNextNonceIsUsedForTheNextRequest() async throws {
        // RFC 7616 §3.5: each answer names the next nonce; the server takes every nonce once, at nc=00000001.
        // Without `nextnonce` the second request reuses n1 at nc=00000002 and is challenged again (stale).
        let server = try await NIOTestServer()
        let client = trackedClient()
        var nonces: [String] = []
        for _ in 0..<3 {
            var request = HTTPClientRequest(url: server.url("/auth/digest-nextnonce"))
            request.credentials = HTTPCredentials(username: "dave", password: "pw")
            let response = try await client.send(request)
            XCTAssertEqual(response.status, .ok)
            nonces.append(String(decoding: try await response.body.collect(upTo: 1024), as: UTF8.self))
        }
        XCTAssertEqual(nonces, ["nonce=n1", "nonce=n2", "nonce=n3"])
        XCTAssertEqual(server.challengesSent, 1, "only the first request was challenged")
        try await server.shutdown()
    }

    func testBasicOverPlainHTTPIsRefusedByDefault() async throws {
        let client = trackedClient { $0.authentication.allowsBasicOverPlainHTTP = false }
        var request = HTTPClientRequest(url: try httpbin("/basic-auth/alice/wonder"))
        request.credentials = HTTPCredentials(username: "alice", password: "wonder")
        await assertThrowsHTTPError(.authenticationFailed) { try await client.send(request) }
        // Without credentials of its own the request simply gets its 401.
        let plain = try await client.send(HTTPClientRequest(url: try httpbin("/basic-auth/alice/wonder")))
        XCTAssertEqual(plain.status.code, 401)
    }

    // MARK: NIO server: stores, callback, order, bodies

    func testChallengeSetCookieReachesTheRetry() async throws {
        let server = try await NIOTestServer()
        let client = trackedClient()
        var request = HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p"))
        request.credentials = HTTPCredentials(username: "u", password: "p")
        let response = try await client.send(request)
        XCTAssertEqual(response.status, .ok)
        let body = String(decoding: try await response.body.collect(upTo: 1024), as: UTF8.self)
        XCTAssertEqual(body, "user=u cookie=challenge=seen", "auth sits above cookies: the retry carries the cookie the challenge set")
        try await server.shutdown()
    }

    func testSessionStoreMakesLaterRequestsPreemptive() async throws {
        let server = try await NIOTestServer()
        let store = InMemoryCredentialStore()
        let client = trackedClient { $0.authentication.sessionStore = store }
        var request = HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p"))
        request.credentials = HTTPCredentials(username: "u", password: "p")
        _ = try await client.send(request).body.collect(upTo: 1024)
        XCTAssertEqual(server.challengesSent, 1)
        let stored = await store.count
        XCTAssertEqual(stored, 1)
        // No credentials on the request now: the success is remembered for the origin.
        for _ in 0..<3 {
            let response = try await client.send(HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p")))
            XCTAssertEqual(response.status, .ok)
        }
        XCTAssertEqual(server.challengesSent, 1, "credentials were presented before any new challenge")
        try await server.shutdown()
    }

    func testPreemptiveReuseCanBeTurnedOff() async throws {
        let server = try await NIOTestServer()
        let client = trackedClient { $0.authentication.presentsCredentialsAfterSuccess = false }
        var request = HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p"))
        request.credentials = HTTPCredentials(username: "u", password: "p")
        for _ in 0..<2 { _ = try await client.send(request).body.collect(upTo: 1024) }
        XCTAssertEqual(server.challengesSent, 2)
        try await server.shutdown()
    }

    func testConcurrentRequestsAskTheCallbackOnce() async throws {
        let server = try await NIOTestServer()
        let asked = Counter()
        let client = trackedClient { configuration in
            configuration.authentication.authenticationNeeded = { challenge in
                asked.increment()
                XCTAssertEqual(challenge.space.realm, "nio")
                XCTAssertEqual(challenge.space.authenticationScheme, .basic)
                // Hold the question open until every request has been challenged.
                try? await waitUntil("all 8 requests are challenged") { server.challengesSent >= 8 }
                return HTTPCredentials(username: "u", password: "p")
            }
        }
        let url = server.url("/auth/basic?user=u&pass=p")
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 { group.addTask { try await client.send(HTTPClientRequest(url: url)).status.code } }
            for try await code in group { XCTAssertEqual(code, 200) }
        }
        XCTAssertEqual(asked.value, 1)
        try await server.shutdown()
    }

    func testCallbackDecliningFailsEveryWaitingRequest() async throws {
        let server = try await NIOTestServer()
        let asked = Counter()
        let client = trackedClient { configuration in
            configuration.authentication.authenticationNeeded = { _ in
                asked.increment()
                // Hold the question open until every request has been challenged. A request whose challenge is
                // read after the decline came back began before it, so it fails with the others, unasked.
                try? await waitUntil("all 6 requests are challenged") { server.challengesSent >= 6 }
                return nil
            }
        }
        let url = server.url("/auth/basic?user=u&pass=p")
        let codes = await withTaskGroup(of: HTTPClientError.Code?.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    do { _ = try await client.send(HTTPClientRequest(url: url)); return nil } catch { return (error as? HTTPClientError)?.code }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(codes, Array(repeating: .authenticationFailed, count: 6))
        XCTAssertEqual(asked.value, 1)
        try await server.shutdown()
    }

    func testCancellingTheAskingRequestFailsItCleanly() async throws {
        let server = try await NIOTestServer()
        let asked = Counter()
        let client = trackedClient { configuration in
            configuration.authentication.authenticationNeeded = { _ in
                asked.increment()
                // A person who never answers: only cancellation ends this.
                try? await Task.sleep(for: .seconds(30))
                return Task.isCancelled ? nil : HTTPCredentials(username: "u", password: "p")
            }
        }
        let url = server.url("/auth/basic?user=u&pass=p")
        let task = Task { try await client.send(HTTPClientRequest(url: url)) }
        try await waitUntil("the callback is asked") { asked.value == 1 }
        let start = ContinuousClock.now
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("a cancelled request must not succeed")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .cancelled)
        }
        XCTAssertLessThan(start.duration(to: .now), .seconds(10), "cancellation ended the wait")
        try await server.shutdown()
    }

    func testStreamBodyCannotBeReplayedForAChallenge() async throws {
        let server = try await NIOTestServer()
        let client = trackedClient()
        var request = HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p"))
        request.method = .post
        request.credentials = HTTPCredentials(username: "u", password: "p")
        func oneShot() -> HTTPClientRequest.Body {
            .stream(AsyncStream<[UInt8]> { continuation in
                continuation.yield(Array("data".utf8))
                continuation.finish()
            }, length: .known(4))
        }
        request.body = oneShot()
        await assertThrowsHTTPError(.bodyNotReplayable) { try await client.send(request) }

        request.body = oneShot()
        request.sendsCredentialsPreemptively = true
        let response = try await client.send(request)
        XCTAssertEqual(response.status, .ok, "sent before the challenge, a one-shot body goes out once")

        // The callback is not asked for credentials that could never be sent (it was, and then the request failed).
        let asked = Counter()
        let asking = trackedClient { configuration in
            configuration.authentication.authenticationNeeded = { _ in
                asked.increment()
                return HTTPCredentials(username: "u", password: "p")
            }
        }
        var unasked = HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p"))
        unasked.method = .post
        unasked.body = oneShot()
        await assertThrowsHTTPError(.bodyNotReplayable) { try await asking.send(unasked) }
        XCTAssertEqual(asked.value, 0)
        // With no credentials anywhere, the 401 comes back as it is, as for any request.
        unasked.body = oneShot()
        let plain = try await trackedClient().send(unasked)
        XCTAssertEqual(plain.status.code, 401)
        try await server.shutdown()
    }

    func testCredentialFileIsPrivateAndSurvivesReopening() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-cred-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("credentials.json").path
        let space = ProtectionSpace(scheme: "http", host: "127.0.0.1", port: 80, realm: "nio", authenticationScheme: .basic)
        let file = try CredentialFile(path: path)
        try await file.store(HTTPCredentials(username: "u", password: "p"), for: space)
        let mode = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o777, 0o600)
        let reopened = try CredentialFile(path: path)
        let reread = await reopened.credentials(for: space)
        XCTAssertEqual(reread, HTTPCredentials(username: "u", password: "p"))
        try await reopened.removeCredentials(for: space)
        let removed = await (try CredentialFile(path: path)).credentials(for: space)
        XCTAssertNil(removed)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0 != "credentials.json" }
        XCTAssertEqual(leftovers, [], "no temporary files left behind")

        try Data("{not json".utf8).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try CredentialFile(path: path)) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .invalidRequest)
            XCTAssertFalse("\(error)".contains("not json"), "the file's contents are never echoed")
        }
    }

    func testPersistentStoreIsReadAndWritten() async throws {
        let server = try await NIOTestServer()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-cred-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("credentials.json").path
        let url = server.url("/auth/basic?user=u&pass=p")

        let first = trackedClient { configuration in
            configuration.authentication.persistentStore = try! CredentialFile(path: path)
            configuration.authentication.authenticationNeeded = { _ in HTTPCredentials(username: "u", password: "p") }
        }
        let firstStatus = try await first.send(HTTPClientRequest(url: url)).status
        XCTAssertEqual(firstStatus, .ok)

        // A new client, as in a new run: no callback, an empty session store, the same file.
        let second = trackedClient { configuration in
            configuration.authentication.persistentStore = try! CredentialFile(path: path)
        }
        let secondStatus = try await second.send(HTTPClientRequest(url: url)).status
        XCTAssertEqual(secondStatus, .ok)
        try await server.shutdown()
    }

    /// Logging out through the credential file logs out the running client: a success from the file put a copy in
    /// the session store, which answered the next challenge without asking (and a callback's answer, saved in both,
    /// the same). After `removeCredentials(for:)` the next request is challenged afresh and the callback asked.
    func testRemovingCredentialsFromTheCredentialFileLogsOutTheSessionStoreToo() async throws {
        let server = try await NIOTestServer()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-cred-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try CredentialFile(path: directory.appendingPathComponent("credentials.json").path)
        let space = ProtectionSpace(scheme: "http", host: "127.0.0.1", port: server.port, realm: "nio", authenticationScheme: .basic)
        try await file.store(HTTPCredentials(username: "u", password: "p"), for: space)
        let session = InMemoryCredentialStore()
        let asked = Counter()
        let client = trackedClient { configuration in
            configuration.authentication.sessionStore = session
            configuration.authentication.persistentStore = file
            configuration.authentication.authenticationNeeded = { _ in
                asked.increment()
                return HTTPCredentials(username: "u", password: "p")
            }
        }
        let url = server.url("/auth/basic?user=u&pass=p")
        func get() async throws -> HTTPResponse.Status {
            let response = try await client.send(HTTPClientRequest(url: url))
            _ = try await response.body.collect(upTo: 1024)
            return response.status
        }

        // From the file: 200, the callback not asked, a copy in the session store.
        let first = try await get()
        XCTAssertEqual(first, .ok)
        XCTAssertEqual(asked.value, 0)
        XCTAssertEqual(server.challengesSent, 1)
        let copied = await session.credentials(for: space)
        XCTAssertEqual(copied, HTTPCredentials(username: "u", password: "p"))

        try await file.removeCredentials(for: space)
        let second = try await get()
        XCTAssertEqual(second, .ok)
        XCTAssertEqual(server.challengesSent, 2, "challenged afresh")
        XCTAssertEqual(asked.value, 1, "the callback is asked again after the logout")

        // The callback's answer went to both stores; removing it from the file logs out again.
        let saved = await file.credentials(for: space)
        XCTAssertEqual(saved, HTTPCredentials(username: "u", password: "p"))
        try await file.removeCredentials(for: space)
        let third = try await get()
        XCTAssertEqual(third, .ok)
        XCTAssertEqual(server.challengesSent, 3)
        XCTAssertEqual(asked.value, 2)
        try await server.shutdown()
    }

    func testCredentialsDoNotFollowACrossOriginRedirect() async throws {
        let target = try await NIOTestServer()
        let origin = try await NIOTestServer()
        let client = trackedClient()
        var request = HTTPClientRequest(url: origin.url("/status/302?location=\(target.url("/headers"))"))
        request.credentials = HTTPCredentials(username: "u", password: "p")
        request.sendsCredentialsPreemptively = true
        let response = try await client.send(request)
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.history.count, 1)
        let seen = String(decoding: try await response.body.collect(upTo: 1 << 16), as: UTF8.self).lowercased()
        XCTAssertFalse(seen.contains("authorization"), "the other origin never saw the credentials:\n\(seen)")
        try await target.shutdown()
        try await origin.shutdown()
    }

    // MARK: Helpers

    private var clients: [HTTPClient] = []

    func trackedClient(_ change: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient {
        let client = makeClient(change)
        clients.append(client)
        return client
    }

    override func tearDown() async throws {
        for client in clients { await client.shutdown() }
        clients = []
    }
}

/// A thread-safe counter for callbacks.
final class Counter: Sendable {
    private let count = Locked(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
