import Logging
import Synchronization

/// What a lease needs of its connection.
protocol LeasedConnection: AnyObject, Sendable {
    /// Whether the connection can carry another request now (its response ended and both sides keep it).
    var isReusable: Bool { get }
    /// Reads and drops the rest of the response, up to `limit` bytes; false if that is too much or fails.
    func drainResponse(limit: Int) async -> Bool
    func close()
}

/// Where a leased connection goes when its lease is settled: the pool (or an NTLM handshake's pin).
protocol LeaseHome<Connection>: Sendable {
    associatedtype Connection: LeasedConnection
    /// The response ended: keep the connection for the next request if `reusable`, else close it.
    func take(back connection: Connection, reusable: Bool) async
    /// The connection was closed after a failure: free its slot.
    func forget(_ connection: Connection) async
}

/// The one owner of a leased connection, and the only code that gives a connection back to the pool.
///
/// Whoever finishes first settles it, exactly once: the body's end (``responseEnded()``), an error, a cancel
/// or a body abandoned after a limit (``discard()``), or the body dropped unread
/// (``settleDropped(drainLimit:logger:)``). Later calls do nothing, so a body that ends while a cancel is on its
/// way cannot release a connection twice. (hyper's `Pooled<T>` returns itself on drop; Go's `persistConn`
/// owns its loops; same idea.) Generic over the connection and its home so that its rules are tested with
/// neither sockets nor a pool (`ConnectionLeaseTests`).
final class ConnectionLease<Connection: LeasedConnection>: Sendable {
    let connection: Connection
    private let home: any LeaseHome<Connection>
    private let settled = Atomic<Bool>(false)

    init(_ connection: Connection, home: any LeaseHome<Connection>) {
        self.connection = connection
        self.home = home
    }

    /// Whether the lease has been settled (the connection handed back or closed).
    var isSettled: Bool { settled.load(ordering: .acquiring) }

    /// True for the first caller only.
    private func claim() -> Bool {
        !settled.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// The response ended where its framing says. A connection that can carry another request goes back to
    /// its home for reuse; any other is closed there.
    nonisolated(nonsending) func responseEnded() async {
        guard claim() else { return }
        await home.take(back: connection, reusable: connection.isReusable)
    }

    /// The request was given up before anything of it was written: the connection goes back as it came, to be
    /// checked for a peer close by its next lease.
    nonisolated(nonsending) func returnUnused() async {
        guard claim() else { return }
        await home.take(back: connection, reusable: true)
    }

    /// Something failed, or the rest of the response is not wanted: the connection is closed and its slot freed.
    func discard() async {
        guard claim() else { return }
        connection.close()
        await home.forget(connection)
    }

    /// The body was dropped unread. A small remainder is read so the connection can be reused; more costs a
    /// close instead. Runs in a task of its own (it is called from a `deinit`).
    /// `settled` learns whether the rest was read (true) or the connection closed (false).
    func settleDropped(drainLimit: Int, logger: Logger, requestID: UInt64? = nil,
                       settled: (@Sendable (_ drained: Bool) -> Void)? = nil) {
        guard !isSettled else { return }
        Task {
            let drained = await connection.drainResponse(limit: drainLimit)
            logger.debug("unread body \(drained ? "drained" : "not drainable, closing")",
                         metadata: requestID.map { [HTTPClient.requestIDMetadataKey: "\($0)"] })
            if drained { await responseEnded() } else { await discard() }
            settled?(drained)
        }
    }
}

/// A lease on an HTTP/1 connection of the client's pool.
typealias HTTP1Lease = ConnectionLease<HTTP1Connection>

extension HTTP1Connection: LeasedConnection {
    func drainResponse(limit: Int) async -> Bool {
        await drainResponse(limit: limit, deadline: .now + .seconds(1))
    }
}

/// The pool, and the NTLM handshake's pin while it holds: a reusable connection whose response ended is parked
/// in the pin (still counted as leased in the pool) so the next request of the handshake takes it.
struct PoolHome: LeaseHome {
    let pool: ConnectionPool
    let pin: ConnectionPin?

    func take(back connection: HTTP1Connection, reusable: Bool) async {
        if reusable, let pin, pin.isHolding {
            pin.park(connection, pool: pool)
            return
        }
        await pool.release(connection, reusable: reusable)
    }

    func forget(_ connection: HTTP1Connection) async {
        await pool.discard(connection.key)
    }
}

extension ConnectionLease where Connection == HTTP1Connection {
    convenience init(_ connection: HTTP1Connection, pool: ConnectionPool, pin: ConnectionPin? = nil) {
        self.init(connection, home: PoolHome(pool: pool, pin: pin))
    }
}
