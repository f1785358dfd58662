import Foundation
import Glibc
import XCTest
@testable import AsyncHTTP

/// The event loop thread's name and scheduling policy, read back from the kernel (`/proc/self/task`).
final class EventLoopThreadTests: XCTestCase {
    func testTheLoopThreadIsNamedAndScheduledAsBatch() async throws {
        // A wait starts the process-wide loop if nothing has yet.
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds), 0)
        defer {
            EpollEventLoop.shared.deregister(fd: fds[0])
            close(fds[0])
            close(fds[1])
        }
        XCTAssertEqual(Glibc.send(fds[1], "x", 1, Int32(MSG_NOSIGNAL)), 1)
        let result = await EpollEventLoop.shared.wait(fd: fds[0], for: .readable, deadline: MonotonicTime.now + .seconds(5))
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
        // Only the loop thread: the test's own thread keeps the ordinary policy.
        XCTAssertEqual(sched_getscheduler(0), 0, "SCHED_OTHER")
    }
}
