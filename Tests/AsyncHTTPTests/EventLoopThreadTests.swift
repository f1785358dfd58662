import Foundation
import Glibc
import XCTest
@testable import AsyncHTTP

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
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var policies: [Int32] = []
        let thread = Thread {
            var parameters = sched_param()
            policies.append(sched_setscheduler(0, 3, &parameters))  // 0: now SCHED_BATCH
            EpollEventLoop.undoInheritedBatchPolicy()
            policies.append(sched_getscheduler(0))  // back to SCHED_OTHER
            policies.append(sched_setscheduler(0, 3, &parameters))
            EpollEventLoop.undoInheritedBatchPolicy()
            policies.append(sched_getscheduler(0))  // left alone: this thread was looked at already
            done.signal()
        }
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(policies, [0, 0, 0, 3])
    }
}
