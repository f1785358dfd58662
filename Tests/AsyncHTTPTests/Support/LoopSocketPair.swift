import Glibc
import XCTest
@testable import AsyncHTTP

/// A non-blocking Unix socket pair for driving the process-wide event loop directly: `ours` is waited on, `peer`
/// plays the other end. ``close()`` deregisters `ours` from the loop before closing both.
struct LoopSocketPair {
    let ours: Int32
    let peer: Int32

    init(file: StaticString = #filePath, line: UInt = #line) {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds), 0,
                       file: file, line: line)
        (ours, peer) = (fds[0], fds[1])
    }

    func close() {
        EpollEventLoop.shared.deregister(fd: ours)
        Glibc.close(ours)
        Glibc.close(peer)
    }
}
