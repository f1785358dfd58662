import Glibc
import XCTest
@testable import AsyncHTTP

/// `EpollEventLoop.readSideIsQuiet(fd:)`, which lets the reuse check of an idle plain-TCP connection skip its
/// `recv(MSG_PEEK)`: true only while nothing can have arrived since the last wait for reading ended. Driven on a
/// Unix socket pair through the process-wide loop; each change the loop thread must notice is awaited with a
/// bounded poll (at most 2 s).
final class EventLoopQuietTests: XCTestCase {
    private let loop = EpollEventLoop.shared

    func testQuietOnlyWhileNothingArrivedSinceTheLastWait() async throws {
        let pair = LoopSocketPair()
        let (ours, peer) = (pair.ours, pair.peer)
        defer { pair.close() }
        XCTAssertFalse(loop.readSideIsQuiet(fd: ours), "never waited on: the loop cannot tell")

        // A wait ended by data, and the data read: quiet.
        send(peer, "a")
        let first = await loop.wait(fd: ours, for: .readable, deadline: MonotonicTime.now + .seconds(5))
        XCTAssertEqual(first, .ready)
        XCTAssertEqual(drain(ours), 1)
        XCTAssertTrue(loop.readSideIsQuiet(fd: ours))

        // More data with nobody waiting: not quiet, even after it is read, until a wait takes the edge.
        send(peer, "b")
        try await waitUntil("the loop saw the read edge") { !self.loop.readSideIsQuiet(fd: ours) }
        XCTAssertEqual(drain(ours), 1)
        XCTAssertFalse(loop.readSideIsQuiet(fd: ours), "the edge is remembered until a wait takes it")
        let second = await loop.wait(fd: ours, for: .readable, deadline: MonotonicTime.now + .seconds(5))
        XCTAssertEqual(second, .ready, "the remembered edge")
        XCTAssertEqual(drain(ours), 0)
        // epoll reports every wake-up of a readable descriptor as a read edge, so that one arrival may have
        // counted twice and disarmed the direction: not quiet until a wait that parks has armed it again.
        send(peer, "c")
        let third = await loop.wait(fd: ours, for: .readable, deadline: MonotonicTime.now + .seconds(5))
        XCTAssertEqual(third, .ready)
        XCTAssertEqual(drain(ours), 1)
        XCTAssertTrue(loop.readSideIsQuiet(fd: ours))

        // The peer closes: never quiet again, even once a wait has taken the edge.
        XCTAssertEqual(shutdown(peer, Int32(SHUT_WR)), 0)
        try await waitUntil("the loop saw the read edge") { !self.loop.readSideIsQuiet(fd: ours) }
        let fourth = await loop.wait(fd: ours, for: .readable, deadline: MonotonicTime.now + .seconds(5))
        XCTAssertEqual(fourth, .ready)
        XCTAssertFalse(loop.readSideIsQuiet(fd: ours), "a reported close stays")
    }

    private func send(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        XCTAssertEqual(Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)), bytes.count)
    }

    /// Reads what is there; the count of bytes (0 for EAGAIN or the end).
    private func drain(_ fd: Int32) -> Int {
        var buffer = [UInt8](repeating: 0, count: 64)
        return max(0, recv(fd, &buffer, buffer.count, 0))
    }
}
