#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux)
import CEpoll
#endif
import Dispatch

/// Runs blocking name lookups on threads of their own, at most ``limit`` at a time; the rest wait in FIFO order.
///
/// Not on Dispatch's shared pool: on Linux it has as many threads as processors and adds about one a second when
/// they all block, so on two processors sixteen lookups against a slow DNS server ran about two at a time (the
/// later ones timed out inside their connect budget) and held the threads the rest of the process's Dispatch
/// work needed. Each call running has its own thread (``LookupThreads``); the threads are reused, so a burst of
/// lookups starts no more threads than it runs at once.
///
/// A lookup that times out or is cancelled returns at once, but its blocking call cannot be stopped: it keeps
/// its slot until the call returns. So under a resolver that hangs, at most ``limit`` threads hang, and the
/// requests behind them wait for a slot until their own deadline or cancellation, then fail as a timeout or a
/// cancel would have; a waiter that gives up leaves the queue at once, so nothing accumulates.
///
/// The blocking function is injected, so tests can make lookups hang, count them and release them.
final class NameLookups: Sendable {
    /// 64 lookups at once. Go's resolver lets 500 cgo `getaddrinfo` calls run (`concurrentThreadsLimit`) and
    /// queues the rest; fewer here because each is a thread, and a hung resolver keeps them all. A client's pools open at most 8 connections per host at a time, so 64 concurrent
    /// lookups is eight hosts' worth of simultaneous new connections, and beyond that a lookup only waits.
    static let defaultLimit = 64

    typealias Lookup = @Sendable (_ host: String, _ port: Int) -> Result<[SocketAddress], HTTPClientError>
    typealias Answer = Result<[SocketAddress], HTTPClientError>

    let limit: Int
    private let lookup: Lookup
    private let state = Locked(State())
    private let threads: LookupThreads
    /// Deadlines fire here, never behind a blocked lookup.
    private let timers = DispatchQueue(label: "AsyncHTTP.resolver.deadlines")

    private struct State {
        /// Blocking calls running, abandoned ones included.
        var running = 0
        /// Lookups waiting for a slot, oldest first, by the name they look up.
        var waiting: [(key: String, start: @Sendable () -> Void)] = []
        var nextID: UInt64 = 0
        /// Lookups queued or running, by `host:port`, with the callers waiting for each one's answer (none,
        /// once they have all given up; a running lookup then still answers callers that join it later).
        var flights: [String: [UInt64: @Sendable (Answer) -> Void]] = [:]
        /// Successful answers, by `host:port`, with when they arrived; at most ``cacheCapacity``.
        var cache: [String: (addresses: [SocketAddress], at: ContinuousClock.Instant)] = [:]

        /// Caller `id` of the lookup of `key` no longer waits. A lookup still queued that nobody waits for
        /// leaves the queue.
        mutating func leave(_ key: String, id: UInt64) {
            guard flights[key]?.removeValue(forKey: id) != nil, flights[key]?.isEmpty == true,
                  let queued = waiting.firstIndex(where: { $0.key == key })
            else { return }
            waiting.remove(at: queued)
            flights[key] = nil
        }

        mutating func store(_ addresses: [SocketAddress], for key: String, at now: ContinuousClock.Instant) {
            if cache[key] == nil, cache.count >= NameLookups.cacheCapacity,
               let oldest = cache.min(by: { $0.value.at < $1.value.at })?.key {
                cache[oldest] = nil
            }
            cache[key] = (addresses, now)
        }
    }

    /// Names remembered at most. A client talks to a handful of hosts; 512 bounds a crawler's.
    static let cacheCapacity = 512

    init(limit: Int, lookup: @escaping Lookup) {
        precondition(limit > 0)
        self.limit = limit
        self.lookup = lookup
        threads = LookupThreads(maxThreads: limit)
    }

    /// Blocking calls running now (abandoned ones included), and lookups waiting for a slot.
    var load: (running: Int, waiting: Int) {
        state.withLock { ($0.running, $0.waiting.count) }
    }

    /// Forgets every remembered answer.
    func clearCache() {
        state.withLock { $0.cache.removeAll() }
    }

    /// The addresses of `host:port`.
    ///
    /// - Numeric addresses are parsed in place.
    /// - With `cacheFor`, an answer that arrived less than that long ago is reused (getaddrinfo reports no TTL,
    ///   so the caller chooses one; failures are never remembered).
    /// - Concurrent callers for one name share one lookup: the first starts it, the others wait for its
    ///   answer, each within its own deadline and cancellation.
    func resolve(
        host: String, port: Int, deadline: MonotonicTime?, cacheFor timeToLive: Duration? = nil
    ) async throws(HTTPClientError) -> [SocketAddress] {
        // A proxy's port comes from the caller's ProxyConfiguration as any Int; converting it for the socket address
        // would trap.
        guard (0...65_535).contains(port) else {
            throw HTTPClientError(.invalidRequest, "port \(port) for \(host) is out of range (0–65535)")
        }
        if let address = SocketAddress(numericHost: host, port: port) { return [address] }
        let key = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        if let timeToLive {
            let now = ContinuousClock.now
            if let hit = state.withLock({ state in state.cache[key].flatMap { now - $0.at < timeToLive ? $0.addresses : nil } }) {
                return hit
            }
        }
        let once = Locked<CheckedContinuation<Answer, Never>?>(nil)
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        // Resumes the caller once, and takes it off its lookup's list of waiters.
        let finish: @Sendable (Answer) -> Void = { [self] answer in
            guard once.withLock({ $0 != nil }) else { return }
            state.withLock { state in state.leave(key, id: id) }
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
            threads.run { [self] in
                // Everyone gave up while it was queued, and the queue already handed the slot over: pass it on.
                let wanted = state.withLock { state -> Bool in
                    if state.flights[key]?.isEmpty ?? true {
                        state.flights[key] = nil
                        return false
                    }
                    return true
                }
                guard wanted else {
                    release()
                    return
                }
                let answer = lookup(host, port)
                release()
                let now = ContinuousClock.now
                let waiters = state.withLock { state -> [UInt64: @Sendable (Answer) -> Void] in
                    if case .success(let addresses) = answer { state.store(addresses, for: key, at: now) }
                    return state.flights.removeValue(forKey: key) ?? [:]
                }
                for waiter in waiters.values { waiter(answer) }
            }
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Answer, Never>) in
                once.withLock { $0 = continuation }
                if Task.isCancelled {
                    finish(.failure(.cancelled))
                    return
                }
                // Takes the answer that arrived since the look at the cache above, or joins the lookup of this
                // name under way, or starts one (now, or when a slot frees). The cache is read again under the
                // same lock as the flights: a lookup that finished in between has left the cache and no flight,
                // and without this second look the caller would start a second call for a fresh answer.
                enum Step { case cached([SocketAddress]), joined, startsNow }
                let step = state.withLock { state -> Step in
                    if let timeToLive, let entry = state.cache[key], ContinuousClock.now - entry.at < timeToLive {
                        return .cached(entry.addresses)
                    }
                    if state.flights[key] != nil {
                        state.flights[key]![id] = finish
                        return .joined
                    }
                    state.flights[key] = [id: finish]
                    if state.running < limit {
                        state.running += 1
                        return .startsNow
                    }
                    state.waiting.append((key, start))
                    return .joined
                }
                if case .cached(let addresses) = step {
                    finish(.success(addresses))
                    return
                }
                // Cancelled between the check above and joining: `finish` may have run before there was anything
                // to leave. (A lookup started now then finds nobody waiting and passes its slot on.)
                if once.withLock({ $0 == nil }) {
                    state.withLock { state in state.leave(key, id: id) }
                }
                if let deadline {
                    let nanos = max(0, MonotonicTime.now.duration(to: deadline).nanoseconds)
                    timers.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanos))) {
                        finish(.failure(.timeout(.connect, "resolving \(host) took too long")))
                    }
                }
                if case .startsNow = step { start() }
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

/// The threads that run blocking lookups: one per call running, reused, each ended after ``idleTimeout`` without
/// work, and never more than ``maxThreads`` (``NameLookups``'s `limit`). An idle thread is reused before a new one
/// starts; a job that finds none idle and no room for another waits for the next thread to finish. (That happens
/// when a finishing lookup hands its slot on from its own thread, just before that thread would be idle: the
/// thread then runs the job itself.)
///
/// A thread is made for a call only when none is idle: about 20 µs, against a `getaddrinfo` that reads
/// `/etc/hosts` at least. Cache hits and numeric hosts never come here.
final class LookupThreads: Sendable {
    /// 10 s: long enough that the lookups of a burst of new connections reuse the threads of the one before,
    /// short enough that a client that has stopped making connections keeps none.
    static let idleTimeout: DispatchTimeInterval = .seconds(10)

    /// One thread: woken through `wake` when handed a job while idle.
    private final class Worker: @unchecked Sendable {
        // @unchecked: `job` is read and written only under `LookupThreads.state`'s lock (and by `start` before the
        // thread that reads it exists); `wake` is thread-safe.
        let wake = DispatchSemaphore(value: 0)
        var job: (@Sendable () -> Void)?
    }

    private struct State {
        /// Idle threads, the most recently idle last (reused first, so the others can time out).
        var idle: [Worker] = []
        /// Threads alive, idle or working.
        var threads = 0
        /// Jobs waiting for a thread to finish its own, oldest first.
        var pending: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())
    private let idleTimeout: DispatchTimeInterval
    let maxThreads: Int

    init(maxThreads: Int, idleTimeout: DispatchTimeInterval = LookupThreads.idleTimeout) {
        precondition(maxThreads > 0)
        self.maxThreads = maxThreads
        self.idleTimeout = idleTimeout
    }

    /// Threads alive now, idle or working (for tests).
    var threadCount: Int { state.withLock { $0.threads } }
    /// Threads alive and waiting for work (for tests).
    var idleCount: Int { state.withLock { $0.idle.count } }

    /// Runs `job` on an idle thread, or on a new one, or on the next thread to finish when there are ``maxThreads``.
    func run(_ job: @escaping @Sendable () -> Void) {
        enum Step { case woke(Worker), starts, waits }
        let step = state.withLock { state -> Step in
            if let worker = state.idle.popLast() {
                worker.job = job
                return .woke(worker)
            }
            guard state.threads < maxThreads else {
                state.pending.append(job)
                return .waits
            }
            state.threads += 1
            return .starts
        }
        switch step {
        case .woke(let worker): worker.wake.signal()
        case .starts: start(job)
        case .waits: break
        }
    }

    private func start(_ job: @escaping @Sendable () -> Void) {
        let worker = Worker()
        worker.job = job
        let body = Unmanaged.passRetained(ThreadBody { [self] in loop(worker) })
        #if canImport(Darwin)
        var thread: pthread_t? = nil
        #else
        var thread = pthread_t()
        #endif
        let created = pthread_create(&thread, nil, { argument in
            let raw = argument as UnsafeMutableRawPointer?
            Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, body.toOpaque())
        if created == 0 {
            #if canImport(Darwin)
            if let thread { pthread_detach(thread) }
            #else
            pthread_detach(thread)
            #endif
            return
        }
        // No thread to be had (EAGAIN: a process or memory limit): the lookup still runs, on Dispatch's pool.
        body.release()
        state.withLock { $0.threads -= 1 }
        DispatchQueue.global().async(execute: job)
    }

    private func loop(_ worker: Worker) {
        #if os(Linux)
        _ = "asynchttp-dns".withCString { ahttp_set_thread_name($0) }
        #endif
        var job = take(from: worker)
        while true {
            job?()
            // A job waiting for a thread runs here; otherwise this thread is idle until handed one, or times out.
            job = state.withLock { state -> (@Sendable () -> Void)? in
                if !state.pending.isEmpty { return state.pending.removeFirst() }
                state.idle.append(worker)
                return nil
            }
            if job != nil { continue }
            if worker.wake.wait(timeout: .now() + idleTimeout) == .timedOut {
                let leaves = state.withLock { state -> Bool in
                    guard let index = state.idle.firstIndex(where: { $0 === worker }) else { return false }
                    state.idle.remove(at: index)
                    state.threads -= 1
                    return true
                }
                if leaves { return }
                // Handed a job as the wait timed out: its signal is on the way.
                worker.wake.wait()
            }
            job = take(from: worker)
        }
    }

    /// The job `worker` was handed, taken out of it.
    private func take(from worker: Worker) -> (@Sendable () -> Void)? {
        state.withLock { _ in
            defer { worker.job = nil }
            return worker.job
        }
    }

    /// What a new thread runs, passed to it through `pthread_create`'s argument.
    private final class ThreadBody {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }
}
