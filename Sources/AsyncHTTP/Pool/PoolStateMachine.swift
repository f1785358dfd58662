/// The connection pool for one key (scheme, host, port, TLS configuration), as a value that decides
/// and returns actions; ``ConnectionPool`` carries them out. Time is a parameter, so tests drive it
/// with made-up instants and never sleep.
///
/// Slots: every connection counts against `limit` whether it is idle, in use, or still connecting.
/// Waiters are served first in, first out. Idle connections are reused most-recently-parked first,
/// so the warmest connection is used and the cold ones age out (Go's `http.Transport` does the same).
struct PoolStateMachine<Connection: AnyObject> {
    struct IdleEntry {
        var connection: Connection
        var expires: MonotonicTime
    }

    struct Waiter: Equatable {
        var id: UInt64
        /// Wants a brand-new connection (the stale-connection retry): an idle one will not do.
        var fresh: Bool
    }

    /// What a lease request gets right away.
    enum LeaseAction {
        /// Use this idle connection. Valid transitions to: `released`, `closed`.
        case reuse(Connection)
        /// A slot is reserved: open a new connection, then `released` or `closed` it.
        case connect
        /// No slot: the waiter is queued until `released`/`closed` frees one, or it is cancelled.
        case wait
    }

    /// What freeing or returning a slot leads to.
    enum HandOff {
        case none
        /// Give this connection to the waiter (it stays leased).
        case reuse(Connection, waiter: UInt64)
        /// The waiter may open a new connection in the freed slot.
        case connect(waiter: UInt64)
    }

    let limit: Int
    private(set) var idle: [IdleEntry] = []
    /// Connections leased or connecting.
    private(set) var leased = 0
    private(set) var waiters: [Waiter] = []

    init(limit: Int) {
        precondition(limit > 0, "the per-host connection limit must be at least 1")
        self.limit = limit
    }

    var isUnused: Bool { idle.isEmpty && leased == 0 && waiters.isEmpty }
    var nextExpiry: MonotonicTime? { idle.lazy.map(\.expires).min() }

    /// A request wants a connection. `close` lists idle connections found expired at checkout.
    mutating func leaseRequested(_ waiter: Waiter, now: MonotonicTime) -> (action: LeaseAction, close: [Connection]) {
        let expired = removeExpired(now: now)
        if !waiter.fresh, let entry = idle.popLast() {
            leased += 1
            return (.reuse(entry.connection), expired)
        }
        if leased + idle.count < limit {
            leased += 1
            return (.connect, expired)
        }
        if waiter.fresh, !idle.isEmpty {
            // Make room: the oldest idle connection gives its slot to the fresh one.
            let oldest = idle.removeFirst()
            leased += 1
            return (.connect, expired + [oldest.connection])
        }
        waiters.append(waiter)
        return (.wait, expired)
    }

    /// A leased connection finished a response and may be kept (`reusable`) until `expires`.
    /// `close` is the connection to close when it is not kept.
    mutating func released(
        _ connection: Connection, reusable: Bool, expires: MonotonicTime, now: MonotonicTime
    ) -> (handOff: HandOff, close: Connection?) {
        precondition(leased > 0, "released a connection that was not leased")
        guard reusable, expires > now else {
            leased -= 1
            return (slotFreed(), connection)
        }
        if let waiter = waiters.first {
            waiters.removeFirst()
            if waiter.fresh {
                return (.connect(waiter: waiter.id), connection)
            }
            return (.reuse(connection, waiter: waiter.id), nil)
        }
        leased -= 1
        idle.append(IdleEntry(connection: connection, expires: expires))
        return (.none, nil)
    }

    /// A leased slot is gone: the connect failed, or the connection was closed after an error.
    mutating func closed() -> HandOff {
        precondition(leased > 0, "closed a connection that was not leased")
        leased -= 1
        return slotFreed()
    }

    /// A waiter gave up (cancelled or timed out). Returns whether it was still queued.
    mutating func waiterLeft(_ id: UInt64) -> Bool {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return false }
        waiters.remove(at: index)
        return true
    }

    /// Idle connections past their expiry, removed from the pool; the caller closes them.
    mutating func sweep(now: MonotonicTime) -> [Connection] {
        removeExpired(now: now)
    }

    /// Shutdown: every idle connection to close, every waiter to fail.
    mutating func drain() -> (close: [Connection], waiters: [UInt64]) {
        defer {
            idle.removeAll()
            waiters.removeAll()
        }
        return (idle.map(\.connection), waiters.map(\.id))
    }

    private mutating func slotFreed() -> HandOff {
        guard !waiters.isEmpty else { return .none }
        let waiter = waiters.removeFirst()
        if !waiter.fresh, let entry = idle.popLast() {
            // Possible when idle connections were parked while this waiter waited for a fresh slot: none here,
            // but keep the rule total.
            leased += 1
            return .reuse(entry.connection, waiter: waiter.id)
        }
        leased += 1
        return .connect(waiter: waiter.id)
    }

    @discardableResult
    private mutating func removeExpired(now: MonotonicTime) -> [Connection] {
        guard idle.contains(where: { $0.expires <= now }) else { return [] }
        var expired: [Connection] = []
        idle.removeAll { entry in
            if entry.expires <= now {
                expired.append(entry.connection)
                return true
            }
            return false
        }
        return expired
    }
}
