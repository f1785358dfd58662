import Foundation
import XCTest
@testable import AsyncHTTP

/// Batches against the in-process NIO server: how many run at once (the connections the server accepts), results
/// as they finish, cancel-all on a failing member, cancellation of the whole batch, nothing left open.
final class BatchIntegrationTests: XCTestCase {
    /// Records the events of a batch.
    final class Events: Sendable {
        let list = Locked<[HTTPBatchEvent]>([])
        let running = Locked((now: 0, most: 0))
        func record(_ event: HTTPBatchEvent) {
            list.withLock { $0.append(event) }
            switch event {
            case .started: running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            case .finished, .failed: running.withLock { $0.now -= 1 }
            default: break
            }
        }
        var mostRunning: Int { running.withLock { $0.most } }
        var failures: [HTTPClientError] {
            list.withLock { $0.compactMap { if case .failed(_, let error) = $0 { error } else { nil } } }
        }
        var finishedCount: Int { list.withLock { $0.filter { if case .finished = $0 { true } else { false } }.count } }
    }


    func testMaxConcurrentRequestsBoundsWhatTheServerSees() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()   // 8 connections per host: only the batch holds it to 2
        let events = Events()
        let sizes = try await client.withBatch(.init(maxConcurrentRequests: 2, onEvent: events.record), handler: collectBodySize) { batch in
            for _ in 0..<8 { batch.add(HTTPClientRequest(url: server.url("/slow-head?ms=100"))) }
            batch.finish()
            var sizes: [Int] = []
            for await member in batch.results { sizes.append(try member.result.get()) }
            return sizes
        }
        XCTAssertEqual(sizes, Array(repeating: 4, count: 8))
        XCTAssertEqual(server.connectionsAccepted, 2, "two at a time reuse two connections")
        XCTAssertEqual(events.mostRunning, 2)
        XCTAssertEqual(events.finishedCount, 8)
        await client.shutdown()
        try await server.shutdown()
    }

    /// A member handler is told which member it reads (ids from 0 in the order of `add`, and the request as added),
    /// and streams each body to its own file; a path a rename cannot replace is refused before anything is read.
    func testAMemberHandlerWritesEachBodyToItsMembersFile() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        let directory = makeCacheDirectory()
        let sizes = [3000, 70_000, 1]
        let paths = sizes.indices.map { directory + "/member-\($0)" }
        try Data("old".utf8).write(to: URL(fileURLWithPath: paths[1]))
        let written = try await client.withBatch(.init(maxConcurrentRequests: 3), memberHandler: { member, response in
            XCTAssertEqual(member.request.url, server.url("/bytes?n=\(sizes[member.id])"))
            return try await response.body.write(toFileAtPath: paths[member.id])
        }) { batch in
            XCTAssertEqual(sizes.map { batch.add(HTTPClientRequest(url: server.url("/bytes?n=\($0)"))) }, [0, 1, 2])
            batch.finish()
            var written: [Int: Int] = [:]
            for await member in batch.results { written[member.id] = try member.result.get() }
            return written
        }
        XCTAssertEqual(written, [0: 3000, 1: 70_000, 2: 1])
        for (index, size) in sizes.enumerated() {
            let bytes = try XCTUnwrap(FileManager.default.contents(atPath: paths[index]))
            XCTAssertEqual(bytes.count, size)
            bytes.withUnsafeBytes { XCTAssertNil(TestPattern.firstMismatch(in: $0), "member \(index)") }
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).sorted(), paths.map { ($0 as NSString).lastPathComponent },
                       "no temporary file left")
        let response = try await client.send(HTTPClientRequest(url: server.url("/bytes?n=10")))
        do {
            _ = try await response.body.write(toFileAtPath: directory)
            XCTFail("a directory was accepted as the file")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest)
        }
        await client.shutdown()
        try await server.shutdown()
    }

    func testMembersAddedWhileTheBatchRunsAreRunToo() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        let ids = try await client.withBatch(handler: collectBodySize) { batch in
            batch.add(HTTPClientRequest(url: server.url("/bytes?n=10")))
            var ids: [Int] = []
            for await member in batch.results {
                ids.append(member.id)
                XCTAssertEqual(try member.result.get(), 10 * (member.id + 1))
                if member.id < 3 {
                    batch.add(HTTPClientRequest(url: server.url("/bytes?n=\(10 * (member.id + 2))")))
                } else {
                    batch.finish()
                }
            }
            return ids
        }
        XCTAssertEqual(ids, [0, 1, 2, 3])
        await client.shutdown()
        try await server.shutdown()
    }

    func testAFailingMemberCancelsTheOthersAndNoConnectionIsLeftOpen() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        let events = Events()
        let dead = try unusedPort()
        let start = ContinuousClock.now
        let outcomes = try await client.sendAll([
            HTTPClientRequest(url: server.url("/slow-body?ms=5000")),
            HTTPClientRequest(url: server.url("/slow-body?ms=5000")),
            HTTPClientRequest(url: server.url("/slow-head?ms=5000")),
            HTTPClientRequest(url: "http://127.0.0.1:\(dead)/"),
            HTTPClientRequest(url: server.url("/hello")),
        ], configuration: .init(maxConcurrentRequests: 4, onEvent: events.record))
        XCTAssertLessThan(durationSeconds(start.duration(to: .now)), 3, "nobody waited for the slow members")
        let codes = outcomes.map { outcome -> HTTPClientError.Code? in
            if case .failure(let error) = outcome { error.code } else { nil }
        }
        XCTAssertEqual(codes, [.cancelled, .cancelled, .cancelled, .connectFailed, .cancelled],
                       "the fifth never started: the failure came first")
        XCTAssertEqual(events.failures.count, 5)
        // A member whose connection was made as the cancellation came gives it back unused (it carried nothing;
        // docs/connections.md), and the pool keeps it; a connection that carried a request is closed. So what is
        // still open on the server is at most the pool's idle connections, none leased, and shutdown closes them.
        // (This failed now and then while it asked for no idle connection at all.)
        let idle = await client.transport.pool.idleCount
        XCTAssertLessThanOrEqual(idle, 3)
        try await waitUntil("only the pool's \(idle) idle connection(s) are open", timeout: .seconds(3)) {
            server.connectionsOpen <= idle
        }
        let statistics = await client.poolStatistics()
        XCTAssertEqual(statistics.leasedConnections, 0, "no cancelled member holds a connection")
        XCTAssertEqual(client.activeTransfers, 0)
        await client.shutdown()
        try await server.waitUntilAllConnectionsClosed(timeout: .seconds(3))
        try await server.shutdown()
    }

    func testWithoutCancelsAllOnFailureTheOthersFinish() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        let dead = try unusedPort()
        let outcomes = try await client.sendAll([
            HTTPClientRequest(url: "http://127.0.0.1:\(dead)/"),
            HTTPClientRequest(url: server.url("/slow-head?ms=100")),
            HTTPClientRequest(url: server.url("/hello")),
        ], configuration: .init(maxConcurrentRequests: 1, cancelsAllOnFailure: false))
        XCTAssertEqual(outcomes.map { (try? $0.get())?.body.count }, [nil, 4, 5])
        await client.shutdown()
        try await server.shutdown()
    }

    func testCancellingTheTaskCancelsEveryMemberAndLeavesNothingRunning() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        let events = Events()
        let started = AsyncStream<Void>.makeStream()
        let task = Task {
            try await client.withBatch(.init(maxConcurrentRequests: 3, onEvent: { event in
                events.record(event)
                if case .headReceived = event { started.continuation.yield() }
            }), handler: collectBodySize) { batch in
                for _ in 0..<6 { batch.add(HTTPClientRequest(url: server.url("/slow-body?ms=10000"))) }
                batch.finish()
                var count = 0
                for await _ in batch.results { count += 1 }
                return count
            }
        }
        var heads = 0
        for await _ in started.stream {
            heads += 1
            if heads == 3 { break }
        }
        let start = ContinuousClock.now
        task.cancel()
        await assertThrows(.cancelled) { _ = try await task.value }
        XCTAssertLessThan(durationSeconds(start.duration(to: .now)), 2)
        XCTAssertEqual(events.failures.map(\.code), Array(repeating: .cancelled, count: 6),
                       "every member reported, the three that never started too")
        try await server.waitUntilAllConnectionsClosed(timeout: .seconds(3))
        XCTAssertEqual(client.activeTransfers, 0)
        await client.shutdown()
        try await server.shutdown()
    }

    func testAccurateProgressCountsTheSizesFoundWithHEAD() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        let seen = Locked<[HTTPBatchProgress]>([])
        let configuration = HTTPBatchConfiguration(maxConcurrentRequests: 1, progressMode: .accurate(fetchesSizes: true)) { event in
            if case .progress(_, _, let batch) = event { seen.withLock { $0.append(batch) } }
        }
        let outcomes = try await client.sendAll([
            HTTPClientRequest(url: server.url("/bytes?n=300000")),
            HTTPClientRequest(url: server.url("/stream?n=100000&chunk=10000")),
        ], configuration: configuration)
        XCTAssertEqual(outcomes.map { (try? $0.get())?.body.count }, [300_000, 100_000])
        let progress = seen.withLock { $0 }
        XCTAssertEqual(progress.first?.bytesExpectedToReceive, 300_000, "the first member's size, from its HEAD")
        XCTAssertEqual(progress.last?.bytesReceived, 400_000)
        XCTAssertEqual(progress.last?.fractionCompleted, 1)
        XCTAssertEqual(progress.map(\.bytesReceived), progress.map(\.bytesReceived).sorted())
        await client.shutdown()
        try await server.shutdown()
    }

    /// The HEADs go first, as ASINetworkQueue queued them: each member sent its own when it started, so a waiting
    /// member counted nothing expected and the fraction fell as members started.
    func testAccurateProgressKnowsEverySizeBeforeTheFirstDownload() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        let seen = Locked<[HTTPBatchProgress]>([])
        let configuration = HTTPBatchConfiguration(maxConcurrentRequests: 1, progressMode: .accurate(fetchesSizes: true)) { event in
            if case .progress(_, _, let batch) = event { seen.withLock { $0.append(batch) } }
        }
        let outcomes = try await client.sendAll([
            HTTPClientRequest(url: server.url("/bytes?n=300000")),
            HTTPClientRequest(url: server.url("/bytes?n=100000")),
        ], configuration: configuration)
        XCTAssertEqual(outcomes.map { (try? $0.get())?.body.count }, [300_000, 100_000])
        let progress = seen.withLock { $0 }.sorted { $0.sequenceNumber < $1.sequenceNumber }
        XCTAssertEqual(progress.first?.bytesExpectedToReceive, 400_000, "both sizes before the first download's bytes")
        XCTAssertEqual(progress.map(\.fractionCompleted), progress.map(\.fractionCompleted).sorted(), "never falls")
        await client.shutdown()
        try await server.shutdown()
    }

    func testAMemberDroppedBeforeItStartsEndsItsOwnProgress() async throws {
        // No peer: the member that runs is cancelled, the waiting one never starts.
        let client = HTTPClient()
        let seen = Locked<[HTTPTransferProgress]>([])
        var waiting = HTTPClientRequest(url: "http://127.0.0.1:9/waiting")
        waiting.progressHandler = HTTPProgressHandler { progress in seen.withLock { $0.append(progress) } }
        _ = try await client.withBatch(.init(maxConcurrentRequests: 1), handler: collectBodySize) { batch in
            batch.add(HTTPClientRequest(url: "http://127.0.0.1:9/running"))
            batch.add(waiting)
            batch.cancelAll()
        }
        XCTAssertEqual(seen.withLock { $0 }, [HTTPTransferProgress(bytesExpectedToSend: 0, isFinal: true, didFail: true)],
                       "a progressUpdates() stream on a dropped member never ended")
        await client.shutdown()
    }

    func testAMemberRetriedAfterATimeoutEndsOnceWithOneFinalProgress() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        let events = Events()
        let finals = Locked(0)
        var request = HTTPClientRequest(url: server.url("/slow-head?ms=400"))
        request.inactivityTimeout = .milliseconds(100)
        request.retriesOnTimeout = 2
        request.progressHandler = HTTPProgressHandler { if $0.isFinal { finals.withLock { $0 += 1 } } }
        let outcomes = try await client.sendAll([request], configuration: .init(onEvent: events.record))
        guard case .failure(let error) = outcomes[0] else { return XCTFail("slow-head cannot answer within 100 ms") }
        XCTAssertEqual(error.code, .timeout)
        XCTAssertEqual(events.failures.count, 1)
        XCTAssertEqual(finals.withLock { $0 }, 1, "the request's own handler still runs inside the batch, and ends once")
        await client.shutdown()
        try await server.shutdown()
    }
}

/// A batch handler: the body's size.
let collectBodySize: @Sendable (HTTPClientResponse) async throws -> Int = { try await $0.body.collect(upTo: 1 << 24).count }
