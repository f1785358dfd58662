import Foundation
import Logging
import XCTest

@testable import AsyncHTTP

/// Request-scoped log metadata, the log topics (ASIHTTPRequest's DEBUG_* switches), and that no secret is ever
/// logged, against nginx and httpbin with a capturing handler at `trace`.
final class LoggingTests: XCTestCase {
    var lines: Locked<[String]>!
    var clients: [HTTPClient] = []

    override func setUp() {
        lines = Locked([])
    }

    override func tearDown() async throws {
        for client in clients { await client.shutdown() }
        clients = []
    }

    private func makeClient(_ change: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        configuration.authentication.allowsBasicOverPlainHTTP = true  // the peers listen on plain loopback http
        let lines = self.lines!
        configuration.logger = Logger(label: "test") { _ in CapturingLogHandler(lines: lines) }
        configuration.logger.logLevel = .trace
        change(&configuration)
        let client = HTTPClient(configuration: configuration)
        clients.append(client)
        return client
    }

    private var logged: [String] { lines.withLock { $0 } }

    /// A presigned URL carries its signature and session token in the query: a log line that shows the URL masks
    /// them (it dropped only the userinfo). Through the throttle step's line and the retry's.
    func testQuerySecretsOfAURLAreMaskedInLogLines() async throws {
        let server = try await NIOTestServer()
        let client = makeClient { $0.retriesOnTimeout = 1 }
        let secrets = "X-Amz-Security-Token=SESSION-SECRET&X-Amz-Signature=SIGNATURE-SECRET&part=2"
        var limited = HTTPClientRequest(url: server.url("/hello?" + secrets))
        limited.maxBandwidthPerSecond = 10_000_000
        _ = try await client.send(limited).body.collect(upTo: 1 << 20)
        var slow = HTTPClientRequest(url: server.url("/slow-head?ms=400&" + secrets))
        slow.timeout = .milliseconds(150)
        _ = try? await client.send(slow)
        let lines = logged
        XCTAssertTrue(lines.contains { $0.contains("X-Amz-Security-Token=REDACTED") && $0.contains("part=2") },
                      "no line showed the URL: \(lines.joined(separator: "\n"))")
        for line in lines {
            XCTAssertFalse(line.contains("SESSION-SECRET") || line.contains("SIGNATURE-SECRET"), line)
        }
        try await server.shutdown()
    }

    func testEveryLineOfARequestCarriesItsNumberAndTopic() async throws {
        let (httpPort, _, _) = try Peers.nginx()
        let client = makeClient()
        for _ in 0..<2 {
            let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(httpPort)/small.txt"))
            _ = try await response.body.collect(upTo: 1 << 20)
        }
        let logged = self.logged
        XCTAssertFalse(logged.isEmpty)
        for line in logged {
            XCTAssertTrue(line.contains("ahttp.request="), line)
            XCTAssertTrue(line.contains("ahttp.topic="), line)
        }
        XCTAssertTrue(logged.contains { $0.contains("opened") && $0.contains("ahttp.request=1") && $0.contains("ahttp.topic=persistent-connections") },
                      logged.joined(separator: "\n"))
        XCTAssertTrue(logged.contains { $0.contains("reused") && $0.contains("ahttp.request=2") }, logged.joined(separator: "\n"))
        XCTAssertTrue(logged.contains { $0.contains("parked") && $0.contains("ahttp.request=1") }, logged.joined(separator: "\n"))
    }

    func testRequestNumberMatchesTheObserverEvents() async throws {
        let (httpPort, _, _) = try Peers.nginx()
        let ids = Locked<Set<UInt64>>([])
        struct IDs: HTTPClientObserver {
            let ids: Locked<Set<UInt64>>
            func observe(_ event: HTTPClientEvent) { ids.withLock { _ = $0.insert(event.requestID) } }
        }
        let client = makeClient { $0.observers = [IDs(ids: ids)] }
        let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(httpPort)/small.txt"))
        _ = try await response.body.collect(upTo: 1 << 20)
        let id = try XCTUnwrap(ids.withLock { $0 }.first)
        XCTAssertTrue(logged.allSatisfy { $0.contains("ahttp.request=\(id)") }, logged.joined(separator: "\n"))
    }

    func testLogTopicsKeepTheOtherTopicsQuiet() async throws {
        let (httpPort, _, _) = try Peers.nginx()
        let client = makeClient { $0.logTopics = [.requestStatus] }
        for _ in 0..<2 {
            // A body larger than what arrives with the head: read from the connection, it ends with a
            // request-status line ("response complete").
            let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(httpPort)/big.bin"))
            _ = try await response.body.collect(upTo: 16 << 20)
        }
        XCTAssertTrue(logged.contains { $0.contains("response complete") }, logged.joined(separator: "\n"))
        XCTAssertTrue(logged.allSatisfy { $0.contains("ahttp.topic=request-status") }, logged.joined(separator: "\n"))

        lines.withLock { $0.removeAll() }
        let connections = makeClient { $0.logTopics = [.persistentConnections] }
        for _ in 0..<2 {
            let response = try await connections.send(HTTPClientRequest(url: "http://127.0.0.1:\(httpPort)/big.bin"))
            _ = try await response.body.collect(upTo: 16 << 20)
        }
        XCTAssertTrue(logged.contains { $0.contains("reused") }, logged.joined(separator: "\n"))
        XCTAssertTrue(logged.allSatisfy { $0.contains("ahttp.topic=persistent-connections") }, logged.joined(separator: "\n"))
    }

    func testThrottlingAndFormDataTopics() async throws {
        let base = try Peers.httpbin()
        let client = makeClient()
        var request = HTTPClientRequest(url: base + "/post")
        request.setForm(URLEncodedForm([(name: "user", value: "bob"), (name: "password", value: "f-s3cret")]))
        request.maxBandwidthPerSecond = 10_000_000
        let response = try await client.send(request)
        _ = try await response.body.collect(upTo: 1 << 20)
        let logged = self.logged
        let form = logged.filter { $0.contains("ahttp.topic=form-data") }
        XCTAssertEqual(form.count, 1, logged.joined(separator: "\n"))
        XCTAssertTrue(form.first?.contains("fields [user, password]") ?? false, form.first ?? "")
        XCTAssertTrue(logged.contains { $0.contains("ahttp.topic=throttling") && $0.contains("10000000 bytes/s") }, logged.joined(separator: "\n"))
        for line in logged { XCTAssertFalse(line.contains("f-s3cret"), line) }
    }

    func testNoSecretInAnyLogLineAtTrace() async throws {
        let base = try Peers.httpbin()
        let client = makeClient()
        // Basic credentials, a 401 answered by the authenticator.
        var basic = HTTPClientRequest(url: base + "/basic-auth/alice/b-s3cret")
        basic.credentials = HTTPCredentials(username: "alice", password: "b-s3cret")
        var response = try await client.send(basic)
        _ = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(response.status.code, 200)
        // Credentials in the URL's userinfo.
        let userinfo = base.replacingOccurrences(of: "://", with: "://carol:u-s3cret@") + "/basic-auth/carol/u-s3cret"
        response = try await client.send(HTTPClientRequest(url: userinfo))
        _ = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(response.status.code, 200)
        // A bearer token.
        var bearer = HTTPClientRequest(url: base + "/bearer")
        bearer.bearerToken = "t-s3cret"
        response = try await client.send(bearer)
        _ = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(response.status.code, 200)
        // Cookies: one the server sets (into the jar, sent back on the redirect hop) and one the caller sets.
        response = try await client.send(HTTPClientRequest(url: base + "/cookies/set?session=c-s3cret"))
        _ = try await response.body.collect(upTo: 1 << 20)
        var cookie = HTTPClientRequest(url: base + "/cookies")
        cookie.headers[.cookie] = "own=o-s3cret"
        response = try await client.send(cookie)
        let echoed = String(decoding: try await response.body.collect(upTo: 1 << 20), as: UTF8.self)
        XCTAssertTrue(echoed.contains("c-s3cret"), "the jar sent the cookie: \(echoed)")

        let logged = self.logged
        XCTAssertTrue(logged.contains { $0.contains("ahttp.topic=authentication") }, logged.joined(separator: "\n"))
        let encoded = ["alice:b-s3cret", "carol:u-s3cret"].map { Data($0.utf8).base64EncodedString() }
        for line in logged {
            XCTAssertFalse(line.contains("s3cret"), line)
            for secret in encoded { XCTAssertFalse(line.contains(secret), line) }
        }
    }
}
