import Dispatch
import XCTest

@testable import AsyncHTTP

/// The bound on name lookups in flight (docs/architecture.md, "The event loop"): lookups that hang and are
/// abandoned after a timeout or a cancel keep at most `limit` threads, and nothing piles up behind them.
/// No network: the blocking lookup is injected.
final class NameLookupsBoundTests: XCTestCase {
    /// A blocking lookup that hangs for hosts named `hang*` until released, and reports each call it starts.
    final class HangingResolver: Sendable {
        let gate = DispatchSemaphore(value: 0)
        let started: AsyncStream<String>
        private let report: AsyncStream<String>.Continuation
        private let calls = Locked(0)

        init() {
            (started, report) = AsyncStream.makeStream(of: String.self)
        }

        var callCount: Int { calls.withLock { $0 } }

        var lookup: NameLookups.Lookup {
            { [self] host, port in
                calls.withLock { $0 += 1 }
                report.yield(host)
                if host.hasPrefix("hang") { gate.wait() }
                return .success([SocketAddress(numericHost: "127.0.0.1", port: port)!])
            }
        }
    }

    func soon() -> MonotonicTime { .now + .milliseconds(50) }

    func testHungLookupsKeepAtMostTheLimitAndTheRestFailWithinTheirDeadline() async throws {
        XCTAssertEqual(NameLookups.defaultLimit, 64)
        let resolver = HangingResolver()
        let lookups = NameLookups(limit: 2, lookup: resolver.lookup)
        var started = resolver.started.makeAsyncIterator()

        // Two lookups hang and are given up: their calls keep running, holding both slots. Each is given up only
        // once its call has started (a caller that gives up while its lookup is still queued on Dispatch leaves
        // before the call, which then never starts: with a short deadline here, that made `started.next()` wait
        // forever whenever Dispatch ran the lookup after the deadline).
        let hung = (0..<2).map { index in
            Task { try await lookups.resolve(host: "hang\(index)", port: 80, deadline: nil) }
        }
        _ = await started.next()
        _ = await started.next()
        for task in hung { task.cancel() }
        for task in hung { await assertThrowsHTTPError(.cancelled) { _ = try await task.value } }
        XCTAssertEqual(lookups.load.running, 2)

        // A stream of further timeouts: none of them starts a call, and none stays queued.
        let streamDeadline = soon()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    await assertThrowsHTTPError(.timeout) {
                        _ = try await lookups.resolve(host: "hang-more\(index)", port: 80, deadline: streamDeadline)
                    }
                }
            }
            try await group.waitForAll()
        }
        XCTAssertEqual(resolver.callCount, 2, "no thread was added for the lookups that waited")
        XCTAssertEqual(lookups.load.running, 2)
        XCTAssertEqual(lookups.load.waiting, 0, "a waiter that gave up left the queue")

        // A cancelled waiter leaves at once too.
        let cancelled = Task { try await lookups.resolve(host: "example.test", port: 80, deadline: nil) }
        cancelled.cancel()
        await assertThrowsHTTPError(.cancelled) { _ = try await cancelled.value }
        XCTAssertEqual(lookups.load.waiting, 0)

        // A lookup without a deadline waits for a slot; releasing the hung calls lets it run.
        let patient = Task { try await lookups.resolve(host: "example.test", port: 443, deadline: nil) }
        resolver.gate.signal()
        resolver.gate.signal()
        let addresses = try await patient.value
        XCTAssertEqual(addresses.count, 1)
        let lastStarted = await started.next()
        XCTAssertEqual(lastStarted, "example.test")
        XCTAssertEqual(resolver.callCount, 3, "only the lookup still wanted ran")
    }

    func testNumericHostsNeedNoSlot() async throws {
        let resolver = HangingResolver()
        let lookups = NameLookups(limit: 1, lookup: resolver.lookup)
        await assertThrowsHTTPError(.timeout) { _ = try await lookups.resolve(host: "hang", port: 80, deadline: self.soon()) }
        let addresses = try await lookups.resolve(host: "::1", port: 80, deadline: soon())
        XCTAssertEqual(addresses.count, 1)
        resolver.gate.signal()
    }

    func testLookupsBelowTheLimitRunAtOnceAndFreeTheirSlots() async throws {
        let resolver = HangingResolver()
        let lookups = NameLookups(limit: 3, lookup: resolver.lookup)
        for index in 0..<10 {
            _ = try await lookups.resolve(host: "host\(index).test", port: 80, deadline: soon() + .seconds(5))
        }
        XCTAssertEqual(resolver.callCount, 10)
        XCTAssertEqual(lookups.load.running, 0)
        XCTAssertEqual(lookups.load.waiting, 0)
    }
}
