/// Keeps one connection for a sequence of requests that must share it: NTLM's negotiate → challenge →
/// authenticate handshake authenticates the TCP connection, not the request (MS-NLMP §3.1.5; curl and
/// browsers keep the connection for the same reason).
///
/// While ``isHolding`` is true, a connection whose response ended is parked here (by its
/// ``ConnectionLease``) instead of in the pool, still counted as leased there, and the next request carrying
/// this pin takes it. Once ``isHolding`` is false (set before the last request of the handshake), that
/// request's connection goes back to the pool as usual. A connection parked here and never taken goes back
/// to the pool through a lease of its own when the pin is dropped.
final class ConnectionPin: @unchecked Sendable {
    // @unchecked: `state` is guarded by its pthread lock (`Locked`).
    private struct State {
        var parked: (connection: HTTP1Connection, pool: ConnectionPool)?
        var isHolding = true
    }

    private let state = Locked(State())

    init() {}

    /// Whether connections are parked here after their response (true until ``release()``).
    var isHolding: Bool { state.withLock { $0.isHolding } }

    /// Parks `connection` (its response is complete and it can carry another request).
    func park(_ connection: HTTP1Connection, pool: ConnectionPool) {
        let previous = state.withLock { state in
            defer { state.parked = (connection, pool) }
            return state.parked
        }
        if let previous, previous.connection !== connection { Self.giveBack(previous) }
    }

    /// The parked connection and its pool, if any; the caller now owns the pool lease and must settle it
    /// through a ``ConnectionLease``.
    func take() -> (connection: HTTP1Connection, pool: ConnectionPool)? {
        state.withLock { state in
            defer { state.parked = nil }
            return state.parked
        }
    }

    /// Stops holding: the next response's connection goes back to the pool, and so does one parked now
    /// if nobody takes it.
    func release() {
        state.withLock { $0.isHolding = false }
    }

    deinit {
        if let parked = state.withLock({ $0.parked }) { Self.giveBack(parked) }
    }

    private static func giveBack(_ parked: (connection: HTTP1Connection, pool: ConnectionPool)) {
        let lease = ConnectionLease(parked.connection, pool: parked.pool)
        Task { await lease.responseEnded() }
    }
}
