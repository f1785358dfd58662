import HTTPTypes
import XCTest
@testable import AsyncHTTP

#if canImport(Glibc)
import Glibc
#endif

/// The client against an independent in-process server (SwiftNIO).
final class ClientBehaviourTests: XCTestCase {
    var server: NIOTestServer!
    var client: HTTPClient!

    override func setUp() async throws {
        server = try await NIOTestServer()
        client = HTTPClient()
    }

    override func tearDown() async throws {
        await client?.shutdown()
        try await server?.shutdown()
    }

    func url(_ path: String) -> String { server.baseURL + path }

    func get(_ path: String) async throws -> (HTTPClientResponse, [UInt8]) {
        let response = try await client.send(HTTPClientRequest(url: url(path)))
        return (response, try await response.body.collect(upTo: 512 << 20))
    }

    // MARK: Keep-alive

    func testSequentialRequestsReuseOneKeepAliveConnection() async throws {
        for _ in 0..<20 {
            let (response, body) = try await get("/hello")
            XCTAssertEqual(response.status, .ok)
            XCTAssertEqual(String(decoding: body, as: UTF8.self), "hello")
        }
        XCTAssertEqual(server.connectionsAccepted, 1, "counted on the server side")
        XCTAssertEqual(server.requestsServed, 20)
        XCTAssertEqual(client.connectionsOpened, 1)
    }

    func testPersistentConnectionOffOpensAConnectionPerRequest() async throws {
        for _ in 0..<3 {
            var request = HTTPClientRequest(url: url("/hello"))
            request.persistentConnection = false
            let response = try await client.send(request)
            _ = try await response.body.collect(upTo: 1024)
        }
        XCTAssertEqual(server.connectionsAccepted, 3)
    }

    func testServerConnectionCloseIsHonoured() async throws {
        let (_, body) = try await get("/close")
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "bye")
        _ = try await get("/hello")
        XCTAssertEqual(server.connectionsAccepted, 2)
    }

    func testIdleConnectionExpiresAfterTheIdleTimeout() async throws {
        // Time is injected into the pool: the test moves it instead of sleeping.
        let time = Locked(MonotonicTime.now)
        var configuration = HTTPClient.Configuration()
        configuration.idleTimeout = .milliseconds(150)
        configuration.proxy = .none
        let transport = HTTP1Transport(configuration: configuration, proxies: ProxyRouter(.none), tunnelAuthenticator: nil,
                                       now: { time.withLock { $0 } })
        func hello() async throws {
            let body = try await transport.roundTrip(HTTPClientRequest(url: url("/hello"))).body.collect(upTo: 100)
            XCTAssertEqual(body, Array("hello".utf8))
        }
        try await hello()
        time.withLock { $0 += .milliseconds(100) }
        try await hello()
        XCTAssertEqual(transport.connector.connectionsOpened, 1, "within the idle timeout the connection is reused")

        time.withLock { $0 += .milliseconds(200) }
        await transport.pool.sweep()
        let idle = await transport.pool.idleCount
        XCTAssertEqual(idle, 0, "the sweep closed the expired connection")
        try await hello()
        XCTAssertEqual(transport.connector.connectionsOpened, 2)

        time.withLock { $0 += .milliseconds(200) }
        try await hello()  // no sweep this time: the check at checkout expires it
        XCTAssertEqual(transport.connector.connectionsOpened, 3)
        await transport.shutdown()
    }

    func testServerKeepAliveTimeoutShortensTheIdleLifetime() async throws {
        // `Keep-Alive: timeout=1` leaves no safe reuse window after the one-second margin.
        _ = try await get("/keepalive-timeout?s=1")
        _ = try await get("/hello")
        XCTAssertEqual(client.connectionsOpened, 2)
    }

    // MARK: Bodies

    func testLargeContentLengthBodyStreamsInManyChunks() async throws {
        let size = 20 << 20
        let response = try await client.send(HTTPClientRequest(url: url("/bytes?n=\(size)")))
        let (count, chunks, mismatch) = try await readPatternBody(response)
        XCTAssertEqual(count, size)
        XCTAssertNil(mismatch)
        XCTAssertGreaterThan(chunks, 10)
    }

    /// Reads a `/bytes` body chunk by chunk, checking each byte against the server's pattern (`i % 251`);
    /// `afterChunk` gets the number of chunks read so far. Returns the byte and chunk counts and the offset of
    /// the first wrong byte.
    func readPatternBody(
        _ response: HTTPClientResponse, afterChunk: (Int) async throws -> Void = { _ in }
    ) async throws -> (count: Int, chunks: Int, mismatch: Int?) {
        var count = 0
        var chunks = 0
        var mismatch: Int?
        for try await chunk in response.body {
            for (offset, byte) in chunk.enumerated() where byte != UInt8((count + offset) % 251) {
                mismatch = mismatch ?? count + offset
            }
            count += chunk.count
            chunks += 1
            try await afterChunk(chunks)
        }
        return (count, chunks, mismatch)
    }

    /// A reader that pauses lets edges pile up while nobody waits, so the event loop disarms the descriptor;
    /// the reader's next wait must arm it again and get every byte, and the connection must serve the next
    /// request (whose head wait starts before any read).
    func testPausingReaderGetsEveryByteAfterTheLoopDisarms() async throws {
        let size = 8 << 20
        let disarmsBefore = EpollEventLoop.shared.disarmCount.load(ordering: .relaxed)
        var request = HTTPClientRequest(url: url("/bytes?n=\(size)"))
        request.timeout = .seconds(60)
        let response = try await client.send(request)
        let (count, _, mismatch) = try await readPatternBody(response) { chunks in
            // Pause on the first 20 chunks: the server keeps sending, the kernel keeps signalling.
            if chunks <= 20 { try await Task.sleep(for: .milliseconds(5)) }
        }
        XCTAssertEqual(count, size)
        XCTAssertNil(mismatch)
        XCTAssertGreaterThan(EpollEventLoop.shared.disarmCount.load(ordering: .relaxed), disarmsBefore,
                             "the pauses should have made the loop disarm the descriptor at least once")
        let (next, body) = try await get("/hello")
        XCTAssertEqual(next.status.code, 200)
        XCTAssertEqual(body, Array("hello".utf8))
        XCTAssertEqual(server.connectionsAccepted, 1, "the second request should reuse the connection")
    }

    // MARK: Busy polling for the head

    /// A client whose requests poll for the head for up to 100 ms (past the public 1 ms maximum), so that
    /// every answer of the in-process server comes within the limit even under a sanitizer.
    func pollingClient(limit: Duration = .milliseconds(100)) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.busyPollLimitForTesting = limit
        return HTTPClient(configuration: configuration)
    }

    /// Sequential requests to a server that answers within the limit poll for their heads and get them while
    /// polling, on one keep-alive connection, with every body whole.
    func testSequentialRequestsToAFastServerGetTheirHeadsWhilePolling() async throws {
        let client = pollingClient()
        XCTAssertEqual(NetworkActivity.inProcess, 0, "a transfer of an earlier test is still in flight")
        let counters = client.transport.connector.busyPollCounters
        var requests = 0
        while requests < 200, counters.hits < 3 {
            let response = try await client.send(HTTPClientRequest(url: url("/hello")))
            let body = try await response.body.collect(upTo: 1024)
            XCTAssertEqual(body, Array("hello".utf8))
            requests += 1
        }
        if Processors.available >= 2 {
            XCTAssertGreaterThanOrEqual(counters.hits, 3, "\(counters.polls) polls in \(requests) requests")
            XCTAssertGreaterThanOrEqual(counters.polls, counters.hits)
        } else {
            XCTAssertEqual(counters.polls, 0, "one processor: never poll")
        }
        XCTAssertEqual(server.connectionsAccepted, 1)
        await client.shutdown()
    }

    /// A head that takes 1.5 s is waited for on the event loop after a vain poll, arrives whole, and stops the
    /// connection polling for the requests after it (its estimate is then far above the limit).
    func testASlowHeadParksAfterItsPollAndStopsTheNextPolls() async throws {
        let client = pollingClient()
        let counters = client.transport.connector.busyPollCounters
        for _ in 0..<5 {
            _ = try await client.send(HTTPClientRequest(url: url("/hello"))).body.collect(upTo: 1024)
        }
        let slow = try await client.send(HTTPClientRequest(url: url("/slow-head?ms=1500")))
        let slowBody = try await slow.body.collect(upTo: 1024)
        XCTAssertEqual(slowBody, Array("slow".utf8))
        let pollsAfterTheSlowHead = counters.polls
        for _ in 0..<3 {
            _ = try await client.send(HTTPClientRequest(url: url("/hello"))).body.collect(upTo: 1024)
        }
        XCTAssertEqual(counters.polls, pollsAfterTheSlowHead, "an estimate of 750 ms or more is far above the limit")
        XCTAssertEqual(server.connectionsAccepted, 1)
        await client.shutdown()
    }

    /// A connection's first head may poll after a slow TLS handshake: the first estimate is the time the TCP
    /// connect took (the network's round trip), not the handshake's, which measures the server's key exchange
    /// and signature and does not come again for the requests. The server here holds each client hello for
    /// 600 ms, six times the limit, and answers 5 ms after the request (so the head is not there yet when the
    /// client first looks).
    func testASlowTLSHandshakeDoesNotKeepTheFirstHeadFromPolling() async throws {
        let tlsServer = try await NIOTestServer(tls: .trusted, handshakeDelay: .milliseconds(600))
        var configuration = HTTPClient.Configuration()
        configuration.tls.trustRoots = .file(TestTLS.shared.caFile)
        configuration.busyPollLimitForTesting = .milliseconds(100)
        let client = HTTPClient(configuration: configuration)
        let counters = client.transport.connector.busyPollCounters
        let started = ContinuousClock.now
        let response = try await client.send(HTTPClientRequest(url: tlsServer.url("/slow-head?ms=5")))
        let body = try await response.body.collect(upTo: 1024)
        XCTAssertEqual(body, Array("slow".utf8))
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(600), "the hello was held")
        if Processors.available >= 2 {
            XCTAssertEqual(counters.polls, 1, "the first head polled")
            XCTAssertEqual(counters.hits, 1, "and came while it did")
        } else {
            XCTAssertEqual(counters.polls, 0, "one processor: never poll")
        }
        await client.shutdown()
        try await tlsServer.shutdown()
    }

    func testBusyPollingOffNeverPolls() async throws {
        let client = pollingClient(limit: .zero)
        for _ in 0..<5 {
            _ = try await client.send(HTTPClientRequest(url: url("/hello"))).body.collect(upTo: 1024)
        }
        XCTAssertEqual(client.transport.connector.busyPollCounters.polls, 0)
        await client.shutdown()
    }

    /// With requests in flight together none polls: each would hold a cooperative thread the others need.
    func testConcurrentRequestsDoNotPoll() async throws {
        let client = pollingClient()
        let counters = client.transport.connector.busyPollCounters
        // Its head comes at once (it was alone, so it may have polled); its body 300 ms later.
        let slow = try await client.send(HTTPClientRequest(url: url("/slow-body?ms=300")))
        let pollsBefore = counters.polls
        for _ in 0..<5 {
            _ = try await client.send(HTTPClientRequest(url: url("/hello"))).body.collect(upTo: 1024)
        }
        XCTAssertEqual(counters.polls, pollsBefore, "the slow body's transfer was in flight")
        _ = try await slow.body.collect(upTo: 1024)
        await client.shutdown()
    }

    func testChunkedResponseBodyIsDecoded() async throws {
        let (response, body) = try await get("/stream?n=1000000&chunk=777")
        XCTAssertEqual(response.headers[.transferEncoding], "chunked")
        XCTAssertEqual(body.count, 1_000_000)
        XCTAssertTrue(body.enumerated().allSatisfy { $0.element == UInt8($0.offset % 251) })
    }

    func testBytesBodyGoesOutWithContentLength() async throws {
        var request = HTTPClientRequest(url: url("/echo"))
        request.method = .post
        request.body = .bytes(Array("ping".utf8))
        let response = try await client.send(request)
        XCTAssertEqual(response.headers[HTTPField.Name("X-Request-Content-Length")!], "4")
        XCTAssertNil(response.headers[HTTPField.Name("X-Request-Transfer-Encoding")!])
        let value2 = try await response.body.collect(upTo: 100)
        XCTAssertEqual(value2, Array("ping".utf8))
    }

    func testStreamBodyOfUnknownLengthGoesOutChunked() async throws {
        var request = HTTPClientRequest(url: url("/echo"))
        request.method = .put
        let parts = (0..<50).map { Array("part \($0);".utf8) }
        request.body = .stream(ChunkSequence(parts))
        XCTAssertFalse(request.body!.isReplayable)
        let response = try await client.send(request)
        XCTAssertEqual(response.headers[HTTPField.Name("X-Request-Transfer-Encoding")!], "chunked")
        let value3 = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(value3, parts.flatMap { $0 })
    }

    /// Chunks of every size, empty ones among them, go out in batches of one `sendmsg` (size lines between the
    /// chunks when chunked): the server must receive exactly the bytes, in order, with either framing.
    func testStreamedChunksOfMixedSizesArriveIntactInBothFramings() async throws {
        let parts = (0..<400).map { index in
            [UInt8](repeating: UInt8(index % 251), count: index % 7 == 0 ? 0 : (index * 7919) % 20_000)
        }
        let expected = parts.flatMap { $0 }
        for length in [HTTPClientRequest.Body.Length.unknown, .known(expected.count)] {
            var request = HTTPClientRequest(url: url("/echo"))
            request.method = .put
            request.body = .stream(ChunkSequence(parts), length: length)
            let response = try await client.send(request)
            if length == .unknown {
                XCTAssertEqual(response.headers[HTTPField.Name("X-Request-Transfer-Encoding")!], "chunked")
            } else {
                XCTAssertEqual(response.headers[HTTPField.Name("X-Request-Content-Length")!], String(expected.count))
            }
            let echoed = try await response.body.collect(upTo: 16 << 20)
            XCTAssertEqual(echoed.count, expected.count, "\(length)")
            XCTAssertTrue(echoed == expected, "\(length): the echoed bytes differ")
        }
    }

    /// A POST of `source`'s bytes to `path`, declared `length` bytes long.
    func streamedPOST(_ path: String, _ source: StallingChunks, length: Int) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url(path))
        request.method = .post
        request.body = .stream(source, length: .known(length))
        return request
    }

    /// A streamed body whose source stalls (and ignores cancellation) used to hold `send` for as long as the source
    /// did: the writer waited for it with no deadline, and the request waited for the reading task. It now fails
    /// at the request's deadline.
    func testAStalledStreamedBodyFailsAtItsDeadlineInsteadOfHanging() async throws {
        // Bounded either way: after 10 s the source ends (the old code then failed on a short body, not a timeout).
        let source = StallingChunks(opensAfter: .seconds(10))
        defer { source.open() }
        var request = streamedPOST("/discard", source, length: 10)
        request.timeout = .milliseconds(500)
        let start = ContinuousClock.now
        _ = await assertThrows(.timeout) { _ = try await client.send(request) }
        XCTAssertLessThan(start.duration(to: .now), .seconds(5))
    }

    /// A FIFO as a file body is opened without blocking and read as it becomes readable, on the event loop: one that
    /// nobody writes fails at the request's deadline (its `open` used to block the task, out of reach of any
    /// deadline or cancellation), and a writer's bytes go out as it writes them.
    func testAFIFOBodyWaitsForItsWriterWithinTheDeadlineAndSendsWhatItWrites() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fifo-body-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/body.fifo"
        XCTAssertEqual(mkfifo(path, 0o600), 0)

        var request = HTTPClientRequest(url: url("/echo"))
        request.method = .post
        request.body = try .file(path)
        request.timeout = .milliseconds(500)
        let client = self.client!
        let start = ContinuousClock.now
        let first = request
        let attempt = Task { _ = try await client.send(first) }
        // Bounded either way: on the old code the open blocked until this watchdog opened the other end.
        let watchdog = Task.detached {
            try await Task.sleep(for: .seconds(5))
            let fd = openOtherEnd(ofFIFO: path, forWriting: true)
            if fd >= 0 { close(fd) }
        }
        do {
            try await attempt.value
            XCTFail("a body nobody writes was sent")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
        }
        watchdog.cancel()
        XCTAssertLessThan(start.duration(to: .now), .seconds(4), "the FIFO held the request past its deadline")

        // A writer that comes later: its bytes are the body.
        request.timeout = .seconds(10)
        request.body = try .file(path)
        let writer = Task.detached {
            try await Task.sleep(for: .milliseconds(200))
            let fd = open(path, O_WRONLY)  // the request's end is open by now, or this waits for it
            guard fd >= 0 else { return }
            _ = "hello fifo".withCString { write(fd, $0, 10) }
            close(fd)
        }
        let response = try await client.send(request)
        let echoed = try await response.body.collect(upTo: 100)
        XCTAssertEqual(String(decoding: echoed, as: UTF8.self), "hello fifo")
        try await writer.value
    }

    /// The inactivity timeout measures the network, not the body's source: a source silent for longer (a command
    /// piped into `ahttp -T -`) still gets its body sent, as curl's does.
    func testABodySourceSilentLongerThanTheInactivityTimeoutIsWaitedFor() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.inactivityTimeout = .milliseconds(300)
        let client = HTTPClient(configuration: configuration)
        let source = StallingChunks(opensAfter: .milliseconds(900))
        defer { source.open() }
        let response = try await client.send(streamedPOST("/echo", source, length: 3))
        let echoed = try await response.body.collect(upTo: 100)
        XCTAssertEqual(echoed, [1, 2, 3])
        await client.shutdown()
    }

    func testLargeStreamedUploadAndDownloadBothWays() async throws {
        let chunk = (0..<65536).map { UInt8($0 % 253) }
        let count = 512 // 32 MiB
        var request = HTTPClientRequest(url: url("/echo"))
        request.method = .post
        request.body = .stream(ChunkSequence(Array(repeating: chunk, count: count)), length: .known(chunk.count * count))
        let response = try await client.send(request)
        XCTAssertEqual(response.headers[HTTPField.Name("X-Request-Content-Length")!], String(chunk.count * count))
        var received = 0
        var intact = true
        for try await part in response.body {
            for (offset, byte) in part.enumerated() where byte != UInt8(((received + offset) % 65536) % 253) {
                intact = false
                break
            }
            received += part.count
        }
        XCTAssertEqual(received, chunk.count * count)
        XCTAssertTrue(intact)
    }

    func testStreamShorterThanItsDeclaredLengthIsRefused() async throws {
        var request = HTTPClientRequest(url: url("/echo"))
        request.method = .post
        request.body = .stream(ChunkSequence([[1, 2, 3]]), length: .known(10))
        await assertThrows(.invalidRequest, containing: "declared") { _ = try await self.client.send(request) }
    }

    func testHTTP10CannotSendAStreamOfUnknownLength() async throws {
        var request = HTTPClientRequest(url: url("/echo"))
        request.method = .post
        request.version = .http1_0
        request.body = .stream(ChunkSequence([[1]]))
        await assertThrows(.invalidRequest, containing: "HTTP/1.0") { _ = try await self.client.send(request) }
    }

    func testHTTP10RequestIsSentAsHTTP10() async throws {
        var request = HTTPClientRequest(url: url("/headers"))
        request.version = .http1_0
        let response = try await client.send(request)
        let text = String(decoding: try await response.body.collect(upTo: 1 << 16), as: UTF8.self)
        XCTAssertTrue(text.contains("version: HTTP/1.0"), text)
    }

    func testDefaultHeadersHostAndUserAgent() async throws {
        let (_, body) = try await get("/headers")
        let text = String(decoding: body, as: UTF8.self).lowercased()
        XCTAssertTrue(text.contains("host: 127.0.0.1:\(server.port)"), text)
        XCTAssertTrue(text.contains("user-agent: asynchttp/\(AsyncHTTPVersion.string)"), text)
    }

    func testCollectUpToLimitThrowsATypedError() async throws {
        let response = try await client.send(HTTPClientRequest(url: url("/bytes?n=200000")))
        await assertThrows(.bodyLimitExceeded, containing: "1000") { _ = try await response.body.collect(upTo: 1000) }
        // The abandoned connection was closed, not reused in a poisoned state.
        let (again, body) = try await get("/hello")
        XCTAssertEqual(again.status, .ok)
        XCTAssertEqual(body, Array("hello".utf8))
    }

    /// After `collect(upTo:)` gave up at its limit and closed the connection, reading the body again read that
    /// connection's descriptor number, which the next connection usually reuses: it took the other response's
    /// bytes (or failed with a bad descriptor). Every later read now throws the limit's error, and the other
    /// response arrives whole.
    func testABodyAbandonedAtItsLimitFailsAgainAndReadsNoOtherConnection() async throws {
        let response = try await client.send(HTTPClientRequest(url: url("/bytes?n=200000")))
        await assertThrows(.bodyLimitExceeded, containing: "1000") { _ = try await response.body.collect(upTo: 1000) }
        // Opened after the close, so it likely got the descriptor number the first connection had.
        let other = try await client.send(HTTPClientRequest(url: url("/bytes?n=300000")))
        _ = await assertThrows(.bodyLimitExceeded, containing: "1000") { for try await _ in response.body {} }
        _ = await assertThrows(.bodyLimitExceeded, containing: "1000") { _ = try await response.body.collect(upTo: 1 << 20) }
        let rest = try await other.body.collect(upTo: 1 << 20)
        XCTAssertEqual(rest.count, 300_000)
        rest.withUnsafeBytes { XCTAssertNil(TestPattern.firstMismatch(in: $0), "the other body whole and in order") }
    }

    /// A body whose read failed (here its deadline) used to read as empty, and complete, the second time.
    func testABodyWhoseReadFailedFailsAgainInsteadOfEndingEmpty() async throws {
        var request = HTTPClientRequest(url: url("/slow-body?ms=3000"))
        request.timeout = .milliseconds(300)
        let response = try await client.send(request)
        _ = await assertThrows(.timeout) { _ = try await response.body.collect(upTo: 1000) }
        _ = await assertThrows(.timeout) { _ = try await response.body.collect(upTo: 1000) }
    }

    func testBodyDroppedUnreadDoesNotPoisonThePool() async throws {
        do {
            let response = try await client.send(HTTPClientRequest(url: url("/stream?n=20000&chunk=1000")))
            XCTAssertEqual(response.status, .ok)
        } // dropped unread: small, drained and reused
        for _ in 0..<3 {
            let (_, body) = try await get("/hello")
            XCTAssertEqual(body, Array("hello".utf8))
        }
        do {
            _ = try await client.send(HTTPClientRequest(url: url("/bytes?n=\(8 << 20)")))
        } // dropped unread: too large to drain, closed
        let (_, body) = try await get("/bytes?n=10")
        XCTAssertEqual(body.count, 10)
    }

    func testBodylessResponses() async throws {
        var head = HTTPClientRequest(url: url("/bytes?n=5000"))
        head.method = .head
        let response = try await client.send(head)
        XCTAssertEqual(response.headers[.contentLength], "5000")
        let value4 = try await response.body.collect(upTo: 10)
        XCTAssertEqual(value4, [])
        for status in [204, 304] {
            let (response, body) = try await get("/status/\(status)")
            XCTAssertEqual(response.status.code, status)
            XCTAssertEqual(body, [])
        }
        XCTAssertEqual(server.connectionsAccepted, 1, "bodyless responses keep the connection")
    }

    func testErrorStatusIsAResponseNotAnError() async throws {
        let (response, _) = try await get("/status/503")
        XCTAssertEqual(response.status.code, 503)
    }

    // MARK: Invalid input

    func testHeaderInjectionIsRefusedBeforeAnythingIsSent() async throws {
        var request = HTTPClientRequest(url: url("/hello"))
        request.setHeader("X-Evil", "a\r\nInjected: yes")
        await assertThrows(.invalidRequest, containing: "X-Evil") { _ = try await self.client.send(request) }
        var badName = HTTPClientRequest(url: url("/hello"))
        badName.setHeader("Bad Name", "x")
        await assertThrows(.invalidRequest) { _ = try await self.client.send(badName) }
        var nul = HTTPClientRequest(url: url("/hello"))
        nul.setHeader("X-Nul", "a\u{0}b")
        await assertThrows(.invalidRequest) { _ = try await self.client.send(nul) }
        XCTAssertEqual(server.connectionsAccepted, 0, "nothing reached the server")
    }

    func testInvalidURLsAreRefused() async throws {
        for bad in ["ftp://127.0.0.1/", "http://exa mple.com/", "not a url", "http://127.0.0.1:99999/", "http:///path"] {
            await assertThrows(.invalidURL, message: bad) { _ = try await self.client.send(HTTPClientRequest(url: bad)) }
        }
    }

    func testOversizedResponseHeadIsAHeaderLimitError() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.maxResponseHeadBytes = 1024
        let client = HTTPClient(configuration: configuration)
        await assertThrows(.headerLimitExceeded) {
            _ = try await client.send(HTTPClientRequest(url: self.url("/big-head?n=4000")))
        }
    }

    // MARK: Connecting

    func testConnectionRefusedIsAConnectError() async throws {
        let port = try unusedPort()
        let error = await assertThrows(.connectFailed) {
            _ = try await self.client.send(HTTPClientRequest(url: "http://127.0.0.1:\(port)/"))
        }
        XCTAssertEqual(error?.errno, ECONNREFUSED)
    }

    func testIPv6LiteralURL() async throws {
        let v6 = try await NIOTestServer(host: "::1")
        let response = try await client.send(HTTPClientRequest(url: "http://[::1]:\(v6.port)/headers"))
        let text = String(decoding: try await response.body.collect(upTo: 1 << 16), as: UTF8.self).lowercased()
        XCTAssertTrue(text.contains("host: [::1]:\(v6.port)"), text)
        try await v6.shutdown()
    }

    /// `ipAddressFamily` keeps only that family's addresses, from a `resolve` entry as from DNS or the URL: one name
    /// with a server on ::1 only is reached with `.ipv6`, and refused with `.ipv4` without an attempt at ::1.
    func testIPAddressFamilyChoosesTheAddresses() async throws {
        let v6 = try await NIOTestServer(host: "::1")
        defer { Task { try? await v6.shutdown() } }
        func client(_ family: IPAddressFamily?) -> HTTPClient {
            var configuration = HTTPClient.Configuration()
            configuration.resolve = [try! ResolveOverride("dual.test:\(v6.port):127.0.0.1,[::1]")]
            configuration.ipAddressFamily = family
            configuration.connectionAttemptDelay = .seconds(5)  // a refused 127.0.0.1 moves on at once anyway
            return HTTPClient(configuration: configuration)
        }
        let url = "http://dual.test:\(v6.port)/hello"
        let onlyV6 = client(.ipv6)
        let body = try await onlyV6.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
        XCTAssertEqual(body, Array("hello".utf8))
        await onlyV6.shutdown()
        let onlyV4 = client(.ipv4)
        let refused = await assertThrows(.connectFailed) { _ = try await onlyV4.send(HTTPClientRequest(url: url)) }
        XCTAssertEqual(refused?.errno, ECONNREFUSED, "127.0.0.1 was tried and refused; ::1 was not tried")
        let literal = await assertThrows(.connectFailed) { _ = try await onlyV4.send(HTTPClientRequest(url: "http://[::1]:\(v6.port)/hello")) }
        XCTAssertEqual(literal?.message.contains("has no IPv4 address, and only IPv4 is allowed"), true, literal?.message ?? "")
        await onlyV4.shutdown()
    }

    func testLocalhostIsResolvedByName() async throws {
        let response = try await client.send(HTTPClientRequest(url: "http://localhost:\(server.port)/hello"))
        let value5 = try await response.body.collect(upTo: 100)
        XCTAssertEqual(value5, Array("hello".utf8))
    }

    // MARK: Timeouts and cancellation

    func testInactivityTimeoutWhileWaitingForTheHead() async throws {
        var request = HTTPClientRequest(url: url("/slow-head?ms=3000"))
        request.inactivityTimeout = .milliseconds(200)
        let start = ContinuousClock.now
        let error = await assertThrows(.timeout) { _ = try await self.client.send(request) }
        XCTAssertEqual(error?.timeoutPhase, .head)
        XCTAssertLessThan(start.duration(to: .now), .seconds(2))
    }

    func testTotalDeadlineCoversTheBody() async throws {
        var request = HTTPClientRequest(url: url("/slow-body?ms=3000"))
        request.timeout = .milliseconds(300)
        let response = try await client.send(request)
        let error = await assertThrows(.timeout) { _ = try await response.body.collect(upTo: 1 << 20) }
        XCTAssertEqual(error?.timeoutPhase, .total)
    }

    func testRetriesOnTimeoutForIdempotentRequests() async throws {
        var request = HTTPClientRequest(url: url("/slow-head?ms=1000"))
        request.inactivityTimeout = .milliseconds(100)
        request.retriesOnTimeout = 2
        await assertThrows(.timeout) { _ = try await self.client.send(request) }
        XCTAssertEqual(server.connectionsAccepted, 3, "one try and two retries")
    }

    func testCancellationStopsARequestWaitingForTheHeadAndLeaksNoDescriptor() async throws {
        _ = try await get("/hello") // warm up lazily created descriptors (event loop, resolver)
        await client.shutdown()
        // The in-process server's own sockets count too: let it close its side first.
        try await server.waitUntilAllConnectionsClosed()
        let before = openDescriptorCount()
        let client = HTTPClient()
        let slow = url("/slow-head?ms=5000")
        let task = Task { try await client.send(HTTPClientRequest(url: slow)) }
        try await Task.sleep(for: .milliseconds(150))
        let start = ContinuousClock.now
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("expected cancellation")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .cancelled)
        }
        XCTAssertLessThan(start.duration(to: .now), .milliseconds(500), "prompt")
        await client.shutdown()
        try await server.waitUntilAllConnectionsClosed()
        XCTAssertEqual(openDescriptorCount(), before, "no leaked descriptors")
    }

    func testCancellationWhileReadingTheBody() async throws {
        let response = try await client.send(HTTPClientRequest(url: url("/slow-body?ms=5000")))
        let body = response.body
        let task = Task { try await body.collect(upTo: 1 << 20) }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("expected cancellation")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .cancelled)
        }
    }

    // MARK: The pool

    func testPerHostLimitCapsConcurrentConnections() async throws {
        let client = clientLimited(toConnectionsPerHost: 2)
        let slow = url("/slow-head?ms=50")
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    let response = try await client.send(HTTPClientRequest(url: slow))
                    return try await response.body.collect(upTo: 100).count
                }
            }
            for try await _ in group {}
        }
        XCTAssertEqual(server.connectionsAccepted, 2)
        XCTAssertEqual(server.requestsServed, 10)
    }

    func testCancelledPoolWaiterLeavesTheQueue() async throws {
        let client = clientLimited(toConnectionsPerHost: 1)
        let slow = url("/slow-head?ms=400")
        let hello = url("/hello")
        let holder = Task { try await client.send(HTTPClientRequest(url: slow)).body.collect(upTo: 100) }
        try await waitUntilPool(of: client, leases: 1)
        let waiter = Task { try await client.send(HTTPClientRequest(url: hello)) }
        try await waitUntilPool(of: client, leases: 1, andQueues: 1)
        waiter.cancel()
        do {
            _ = try await waiter.value
            XCTFail("expected cancellation")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .cancelled)
        }
        _ = try await holder.value
        let (response, _) = try await (client.send(HTTPClientRequest(url: url("/hello"))), ())
        let value6 = try await response.body.collect(upTo: 100)
        XCTAssertEqual(value6, Array("hello".utf8))
        XCTAssertEqual(server.connectionsAccepted, 1)
    }

    func testPoolWaitTimesOutNamingThePhaseAndTheQueueRecovers() async throws {
        let client = clientLimited(toConnectionsPerHost: 1)
        let slow = url("/slow-head?ms=400")
        let holder = Task { try await client.send(HTTPClientRequest(url: slow)).body.collect(upTo: 100) }
        try await waitUntilPool(of: client, leases: 1)
        var waiting = HTTPClientRequest(url: url("/hello"))
        waiting.timeout = .milliseconds(100)
        do {
            _ = try await client.send(waiting)
            XCTFail("expected a timeout while waiting for the only connection")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .timeout)
            XCTAssertEqual(error.timeoutPhase, .poolWait)
        }
        _ = try await holder.value
        let body = try await client.send(HTTPClientRequest(url: url("/hello"))).body.collect(upTo: 100)
        XCTAssertEqual(body, Array("hello".utf8))
        XCTAssertEqual(server.connectionsAccepted, 1)
        let idle = await client.transport.pool.idleCount
        XCTAssertEqual(idle, 1)
    }

    func testShutdownFailsRequestsQueuedForAConnection() async throws {
        let client = clientLimited(toConnectionsPerHost: 1)
        let slow = url("/slow-head?ms=300")
        let holder = Task { try await client.send(HTTPClientRequest(url: slow)).body.collect(upTo: 100) }
        try await waitUntilPool(of: client, leases: 1)
        let hello = url("/hello")
        let queued = (0..<3).map { _ in Task { try await client.send(HTTPClientRequest(url: hello)) } }
        try await waitUntilPool(of: client, leases: 1, andQueues: 3)
        await client.shutdown()
        for waiter in queued {
            do {
                _ = try await waiter.value
                XCTFail("expected the queued request to fail at shutdown")
            } catch let error as HTTPClientError {
                XCTAssertEqual(error.code, .shutdown)
            }
        }
        // The request already on the wire finishes; its connection is then closed, not parked.
        let body = try await holder.value
        XCTAssertEqual(body, Array("slow".utf8))
        let idle = await client.transport.pool.idleCount
        XCTAssertEqual(idle, 0)
    }

    func testBatchOfConcurrentRequestsThroughATaskGroup() async throws {
        let client = self.client!
        let base = server.baseURL
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<64 {
                group.addTask {
                    try await client.send(HTTPClientRequest(url: base + "/bytes?n=\(index * 100)")).body.collect(upTo: 1 << 20).count
                }
            }
            return try await group.reduce(0, +)
        }
        XCTAssertEqual(total, (0..<64).reduce(0) { $0 + $1 * 100 })
        XCTAssertLessThanOrEqual(server.connectionsAccepted, 8)
    }

    func testShutdownRefusesNewRequests() async throws {
        await client.shutdown()
        await assertThrows(.shutdown) { _ = try await self.client.send(HTTPClientRequest(url: self.url("/hello"))) }
    }
    /// A client of its own with at most `limit` connections per host (the pool tests).
    func clientLimited(toConnectionsPerHost limit: Int) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerHost = limit
        return HTTPClient(configuration: configuration)
    }
}

// MARK: Helpers

/// A replayable-in-tests sequence of byte chunks.
struct ChunkSequence: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let chunks: [[UInt8]]
    init(_ chunks: [[UInt8]]) { self.chunks = chunks }
    struct AsyncIterator: AsyncIteratorProtocol {
        var chunks: [[UInt8]]
        var index = 0
        mutating func next() async -> [UInt8]? {
            guard index < chunks.count else { return nil }
            defer { index += 1 }
            return chunks[index]
        }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: chunks) }
}

@discardableResult
func assertThrows(
    _ code: HTTPClientError.Code, containing fragment: String? = nil, message: String = "",
    file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void
) async -> HTTPClientError? {
    do {
        try await body()
        XCTFail("expected \(code) \(message)", file: file, line: line)
        return nil
    } catch let error as HTTPClientError {
        XCTAssertEqual(error.code, code, "\(error) \(message)", file: file, line: line)
        if let fragment {
            XCTAssertTrue(error.description.contains(fragment), "'\(error)' lacks '\(fragment)'", file: file, line: line)
        }
        return error
    } catch {
        XCTFail("expected HTTPClientError.\(code), got \(error) \(message)", file: file, line: line)
        return nil
    }
}

/// Open descriptors of this process.
func openDescriptorCount() -> Int {
    guard let directory = opendir("/proc/self/fd") else { return -1 }
    defer { closedir(directory) }
    var count = 0
    while readdir(directory) != nil { count += 1 }
    return count
}

/// A port nothing listens on: bind to port 0, read the port, close.
func unusedPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A request body source that yields three bytes, then waits, ignoring cancellation, until ``open()``: called by
/// the test, or by itself after `delay`.
final class StallingChunks: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    private let state = Locked<(opened: Bool, waiter: UnsafeContinuation<Void, Never>?)>((false, nil))
    private let opener = Locked<Task<Void, Never>?>(nil)

    init(opensAfter delay: Duration) {
        let task = Task { [weak self] in
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            self?.open()
        }
        opener.withLock { $0 = task }
    }

    func open() {
        opener.withLock { $0?.cancel() }
        let waiter = state.withLock { state -> UnsafeContinuation<Void, Never>? in
            state.opened = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let owner: StallingChunks
        var sent = false
        mutating func next() async -> [UInt8]? {
            if !sent {
                sent = true
                return [1, 2, 3]
            }
            let owner = self.owner
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let now = owner.state.withLock { state -> Bool in
                    if state.opened { return true }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(owner: self) }
}
