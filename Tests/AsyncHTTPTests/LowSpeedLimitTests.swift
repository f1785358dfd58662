import XCTest
@testable import AsyncHTTP

/// The low-speed limit (curl's `--speed-limit`/`--speed-time`): a trickle that the inactivity timeout never ends
/// fails with a `lowSpeed` timeout, on the way in and on the way out, while a body that keeps up with the limit
/// (or is held back only by the client's own bandwidth limit) passes. The window's rules are tested without
/// sockets on `LowSpeedWatch`.
final class LowSpeedLimitTests: XCTestCase {
    static func limit(_ bytesPerSecond: Int, _ duration: Duration) throws -> LowSpeedLimit {
        try LowSpeedLimit(bytesPerSecond: bytesPerSecond, duration: duration)
    }

    func withServer(
        _ script: FaultScript, configure: (inout HTTPClient.Configuration) throws -> Void = { _ in },
        _ body: (HTTPClient, String) async throws -> Void
    ) async throws {
        let server = try FaultServer(script: script)
        var configuration = HTTPClient.Configuration()
        configuration.inactivityTimeout = .seconds(5)  // bounded: a test that fails cannot hang
        configuration.proxy = .none
        try configure(&configuration)
        let client = HTTPClient(configuration: configuration)
        var failure: (any Error)?
        do { try await body(client, "http://127.0.0.1:\(server.port)/") } catch { failure = error }
        await client.shutdown()
        server.stop()
        if let failure { throw failure }
    }

    /// Runs `body`, which must fail with a low-speed timeout; returns the error and how long it took.
    func expectLowSpeed(
        file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void
    ) async -> (HTTPClientError?, Duration) {
        let start = ContinuousClock.now
        do {
            try await body()
            XCTFail("expected a low-speed timeout", file: file, line: line)
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)", file: file, line: line)
            XCTAssertEqual(error.timeoutPhase, .lowSpeed, "\(error)", file: file, line: line)
            return (error, start.duration(to: .now))
        } catch {
            XCTFail("expected an HTTPClientError, got \(error)", file: file, line: line)
        }
        return (nil, start.duration(to: .now))
    }

    /// A head, then `chunks` pieces of `size` bytes, `everyMs` apart.
    static func chunkedPace(chunks: Int, size: Int, everyMs: Int) -> FaultScript {
        var actions: [FaultAction] = [.send("HTTP/1.1 200 OK\r\nContent-Length: \(chunks * size)\r\n\r\n")]
        for index in 0..<chunks {
            if index > 0 { actions.append(.sleep(ms: everyMs)) }
            actions.append(.send([UInt8](repeating: 0x61, count: size)))
        }
        return FaultScript([actions])
    }

    // MARK: Over the network

    /// 50 bytes a second, each byte well within the inactivity timeout: only the low-speed limit ends it.
    func testADrippingBodyFailsWithALowSpeedTimeoutAfterTheWindow() async throws {
        try await withServer(.dripBody(everyMs: 20), configure: { $0.lowSpeedLimit = try Self.limit(1_000, .seconds(1)) }) { client, url in
            let (error, elapsed) = await expectLowSpeed {
                _ = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 10_000)
            }
            XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(900), "not before the window is over")
            XCTAssertLessThan(elapsed, .milliseconds(2_000))
            XCTAssertEqual(error?.message, "operation too slow: less than 1000 bytes/s transferred over the last 1 s")
        }
    }

    /// The request's own limit applies when the client has none.
    func testARequestsOwnLimitAppliesWithoutTheClients() async throws {
        try await withServer(.dripBody(everyMs: 20)) { client, url in
            var request = HTTPClientRequest(url: url)
            request.lowSpeedLimit = try Self.limit(1_000, .milliseconds(500))
            let (_, elapsed) = await expectLowSpeed { _ = try await client.send(request).body.collect(upTo: 10_000) }
            XCTAssertLessThan(elapsed, .milliseconds(1_500))
        }
    }

    /// 3,000 bytes a second for 1.5 s, in pieces 100 ms apart, under a limit of 1,000 bytes a second over 1 s.
    func testABodyThatKeepsUpWithTheLimitPasses() async throws {
        try await withServer(Self.chunkedPace(chunks: 15, size: 300, everyMs: 100),
                             configure: { $0.lowSpeedLimit = try Self.limit(1_000, .seconds(1)) }) { client, url in
            let start = ContinuousClock.now
            let body = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 10_000)
            XCTAssertEqual(body.count, 4_500)
            XCTAssertGreaterThan(start.duration(to: .now), .milliseconds(1_200), "it outlasted a window")
        }
    }

    /// A server that reads the request and never answers: waiting for the head counts (as in curl).
    func testASilentServerFailsAfterTheWindow() async throws {
        try await withServer(.neverResponds, configure: { $0.lowSpeedLimit = try Self.limit(1, .milliseconds(400)) }) { client, url in
            let (_, elapsed) = await expectLowSpeed { _ = try await client.send(HTTPClientRequest(url: url)) }
            XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(350))
            XCTAssertLessThan(elapsed, .milliseconds(1_500))
        }
    }

    /// The way out counts too: an upload to a server that never reads stalls once the socket buffers are full.
    func testAnUploadToAServerThatNeverReadsFailsAfterTheWindow() async throws {
        try await withServer(.neverReads, configure: {
            $0.inactivityTimeout = nil
            $0.lowSpeedLimit = try Self.limit(1_000, .milliseconds(500))
        }) { client, url in
            var request = HTTPClientRequest(url: url)
            request.method = .post
            request.body = .bytes([UInt8](repeating: 7, count: 64 << 20))  // far more than the socket buffers hold
            request.timeout = .seconds(5)
            let (_, elapsed) = await expectLowSpeed { _ = try await client.send(request) }
            XCTAssertLessThan(elapsed, .milliseconds(2_500))
        }
    }

    /// The client's own bandwidth limit holding a transfer below the low-speed limit does not fail it: only time
    /// spent waiting for the network counts (curl counts its --limit-rate too; see `LowSpeedLimit`).
    func testTheClientsOwnBandwidthLimitDoesNotCountAsSlow() async throws {
        try await withServer(FaultScript([[.response(String(repeating: "b", count: 3_000))]]),
                             configure: { $0.lowSpeedLimit = try Self.limit(4_000, .milliseconds(300)) }) { client, url in
            var request = HTTPClientRequest(url: url)
            request.maxBandwidthPerSecond = 2_000
            let start = ContinuousClock.now
            let body = try await client.send(request).body.collect(upTo: 10_000)
            XCTAssertEqual(body.count, 3_000)
            XCTAssertGreaterThan(start.duration(to: .now), .milliseconds(400), "throttled for longer than the window")
        }
    }

    // MARK: Values

    func testBadValuesAreRefusedWithATypedError() {
        for (bytes, duration) in [(0, Duration.seconds(1)), (-5, .seconds(1)), (1, .zero), (1, .seconds(-1)), (1, .nanoseconds(0))] {
            XCTAssertThrowsError(try LowSpeedLimit(bytesPerSecond: bytes, duration: duration), "\(bytes) \(duration)") { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .invalidConfiguration)
            }
        }
        let limit = try? LowSpeedLimit(bytesPerSecond: 1_000)
        XCTAssertEqual(limit?.duration, .seconds(30), "curl's --speed-time default")
        XCTAssertEqual(limit?.bytesPerWindow, 30_000)
        XCTAssertEqual(try? LowSpeedLimit(bytesPerSecond: 3, duration: .milliseconds(500)).bytesPerWindow, 2, "rounded up")
        XCTAssertEqual(try? LowSpeedLimit(bytesPerSecond: .max, duration: .seconds(1_000)).bytesPerWindow, .max, "no overflow")
        XCTAssertEqual(limit?.description, "1000 bytes/s over 30 s")
    }

    // MARK: The window, without sockets

    func testTheWindowFailsOnlyWhenItsWaitsReachTheDurationWithTooFewBytes() throws {
        var watch = LowSpeedWatch(try Self.limit(100, .seconds(1)))  // 100 bytes a window
        XCTAssertEqual(try watch.beforeWait(bytesMoved: 50), 1_000_000_000, "the first wait starts the window")
        watch.waited(nanoseconds: 400_000_000)
        XCTAssertEqual(try watch.beforeWait(bytesMoved: 120), 600_000_000, "70 bytes: the window goes on")
        watch.waited(nanoseconds: 600_000_000)
        XCTAssertThrowsError(try watch.beforeWait(bytesMoved: 149)) { error in
            XCTAssertEqual((error as? HTTPClientError)?.timeoutPhase, .lowSpeed)
        }
    }

    func testAWindowThatMovedItsBytesGivesWayToANewOne() throws {
        var watch = LowSpeedWatch(try Self.limit(100, .seconds(1)))
        _ = try watch.beforeWait(bytesMoved: 0)
        watch.waited(nanoseconds: 900_000_000)
        XCTAssertEqual(try watch.beforeWait(bytesMoved: 100), 1_000_000_000, "enough: a new window, with all its time")
        watch.waited(nanoseconds: 2_000_000_000)
        XCTAssertEqual(try watch.beforeWait(bytesMoved: 250), 1_000_000_000, "150 more: again a new window")
        watch.waited(nanoseconds: 1_000_000_000)
        XCTAssertThrowsError(try watch.beforeWait(bytesMoved: 250), "a whole window without a byte")
    }

    func testTimeOutsideTheWaitsDoesNotCount() throws {
        // Only `waited` moves the window's clock: a caller that reads its body slowly (or a throttled transfer)
        // never has that time counted, however long it is.
        var watch = LowSpeedWatch(try Self.limit(100, .seconds(1)))
        for bytes in 0..<50 {
            XCTAssertNoThrow(try watch.beforeWait(bytesMoved: bytes))
            watch.waited(nanoseconds: 10_000_000)
        }
        watch.waited(nanoseconds: .max)  // saturates
        XCTAssertThrowsError(try watch.beforeWait(bytesMoved: 50))
    }
}
