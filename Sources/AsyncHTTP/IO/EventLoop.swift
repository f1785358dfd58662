#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if os(Linux)
import CEpoll
#endif
import Synchronization

/// What a task waits for on a descriptor.
enum IOInterest: Sendable {
    case readable
    case writable
}

/// How a wait ended. The caller maps `.timedOut` to an error naming its phase.
enum IOWaitResult: Sendable {
    case ready
    case timedOut
    case cancelled
}

/// The readiness notifier: the one piece a kqueue backend would replace on macOS.
///
/// Sockets try their syscall first and call ``wait(fd:for:deadline:)`` only after `EAGAIN`. One
/// dedicated thread runs `epoll_wait` and resumes the suspended tasks; no blocking call ever runs on
/// Swift's cooperative pool. Deadlines live in the loop's own timer heap, so a wait with a timeout
/// costs no extra task or timer object.
protocol IOEventNotifier: Sendable {
    func wait(fd: Int32, for interest: IOInterest, deadline: MonotonicTime?) async -> IOWaitResult
    /// Forget everything about `fd`; call before closing it.
    func deregister(fd: Int32)
    /// Whether nothing can have arrived on `fd` since its last wait for reading ended: it is registered, its read
    /// direction stayed armed, no read edge came that nobody waited for, and no event reported the peer's
    /// close. False whenever the notifier cannot tell; the caller then asks the kernel.
    func readSideIsQuiet(fd: Int32) -> Bool
}

#if os(Linux)
/// An epoll-backed ``IOEventNotifier`` with one thread.
///
/// Each descriptor is added to epoll once, edge-triggered (`EPOLLET`), on its first wait, and removed by
/// ``deregister(fd:)``: a wait costs no `epoll_ctl` (Go's netpoller and tokio register the same way). The
/// first wait arms its own direction only; the first wait for the other direction arms that one too (one
/// `EPOLL_CTL_MOD` per descriptor, and none for a connection that never waits to write). An edge that arrives
/// while nobody waits is remembered as a "ready" flag, and the next wait in that direction returns at once;
/// the caller then retries its syscall, which is the only judge of readiness (a stale flag costs one `EAGAIN`
/// and a real wait). A descriptor may have one reader and one
/// writer waiting at once (an upload that also watches for an early response).
///
/// Why not `EPOLLONESHOT`, as before: every wait then cost an `EPOLL_CTL_MOD` to arm and every event
/// another to re-arm or disarm, two syscalls per readiness on top of `epoll_wait` (perf, 32 concurrent
/// keep-alive GETs: `epoll_ctl` was among the loop thread's largest costs).
///
/// A second edge that finds nobody waiting (the first is still remembered) disarms that direction
/// (`EPOLL_CTL_MOD`), and the next wait that finds it disarmed arms it again (the kernel reports a descriptor that is already ready at once, so
/// nothing is lost). Without that, a download whose reader keeps up woke the loop thread for every packet
/// the kernel queued, about 2.3 wake-ups per `recv` and a third of the client's CPU in context switches
/// (perf, 256 MiB over loopback); now it is one disarm and one re-arm each time the reader drains the
/// socket. Request/response traffic rarely disarms: its reader is parked before the answer arrives, or
/// the one edge that beat it to the wait is the remembered one (disarming on the first edge cost an
/// `epoll_ctl` for every fifth request with 32 concurrent GETs).
final class EpollEventLoop: IOEventNotifier {
    /// The process-wide loop. One thread is enough: it only waits and resumes; the reading, writing,
    /// parsing and TLS work runs on the resumed tasks.
    static let shared = EpollEventLoop()

    private struct Waiter {
        var id: UInt64
        var continuation: UnsafeContinuation<IOWaitResult, Never>
        var deadline: MonotonicTime?
    }

    private struct Registration {
        var reader: Waiter?
        var writer: Waiter?
        /// An edge in this direction arrived while nobody waited for it; the next wait returns at once.
        var readable = false
        var writable = false
        /// The events epoll currently reports for this descriptor (always with `EPOLLET`): from the first wait,
        /// that wait's direction.
        var armed: UInt32
        /// An event reported the peer's close or an error (`EPOLLRDHUP`, `EPOLLHUP`, `EPOLLERR`); it stays set.
        var peerClosed = false

        /// An edge in `interest`'s direction: takes the parked waiter, or remembers the edge. A second edge
        /// while the first is still remembered disarms the direction (the caller applies `armed`).
        mutating func edge(_ interest: IOInterest) -> Waiter? {
            switch interest {
            case .readable:
                if let waiter = reader {
                    reader = nil
                    return waiter
                }
                if readable { armed &= ~EpollEventLoop.readEvents }
                readable = true
            case .writable:
                if let waiter = writer {
                    writer = nil
                    return waiter
                }
                if writable { armed &= ~EpollEventLoop.writeEvents }
                writable = true
            }
            return nil
        }
    }

    private static let readEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
    private static let writeEvents = EPOLLOUT.rawValue

    private struct Timer: Comparable {
        var deadline: MonotonicTime
        var fd: Int32
        var interest: IOInterest
        var id: UInt64
        static func < (a: Timer, b: Timer) -> Bool { a.deadline < b.deadline }
        static func == (a: Timer, b: Timer) -> Bool { a.id == b.id }
    }

    private struct State {
        var registrations: [Int32: Registration] = [:]
        var timers = MinHeap<Timer>()
        var nextID: UInt64 = 1
        /// When the loop thread will wake up by itself; a new earlier deadline must wake it sooner.
        var plannedWake: MonotonicTime?
        var sleeping = false
        /// Waiters with a deadline still parked. Timers of waiters that finished early stay in the heap
        /// (lazy deletion); when dead entries outnumber live ones the heap is rebuilt, so memory stays
        /// proportional to what is actually waiting.
        var liveDeadlines = 0

        mutating func left(_ waiter: Waiter?) {
            if waiter?.deadline != nil { liveDeadlines -= 1 }
        }

        mutating func compactTimersIfNeeded() {
            guard timers.count > 64, timers.count > 4 * liveDeadlines else { return }
            let registrations = self.registrations
            timers.removeAll { timer in
                guard let registration = registrations[timer.fd] else { return true }
                switch timer.interest {
                case .readable: return registration.reader?.id != timer.id
                case .writable: return registration.writer?.id != timer.id
                }
            }
        }
    }

    /// How often a direction was disarmed after unawaited edges (for tests: the path is otherwise invisible).
    let disarmCount = Atomic<Int>(0)

    private let epollFD: Int32
    private let wakeFD: Int32
    private let state = Locked(State())

    private init() {
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeFD = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        precondition(epollFD >= 0 && wakeFD >= 0, "epoll_create1/eventfd failed: errno \(errno)")
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeFD
        _ = epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event)
        let loop = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { argument in
            let loop = Unmanaged<EpollEventLoop>.fromOpaque(argument!).takeUnretainedValue()
            loop.run()
            return nil
        }, loop.toOpaque())
        precondition(created == 0, "could not start the event loop thread: \(created)")
        pthread_detach(thread)
    }

    /// The loop thread's name, as `top -H`, `perf` and debuggers show it.
    static let threadName = "asynchttp-loop"

    /// `SCHED_OTHER` and `SCHED_BATCH` in `<linux/sched.h>`; glibc defines the second only under `_GNU_SOURCE`.
    private static let ordinarySchedulingPolicy: Int32 = 0
    private static let batchSchedulingPolicy: Int32 = 3

    /// Names the loop thread and gives it `SCHED_BATCH` scheduling.
    ///
    /// A batch thread keeps its fair share of processor time, but its wake-up does not preempt the thread that is
    /// running: it gets a processor that is idle at once, and otherwise waits until the running thread blocks or
    /// its slice ends. The loop thread wakes for every response that comes while it sleeps, and each such wake-up
    /// used to preempt a cooperative-pool thread or the server sharing the processor, only to hand the resumed
    /// task to a pool thread. As a batch thread, with 32 concurrent keep-alive GETs on two processors, it halved
    /// the context switches per request (1.1 → 0.56) and the `epoll_wait` calls (0.68 → 0.39, each now returning
    /// more events), and cut the client's CPU per request from 28–34 to 22–25 µs (docs/performance.md, session
    /// 19). The wait it adds comes only when every processor is busy, when the tasks it resumes would wait for a
    /// pool thread anyway.
    ///
    /// Only a thread that inherited the ordinary policy (`SCHED_OTHER`) changes: in a process whose threads run a
    /// real-time policy, a batch loop thread would run only when none of them is runnable. If the kernel refuses
    /// (a seccomp filter), the loop runs as an ordinary thread. A thread created by this one inherits its policy;
    /// see ``applyThreadScheduling()``.
    private static func setUpLoopThread() {
        _ = threadName.withCString { ahttp_set_thread_name($0) }
        guard sched_getscheduler(0) == ordinarySchedulingPolicy else { return }
        var parameters = sched_param()
        _ = sched_setscheduler(0, batchSchedulingPolicy, &parameters)
    }

    /// The process-wide ``HTTPClient/ThreadScheduling`` for the threads waits resume on: `.batch` when set.
    private static let resumedThreadsAsBatch = Atomic<Bool>(false)
    /// Changes with every change of the setting, so that each thread looks at its policy again (starts at 1: a
    /// thread that never looked has 0).
    private static let schedulingGeneration = Atomic<Int32>(1)
    /// The threads `.batch` put under `SCHED_BATCH` (kernel thread ids), put back when the setting returns to
    /// `.unchanged`. Changing a thread's policy and recording it happen under this lock, so that a setting
    /// change cannot miss a thread that a wait was changing at the same moment.
    private static let batchedThreads = Locked(Set<Int32>())

    /// The setting behind ``HTTPClient/threadScheduling``.
    static var resumedThreadScheduling: HTTPClient.ThreadScheduling {
        resumedThreadsAsBatch.load(ordering: .acquiring) ? .batch : .unchanged
    }

    /// Changes the setting behind ``HTTPClient/threadScheduling``. Back to `.unchanged`, every thread that
    /// `.batch` changed and that still runs under `SCHED_BATCH` is put back to `SCHED_OTHER`, here.
    static func setResumedThreadScheduling(_ scheduling: HTTPClient.ThreadScheduling) {
        batchedThreads.withLock { threads in
            let batch = scheduling == .batch
            guard resumedThreadsAsBatch.exchange(batch, ordering: .acquiringAndReleasing) != batch else { return }
            schedulingGeneration.wrappingAdd(1, ordering: .releasing)
            guard !batch else { return }
            var parameters = sched_param()
            // Only threads still in this process: a thread id is a process id to the kernel, and the id of a thread
            // that has exited (the runtime retires idle pool threads) may since name another process's thread.
            for thread in threads where isThreadOfThisProcess(thread) && sched_getscheduler(thread) == batchSchedulingPolicy {
                _ = sched_setscheduler(thread, ordinarySchedulingPolicy, &parameters)
            }
            threads.removeAll()
        }
    }

    /// Whether `thread` (a kernel thread id) is one of this process's threads now.
    static func isThreadOfThisProcess(_ thread: Int32) -> Bool {
        access("/proc/self/task/\(thread)", F_OK) == 0
    }

    /// Gives the calling thread the policy ``HTTPClient/threadScheduling`` asks for; looks once per thread and
    /// setting (a thread-local generation), so a wait pays one atomic load and one comparison.
    ///
    /// `.unchanged` (the default) puts the thread back to `SCHED_OTHER` if it runs under `SCHED_BATCH`. Resuming
    /// a task can make the Swift runtime create a cooperative-pool thread on the spot, and a new thread inherits
    /// the policy of the thread that created it: the loop thread's. So every wait that parked checks the thread
    /// it resumed on, which is usually the one its own resumption created. Switching costs two system calls per
    /// loop wake-up and gave back most of the gain (`conc` 34–36k against 38–42k requests/s), so the loop does
    /// not do it around `epoll_wait` instead. A thread of the user's own executor that was made a batch thread on
    /// purpose is switched back too.
    ///
    /// `.batch` puts a thread running under `SCHED_OTHER` under `SCHED_BATCH` and records it; a thread under a
    /// real-time or idle policy is left as it is.
    static func applyThreadScheduling() {
        let generation = schedulingGeneration.load(ordering: .acquiring)
        guard ahttp_thread_generation_changed(generation) != 0 else { return }
        var parameters = sched_param()
        if resumedThreadsAsBatch.load(ordering: .acquiring) {
            batchedThreads.withLock { threads in
                // Under the lock: a change back to `.unchanged` either came first (then this thread is left alone)
                // or comes after (then it finds this thread recorded).
                guard resumedThreadsAsBatch.load(ordering: .acquiring), sched_getscheduler(0) == ordinarySchedulingPolicy,
                      sched_setscheduler(0, batchSchedulingPolicy, &parameters) == 0 else { return }
                threads.insert(ahttp_thread_id())
            }
        } else if sched_getscheduler(0) == batchSchedulingPolicy {
            _ = sched_setscheduler(0, ordinarySchedulingPolicy, &parameters)
        }
    }

    /// What `register` decided under the lock.
    private enum Registered {
        /// An edge had arrived meanwhile: resume at once.
        case alreadyReady
        /// Parked; `wake` if the loop thread must recompute its timeout for an earlier deadline.
        case parked(wake: Bool)
    }

    func wait(fd: Int32, for interest: IOInterest, deadline: MonotonicTime?) async -> IOWaitResult {
        if let deadline, deadline <= MonotonicTime.now { return .timedOut }
        // The common case on a busy connection: the edge came between the caller's EAGAIN and this call.
        guard let id = takeReadyFlagOrAllocateID(fd: fd, interest: interest) else { return .ready }
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                switch register(Waiter(id: id, continuation: continuation, deadline: deadline), fd: fd, interest: interest) {
                case .alreadyReady:
                    continuation.resume(returning: .ready)
                    return
                case .parked(let wake):
                    if wake { signalWake() }
                }
                // Cancellation that came before the registration found nothing to cancel; look again.
                if Task.isCancelled { finish(fd: fd, interest: interest, id: id, with: .cancelled) }
            }
        } onCancel: {
            finish(fd: fd, interest: interest, id: id, with: .cancelled)
        }
        Self.applyThreadScheduling()
        return result
    }

    /// Consumes a remembered edge for `interest` and returns nil, or returns a new waiter id.
    private func takeReadyFlagOrAllocateID(fd: Int32, interest: IOInterest) -> UInt64? {
        state.withLock { state -> UInt64? in
            if let index = state.registrations.index(forKey: fd) {
                switch interest {
                case .readable:
                    if state.registrations.values[index].readable {
                        state.registrations.values[index].readable = false
                        return nil
                    }
                case .writable:
                    if state.registrations.values[index].writable {
                        state.registrations.values[index].writable = false
                        return nil
                    }
                }
            }
            defer { state.nextID &+= 1 }
            return state.nextID
        }
    }

    func readSideIsQuiet(fd: Int32) -> Bool {
        state.withLock { state in
            guard let registration = state.registrations[fd] else { return false }
            return !registration.readable && !registration.peerClosed && registration.reader == nil
                && registration.armed & Self.readEvents == Self.readEvents
        }
    }

    func deregister(fd: Int32) {
        let orphans = state.withLock { state -> [Waiter] in
            guard let registration = state.registrations.removeValue(forKey: fd) else { return [] }
            _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
            state.left(registration.reader)
            state.left(registration.writer)
            return [registration.reader, registration.writer].compactMap { $0 }
        }
        // A waiter still parked on a descriptor being closed sees it as ready; its syscall then fails
        // with EBADF and reports an I/O error instead of hanging.
        for waiter in orphans { waiter.continuation.resume(returning: .ready) }
    }

    private func register(_ waiter: Waiter, fd: Int32, interest: IOInterest) -> Registered {
        state.withLock { state -> Registered in
            let index: Dictionary<Int32, Registration>.Index
            if let existing = state.registrations.index(forKey: fd) {
                index = existing
            } else {
                // First wait on this descriptor: one ADD for its lifetime. If it is already ready, the
                // kernel queues an event at once, so nothing that happened before this point is missed. Only
                // the direction waited for is armed: a connected socket is writable at once, and arming that
                // too woke the loop thread for an edge nobody wanted (once per new connection, most of whose
                // first waits are for reading); a later wait for the other direction arms it below.
                let registration = Registration(armed: interest == .readable ? Self.readEvents : Self.writeEvents)
                control(EPOLL_CTL_ADD, fd: fd, events: registration.armed)
                state.registrations[fd] = registration
                index = state.registrations.index(forKey: fd)!
            }
            let wanted: UInt32
            switch interest {
            case .readable:
                if state.registrations.values[index].readable {
                    state.registrations.values[index].readable = false
                    return .alreadyReady
                }
                state.registrations.values[index].reader = waiter
                wanted = Self.readEvents
            case .writable:
                if state.registrations.values[index].writable {
                    state.registrations.values[index].writable = false
                    return .alreadyReady
                }
                state.registrations.values[index].writer = waiter
                wanted = Self.writeEvents
            }
            if state.registrations.values[index].armed & wanted != wanted {
                // Disarmed by an edge nobody waited for: arm again. Already ready means an event at once.
                state.registrations.values[index].armed |= wanted
                control(EPOLL_CTL_MOD, fd: fd, events: state.registrations.values[index].armed)
            }
            guard let deadline = waiter.deadline else { return .parked(wake: false) }
            state.liveDeadlines += 1
            state.compactTimersIfNeeded()
            state.timers.push(Timer(deadline: deadline, fd: fd, interest: interest, id: waiter.id))
            if let planned = state.plannedWake, planned <= deadline { return .parked(wake: false) }
            return .parked(wake: state.sleeping)
        }
    }

    /// Resumes the waiter `id` with `result` if it is still waiting (a cancellation or a timeout).
    private func finish(fd: Int32, interest: IOInterest, id: UInt64, with result: IOWaitResult) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.registrations.index(forKey: fd) else { return nil }
            let found: Waiter?
            switch interest {
            case .readable:
                found = state.registrations.values[index].reader?.id == id ? state.registrations.values[index].reader : nil
                if found != nil { state.registrations.values[index].reader = nil }
            case .writable:
                found = state.registrations.values[index].writer?.id == id ? state.registrations.values[index].writer : nil
                if found != nil { state.registrations.values[index].writer = nil }
            }
            state.left(found)
            return found
        }
        waiter?.continuation.resume(returning: result)
    }

    private func control(_ operation: Int32, fd: Int32, events: UInt32) {
        var event = epoll_event()
        event.events = events | EPOLLET.rawValue
        event.data.fd = fd
        _ = epoll_ctl(epollFD, operation, fd, &event)
    }

    private func signalWake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    private func run() {
        Self.setUpLoopThread()
        let capacity = 128
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        var ready: [(UnsafeContinuation<IOWaitResult, Never>, IOWaitResult)] = []
        ready.reserveCapacity(capacity)
        while true {
            let timeoutMs = state.withLock { state -> Int32 in
                state.sleeping = true
                guard let next = state.timers.peek?.deadline else {
                    state.plannedWake = nil
                    return -1
                }
                state.plannedWake = next
                let now = MonotonicTime.now
                guard next > now else { return 0 }
                // Round up so a deadline is never reported before it has passed.
                return Int32(clamping: (next.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
            }
            let count = epoll_wait(epollFD, events, Int32(capacity), timeoutMs)
            var sawWake = false
            state.withLock { state in
                state.sleeping = false
                if count > 0 {
                    for index in 0..<Int(count) {
                        let event = events[index]
                        let fd = event.data.fd
                        if fd == wakeFD {
                            sawWake = true
                            continue
                        }
                        guard let slot = state.registrations.index(forKey: fd) else { continue }
                        let flags = event.events
                        let failed = flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0
                        if failed || flags & EPOLLRDHUP.rawValue != 0 { state.registrations.values[slot].peerClosed = true }
                        let armedBefore = state.registrations.values[slot].armed
                        if flags & Self.readEvents != 0 || failed, let reader = state.registrations.values[slot].edge(.readable) {
                            ready.append((reader.continuation, .ready))
                            state.left(reader)
                        }
                        if flags & Self.writeEvents != 0 || failed, let writer = state.registrations.values[slot].edge(.writable) {
                            ready.append((writer.continuation, .ready))
                            state.left(writer)
                        }
                        let armed = state.registrations.values[slot].armed
                        if armed != armedBefore {
                            control(EPOLL_CTL_MOD, fd: fd, events: armed)
                            disarmCount.add(1, ordering: .relaxed)
                        }
                    }
                }
                guard !state.timers.isEmpty else { return }
                let now = MonotonicTime.now
                while let timer = state.timers.peek, timer.deadline <= now {
                    state.timers.pop()
                    guard let slot = state.registrations.index(forKey: timer.fd) else { continue }
                    switch timer.interest {
                    case .readable:
                        guard let reader = state.registrations.values[slot].reader, reader.id == timer.id else { continue }
                        ready.append((reader.continuation, .timedOut))
                        state.registrations.values[slot].reader = nil
                        state.left(reader)
                    case .writable:
                        guard let writer = state.registrations.values[slot].writer, writer.id == timer.id else { continue }
                        ready.append((writer.continuation, .timedOut))
                        state.registrations.values[slot].writer = nil
                        state.left(writer)
                    }
                }
            }
            if sawWake {
                var value: UInt64 = 0
                _ = Glibc.read(wakeFD, &value, 8)
            }
            for (continuation, result) in ready { continuation.resume(returning: result) }
            ready.removeAll(keepingCapacity: true)
        }
    }
}
#endif

/// A binary min-heap; the event loop's timers.
struct MinHeap<Element: Comparable> {
    private var storage: [Element] = []

    var isEmpty: Bool { storage.isEmpty }
    var count: Int { storage.count }
    var peek: Element? { storage.first }

    mutating func push(_ element: Element) {
        storage.append(element)
        var child = storage.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard storage[child] < storage[parent] else { break }
            storage.swapAt(child, parent)
            child = parent
        }
    }

    /// Drops every element matching `shouldRemove` and restores the heap order in O(n).
    mutating func removeAll(where shouldRemove: (Element) -> Bool) {
        storage.removeAll(where: shouldRemove)
        guard storage.count > 1 else { return }
        for index in stride(from: storage.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    @discardableResult
    mutating func pop() -> Element? {
        guard !storage.isEmpty else { return nil }
        storage.swapAt(0, storage.count - 1)
        let top = storage.removeLast()
        siftDown(from: 0)
        return top
    }

    private mutating func siftDown(from index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < storage.count, storage[left] < storage[smallest] { smallest = left }
            if right < storage.count, storage[right] < storage[smallest] { smallest = right }
            if smallest == parent { break }
            storage.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// The readiness notifier the library runs on, chosen here and nowhere else. A kqueue backend for macOS and
/// the BSDs is one more ``IOEventNotifier`` and one more line below; until it exists and has run, the package
/// builds for Linux only and says so.
enum IOBackend {
    #if os(Linux)
    static var notifier: EpollEventLoop { EpollEventLoop.shared }
    /// The policy of the threads waits resume on (``HTTPClient/threadScheduling``).
    static var threadScheduling: HTTPClient.ThreadScheduling {
        get { EpollEventLoop.resumedThreadScheduling }
        set { EpollEventLoop.setResumedThreadScheduling(newValue) }
    }
    #else
    #error("AsyncHTTP has no event loop for this platform yet: add a kqueue IOEventNotifier beside EpollEventLoop")
    #endif
}
