/// Keeps one connection for a sequence of requests that must share it: NTLM's negotiate → challenge →
/// authenticate handshake authenticates the TCP connection, not the request (MS-NLMP §3.1.5; curl and
/// browsers keep the connection for the same reason).
///
/// While ``isHolding`` is true, a connection whose response ended is parked here instead of in the pool,
/// still counted as leased there, and the next request carrying this pin takes it. Once ``isHolding`` is
/// false (set before the last request of the handshake), that request's connection goes back to the pool
/// as usual. A pin dropped while holding a connection returns it to the pool.
final class ConnectionPin: @unchecked Sendable {
    // @unchecked: `state` is guarded by its pthread lock (`Locked`).
    private struct State {
        var connection: HTTP1Connection?
        var isHolding = true
        var pool: ConnectionPool?
    }

    private let state = Locked(State())

    init() {}

    /// Whether connections are parked here after their response (true until ``release()``).
    var isHolding: Bool { state.withLock { $0.isHolding } }

    /// Parks `connection` (its response is complete and it can carry another request).
    func hold(_ connection: HTTP1Connection, pool: ConnectionPool) {
        let previous = state.withLock { state -> HTTP1Connection? in
            defer {
                state.connection = connection
                state.pool = pool
            }
            return state.connection
        }
        if let previous, previous !== connection { Self.giveBack(previous, to: pool) }
    }

    /// The parked connection, if any; the caller now owns the pool lease.
    func take() -> HTTP1Connection? {
        state.withLock { state in
            defer { state.connection = nil }
            return state.connection
        }
    }

    /// Stops holding: the next response's connection goes back to the pool, and so does one parked now
    /// if nobody takes it.
    func release() {
        state.withLock { $0.isHolding = false }
    }

    deinit {
        let (connection, pool) = state.withLock { ($0.connection, $0.pool) }
        if let connection, let pool { Self.giveBack(connection, to: pool) }
    }

    private static func giveBack(_ connection: HTTP1Connection, to pool: ConnectionPool) {
        Task { await pool.release(connection, reusable: connection.looksReusable()) }
    }
}
