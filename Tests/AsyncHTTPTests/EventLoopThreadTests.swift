import Foundation
import Glibc
import XCTest
@testable import AsyncHTTP
import CEpoll

/// The event loop thread's name and scheduling policy, read back from the kernel (`/proc/self/task`), and how a
/// descriptor's directions are armed.
final class EventLoopThreadTests: XCTestCase {
    func testTheLoopThreadIsNamedAndScheduledAsBatch() async throws {
        // A wait starts the process-wide loop if nothing has yet.
        let pair = LoopSocketPair()
        defer { pair.close() }
        XCTAssertEqual(Glibc.send(pair.peer, "x", 1, Int32(MSG_NOSIGNAL)), 1)
        let result = await EpollEventLoop.shared.wait(fd: pair.ours, for: .readable, deadline: MonotonicTime.now + .seconds(5))
        XCTAssertEqual(result, .ready)

        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        let loopThreads = tasks.compactMap { tid -> Int32? in
            let comm = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)
            guard comm?.trimmingCharacters(in: .whitespacesAndNewlines) == EpollEventLoop.threadName else { return nil }
            return Int32(tid)
        }
        XCTAssertEqual(loopThreads.count, 1, "exactly one thread named \(EpollEventLoop.threadName)")
        guard let tid = loopThreads.first else { return }
        XCTAssertEqual(sched_getscheduler(tid), 3, "SCHED_BATCH")
        // Only the loop thread: the thread this task resumed on (possibly one the loop's resumption made the runtime
        // create, which inherited the batch policy) runs under the ordinary one.
        XCTAssertEqual(sched_getscheduler(0), 0, "SCHED_OTHER")
    }

    /// A descriptor's first wait arms only its own direction; the first wait for the other one must arm that too,
    /// or a writer behind a full send buffer would never hear that it drained.
    func testAWaitForWritingAfterOnlyReadingIsWokenWhenTheBufferDrains() async throws {
        let loop = EpollEventLoop.shared
        let pair = LoopSocketPair()
        let (ours, peer) = (pair.ours, pair.peer)
        defer { pair.close() }
        // First wait: for reading.
        XCTAssertEqual(Glibc.send(peer, "x", 1, Int32(MSG_NOSIGNAL)), 1)
        let read = await loop.wait(fd: ours, for: .readable, deadline: MonotonicTime.now + .seconds(5))
        XCTAssertEqual(read, .ready)
        var byte: UInt8 = 0
        XCTAssertEqual(recv(ours, &byte, 1, 0), 1)

        // Fill our send buffer (bounded: a Unix socket's buffer is at most a few MiB).
        let chunk = [UInt8](repeating: 0x61, count: 65_536)
        var filled = false
        for _ in 0..<1_024 where !filled {
            if Glibc.send(ours, chunk, chunk.count, Int32(MSG_NOSIGNAL)) < 0 {
                XCTAssertEqual(errno, EAGAIN)
                filled = true
            }
        }
        XCTAssertTrue(filled, "the send buffer never filled")

        // The peer drains it while we wait to write.
        let drainer = Task.detached {
            try await Task.sleep(for: .milliseconds(50))
            var sink = [UInt8](repeating: 0, count: 65_536)
            for _ in 0..<1_024 where recv(peer, &sink, sink.count, 0) > 0 {}
        }
        let write = await loop.wait(fd: ours, for: .writable, deadline: MonotonicTime.now + .seconds(5))
        XCTAssertEqual(write, .ready, "the write direction was never armed")
        try await drainer.value
    }

    /// A thread found under `SCHED_BATCH` (as one created by the loop thread would be) is put back to `SCHED_OTHER`,
    /// once: the check is made the first time the thread asks. On a thread of its own, so that no pool thread's
    /// flag is spent.
    func testAnInheritedBatchPolicyIsUndoneOncePerThread() {
        XCTAssertEqual(HTTPClient.threadScheduling, .unchanged)
        let policies = onThreadOfItsOwn {
            var parameters = sched_param()
            var policies = [sched_setscheduler(0, 3, &parameters)]  // 0: now SCHED_BATCH
            EpollEventLoop.applyThreadScheduling()
            policies.append(sched_getscheduler(0))  // back to SCHED_OTHER
            policies.append(sched_setscheduler(0, 3, &parameters))
            EpollEventLoop.applyThreadScheduling()
            policies.append(sched_getscheduler(0))  // left alone: this thread was looked at already
            return policies
        }
        XCTAssertEqual(policies, [0, 0, 0, 3])
    }

    /// `.batch`: the thread a parked wait resumes on runs under `SCHED_BATCH` afterwards, and setting `.unchanged`
    /// puts it back at once, from another thread's call, without it having to wait again.
    func testBatchSchedulingChangesTheThreadAWaitResumesOnUntilUnset() async throws {
        XCTAssertEqual(HTTPClient.threadScheduling, .unchanged)
        HTTPClient.threadScheduling = .batch
        defer { HTTPClient.threadScheduling = .unchanged }
        XCTAssertEqual(HTTPClient.threadScheduling, .batch)
        let pair = LoopSocketPair()
        let (ours, peer) = (pair.ours, pair.peer)
        defer { pair.close() }
        // Nothing to read yet, so the wait parks and the event loop resumes it.
        let writer = Task.detached {
            try await Task.sleep(for: .milliseconds(20))
            return Glibc.send(peer, "x", 1, Int32(MSG_NOSIGNAL))
        }
        let result = await EpollEventLoop.shared.wait(fd: ours, for: .readable, deadline: MonotonicTime.now + .seconds(5))
        let (thread, policy) = (ahttp_thread_id(), sched_getscheduler(0))
        XCTAssertEqual(result, .ready)
        XCTAssertEqual(policy, 3, "the thread the wait resumed on runs under SCHED_BATCH")
        let sent = try await writer.value
        XCTAssertEqual(sent, 1)

        HTTPClient.threadScheduling = .unchanged
        XCTAssertEqual(sched_getscheduler(thread), 0, "put back to SCHED_OTHER when the setting is unset")
        XCTAssertEqual(HTTPClient.threadScheduling, .unchanged)
    }

    /// `.batch` changes only threads under `SCHED_OTHER`: one under `SCHED_IDLE` (or a real-time policy) keeps it,
    /// and is not put back to `SCHED_OTHER` by unsetting either.
    func testBatchSchedulingLeavesOtherPoliciesAlone() {
        HTTPClient.threadScheduling = .batch
        defer { HTTPClient.threadScheduling = .unchanged }
        let policies = onThreadOfItsOwn {
            var parameters = sched_param()
            var policies = [sched_setscheduler(0, 5, &parameters)]  // 0: now SCHED_IDLE
            EpollEventLoop.applyThreadScheduling()
            policies.append(sched_getscheduler(0))  // still SCHED_IDLE
            HTTPClient.threadScheduling = .unchanged
            EpollEventLoop.applyThreadScheduling()
            policies.append(sched_getscheduler(0))  // still SCHED_IDLE
            return policies
        }
        XCTAssertEqual(policies, [0, 5, 5])
    }

    /// Unsetting `.batch` restores only threads of this process: a recorded id whose thread has exited may name
    /// another process's thread by then (here pid 1, never one of ours).
    func testOnlyThreadsOfThisProcessCountAsOurs() {
        XCTAssertTrue(EpollEventLoop.isThreadOfThisProcess(ahttp_thread_id()))
        XCTAssertTrue(EpollEventLoop.isThreadOfThisProcess(getpid()))
        XCTAssertFalse(EpollEventLoop.isThreadOfThisProcess(1))
    }

    /// Runs `body` on a new thread and returns what it returned (within 10 s).
    private func onThreadOfItsOwn(_ body: @escaping @Sendable () -> [Int32]) -> [Int32] {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: [Int32] = []
        let thread = Thread {
            result = body()
            done.signal()
        }
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        return result
    }
}
