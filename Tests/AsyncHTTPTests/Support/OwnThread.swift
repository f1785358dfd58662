@testable import AsyncHTTP
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` on a thread of its own, for code that may block in a system call (an `open` of a FIFO waits for
/// its other end). Returns what it returned, or nil if it had not returned within 5 s: then `release` is called
/// to unblock it (it opens the FIFO's other end and returns that descriptor), the thread is given 5 s more to
/// end, so none is left behind, and the descriptor is closed.
func resultOnAThreadOfItsOwn<T: Sendable>(release: () -> Int32, _ body: @escaping @Sendable () -> T) -> T? {
    let finished = DispatchSemaphore(value: 0)
    let result = Locked<T?>(nil)
    Thread.detachNewThread {
        let value = body()
        result.withLock { $0 = value }
        finished.signal()
    }
    guard finished.wait(timeout: .now() + 5) == .timedOut else { return result.withLock { $0 } }
    let held = release()
    _ = finished.wait(timeout: .now() + 5)
    if held >= 0 { close(held) }
    return nil
}

/// Opens the other end of the FIFO at `path`, releasing a blocked `open` of it; the descriptor, or -1.
func openOtherEnd(ofFIFO path: String, forWriting: Bool) -> Int32 {
    open(path, (forWriting ? O_RDWR : O_RDONLY) | O_NONBLOCK)
}
