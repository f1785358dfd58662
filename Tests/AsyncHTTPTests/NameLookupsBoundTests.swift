import Dispatch
#if canImport(Glibc)
import Glibc
#endif
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

    func testSlowLookupsOfDistinctNamesRunTogetherNotAFewPerProcessor() async throws {
        // Sixteen names, each lookup blocking for 300 ms (a slow DNS server). Each runs on a thread of its own, so
        // the sixteen take about 300 ms; on Dispatch's shared pool they ran about as many at a time as there are
        // processors, the pool growing by about a thread a second (two processors: 0.9 s for eight, about 1.5 s for
        // sixteen), and the deadline of a connect waited in that queue.
        let calls = Locked(0)
        let lookups = NameLookups(limit: 64) { _, port in
            calls.withLock { $0 += 1 }
            usleep(300_000)
            return .success([SocketAddress(numericHost: "127.0.0.1", port: port)!])
        }
        let clock = ContinuousClock()
        let began = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask { _ = try await lookups.resolve(host: "slow\(index).test", port: 80, deadline: .now + .seconds(20)) }
            }
            try await group.waitForAll()
        }
        let elapsed = clock.now - began
        XCTAssertEqual(calls.withLock { $0 }, 16)
        XCTAssertLessThan(elapsed, .milliseconds(800), "sixteen 300 ms lookups at once took \(elapsed)")
        XCTAssertEqual(lookups.load.running, 0)
    }

    func testBlockedLookupsLeaveDispatchsSharedPoolFree() async throws {
        // While as many lookups hang as there are processors (and more), work queued on Dispatch's global queue
        // still runs at once: the lookups do not hold the pool's threads.
        let resolver = HangingResolver()
        let lookups = NameLookups(limit: 64, lookup: resolver.lookup)
        var started = resolver.started.makeAsyncIterator()
        let count = max(4, 2 * Int(ahttpTestProcessorCount()))
        let hung = (0..<count).map { index in
            Task { try await lookups.resolve(host: "hang\(index)", port: 80, deadline: nil) }
        }
        for _ in 0..<count { _ = await started.next() }
        let clock = ContinuousClock()
        let began = clock.now
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { continuation.resume() }
        }
        XCTAssertLessThan(clock.now - began, .milliseconds(500), "Dispatch work waited behind blocked lookups")
        for _ in 0..<count { resolver.gate.signal() }
        for task in hung { _ = try await task.value }
        XCTAssertEqual(lookups.load.running, 0)
    }

    func testLookupThreadsAreReusedAndEndWhenIdle() async throws {
        let threads = LookupThreads(maxThreads: 3, idleTimeout: .milliseconds(3_000))  // room for a loaded machine between the rounds
        let gate = DispatchSemaphore(value: 0)
        let ran = Locked<[pthread_t]>([])
        let (done, report) = AsyncStream.makeStream(of: Void.self)
        var finished = done.makeAsyncIterator()
        let job: @Sendable () -> Void = {
            gate.wait()
            ran.withLock { $0.append(pthread_self()) }
            report.yield()
        }
        // Three blocking jobs at once: three threads.
        for _ in 0..<3 { threads.run(job) }
        XCTAssertEqual(threads.threadCount, 3)
        for _ in 0..<3 { gate.signal() }
        for _ in 0..<3 { _ = await finished.next() }
        let first = Set(ran.withLock { $0 })
        XCTAssertEqual(first.count, 3)
        // Three more once those are idle: run by the same threads, none added.
        try await waitUntil("the three threads are idle", timeout: .seconds(5)) { threads.idleCount == 3 }
        for _ in 0..<3 { threads.run(job) }
        XCTAssertEqual(threads.threadCount, 3)
        for _ in 0..<3 { gate.signal() }
        for _ in 0..<3 { _ = await finished.next() }
        XCTAssertEqual(Set(ran.withLock { $0 }), first, "idle threads were reused")
        // Idle for longer than the timeout: every thread ends.
        try await waitUntil("every idle thread ended", timeout: .seconds(10)) { threads.threadCount == 0 }
    }

    func testLookupThreadsNeverExceedTheirMaximum() async throws {
        // A finishing lookup hands its slot on from its own thread, before that thread is idle: the job handed on
        // waits for a thread to finish (that one) instead of starting one more.
        let threads = LookupThreads(maxThreads: 2, idleTimeout: .milliseconds(200))
        let gate = DispatchSemaphore(value: 0)
        let (done, report) = AsyncStream.makeStream(of: Int.self)
        var finished = done.makeAsyncIterator()
        for index in 0..<2 { threads.run { gate.wait(); report.yield(index) } }
        threads.run { report.yield(2) }
        XCTAssertEqual(threads.threadCount, 2, "the third job waits for one of the two threads")
        gate.signal()
        var seen: Set<Int> = []
        for _ in 0..<2 { seen.insert(await finished.next() ?? -1) }
        XCTAssertTrue(seen.contains(2), "the waiting job ran once a thread finished: \(seen)")
        XCTAssertEqual(threads.threadCount, 2)
        gate.signal()
        _ = await finished.next()
        try await waitUntil("every idle thread ended", timeout: .seconds(10)) { threads.threadCount == 0 }
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

/// The processors this process may run on.
func ahttpTestProcessorCount() -> Int {
    max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
}
