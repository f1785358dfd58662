import Foundation
import HTTPTypes
import Logging
import XCTest

@testable import AsyncHTTP

/// Credentials go only where they were meant to, are forgotten when the session is cleared, never show up in
/// text, never cross plain http unless allowed, and are remembered only when a response shows they were
/// accepted. Against real peers: the NIO server (`/auth/basic`, `/headers`, `/status/N`), httpbin (Digest),
/// and a scripted raw server for the responses no proper server sends after a challenge.
final class CredentialSafetyTests: XCTestCase {
    func makeClient(_ change: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        configuration.authentication.allowsBasicOverPlainHTTP = true  // the peers listen on plain loopback http
        change(&configuration)
        let client = HTTPClient(configuration: configuration)
        clients.append(client)
        return client
    }

    static func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// The `Authorization` lines the NIO server's `/headers` saw.
    func authorizationLines(_ response: HTTPClientResponse) async throws -> [String] {
        let text = String(decoding: try await response.body.collect(upTo: 1 << 16), as: UTF8.self)
        return text.split(separator: "\n").filter { $0.lowercased().hasPrefix("authorization:") }.map {
            String($0.dropFirst("authorization:".count)).trimmingCharacters(in: .whitespaces)
        }
    }

    // MARK: 1. The request's own credentials win

    func testOwnCredentialsWinOverARememberedSuccess() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let client = makeClient()
        var first = HTTPClientRequest(url: server.url("/auth/basic?user=alice&pass=a-pw"))
        first.credentials = HTTPCredentials(username: "alice", password: "a-pw")
        let firstStatus = try await client.send(first).status
        XCTAssertEqual(firstStatus, .ok)

        // Under /auth/, where alice succeeded (Basic covers that directory, RFC 7617 §2.2), the server answers the
        // user whose credentials came, and counts a challenge for any other: what went out before the challenge.
        func sentBefore(_ request: HTTPClientRequest) async throws -> String {
            let challenges = server.challengesSent
            let body = String(decoding: try await client.send(request).body.collect(upTo: 1024), as: UTF8.self)
            XCTAssertEqual(server.challengesSent, challenges, "presented before any challenge: \(body)")
            return body
        }

        // A request with nothing of its own: alice's success is presented before any challenge.
        let plain = try await sentBefore(HTTPClientRequest(url: server.url("/auth/basic?user=alice&pass=a-pw")))
        XCTAssertTrue(plain.hasPrefix("user=alice "), plain)

        // Per-request credentials: bob's, never alice's.
        var bob = HTTPClientRequest(url: server.url("/auth/basic?user=bob&pass=b-pw"))
        bob.credentials = HTTPCredentials(username: "bob", password: "b-pw")
        let bobBody = try await sentBefore(bob)
        XCTAssertTrue(bobBody.hasPrefix("user=bob "), "the origin takes Basic: bob's own credentials go first: \(bobBody)")

        // URL userinfo: carol's, never alice's.
        let carolURL = server.url("/auth/basic?user=carol&pass=c-pw").replacingOccurrences(of: "://", with: "://carol:c-pw@")
        let carolBody = try await sentBefore(HTTPClientRequest(url: carolURL))
        XCTAssertTrue(carolBody.hasPrefix("user=carol "), carolBody)

        // Own credentials that are refused are not replaced by the session's: the 401 comes back.
        var typo = HTTPClientRequest(url: server.url("/auth/basic?user=alice&pass=a-pw"))
        typo.credentials = HTTPCredentials(username: "alice", password: "typo")
        let refused = try await client.send(typo).status.code
        XCTAssertEqual(refused, 401, "the session's alice answered a request that brought its own credentials")

        // And bob, challenged, authenticates as bob.
        var bobAuth = HTTPClientRequest(url: server.url("/auth/basic?user=bob&pass=b-pw"))
        bobAuth.credentials = HTTPCredentials(username: "bob", password: "b-pw")
        let body = String(decoding: try await client.send(bobAuth).body.collect(upTo: 1024), as: UTF8.self)
        XCTAssertTrue(body.hasPrefix("user=bob"), body)
    }

    // MARK: 2. Clearing the session forgets what it derived

    func testClearingTheSessionStoreForgetsRememberedSuccesses() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let store = InMemoryCredentialStore()
        let asked = Counter()
        let client = makeClient { configuration in
            configuration.authentication.sessionStore = store
            configuration.authentication.authenticationNeeded = { _ in
                asked.increment()
                return HTTPCredentials(username: "u", password: "p")
            }
        }
        let url = server.url("/auth/basic?user=u&pass=p")
        for _ in 0..<2 {
            let status = try await client.send(HTTPClientRequest(url: url)).status
            XCTAssertEqual(status, .ok)
        }
        XCTAssertEqual(asked.value, 1)
        XCTAssertEqual(server.challengesSent, 1, "the second request was authenticated before any challenge")

        await store.removeAll()  // log out

        let afterLogout = try await authorizationLines(try await client.send(HTTPClientRequest(url: server.url("/headers"))))
        XCTAssertEqual(afterLogout, [], "nothing remembered is sent after the session was cleared")
        let again = try await client.send(HTTPClientRequest(url: url)).status
        XCTAssertEqual(again, .ok)
        XCTAssertEqual(server.challengesSent, 2, "challenged afresh")
        XCTAssertEqual(asked.value, 2, "the callback is asked again: its earlier answer is forgotten")
    }

    func testClearingTheSessionStoreForgetsDigestState() async throws {
        let store = InMemoryCredentialStore()
        let client = makeClient { $0.authentication.sessionStore = store }
        let base = try Peers.httpbin()
        var request = HTTPClientRequest(url: base + "/digest-auth/auth/dora/pw/MD5/never")
        request.credentials = HTTPCredentials(username: "dora", password: "pw")
        let status = try await client.send(request).status
        XCTAssertEqual(status, .ok)
        let before = try await httpbinAuthorization(client, base)
        XCTAssertTrue(before?.hasPrefix("Digest ") ?? false, "a Digest success is presented before the challenge")

        await store.removeAll()
        let after = try await httpbinAuthorization(client, base)
        XCTAssertNil(after, "the Digest nonce and credentials are forgotten with the session")
    }

    func testRemovingOneSpaceForgetsItsRememberedSuccess() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let store = InMemoryCredentialStore()
        let client = makeClient { $0.authentication.sessionStore = store }
        var request = HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p"))
        request.credentials = HTTPCredentials(username: "u", password: "p")
        _ = try await client.send(request).body.collect(upTo: 1024)
        let port = try HTTPURL(server.url("/")).port
        await store.removeCredentials(for: ProtectionSpace(
            scheme: "http", host: "127.0.0.1", port: port, realm: "nio", authenticationScheme: .basic))
        // Where it succeeded (Basic is presented before a challenge only under that URL's directory, RFC 7617 §2.2).
        let after = try await client.send(HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p"))).status
        XCTAssertEqual(after.code, 401, "nothing remembered is presented, and the store has nothing to answer with")
        XCTAssertEqual(server.challengesSent, 2)
    }

    func testClearSessionForgetsWithoutASessionStore() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let client = makeClient { $0.authentication.sessionStore = nil }
        var request = HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p"))
        request.credentials = HTTPCredentials(username: "u", password: "p")
        _ = try await client.send(request).body.collect(upTo: 1024)
        // Under the directory it succeeded in (RFC 7617 §2.2), the success is presented before any challenge.
        let unchallenged = HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p"))
        let before = try await client.send(unchallenged).status
        XCTAssertEqual(before, .ok)
        XCTAssertEqual(server.challengesSent, 1, "presented before the challenge")
        await client.authenticator.clearSession()  // what HTTPClient.clearAuthenticationSession() calls
        let after = try await client.send(unchallenged).status
        XCTAssertEqual(after.code, 401, "forgotten: challenged, and nothing to answer with")
        XCTAssertEqual(server.challengesSent, 2)
    }

    func testClearAuthenticationSessionForgetsAndClosesIdleConnections() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let client = makeClient()
        var request = HTTPClientRequest(url: server.url("/auth/basic?user=u&pass=p"))
        request.credentials = HTTPCredentials(username: "u", password: "p")
        _ = try await client.send(request).body.collect(upTo: 1024)
        let idleBefore = await client.transport.pool.idleCount
        XCTAssertEqual(idleBefore, 1)
        await client.clearAuthenticationSession()
        let idleAfter = await client.transport.pool.idleCount
        XCTAssertEqual(idleAfter, 0, "a connection authenticated at the server (NTLM) must not outlive the logout")
        let after = try await authorizationLines(try await client.send(HTTPClientRequest(url: server.url("/headers"))))
        XCTAssertEqual(after, [])
        XCTAssertEqual(server.connectionsAccepted, 2)
    }

    func testALogoutClosesAConnectionInUseWhenItsResponseEnds() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let client = makeClient()
        // A body larger than one read: the connection is still in use when the user logs out.
        let response = try await client.send(HTTPClientRequest(url: server.url("/bytes?n=4194304")))
        await client.clearAuthenticationSession()
        let body = try await response.body.collect(upTo: 8 << 20)
        XCTAssertEqual(body.count, 4_194_304, "the request in flight finishes")
        let idle = await client.transport.pool.idleCount
        XCTAssertEqual(idle, 0, "a connection in use at the logout (NTLM authenticates connections) was kept for reuse")
        _ = try await client.send(HTTPClientRequest(url: server.url("/hello"))).body.collect(upTo: 1024)
        XCTAssertEqual(client.connectionsOpened, 2, "the next request opens a connection of its own")
        // Connections opened after the logout are kept as usual.
        let idleAfter = await client.transport.pool.idleCount
        XCTAssertEqual(idleAfter, 1)
    }

    func httpbinAuthorization(_ client: HTTPClient, _ base: String) async throws -> String? {
        let response = try await client.send(HTTPClientRequest(url: base + "/headers"))
        let bytes = try await response.body.collect(upTo: 1 << 16)
        let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        return (object?["headers"] as? [String: String])?["Authorization"]
    }

    // MARK: 3. No secret in text

    func testResponseURLAndHistoryKeepTheUserButNotThePassword() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let client = makeClient()
        let url = server.url("/status/302?location=/headers").replacingOccurrences(of: "://", with: "://alice:s3cret-pw@")
        let response = try await client.send(HTTPClientRequest(url: url))
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.history.count, 1)
        for shown in [response.url, response.originalURL] + response.history.map(\.url) {
            XCTAssertEqual(shown.user, "alice")
            XCTAssertNil(shown.password)
            XCTAssertFalse(shown.description.contains("s3cret"), shown.description)
        }
        XCTAssertEqual(response.url.path, "/headers")
    }

    func testRedirectErrorsNeverShowThePassword() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let client = makeClient()
        func withUserinfo(_ path: String) -> String {
            server.url(path).replacingOccurrences(of: "://", with: "://alice:s3cret-pw@")
        }
        var tooMany = HTTPClientRequest(url: withUserinfo("/status/302?location=/headers"))
        tooMany.redirectPolicy = RedirectPolicy(maxRedirects: 0)
        let first = await assertThrowsHTTPError(.tooManyRedirects) { try await client.send(tooMany) }
        XCTAssertFalse("\(first.map { "\($0)" } ?? "")".contains("s3cret"), "\(first.map { "\($0)" } ?? "")")
        XCTAssertTrue(first?.message.contains("/headers") ?? false, "the message still names the URLs")

        let ftp = HTTPClientRequest(url: withUserinfo("/status/302?location=ftp%3A%2F%2Fbob%3Ahunter2%40files.test%2F"))
        let refused = await assertThrowsHTTPError(.redirectRefused) { try await client.send(ftp) }
        XCTAssertFalse("\(refused.map { "\($0)" } ?? "")".contains("hunter2"), "\(refused.map { "\($0)" } ?? "")")

        let broken = HTTPClientRequest(url: withUserinfo("/status/302?location=http%3A%2F%2Fbob%3Ahunter2%40%5B%3A%3A1"))
        let malformed = await assertThrowsHTTPError(.malformedResponse) { try await client.send(broken) }
        let text = "\(malformed.map { "\($0)" } ?? "")"
        // (The redirecting URL's own query holds the Location percent-encoded, as the test wrote it.)
        XCTAssertFalse(text.contains("bob:hunter2") || text.contains("s3cret"), text)
    }

    func testLogsNeverShowSecrets() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let lines = Locked<[String]>([])
        let client = makeClient { configuration in
            configuration.logger = Logger(label: "test") { _ in CapturingLogHandler(lines: lines) }
            configuration.logger.logLevel = .trace
            configuration.authentication.authenticationNeeded = { _ in HTTPCredentials(username: "u", password: "p-s3cret") }
        }
        let url = server.url("/status/302?location=%2Fauth%2Fbasic%3Fuser%3Du%26pass%3Dp-s3cret")
            .replacingOccurrences(of: "://", with: "://u:wrong-s3cret@")
        let status = try await client.send(HTTPClientRequest(url: url)).status
        XCTAssertEqual(status, .ok)
        let logged = lines.withLock { $0 }
        XCTAssertFalse(logged.isEmpty)
        let secrets = ["s3cret", String(Self.basic("u", "p-s3cret").dropFirst(6)), String(Self.basic("u", "wrong-s3cret").dropFirst(6))]
        for line in logged {
            for secret in secrets { XCTAssertFalse(line.contains(secret), line) }
        }
    }

    func testRedactionHelpers() throws {
        let url = try HTTPURL("http://alice:s3cret@example.com:8080/a?b=c#frag")
        XCTAssertEqual(url.redactedDescription, "http://example.com:8080/a?b=c")
        XCTAssertEqual(url.removingPassword.description, "http://alice@example.com:8080/a?b=c")
        XCTAssertEqual(url.removingPassword.fragment, "frag")
        XCTAssertEqual(HTTPURL.redacting("ftp://bob:hunter2@files.test/x"), "ftp://files.test/x")
        XCTAssertEqual(HTTPURL.redacting("http://bob:hunter2@[::1"), "http://[::1")
        XCTAssertEqual(HTTPURL.redacting("see http://a:b@h/ and https://c:d@e/f"), "see http://h/ and https://e/f")
        XCTAssertEqual(HTTPURL.redacting("/relative/path?q=a@b"), "/relative/path?q=a@b")
        XCTAssertEqual(HTTPURL.redacting("mailto:x@y"), "mailto:x@y")
        // A password holding what a URL does not allow unencoded: the URL does not parse, and its userinfo
        // still goes.
        for password in ["my secret", "p\u{E4}ssword", "hunter2#x", "pa/ss", "pa?ss", "say\"hi\""] {
            let text = "https://alice:\(password)@api.test/x"
            XCTAssertEqual(HTTPURL.redacting(text), "https://api.test/x", text)
            XCTAssertFalse(HTTPClientRequest(url: text).description.contains(password), text)
        }
        // An '@' in a path after a host (and a port) is not userinfo.
        XCTAssertEqual(HTTPURL.redacting("https://medium.test/@user/post"), "https://medium.test/@user/post")
        XCTAssertEqual(HTTPURL.redacting("https://h.test:8080/@me"), "https://h.test:8080/@me")
        XCTAssertEqual(HTTPURL.redacting("http://[::1]:80/@me"), "http://[::1]:80/@me")
        // The parser's own message quotes neither the password read as a port nor a userinfo character.
        for text in ["https://alice:hunter2#1@api.test/", "https://alice:pa ss@api.test/"] {
            XCTAssertThrowsError(try HTTPURL(text)) { error in
                XCTAssertFalse("\(error)".contains("hunter2") || "\(error)".contains("pa ss"), "\(error)")
            }
        }

        var fields = HTTPFields()
        fields[.authorization] = "Basic dTpw"
        fields[.proxyAuthorization] = "Digest username=\"u\", response=\"abc\""
        fields[.cookie] = "session=abc"
        fields[.setCookie] = "session=abc; Path=/"
        fields[.accept] = "*/*"
        let redacted = fields.redactingSecrets()
        XCTAssertEqual(redacted[.authorization], "Basic <redacted>")
        XCTAssertEqual(redacted[.proxyAuthorization], "Digest <redacted>")
        XCTAssertEqual(redacted[.cookie], "<redacted>")
        XCTAssertEqual(redacted[.setCookie], "<redacted>")
        XCTAssertEqual(redacted[.accept], "*/*")
        let custom = HTTPField.Name("X-Api-Key")!
        fields[custom] = "k-123"
        XCTAssertEqual(fields.redactingSecrets(also: [custom])[custom], "<redacted>")
    }

    // MARK: 4. Secrets never cross plain http unless allowed

    func testPlainHTTPGuardCoversPreemptiveBasicAndBearer() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let strict = makeClient { $0.authentication.allowsBasicOverPlainHTTP = false }
        var basic = HTTPClientRequest(url: server.url("/headers"))
        basic.credentials = HTTPCredentials(username: "u", password: "p")
        basic.sendsCredentialsPreemptively = true
        await assertThrowsHTTPError(.authenticationFailed) { try await strict.send(basic) }

        var bearer = HTTPClientRequest(url: server.url("/headers"))
        bearer.bearerToken = "tok-secret"
        let error = await assertThrowsHTTPError(.authenticationFailed) { try await strict.send(bearer) }
        XCTAssertFalse("\(error.map { "\($0)" } ?? "")".contains("tok-secret"))

        // Allowed: both go out.
        let lenient = makeClient()
        let basicLines = try await authorizationLines(try await lenient.send(basic))
        XCTAssertEqual(basicLines, [Self.basic("u", "p")])
        let bearerLines = try await authorizationLines(try await lenient.send(bearer))
        XCTAssertEqual(bearerLines, ["Bearer tok-secret"])
    }

    // MARK: 5. Only accepted credentials are remembered

    func testOnlyAcceptedCredentialsAreRememberedAndSaved() async throws {
        // Every request gets a Basic challenge, except each retry with credentials, which gets a 500, then a
        // 407 (a proxy's refusal, not the origin's acceptance), then a 404.
        let answers = ["500 Internal Server Error", "407 Proxy Authentication Required", "404 Not Found"]
        let seen = Locked(0)
        let server = try FaultServer(script: FaultScript { _, _ in
            let index = seen.withLock { count in
                defer { count += 1 }
                return count
            }
            if index % 2 == 0 {
                return [.response("who?", status: "401 Unauthorized", headers: [#"WWW-Authenticate: Basic realm="fault""#])]
            }
            let status = answers[min(index / 2, answers.count - 1)]
            return [.response("no", status: status, headers: [#"Proxy-Authenticate: Basic realm="proxy""#])]
        })
        defer { server.stop() }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-safety-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("credentials.json").path
        let store = InMemoryCredentialStore()
        let client = makeClient { configuration in
            configuration.authentication.sessionStore = store
            configuration.authentication.persistentStore = try! CredentialFile(path: path)
            configuration.authentication.authenticationNeeded = { _ in HTTPCredentials(username: "u", password: "p") }
        }
        let space = ProtectionSpace(scheme: "http", host: "127.0.0.1", port: server.port, realm: "fault",
                                    authenticationScheme: .basic)
        for expected in [500, 407, 404] {
            let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
            XCTAssertEqual(response.status.code, expected)
            let saved = await (try CredentialFile(path: path)).credentials(for: space)
            XCTAssertNil(saved, "a \(expected) does not show the credentials were accepted: nothing is saved")
            let kept = await store.count
            XCTAssertEqual(kept, 0, "nor kept in the session after a \(expected)")
        }
        XCTAssertEqual(server.requestsReceived, 6, "every request was challenged: nothing was presented before it")
    }

    // MARK: Helpers

    private var clients: [HTTPClient] = []

    override func tearDown() async throws {
        for client in clients { await client.shutdown() }
        clients = []
    }
}

/// Keeps every log line, with its metadata, for tests that check what was logged.
struct CapturingLogHandler: LogHandler {
    let lines: Locked<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let text = "\(event.level) \(event.message) "
            + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            + (event.error.map { " error=\($0)" } ?? "")
        lines.withLock { $0.append(text) }
    }
}
