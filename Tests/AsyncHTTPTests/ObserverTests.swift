import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// Observers against the SwiftNIO server: what they see is what crossed the wire.
final class ObserverTests: XCTestCase {
    /// Keeps every event, in order.
    final class Recorder: HTTPClientObserver, @unchecked Sendable {
        // @unchecked: `events` is behind `Locked`.
        private let store = Locked([HTTPClientEvent]())
        var events: [HTTPClientEvent] { store.withLock { $0 } }
        func observe(_ event: HTTPClientEvent) { store.withLock { $0.append(event) } }
    }

    var server: NIOTestServer!
    var client: HTTPClient!
    var recorder: Recorder!

    override func setUp() async throws {
        server = try await NIOTestServer()
        recorder = Recorder()
        var configuration = HTTPClient.Configuration()
        configuration.observers = [recorder]
        client = HTTPClient(configuration: configuration)
    }

    override func tearDown() async throws {
        await client?.shutdown()
        try await server?.shutdown()
    }

    func testHeadSentIsTheExactBytesTheServerReceived() async throws {
        var request = HTTPClientRequest(url: server.baseURL + "/headers?x=1")
        request.headers[HTTPField.Name("X-Trace")!] = "abc"
        let response = try await client.send(request)
        let echoed = String(decoding: try await response.body.collect(upTo: 1 << 20), as: UTF8.self)

        let heads = recorder.events.compactMap { event -> String? in
            if case .headSent(let bytes) = event.kind { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }
        XCTAssertEqual(heads.count, 1)
        let head = try XCTUnwrap(heads.first)
        XCTAssertTrue(head.hasPrefix("GET /headers?x=1 HTTP/1.1\r\n"), head)
        XCTAssertTrue(head.hasSuffix("\r\n\r\n"), head)
        // Every field line the server saw is in the observed head, in the same order (the encoder's Host,
        // User-Agent and the caller's X-Trace included).
        let sent = head.split(separator: "\r\n").dropFirst().map { $0.lowercased() }
        let seen = echoed.split(separator: "\n").drop { !$0.isEmpty && !$0.contains(": ") }
            .filter { $0.contains(": ") && !$0.hasPrefix("method") && !$0.hasPrefix("target") && !$0.hasPrefix("version") }
            .map { $0.lowercased() }
        XCTAssertEqual(sent, seen, "observed:\n\(head)\nserver saw:\n\(echoed)")
        XCTAssertTrue(sent.contains("x-trace: abc"))
    }

    func testEventsOfTwoKeepAliveRequestsInOrderWithReuse() async throws {
        for _ in 0..<2 {
            let response = try await client.send(HTTPClientRequest(url: server.baseURL + "/hello"))
            let body = try await response.body.collect(upTo: 1024)
            XCTAssertEqual(body, Array("hello".utf8))
        }
        let events = recorder.events
        let ids = Set(events.map(\.requestID))
        XCTAssertEqual(ids.count, 2, "one id per send")
        var reuses: [Bool] = []
        for id in ids.sorted() {
            let kinds = events.filter { $0.requestID == id }.map(\.kind)
            let names = kinds.map { kind -> String in
                switch kind {
                case .queued: return "queued"
                case .connectionAcquired(let info): reuses.append(info.reused); return "connection"
                case .headSent: return "headSent"
                case .bodyBytesSent: return "bodySent"
                case .headReceived(let status, _, _): return "head \(status.code)"
                case .bodyBytesReceived(let n): return "body \(n)"
                case .retry: return "retry"
                case .redirect: return "redirect"
                case .finished: return "finished"
                case .failed: return "failed"
                }
            }
            XCTAssertEqual(names, ["queued", "connection", "headSent", "head 200", "body 5", "finished"])
            if case .finished(let timings)? = kinds.last {
                let headReceived = try XCTUnwrap(timings.headReceived)
                XCTAssertLessThanOrEqual(try XCTUnwrap(timings.connection), try XCTUnwrap(timings.headSent))
                XCTAssertLessThanOrEqual(try XCTUnwrap(timings.headSent), headReceived)
                XCTAssertLessThanOrEqual(headReceived, timings.total)
            }
        }
        XCTAssertEqual(reuses, [false, true])
        XCTAssertEqual(server.connectionsAccepted, 1)
    }

    func testBodyBytesSentAndReceivedAddUp() async throws {
        var request = HTTPClientRequest(url: server.baseURL + "/echo")
        request.method = .post
        let chunks = (0..<20).map { index in [UInt8](repeating: UInt8(index), count: 5_000) }
        request.body = .stream(AsyncStream { continuation in
            for chunk in chunks { continuation.yield(chunk) }
            continuation.finish()
        })
        let response = try await client.send(request)
        let echoed = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(echoed.count, 100_000)
        var lastSent = 0
        var received = 0
        for event in recorder.events {
            switch event.kind {
            case .bodyBytesSent(let total):
                XCTAssertGreaterThan(total, lastSent, "totals grow")
                lastSent = total
            case .bodyBytesReceived(let n):
                received += n
            default:
                break
            }
        }
        XCTAssertEqual(lastSent, 100_000)
        XCTAssertEqual(received, 100_000)
    }

    func testRedirectIsReportedBetweenItsHops() async throws {
        let response = try await client.send(HTTPClientRequest(url: server.baseURL + "/status/302?location=/hello"))
        _ = try await response.body.collect(upTo: 1024)
        let kinds = recorder.events.map(\.kind)
        let redirects = kinds.compactMap { kind -> (Int, String)? in
            if case .redirect(let status, let location) = kind { return (status, location) }
            return nil
        }
        XCTAssertEqual(redirects.map(\.0), [302])
        XCTAssertEqual(redirects.first?.1, server.baseURL + "/hello")
        let heads = kinds.filter { if case .headSent = $0 { return true } else { return false } }
        XCTAssertEqual(heads.count, 2, "one head per hop")
    }

    func testFailureIsReportedWithItsError() async throws {
        var request = HTTPClientRequest(url: server.baseURL + "/slow-head?ms=2000")
        request.timeout = .milliseconds(200)
        do {
            _ = try await client.send(request)
            XCTFail("expected a timeout")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .timeout)
        }
        let failures = recorder.events.compactMap { event -> HTTPClientError? in
            if case .failed(let error, _) = event.kind { return error }
            return nil
        }
        XCTAssertEqual(failures.map(\.code), [.timeout])
    }

    /// A request that fails before its first attempt (here a header the encoder refuses) or in a step of the chain
    /// still ends with a `failed` event: observers that count requests in flight from `queued` to `finished` or
    /// `failed` kept it forever.
    func testARequestThatFailsBeforeItsFirstAttemptEndsWithFailed() async throws {
        var request = HTTPClientRequest(url: server.baseURL + "/hello")
        request.setHeader("X-Bad", "line\r\nbreak")
        do {
            _ = try await client.send(request)
            XCTFail("a header with a line break was sent")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest)
        }
        let kinds = recorder.events.map { event -> String in
            switch event.kind {
            case .queued: "queued"
            case .failed(let error, _): "failed \(error.code)"
            default: "other"
            }
        }
        XCTAssertEqual(kinds.first, "queued")
        XCTAssertEqual(kinds.last, "failed invalidRequest", "\(kinds)")
        XCTAssertEqual(kinds.filter { $0.hasPrefix("failed") }.count, 1, "exactly one failed event: \(kinds)")
    }

    /// A body dropped part-way ends its progress as failed (`didFail`): it ended as a normal end, so a download
    /// dropped at 6 of 11 bytes read as a transfer that had ended well. The test fails on the old code.
    func testABodyDroppedPartWayEndsItsProgressAsFailed() async throws {
        let seen = Locked<[HTTPTransferProgress]>([])
        var request = HTTPClientRequest(url: server.baseURL + "/slow-body?ms=2000")
        request.progressHandler = HTTPProgressHandler { progress in seen.withLock { $0.append(progress) } }
        func readTheFirstPartAndDrop() async throws {
            let response = try await client.send(request)
            var iterator = response.body.makeAsyncIterator()
            let first = try await iterator.next()
            XCTAssertEqual(first.map { String(decoding: $0, as: UTF8.self) }, "part1-")
        }
        try await readTheFirstPartAndDrop()
        let final = try XCTUnwrap(seen.withLock { $0 }.last)
        XCTAssertEqual(final, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 6, bytesExpectedToReceive: 11,
                                                   isFinal: true, didFail: true))
        XCTAssertEqual(seen.withLock { $0 }.filter(\.isFinal).count, 1)
    }

    /// How the request's events end: `finished`, `failed <code>`, for each terminal event in order.
    func terminalEvents() -> [String] {
        recorder.events.compactMap { event -> String? in
            switch event.kind {
            case .finished: "finished"
            case .failed(let error, _): "failed \(error.code)"
            default: nil
            }
        }
    }

    /// `collect(upTo:)` giving up at its limit ends the request with that error, for observers too: they got no
    /// end at all (an observer counting requests in flight kept it forever). Fails on the old code.
    func testABodyOverCollectsLimitEndsWithFailed() async throws {
        let response = try await client.send(HTTPClientRequest(url: server.baseURL + "/bytes?n=200000"))
        await assertThrowsHTTPError(.bodyLimitExceeded) { try await response.body.collect(upTo: 1000) }
        XCTAssertEqual(terminalEvents(), ["failed bodyLimitExceeded"])
    }

    /// A body dropped unread: observers get `finished` when the rest was drained (the response ended on the wire
    /// and its connection went back to the pool), `failed` with `cancelled` when the connection had to close.
    func testABodyDroppedUnreadEndsForObserversWhenItsConnectionIsSettled() async throws {
        do {
            // 6 bytes with the head, 5 more after 100 ms: the drain reads them.
            let small = try await client.send(HTTPClientRequest(url: server.baseURL + "/slow-body?ms=100"))
            XCTAssertEqual(small.status, .ok)
            XCTAssertTrue(terminalEvents().isEmpty)
        }
        try await waitUntil("the dropped small body's end is observed") { !terminalEvents().isEmpty }
        XCTAssertEqual(terminalEvents(), ["finished"])

        do {
            let large = try await client.send(HTTPClientRequest(url: server.baseURL + "/bytes?n=4000000"))
            XCTAssertEqual(large.status, .ok)
        }
        try await waitUntil("the dropped large body's end is observed") { terminalEvents().count == 2 }
        XCTAssertEqual(terminalEvents(), ["finished", "failed cancelled"])
    }

    /// The same after a redirect hop, whose own `finished` came first: the returned response still gets its end.
    func testTheReturnedResponsesEndIsReportedAfterARedirectHop() async throws {
        let redirect = server.baseURL + "/status/302?location=%2Fbytes%3Fn%3D4000000"
        let limited = try await client.send(HTTPClientRequest(url: redirect))
        await assertThrowsHTTPError(.bodyLimitExceeded) { try await limited.body.collect(upTo: 1000) }
        XCTAssertEqual(terminalEvents(), ["finished", "failed bodyLimitExceeded"])

        do {
            let dropped = try await client.send(HTTPClientRequest(url: redirect))
            XCTAssertEqual(dropped.status, .ok)
        }
        try await waitUntil("the dropped body's end is observed") { terminalEvents().count == 4 }
        XCTAssertEqual(terminalEvents(), ["finished", "failed bodyLimitExceeded", "finished", "failed cancelled"])
    }
}

/// The fixes named by the house issue: bad configuration and a second concurrent reader are typed errors.
final class MisuseTests: XCTestCase {
    func testNegativeConnectionLimitIsAClearErrorNotATrap() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerHost = -3
        XCTAssertThrowsError(try configuration.validate()) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .invalidConfiguration)
            XCTAssertTrue("\(error)".contains("maxConnectionsPerHost is -3"), "\(error)")
        }
        let client = HTTPClient(configuration: configuration)
        do {
            _ = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:9/"))
            XCTFail("a client with a bad configuration must refuse requests")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidConfiguration)
        }
        await client.shutdown()
    }

    func testOtherOutOfRangeValuesAreRefused() {
        var configurations: [HTTPClient.Configuration] = []
        var configuration = HTTPClient.Configuration()
        configuration.connectTimeout = .zero
        configurations.append(configuration)
        configuration = .init()
        configuration.inactivityTimeout = .seconds(-1)
        configurations.append(configuration)
        configuration = .init()
        configuration.retriesOnTimeout = -1
        configurations.append(configuration)
        configuration = .init()
        configuration.maxResponseHeaderCount = 0
        configurations.append(configuration)
        configuration = .init()
        configuration.busyPollLimit = .milliseconds(2)
        configurations.append(configuration)
        configuration = .init()
        configuration.busyPollLimit = .microseconds(-1)
        configurations.append(configuration)
        for configuration in configurations {
            XCTAssertThrowsError(try configuration.validate())
        }
        XCTAssertNoThrow(try HTTPClient.Configuration().validate())
    }

    func testASecondConcurrentReaderOfOneBodyGetsBodyInUse() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        // "part1-" arrives with the head; "part2" a second later, so the first reader is inside a read then.
        let response = try await client.send(HTTPClientRequest(url: server.baseURL + "/slow-body?ms=1000"))
        var first = response.body.makeAsyncIterator()
        let firstChunk = try await first.next().map { Array($0) }
        XCTAssertEqual(firstChunk, Array("part1-".utf8))
        let body = response.body
        /// What one reader got: the chunk's text, or the error code.
        let outcomes = await withTaskGroup(of: String.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    var iterator = body.makeAsyncIterator()
                    do {
                        let chunk = try await iterator.next()
                        return chunk.map { String(decoding: $0, as: UTF8.self) } ?? "end"
                    } catch {
                        return "error \((error as? HTTPClientError)?.code.rawValue ?? "\(error)")"
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        XCTAssertEqual(outcomes.sorted(), ["error bodyInUse", "part2"])
        await client.shutdown()
        try await server.shutdown()
    }
}
