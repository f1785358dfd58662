import Logging

/// What ``ConnectionPool/lease(_:fresh:deadline:)`` grants.
enum Lease {
    /// An idle keep-alive connection, already checked for a peer close.
    case reuse(HTTP1Connection)
    /// A reserved slot: the caller opens the connection and later releases or discards it.
    case connect
}

/// Carries out ``PoolStateMachine`` actions: it parks and hands over connections, queues waiters, and closes
/// what expires. It never opens sockets itself (the leasing task connects, so the work and its cancellation
/// stay with the request) and never interprets a response.
///
/// The state sits behind a lock, not in an actor: a lease that finds an idle connection or a free slot, and
/// every release, is a few dictionary operations under the lock with no suspension. Only a lease that must
/// wait for a slot suspends. As an actor it cost two executor hops per request (`swift_task_switch`, and an
/// enqueue whenever another task held the actor: about 5% of client CPU with 32 concurrent GETs, perf).
/// Connections are closed, continuations resumed and log lines written after the lock is released.
final class ConnectionPool: Sendable {
    private enum WaiterResult {
        case reuse(HTTP1Connection)
        case connect
        case failed(HTTPClientError)
    }

    /// A queued lease: its task parked, or its answer decided before the task got to park.
    private enum WaiterSlot {
        case parked(UnsafeContinuation<WaiterResult, Never>)
        case decided(WaiterResult)
    }

    /// A parked lease and its answer, resumed once the lock is released.
    private typealias Resume = (UnsafeContinuation<WaiterResult, Never>, WaiterResult)

    private struct State {
        var machines: [ConnectionKey: PoolStateMachine<HTTP1Connection>] = [:]
        var waiters: [UInt64: WaiterSlot] = [:]
        var nextWaiterID: UInt64 = 1
        var sweeper: Task<Void, Never>?
        var isShutDown = false

        /// Settles waiter `id`: returns its continuation to resume (outside the lock), or keeps the answer for
        /// the task to find when it parks.
        mutating func decide(_ id: UInt64, _ result: WaiterResult) -> Resume? {
            if case .parked(let continuation)? = waiters.removeValue(forKey: id) { return (continuation, result) }
            waiters[id] = .decided(result)
            return nil
        }

        mutating func carryOut(_ handOff: PoolStateMachine<HTTP1Connection>.HandOff) -> Resume? {
            switch handOff {
            case .none: return nil
            case .reuse(let connection, let waiter): return decide(waiter, .reuse(connection))
            case .connect(let waiter): return decide(waiter, .connect)
            }
        }

        mutating func forgetIfUnused(_ key: ConnectionKey) {
            if machines[key]?.isUnused == true { machines.removeValue(forKey: key) }
        }
    }

    private let limit: Int
    private let idleTimeout: Duration
    private let logger: Logger
    private let state = Locked(State())

    init(limit: Int, idleTimeout: Duration, logger: Logger) {
        self.limit = limit
        self.idleTimeout = idleTimeout
        self.logger = logger
    }

    private enum Decision {
        case granted(Lease)
        case wait(UInt64)
    }

    /// A connection for `key`. With `fresh`, never an idle one (the stale-connection retry).
    func lease(_ key: ConnectionKey, fresh: Bool, deadline: ContinuousClock.Instant?) async throws(HTTPClientError) -> Lease {
        let limit = self.limit
        let (decision, expired) = try state.withLock { state throws(HTTPClientError) -> (Decision, [HTTP1Connection]) in
            guard !state.isShutDown else { throw .shutdown }
            let id = state.nextWaiterID
            state.nextWaiterID += 1
            // In place (`default:` subscript): copying the machine out and back would copy its idle list too.
            let (action, expired) = state.machines[key, default: PoolStateMachine(limit: limit)]
                .leaseRequested(.init(id: id, fresh: fresh), now: .now)
            switch action {
            case .reuse(let connection): return (.granted(.reuse(connection)), expired)
            case .connect: return (.granted(.connect), expired)
            case .wait: return (.wait(id), expired)
            }
        }
        closeAll(expired, reason: "expired at checkout")
        switch decision {
        case .granted(let lease):
            return lease
        case .wait(let id):
            logger.trace("waiting for a connection", metadata: ["key": "\(key)", "waiter": "\(id)"])
            let timer = deadline.map { deadline in
                Task { [weak self] in
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    if Task.isCancelled { return }
                    self?.waiterGaveUp(key, id, .timeout(.poolWait, "no connection to \(key) became free in time"))
                }
            }
            defer { timer?.cancel() }
            let result = await withTaskCancellationHandler {
                await withUnsafeContinuation { continuation in
                    let decided = state.withLock { state -> WaiterResult? in
                        if case .decided(let result)? = state.waiters.removeValue(forKey: id) { return result }
                        state.waiters[id] = .parked(continuation)
                        return nil
                    }
                    if let decided { continuation.resume(returning: decided) }
                }
            } onCancel: {
                waiterGaveUp(key, id, .cancelled)
            }
            switch result {
            case .reuse(let connection): return .reuse(connection)
            case .connect: return .connect
            case .failed(let error): throw error
            }
        }
    }

    /// Returns a connection after its response ended. Kept for reuse when `reusable`, else closed.
    func release(_ connection: HTTP1Connection, reusable: Bool) {
        let key = connection.key
        let now = ContinuousClock.now
        var lifetime = idleTimeout
        // The server's `Keep-Alive: timeout=N`: stop reusing one second early, so a request does not
        // race the server's own close (curl and browsers leave a similar margin).
        if let serverTimeout = connection.keepAliveTimeout { lifetime = min(lifetime, serverTimeout - .seconds(1)) }
        struct Outcome {
            var close: HTTP1Connection?
            var resume: Resume?
            var parked = false
            var kept = false
        }
        let outcome = state.withLock { state -> Outcome in
            guard state.machines[key] != nil else { return Outcome(close: connection) }
            let keep = reusable && !state.isShutDown
            let (handOff, close) = state.machines[key]!.released(connection, reusable: keep, expires: now + lifetime, now: now)
            var outcome = Outcome(close: close, kept: keep)
            if close == nil, case .none = handOff {
                outcome.parked = true
                scheduleSweep(&state)
            }
            outcome.resume = state.carryOut(handOff)
            state.forgetIfUnused(key)
            return outcome
        }
        if let close = outcome.close {
            logger.debug("connection \(close.id) closed", metadata: ["key": "\(key)", "reason": "\(outcome.kept ? "expired" : "not reusable")"])
            close.close()
        } else if outcome.parked {
            logger.trace("connection \(connection.id) parked", metadata: ["key": "\(key)"])
        }
        if let (continuation, result) = outcome.resume { continuation.resume(returning: result) }
    }

    /// A leased slot is lost: the connect failed or the connection was closed after an error.
    func discard(_ key: ConnectionKey) {
        let resume = state.withLock { state -> Resume? in
            guard state.machines[key] != nil else { return nil }
            let handOff = state.machines[key]!.closed()
            let resume = state.carryOut(handOff)
            state.forgetIfUnused(key)
            return resume
        }
        if let (continuation, result) = resume { continuation.resume(returning: result) }
    }

    /// Closes idle connections, fails waiters, refuses new leases. Leased connections close when released.
    func shutdown() {
        let (connections, resumes) = state.withLock { state in
            state.isShutDown = true
            state.sweeper?.cancel()
            state.sweeper = nil
            var connections: [HTTP1Connection] = []
            var resumes: [Resume] = []
            for key in Array(state.machines.keys) {
                let (idle, ids) = state.machines[key]!.drain()
                connections += idle
                for id in ids {
                    if let resume = state.decide(id, .failed(.shutdown)) { resumes.append(resume) }
                }
            }
            return (connections, resumes)
        }
        closeAll(connections, reason: "client shut down")
        for (continuation, result) in resumes { continuation.resume(returning: result) }
    }

    /// Idle connections across all keys (for tests and diagnostics).
    var idleCount: Int { state.withLock { $0.machines.values.reduce(0) { $0 + $1.idle.count } } }

    private func waiterGaveUp(_ key: ConnectionKey, _ id: UInt64, _ error: HTTPClientError) {
        let resume = state.withLock { state -> Resume? in
            // Not queued any more: a connection or slot was already handed to it, and the lease returns that.
            guard state.machines[key]?.waiterLeft(id) == true else { return nil }
            let resume = state.decide(id, .failed(error))
            state.forgetIfUnused(key)
            return resume
        }
        if let (continuation, result) = resume { continuation.resume(returning: result) }
    }

    private func closeAll(_ connections: [HTTP1Connection], reason: String) {
        for connection in connections {
            logger.debug("connection \(connection.id) closed", metadata: ["key": "\(connection.key)", "reason": "\(reason)"])
            connection.close()
        }
    }

    /// Expires idle connections by a sweep too, not only at checkout, so an unused pool lets go of its sockets.
    /// Called under the lock.
    private func scheduleSweep(_ state: inout State) {
        guard state.sweeper == nil, !state.isShutDown else { return }
        state.sweeper = Task { [weak self] in
            while let next = self?.nextExpiry() {
                try? await Task.sleep(until: next, clock: .continuous)
                if Task.isCancelled { return }
                self?.sweep()
            }
            self?.sweeperFinished()
        }
    }

    private func nextExpiry() -> ContinuousClock.Instant? {
        state.withLock { state in state.machines.values.compactMap(\.nextExpiry).min() }
    }

    private func sweep() {
        let now = ContinuousClock.now
        let expired = state.withLock { state -> [HTTP1Connection] in
            var expired: [HTTP1Connection] = []
            for key in Array(state.machines.keys) {
                expired += state.machines[key]!.sweep(now: now)
                state.forgetIfUnused(key)
            }
            return expired
        }
        closeAll(expired, reason: "idle timeout")
    }

    private func sweeperFinished() {
        state.withLock { state in
            state.sweeper = nil
            if state.machines.values.contains(where: { $0.nextExpiry != nil }) { scheduleSweep(&state) }
        }
    }
}
