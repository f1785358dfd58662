import Dispatch

/// Runs blocking name lookups on Dispatch threads, at most ``limit`` at a time; the rest wait in FIFO order.
///
/// A lookup that times out or is cancelled returns at once, but its blocking call cannot be stopped: it keeps
/// its slot until the call returns. So under a resolver that hangs, at most ``limit`` threads hang, and the
/// requests behind them wait for a slot until their own deadline or cancellation, then fail as a timeout or a
/// cancel would have; a waiter that gives up leaves the queue at once, so nothing accumulates.
///
/// The blocking function is injected, so tests can make lookups hang, count them and release them.
final class NameLookups: Sendable {
    /// 64 lookups at once. Go's resolver lets 500 cgo `getaddrinfo` calls run (`concurrentThreadsLimit`) and
    /// queues the rest; fewer here because each is a thread of Dispatch's shared pool, which the rest of the
    /// process needs too. A client's pools open at most 8 connections per host at a time, so 64 concurrent
    /// lookups is eight hosts' worth of simultaneous new connections, and beyond that a lookup only waits.
    static let defaultLimit = 64

    typealias Lookup = @Sendable (_ host: String, _ port: Int) -> Result<[SocketAddress], HTTPClientError>
    typealias Answer = Result<[SocketAddress], HTTPClientError>

    let limit: Int
    private let lookup: Lookup
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "AsyncHTTP.resolver", attributes: .concurrent)
    /// Deadlines fire here, never behind a blocked lookup.
    private let timers = DispatchQueue(label: "AsyncHTTP.resolver.deadlines")

    private struct State {
        /// Blocking calls running, abandoned ones included.
        var running = 0
        /// Lookups waiting for a slot, oldest first, by id.
        var waiting: [(id: UInt64, start: @Sendable () -> Void)] = []
        var nextID: UInt64 = 0
    }

    init(limit: Int, lookup: @escaping Lookup) {
        precondition(limit > 0)
        self.limit = limit
        self.lookup = lookup
    }

    /// Blocking calls running now (abandoned ones included), and lookups waiting for a slot.
    var load: (running: Int, waiting: Int) {
        state.withLock { ($0.running, $0.waiting.count) }
    }

    func resolve(host: String, port: Int, deadline: ContinuousClock.Instant?) async throws(HTTPClientError) -> [SocketAddress] {
        if let address = SocketAddress(numericHost: host, port: port) { return [address] }
        let once = Locked<CheckedContinuation<Answer, Never>?>(nil)
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        // Resumes the caller once; a lookup still queued leaves the queue.
        let finish: @Sendable (Answer) -> Void = { [self] answer in
            guard once.withLock({ $0 != nil }) else { return }
            state.withLock { state in state.waiting.removeAll { $0.id == id } }
            // Resumed while `once` is held, and a checked continuation: with an unsafe one the thread sanitizer
            // reported `resume` (on a Dispatch thread) racing the woken task's next use of its task-allocator
            // memory, in two full runs. One lookup per new connection to a named host: the check costs nothing
            // that matters.
            once.withLock { continuation in
                continuation?.resume(returning: answer)
                continuation = nil
            }
        }
        let lookup = self.lookup
        let start: @Sendable () -> Void = { [self] in
            queue.async { [self] in
                // Given up while queued, and the queue already handed the slot over: pass it on unused.
                if once.withLock({ $0 == nil }) {
                    release()
                    return
                }
                let answer = lookup(host, port)
                release()
                finish(answer)
            }
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Answer, Never>) in
                once.withLock { $0 = continuation }
                if Task.isCancelled {
                    finish(.failure(.cancelled))
                    return
                }
                let startsNow = state.withLock { state -> Bool in
                    if state.running < limit {
                        state.running += 1
                        return true
                    }
                    state.waiting.append((id, start))
                    return false
                }
                // Cancelled between the check above and the enqueue: `finish` may have looked for the entry
                // before it was there.
                if !startsNow, once.withLock({ $0 == nil }) {
                    state.withLock { state in state.waiting.removeAll { $0.id == id } }
                }
                if let deadline {
                    let nanos = max(0, ContinuousClock.now.duration(to: deadline).nanoseconds)
                    timers.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanos))) {
                        finish(.failure(.timeout(.connect, "resolving \(host) took too long")))
                    }
                }
                if startsNow { start() }
            }
        } onCancel: {
            finish(.failure(.cancelled))
        }
        return try result.get()
    }

    /// A blocking call returned (or a slot was handed to a lookup that had already given up): the slot goes to
    /// the oldest waiter, or is freed.
    private func release() {
        let next = state.withLock { state -> (@Sendable () -> Void)? in
            if state.waiting.isEmpty {
                state.running -= 1
                return nil
            }
            return state.waiting.removeFirst().start
        }
        next?()
    }
}
