import Logging

/// What ``ConnectionPool/lease(_:fresh:deadline:)`` grants.
enum Lease {
    /// An idle keep-alive connection, already checked for a peer close.
    case reuse(HTTP1Connection)
    /// A reserved slot: the caller opens the connection and later releases or discards it.
    case connect
}

/// The actor that carries out ``PoolStateMachine`` actions: it parks and hands over connections, queues
/// waiters, and closes what expires. It never opens sockets itself (the leasing task connects, so the
/// work and its cancellation stay with the request) and never interprets a response.
///
/// Two hops per request: one to lease, one to release.
actor ConnectionPool {
    private enum WaiterResult {
        case reuse(HTTP1Connection)
        case connect
        case failed(HTTPClientError)
    }

    private let limit: Int
    /// The idle timeout as the clock counts, worked out once: every release stamps an expiry.
    private let idleTimeoutNanoseconds: UInt64
    private let logger: Logger
    private var machines: [ConnectionKey: PoolStateMachine<HTTP1Connection>] = [:]
    private var waiters: [UInt64: UnsafeContinuation<WaiterResult, Never>] = [:]
    private var nextWaiterID: UInt64 = 1
    private var sweeper: Task<Void, Never>?
    /// Which sweeper is current: one that finds a newer number ends (it was replaced by one that wakes sooner).
    private var sweeperGeneration = 0
    /// When the current sweeper wakes next; nil while it has yet to look (it then sees every expiry there is).
    private var sweepAt: MonotonicTime?
    private var isShutDown = false
    /// Connections with an id up to this one are closed when released instead of kept: they existed at the last
    /// logout (``logOut(connectionsUpTo:)``), so one may have finished an NTLM handshake as the old user.
    private var closesWhenReleased = 0

    /// The time, injected: expiry decisions read it, so tests move time instead of sleeping.
    private let now: @Sendable () -> MonotonicTime

    init(limit: Int, idleTimeout: Duration, logger: Logger,
         now: @escaping @Sendable () -> MonotonicTime = { .now }) {
        self.now = now
        self.limit = limit
        idleTimeoutNanoseconds = idleTimeout.wholeNanoseconds
        self.logger = logger
    }

    /// A connection for `key`. With `fresh`, never an idle one (the stale-connection retry).
    func lease(_ key: ConnectionKey, fresh: Bool, deadline: MonotonicTime?) async throws(HTTPClientError) -> Lease {
        guard !isShutDown else { throw .shutdown }
        let id = nextWaiterID
        nextWaiterID += 1
        // In place (the `default:` subscript): copying the machine out and back made its idle list shared,
        // so the change copied the list, once per lease and once per release (perf, 32 concurrent GETs).
        let (action, expired) = machines[key, default: PoolStateMachine(limit: limit)]
            .leaseRequested(.init(id: id, fresh: fresh), now: now())
        closeAll(expired, reason: "expired at checkout")
        switch action {
        case .reuse(let connection):
            return .reuse(connection)
        case .connect:
            return .connect
        case .wait:
            logger.trace("waiting for a connection", metadata: ["key": "\(key)", "waiter": "\(id)"])
            let timer = deadline.map { deadline in
                Task { [weak self] in
                    try? await deadline.sleepUntil()
                    await self?.waiterGaveUp(key, id, .timeout(.poolWait, "no connection to \(key) became free in time"))
                }
            }
            defer { timer?.cancel() }
            let result = await withTaskCancellationHandler {
                await withUnsafeContinuation { continuation in waiters[id] = continuation }
            } onCancel: {
                Task { await self.waiterGaveUp(key, id, .cancelled) }
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
        // One lookup (hashing the key: its strings, its proxy) for the whole release: nothing below adds or
        // removes a key before the last use of `slot`.
        guard let slot = machines.index(forKey: key) else { return connection.close() }
        let now = self.now()
        var expires = now.adding(nanoseconds: idleTimeoutNanoseconds)
        // The server's `Keep-Alive: timeout=N`: stop reusing one second early, so a request does not
        // race the server's own close (curl and browsers leave a similar margin).
        if let serverTimeout = connection.keepAliveTimeout { expires = min(expires, now + (serverTimeout - .seconds(1))) }
        let keep = reusable && !isShutDown && connection.id > closesWhenReleased
        let (handOff, close) = machines.values[slot].released(connection, reusable: keep, expires: expires, now: now)
        if let close {
            logger.debug("connection \(close.id) closed", metadata: ["key": "\(key)", "reason": "\(keep ? "expired" : "not reusable")"])
            close.close()
        } else if case .none = handOff {
            logger.trace("connection \(connection.id) parked", metadata: ["key": "\(key)"])
            scheduleSweep(by: expires)
        }
        carryOut(handOff)
        if machines.values[slot].isUnused { machines.remove(at: slot) }
    }

    /// A leased slot is lost: the connect failed or the connection was closed after an error.
    func discard(_ key: ConnectionKey) {
        guard machines[key] != nil else { return }
        let handOff = machines[key]!.closed()
        carryOut(handOff)
        forgetIfUnused(key)
    }

    /// Closes idle connections, fails waiters, refuses new leases. Leased connections close when released.
    func shutdown() {
        isShutDown = true
        sweeper?.cancel()
        for (key, var machine) in machines {
            let (connections, ids) = machine.drain()
            machines[key] = machine
            closeAll(connections, reason: "client shut down")
            for id in ids { waiters.removeValue(forKey: id)?.resume(returning: .failed(.shutdown)) }
        }
    }

    /// Logging out: a keep-alive connection that finished an NTLM handshake stays authenticated at the server, so
    /// every connection opened so far goes: the idle ones now, those in use (or held for an NTLM handshake) when
    /// their response ends. `lastID` is the id of the last connection opened (ids only grow).
    func logOut(connectionsUpTo lastID: Int) {
        closesWhenReleased = max(closesWhenReleased, lastID)
        closeIdleConnections(reason: "authentication session cleared")
    }

    /// Closes every idle connection (leased ones are left alone).
    func closeIdleConnections(reason: String) {
        // Everything idle has "expired" by a date no connection reaches.
        let everything = now() + .seconds(100 * 365 * 86_400)
        for key in Array(machines.keys) {
            guard var machine = machines[key] else { continue }
            let idle = machine.sweep(now: everything)
            machines[key] = machine
            closeAll(idle, reason: reason)
            forgetIfUnused(key)
        }
    }

    /// Idle connections across all keys (for tests and diagnostics).
    var idleCount: Int { machines.values.reduce(0) { $0 + $1.idle.count } }

    /// The counts behind ``HTTPClient/poolStatistics()``: read-only, summed over every key.
    var statistics: HTTPClient.PoolStatistics {
        var result = HTTPClient.PoolStatistics()
        for machine in machines.values {
            result.idleConnections += machine.idle.count
            result.leasedConnections += machine.leased
            result.waitingRequests += machine.waiters.count
        }
        return result
    }

    private func waiterGaveUp(_ key: ConnectionKey, _ id: UInt64, _ error: HTTPClientError) {
        guard var machine = machines[key], machine.waiterLeft(id) else { return }
        machines[key] = machine
        waiters.removeValue(forKey: id)?.resume(returning: .failed(error))
        forgetIfUnused(key)
    }

    private func carryOut(_ handOff: PoolStateMachine<HTTP1Connection>.HandOff) {
        switch handOff {
        case .none:
            break
        case .reuse(let connection, let waiter):
            waiters.removeValue(forKey: waiter)?.resume(returning: .reuse(connection))
        case .connect(let waiter):
            waiters.removeValue(forKey: waiter)?.resume(returning: .connect)
        }
    }

    private func closeAll(_ connections: [HTTP1Connection], reason: String) {
        for connection in connections {
            logger.debug("connection \(connection.id) closed", metadata: ["key": "\(connection.key)", "reason": "\(reason)"])
            connection.close()
        }
    }

    private func forgetIfUnused(_ key: ConnectionKey) {
        if machines[key]?.isUnused == true { machines.removeValue(forKey: key) }
    }

    /// Expires idle connections by a sweep too, not only at checkout, so an unused pool lets go of its sockets.
    /// A connection parked that expires at `expiry`. A sweeper asleep until later is replaced by one that wakes
    /// in time: a server's `Keep-Alive: timeout=5` after connections parked for the 60 s default would otherwise
    /// keep its descriptor (in CLOSE_WAIT once the server closes) until the earliest of those.
    private func scheduleSweep(by expiry: MonotonicTime) {
        if sweeper != nil, sweepAt.map({ $0 <= expiry }) ?? true { return }
        sweeper?.cancel()
        sweeperGeneration += 1
        sweepAt = nil
        let generation = sweeperGeneration
        sweeper = Task { [weak self] in
            while let next = await self?.planSweep(generation) {
                try? await next.sleepUntil()
                if Task.isCancelled { return }
                await self?.sweep()
            }
        }
    }

    /// When sweeper `generation` should wake next; nil ends it (nothing is idle, or a newer sweeper took over).
    private func planSweep(_ generation: Int) -> MonotonicTime? {
        guard generation == sweeperGeneration, !isShutDown else { return nil }
        let next = nextExpiry()
        sweepAt = next
        if next == nil { sweeper = nil }
        return next
    }

    private func nextExpiry() -> MonotonicTime? {
        machines.values.compactMap(\.nextExpiry).min()
    }

    /// Closes the idle connections that have expired by now (the sweeper's work; tests call it directly).
    func sweep() {
        let now = self.now()
        for key in Array(machines.keys) {
            guard var machine = machines[key] else { continue }
            let expired = machine.sweep(now: now)
            machines[key] = machine
            closeAll(expired, reason: "idle timeout")
            forgetIfUnused(key)
        }
    }

}
