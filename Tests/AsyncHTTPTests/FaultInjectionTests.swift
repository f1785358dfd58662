import XCTest
@testable import AsyncHTTP

/// Faults at every phase of a request, from the raw-socket ``FaultServer``: resets (RST) on accept, after the
/// request, mid-head and mid-body; half-closed sockets; a body dripping past the total deadline; a server that
/// never reads an upload; a CONNECT proxy that drops the tunnel. Each case must end in a typed
/// `HTTPClientError` (or a correct recovery) within its bound, leave no descriptor open once the client and the
/// server are gone, retry an idempotent request once on a stale keep-alive connection, and never send a POST
/// twice (the server counts connections and requests). What `FaultServerTests` already covers (FIN at each
/// phase, garbage, the whole response dripping, never responding, never reading with an inactivity timeout,
/// stale FIN retry) is not repeated here.
final class FaultInjectionTests: XCTestCase {
    /// Both ways a connection ending shows up: a FIN (`connectionClosed`) or a reset (`ioFailure` or
    /// `connectionClosed`, depending on whether the RST or the FIN-equivalent was seen first).
    static let connectionEnded: Set<HTTPClientError.Code> = [.connectionClosed, .ioFailure]

    static func configuration(_ configure: (inout HTTPClient.Configuration) -> Void) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.inactivityTimeout = .seconds(5) // bounded: no test can hang
        configuration.connectTimeout = .seconds(5)
        configuration.proxy = .none
        configure(&configuration)
        return configuration
    }

    /// Starts the process-wide event loop (its descriptors live as long as the process) with one request
    /// and one client that come and go, so it does not count as a leak; and sleeps once, since Dispatch
    /// makes its timer descriptor on the first `Task.sleep` (which `waitUntil` uses).
    func warmUp() async throws {
        try await Task.sleep(for: .milliseconds(1))
        let server = try FaultServer(script: FaultScript { _, _ in [.response("ok")] })
        defer { server.stop() }
        let client = HTTPClient(configuration: Self.configuration { _ in })
        _ = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")).body.collect(upTo: 100)
        await client.shutdown()
    }

    /// Runs `body` with a fresh server and client; afterwards (client shut down, server stopped) the open
    /// descriptors must be what they were before both existed, and the whole case must have taken less
    /// than `limit`.
    func withFault(
        _ script: FaultScript,
        limit: Duration = .seconds(3),
        configure: (inout HTTPClient.Configuration, _ serverPort: Int) -> Void = { _, _ in },
        file: StaticString = #filePath, line: UInt = #line,
        _ body: (FaultServer, HTTPClient) async throws -> Void
    ) async throws {
        try await warmUp()
        let before = openDescriptorCount()
        let server = try FaultServer(script: script)
        let client = HTTPClient(configuration: Self.configuration { configure(&$0, server.port) })
        let start = ContinuousClock.now
        var failure: (any Error)?
        do { try await body(server, client) } catch { failure = error }
        let elapsed = start.duration(to: .now)
        await client.shutdown()
        server.stop()
        XCTAssertLessThan(elapsed, limit, "finished within its bound", file: file, line: line)
        XCTAssertEqual(openDescriptorCount(), before, "no descriptor leaked", file: file, line: line)
        if let failure { throw failure }
    }

    /// Expects a typed error whose code is one of `codes`; returns it.
    @discardableResult
    func expectError(
        _ codes: Set<HTTPClientError.Code>, file: StaticString = #filePath, line: UInt = #line,
        _ body: () async throws -> Void
    ) async -> HTTPClientError? {
        do {
            try await body()
            XCTFail("expected one of \(codes.map(\.rawValue).sorted())", file: file, line: line)
        } catch let error as HTTPClientError {
            XCTAssertTrue(codes.contains(error.code), "expected one of \(codes.map(\.rawValue).sorted()), got \(error)", file: file, line: line)
            return error
        } catch {
            XCTFail("expected an HTTPClientError, got \(type(of: error)): \(error)", file: file, line: line)
        }
        return nil
    }

    /// Two GETs of the fault server's `/` in a row, the second on the first's connection if it is kept: the first
    /// body, and the second's status and body.
    static func twoGETs(_ server: FaultServer, _ client: HTTPClient) async throws -> (first: [UInt8], second: (status: Int, body: [UInt8])) {
        let url = "http://127.0.0.1:\(server.port)/"
        let first = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
        let response = try await client.send(HTTPClientRequest(url: url))
        return (first, (response.status.code, try await response.body.collect(upTo: 100)))
    }

    static func post(_ url: String) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = .post
        request.body = .bytes(Array("order=1".utf8))
        return request
    }

    // MARK: Resets on a fresh connection: a typed error, never a retry

    func testResetOnAcceptFailsGETAndPOSTOnceEach() async throws {
        try await withFault(.resetOnAccept) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            // connectFailed when the RST is already there as the connect completes (SO_ERROR ECONNRESET).
            let codes = Self.connectionEnded.union([.connectFailed])
            await expectError(codes) { _ = try await client.send(HTTPClientRequest(url: url)) }
            await expectError(codes) { _ = try await client.send(Self.post(url)) }
            XCTAssertEqual(server.connectionsAccepted, 2, "a fresh connection that fails is not retried")
            XCTAssertEqual(server.requestsReceived, 0)
        }
    }

    func testResetAfterTheRequestIsReadFailsWithoutARetry() async throws {
        try await withFault(.resetAfterRequest) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            await expectError(Self.connectionEnded) { _ = try await client.send(HTTPClientRequest(url: url)) }
            await expectError(Self.connectionEnded) { _ = try await client.send(Self.post(url)) }
            XCTAssertEqual(server.connectionsAccepted, 2)
            XCTAssertEqual(server.requestsReceived, 2, "each request reached the server exactly once")
        }
    }

    func testResetMidHeadIsATypedErrorNotAResponse() async throws {
        try await withFault(.resetMidHead) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            await expectError(Self.connectionEnded.union([.malformedResponse])) {
                _ = try await client.send(HTTPClientRequest(url: url))
            }
            await expectError(Self.connectionEnded.union([.malformedResponse])) { _ = try await client.send(Self.post(url)) }
            XCTAssertEqual(server.connectionsAccepted, 2, "response bytes arrived: never retried")
            XCTAssertEqual(server.requestsReceived, 2)
        }
    }

    func testResetMidBodyIsATypedErrorNotAShortBody() async throws {
        try await withFault(.resetMidBody) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            for request in [HTTPClientRequest(url: url), Self.post(url)] {
                // The RST can overtake the head (the kernel drops unread data on a reset), so the error may
                // come from send or from the body.
                await expectError(Self.connectionEnded) {
                    let response = try await client.send(request)
                    let body = try await response.body.collect(upTo: 1000)
                    XCTFail("a 40-byte body of a promised 100 passed for complete: \(body.count)")
                }
            }
            XCTAssertEqual(server.connectionsAccepted, 2)
            XCTAssertEqual(server.requestsReceived, 2)
        }
    }

    // MARK: Resets on a reused keep-alive connection: GET once more, POST never

    func testStaleKeepAliveResetIsRetriedOnceForGET() async throws {
        try await withFault(.staleKeepAliveReset) { server, client in
            let (first, second) = try await Self.twoGETs(server, client)
            XCTAssertEqual(first, Array("hello".utf8))
            // Read on the reused connection, answered with RST; sent once more on a new connection.
            XCTAssertEqual(second.body, Array("hello".utf8))
            XCTAssertEqual(server.connectionsAccepted, 2, "retried once, on a new connection")
            XCTAssertEqual(server.requestsReceived, 3)
        }
    }

    func testStaleKeepAliveResetNeverSendsAPOSTTwice() async throws {
        try await withFault(.staleKeepAliveReset) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            _ = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            await expectError(Self.connectionEnded) { _ = try await client.send(Self.post(url)) }
            XCTAssertEqual(server.connectionsAccepted, 1, "no second connection: the POST was not repeated")
            XCTAssertEqual(server.requestsReceived, 2)
            let posts = server.requestHeads.filter { $0.hasPrefix("POST ") }
            XCTAssertEqual(posts.count, 1)
        }
    }

    func testRequestTimeoutOnAReusedConnectionIsSentOnceMoreForAGET() async throws {
        try await withFault(.requestTimeoutOnReuse) { server, client in
            // The reused connection answers 408 and closes: the GET goes out again on a new connection.
            let (_, second) = try await Self.twoGETs(server, client)
            XCTAssertEqual(second.status, 200)
            XCTAssertEqual(second.body, Array("hello".utf8))
            XCTAssertEqual(server.connectionsAccepted, 2, "sent once more, on a new connection")
            XCTAssertEqual(server.requestsReceived, 3)
        }
    }

    func testRequestTimeoutOnAReusedConnectionIsThePOSTsResponse() async throws {
        try await withFault(.requestTimeoutOnReuse) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            _ = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            let response = try await client.send(Self.post(url))
            XCTAssertEqual(response.status.code, 408, "a POST is not sent twice")
            _ = try await response.body.collect(upTo: 100)
            XCTAssertEqual(server.connectionsAccepted, 1)
            XCTAssertEqual(server.requestHeads.filter { $0.hasPrefix("POST ") }.count, 1)
        }
    }

    func testRequestTimeoutOnANewConnectionIsTheResponse() async throws {
        try await withFault(.requestTimeoutAlways) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            let first = try await client.send(HTTPClientRequest(url: url))
            XCTAssertEqual(first.status.code, 408, "a new connection's 408 is not a stale connection's")
            _ = try await first.body.collect(upTo: 100)
            XCTAssertEqual(server.connectionsAccepted, 1)
        }
    }

    func testConnectionResetWhileIdleIsNotReusedForAPOST() async throws {
        try await withFault(.resetWhileIdle) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            _ = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            // The server signals through its counter that it has reset connection 0 (bounded wait).
            try await waitUntil("the server saw the connection close") { server.connectionsClosed >= 1 }
            // The reuse check (a peek) sees the reset: the POST goes out once, on a new connection.
            let response = try await client.send(Self.post(url))
            let body = try await response.body.collect(upTo: 100)
            XCTAssertEqual(body, Array("hello".utf8))
            XCTAssertEqual(server.connectionsAccepted, 2)
            XCTAssertEqual(server.requestHeads.filter { $0.hasPrefix("POST ") }.count, 1)
        }
    }

    func testConnectionResetWhileIdleServesAGETOnceOnANewConnection() async throws {
        try await withFault(.resetWhileIdle) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            _ = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            try await waitUntil("the server saw the connection close") { server.connectionsClosed >= 1 }
            // A GET may trust the event loop's word that nothing arrived (no peek). Whether the loop has seen the
            // reset yet or not, the GET reaches the server once, on a new connection, and is answered.
            let body = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            XCTAssertEqual(body, Array("hello".utf8))
            XCTAssertEqual(server.connectionsAccepted, 2)
            XCTAssertEqual(server.requestsReceived, 2, "the reset connection carried no second request")
        }
    }

    // MARK: Half-closed sockets

    func testHalfCloseMidBodyIsConnectionClosedWithTheBytesReceived() async throws {
        try await withFault(.halfCloseMidBody) { server, client in
            let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
            let error = await expectError([.connectionClosed]) { _ = try await response.body.collect(upTo: 1000) }
            XCTAssertNotNil(error?.bytesReceived)
            XCTAssertEqual(server.connectionsAccepted, 1)
        }
    }

    func testHalfCloseBeforeTheHeadOnAFreshConnectionIsConnectionClosed() async throws {
        try await withFault(.halfCloseBeforeHead) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            await expectError([.connectionClosed]) { _ = try await client.send(HTTPClientRequest(url: url)) }
            await expectError([.connectionClosed]) { _ = try await client.send(Self.post(url)) }
            XCTAssertEqual(server.connectionsAccepted, 2, "fresh connections are not retried")
            XCTAssertEqual(server.requestsReceived, 2)
        }
    }

    /// Connection 0 answers one request and half-closes on the second; the others answer.
    static let staleHalfClose = FaultScript { connection, request in
        connection == 0 && request >= 1 ? [.shutdownWrite, .hold] : [.response("hello")]
    }

    func testHalfCloseOnAReusedConnectionRetriesGETOnceAndNeverPOST() async throws {
        try await withFault(Self.staleHalfClose) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            _ = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            let value = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            XCTAssertEqual(value, Array("hello".utf8))
            XCTAssertEqual(server.connectionsAccepted, 2, "retried once, on a new connection")
            XCTAssertEqual(server.requestsReceived, 3)
        }
        try await withFault(Self.staleHalfClose) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            _ = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            await expectError([.connectionClosed]) { _ = try await client.send(Self.post(url)) }
            XCTAssertEqual(server.connectionsAccepted, 1, "the POST was not repeated")
            XCTAssertEqual(server.requestHeads.filter { $0.hasPrefix("POST ") }.count, 1)
        }
    }

    // MARK: Deadlines

    func testBodyDrippingOneBytePerIntervalStopsAtTheTotalDeadline() async throws {
        // Each byte comes well within the inactivity timeout, so only the total deadline can end this.
        try await withFault(.dripBody(everyMs: 20)) { server, client in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")
            request.timeout = .milliseconds(400)
            let start = ContinuousClock.now
            let error = await expectError([.timeout]) {
                _ = try await client.send(request).body.collect(upTo: 10_000)
            }
            let elapsed = start.duration(to: .now)
            XCTAssertEqual(error?.timeoutPhase, .total)
            XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(400))
            XCTAssertLessThan(elapsed, .milliseconds(1_400), "at the deadline, not long after")
        }
    }

    func testUploadToAServerThatNeverReadsStopsAtTheTotalDeadline() async throws {
        try await withFault(.neverReads, configure: { configuration, _ in configuration.inactivityTimeout = nil }) { server, client in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")
            request.method = .post
            request.body = .bytes([UInt8](repeating: 7, count: 64 << 20)) // far more than the socket buffers hold
            request.timeout = .milliseconds(400)
            let start = ContinuousClock.now
            let error = await expectError([.timeout]) { _ = try await client.send(request) }
            XCTAssertEqual(error?.timeoutPhase, .total)
            XCTAssertLessThan(start.duration(to: .now), .milliseconds(1_400))
            XCTAssertEqual(server.connectionsAccepted, 1, "a timed-out POST is not sent again")
            XCTAssertEqual(server.requestsReceived, 0)
        }
    }

    func testStreamedUploadToAServerThatNeverReadsStopsAtTheTotalDeadline() async throws {
        try await withFault(.neverReads, configure: { configuration, _ in configuration.inactivityTimeout = nil }) { server, client in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")
            request.method = .put
            request.body = .stream(Chunks(chunk: [UInt8](repeating: 1, count: 64 << 10), count: 1024)) // 64 MiB, chunked
            request.timeout = .milliseconds(400)
            let start = ContinuousClock.now
            let error = await expectError([.timeout]) { _ = try await client.send(request) }
            XCTAssertEqual(error?.timeoutPhase, .total)
            XCTAssertLessThan(start.duration(to: .now), .milliseconds(1_400))
            XCTAssertEqual(server.connectionsAccepted, 1)
        }
    }

    // MARK: A CONNECT proxy that drops the tunnel

    func proxied(_ configuration: inout HTTPClient.Configuration, port: Int) {
        configuration.proxy = .proxy(ProxyConfiguration(kind: .http, host: "127.0.0.1", port: port))
        configuration.tls.trustRoots = .file(TestTLS.shared.caFile)
    }

    /// `https` through the fake proxy; the origin port is never dialled (the proxy is fake).
    func sendThroughProxy(_ script: FaultScript, expecting codes: Set<HTTPClientError.Code>, file: StaticString = #filePath, line: UInt = #line) async throws {
        let origin = "https://127.0.0.1:\(try unusedPort())/"
        _ = TestTLS.shared.caFile // made once per process: not part of what the case opens
        try await withFault(script, configure: { configuration, port in
            configuration.proxy = .proxy(ProxyConfiguration(kind: .http, host: "127.0.0.1", port: port))
            configuration.tls.trustRoots = .file(TestTLS.shared.caFile)
        }) { proxy, client in
            await expectError(codes, file: file, line: line) { _ = try await client.send(HTTPClientRequest(url: origin)) }
            // Idempotent or not, a tunnel that failed is not attempted again.
            XCTAssertEqual(proxy.connectionsAccepted, 1, "one CONNECT", file: file, line: line)
            XCTAssertEqual(proxy.requestHeads.filter { $0.hasPrefix("CONNECT ") }.count, 1, file: file, line: line)
        }
    }

    func testProxyClosingOnCONNECTIsATypedFailure() async throws {
        // Reported as the proxy's failure, saying it closed without answering (it used to be a bare
        // "connection closed before the response head" that did not name the proxy).
        try await sendThroughProxy(.proxyClosesOnConnect, expecting: [.proxyFailed])
        let origin = "https://127.0.0.1:\(try unusedPort())/"
        try await withFault(.proxyClosesOnConnect, configure: { configuration, port in
            configuration.proxy = .proxy(ProxyConfiguration(kind: .http, host: "127.0.0.1", port: port))
        }) { _, client in
            do {
                _ = try await client.send(HTTPClientRequest(url: origin))
                XCTFail("expected a failure")
            } catch let error as HTTPClientError {
                XCTAssertTrue(error.message.contains("closed the connection without answering CONNECT"), "\(error)")
            }
        }
    }

    func testProxyResettingOnCONNECTIsATypedFailure() async throws {
        try await sendThroughProxy(.proxyResetsOnConnect, expecting: [.proxyFailed, .ioFailure, .connectionClosed])
    }

    func testProxyDroppingTheTunnelAfterEstablishingItIsATypedFailure() async throws {
        // proxyFailed when the close is seen by the check right after the 200; otherwise the handshake fails.
        try await sendThroughProxy(.proxyDropsTunnelAfterEstablished, expecting: [.proxyFailed, .tlsHandshakeFailed, .connectionClosed])
    }

    func testProxyResettingTheTunnelAfterEstablishingItIsATypedFailure() async throws {
        try await sendThroughProxy(
            .proxyResetsTunnelAfterEstablished, expecting: [.tlsHandshakeFailed, .connectionClosed, .ioFailure, .proxyFailed])
    }

    // MARK: A server that answers before the request is whole (RFC 9112 §9.5)

    static let tooLarge = "HTTP/1.1 413 Content Too Large\r\nConnection: close\r\nContent-Length: 9\r\n\r\ntoo large"

    static func upload(_ url: String, megabytes: Int) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = .put
        request.body = .bytes([UInt8](repeating: 7, count: megabytes << 20)) // more than the socket buffers hold
        request.expectContinue = .never
        return request
    }

    /// The server answers 413 at once, never reads the upload and resets the connection: the 413 is the outcome,
    /// not a failed write (the old code threw `ioFailure`).
    func testAnEarlyAnswerThenAResetDuringTheUploadIsTheResponse() async throws {
        let script = FaultScript(onAccept: { _ in [.send(Self.tooLarge), .sleep(ms: 300), .resetConnection] }, onRequest: { _, _ in [] })
        try await withFault(script) { server, client in
            let response = try await client.send(Self.upload("http://127.0.0.1:\(server.port)/", megabytes: 16))
            XCTAssertEqual(response.status.code, 413)
            let body = try await response.body.collect(upTo: 100)
            XCTAssertEqual(body, Array("too large".utf8))
            XCTAssertEqual(server.connectionsAccepted, 1)
        }
    }

    /// The server answers and stops reading, keeping the connection: the upload ends with the answer within about
    /// a second, not at the inactivity timeout (5 s here; the old code failed with a timeout).
    func testAnEarlyAnswerFromAServerThatStopsReadingEndsTheUpload() async throws {
        let script = FaultScript(onAccept: { _ in [.send(Self.tooLarge), .hold] }, onRequest: { _, _ in [] })
        try await withFault(script, limit: .seconds(4)) { server, client in
            let start = ContinuousClock.now
            let response = try await client.send(Self.upload("http://127.0.0.1:\(server.port)/", megabytes: 64))
            XCTAssertEqual(response.status.code, 413)
            XCTAssertLessThan(start.duration(to: .now), .seconds(3))
            let body = try await response.body.collect(upTo: 100)
            XCTAssertEqual(body, Array("too large".utf8))
        }
    }

    /// On a reused connection the early answer and reset used to look like a stale connection: the whole upload
    /// went out again on a new one (the server counts connections), and its answer replaced the 413.
    func testAnEarlyAnswerOnAReusedConnectionIsNotUploadedAgain() async throws {
        let script = FaultScript { connection, _ in
            connection == 0
                ? [.response("hello"), .sleep(ms: 300), .send(Self.tooLarge), .sleep(ms: 300), .resetConnection]
                : [.response("second")]
        }
        try await withFault(script, limit: .seconds(5)) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            let first = try await client.send(HTTPClientRequest(url: url))
            let body = try await first.body.collect(upTo: 100)
            XCTAssertEqual(body, Array("hello".utf8))
            let response = try await client.send(Self.upload(url, megabytes: 64))
            XCTAssertEqual(response.status.code, 413)
            XCTAssertEqual(server.connectionsAccepted, 1, "the upload was not sent again")
        }
    }

    /// A request's total timeout covers the whole send, redirect hops included (each hop used to start the time
    /// again: four hops of 400 ms passed a 1 s timeout).
    func testTheTotalTimeoutCoversEveryRedirectHop() async throws {
        let script = FaultScript { _, request in
            request < 3
                ? [.sleep(ms: 400), .response("", status: "302 Found", headers: ["Location: /hop\(request + 1)"])]
                : [.sleep(ms: 400), .response("done")]
        }
        try await withFault(script) { server, client in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")
            request.timeout = .seconds(1)
            let start = ContinuousClock.now
            let error = await expectError([.timeout]) { _ = try await client.send(request).body.collect(upTo: 100) }
            XCTAssertEqual(error?.timeoutPhase, .total)
            XCTAssertLessThan(start.duration(to: .now), .milliseconds(1_500))
        }
    }

    // MARK: When a connection may carry another request

    /// RFC 9112 §9.6: a request that carries `Connection: close` in the caller's own field ends its connection,
    /// though the server would keep it (the old code parked it and sent the next request on it).
    func testACallersConnectionCloseFieldEndsTheConnection() async throws {
        try await withFault(FaultScript { _, _ in [.response("hello")] }) { server, client in
            for _ in 0..<2 {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")
                request.headers[.connection] = "Keep-Alive, Close"
                let response = try await client.send(request)
                let body = try await response.body.collect(upTo: 100)
                XCTAssertEqual(body, Array("hello".utf8))
            }
            XCTAssertEqual(server.connectionsAccepted, 2)
            XCTAssertEqual(server.requestsReceived, 2)
        }
    }

    /// Bytes after a response's end (here a body on a 204) mean the framing no longer lines up: the connection
    /// closes instead of waiting in the pool (the old code parked it).
    func testBytesAfterAResponseKeepItsConnectionOutOfThePool() async throws {
        let script = FaultScript { _, _ in [.send("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello")] }
        try await withFault(script) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            let response = try await client.send(HTTPClientRequest(url: url))
            XCTAssertEqual(response.status.code, 204)
            let body = try await response.body.collect(upTo: 100)
            XCTAssertEqual(body, [])
            let statistics = await client.poolStatistics()
            XCTAssertEqual(statistics.idleConnections, 0)
            _ = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            XCTAssertEqual(server.connectionsAccepted, 2)
        }
    }

    /// A body dropped unread on a connection that closes after it anyway (`Connection: close`) is not drained:
    /// the connection closes at once and frees its slot (the old code read for up to a second, holding the only
    /// slot, and the next request timed out waiting for it).
    func testADroppedBodyOnAClosingConnectionFreesItsSlotAtOnce() async throws {
        let head = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 60000\r\n\r\n"
        let script = FaultScript { connection, _ in
            connection == 0
                ? [.send(head), .drip([UInt8](repeating: 0x61, count: 60_000), delayMs: 1)]
                : [.response("second")]
        }
        try await withFault(script, limit: .seconds(4), configure: { configuration, _ in
            configuration.maxConnectionsPerHost = 1
        }) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            do {
                let dropped = try await client.send(HTTPClientRequest(url: url))
                XCTAssertEqual(dropped.status.code, 200)
            }
            var request = HTTPClientRequest(url: url)
            request.timeout = .milliseconds(800) // the old drain held the only slot for 1 s
            let response = try await client.send(request)
            let body = try await response.body.collect(upTo: 100)
            XCTAssertEqual(body, Array("second".utf8))
        }
    }

    /// A connection parked with a server's short `Keep-Alive: timeout` after one parked for the 60 s default is
    /// closed when its own time comes (the old sweeper slept until the earliest expiry it knew of, 60 s away).
    func testAShorterKeepAliveTimeoutParkedLaterIsSweptInTime() async throws {
        let script = FaultScript { connection, _ in
            connection == 0
                ? [.response("a")]
                : [.sleep(ms: 300), .response("b", headers: ["Keep-Alive: timeout=2"])]
        }
        try await withFault(script, limit: .seconds(6)) { server, client in
            let url = "http://127.0.0.1:\(server.port)/"
            async let a = client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            async let b = client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            let bodies = try await [a, b].map { String(decoding: $0, as: UTF8.self) }
            XCTAssertEqual(Set(bodies), ["a", "b"])
            var idle = await client.poolStatistics().idleConnections
            XCTAssertEqual(idle, 2)
            // `timeout=2` is kept one second less: expired about a second after parking. Bounded: 40 × 100 ms.
            for _ in 0..<40 where idle != 1 {
                try await Task.sleep(for: .milliseconds(100))
                idle = await client.poolStatistics().idleConnections
            }
            XCTAssertEqual(idle, 1)
        }
    }
}

/// `count` copies of `chunk`, as an async sequence.
private struct Chunks: AsyncSequence, Sendable {
    let chunk: [UInt8]
    let count: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let chunk: [UInt8]
        var remaining: Int
        mutating func next() async -> [UInt8]? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunk: chunk, remaining: count) }
}

/// A fatal TLS alert record mid-body (see ``TLSCloseServer/Ending/fatalAlertBelowTLS`` for why it is a raw record
/// under TLS): a head promising 100 bytes, 40 of them, then the alert.
final class TLSAlertMidBodyTests: XCTestCase {
    func testTLSAlertMidBodyIsATypedFailureAtOnce() async throws {
        let partial = Array(("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + String(repeating: "x", count: 40)).utf8)
        let server = try await TLSCloseServer(response: partial, ending: .fatalAlertBelowTLS)
        var tls = TLSConfiguration()
        tls.trustRoots = .file(TestTLS.shared.caFile)
        var configuration = HTTPClient.Configuration(tls: tls)
        configuration.connectTimeout = .seconds(5)
        configuration.inactivityTimeout = .seconds(5)
        configuration.proxy = .none
        let client = HTTPClient(configuration: configuration)
        let start = ContinuousClock.now
        var outcome: Result<Int, any Error>
        do {
            let response = try await client.send(HTTPClientRequest(url: server.url))
            outcome = .success(try await response.body.collect(upTo: 1000).count)
        } catch {
            outcome = .failure(error)
        }
        let elapsed = start.duration(to: .now)
        await client.shutdown()
        try await server.shutdown()
        switch outcome {
        case .success(let count):
            XCTFail("a body cut by a TLS alert passed for complete (\(count) bytes)")
        case .failure(let error as HTTPClientError):
            XCTAssertTrue([.ioFailure, .connectionClosed].contains(error.code), "\(error)")
        case .failure(let error):
            XCTFail("expected an HTTPClientError, got \(type(of: error)): \(error)")
        }
        XCTAssertLessThan(elapsed, .seconds(2), "failed at the alert, not at the inactivity timeout")
    }
}
