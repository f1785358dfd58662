import Logging

/// The streaming side of a response body: it holds the leased connection until the body ends, then
/// returns it to the pool; on an error or cancellation it closes it.
///
/// Ownership: one consumer task iterates a body at a time (an `AsyncIterator` is not shared), so the
/// state below is touched by that task, and by `deinit` once nobody holds the stream.
final class ResponseBodyStream: @unchecked Sendable {
    // @unchecked: single-consumer ownership as described above.
    private var connection: HTTP1Connection?
    private let pool: ConnectionPool
    private let pin: ConnectionPin?
    private let deadlines: Deadlines
    private let keepAlive: Bool
    private let logger: Logger

    /// Dropped bodies are drained for reuse only when this little is left; more costs a close instead.
    /// 64 KiB: about one socket buffer, cheaper to read than a new TLS handshake (AHC closes instead; Go
    /// drains up to 256 KiB for the same reason).
    static let drainLimit = 64 * 1024

    init(connection: HTTP1Connection, pool: ConnectionPool, pin: ConnectionPin?, deadlines: Deadlines, keepAlive: Bool, logger: Logger) {
        self.connection = connection
        self.pool = pool
        self.pin = pin
        self.deadlines = deadlines
        self.keepAlive = keepAlive
        self.logger = logger
    }

    func next() async throws(HTTPClientError) -> ArraySlice<UInt8>? {
        guard let connection else { return nil }
        if !connection.pendingChunks.isEmpty {
            return connection.pendingChunks.removeFirst()
        }
        do {
            if let chunk = try await connection.nextBodyChunk(deadlines: deadlines) { return chunk }
        } catch {
            self.connection = nil
            connection.close()
            await pool.discard(connection.key)
            throw error
        }
        self.connection = nil
        let reusable = keepAlive && connection.isReusable
        logger.trace("response complete", metadata: ["connection": "\(connection.id)", "reusable": "\(reusable)"])
        await Self.release(connection, reusable: reusable, pool: pool, pin: pin)
        return nil
    }

    /// Hands a connection whose response ended back: to the pin of an NTLM handshake in progress, else the pool.
    static func release(_ connection: HTTP1Connection, reusable: Bool, pool: ConnectionPool, pin: ConnectionPin?) async {
        if let pin, pin.isHolding, reusable {
            pin.hold(connection, pool: pool)
        } else {
            await pool.release(connection, reusable: reusable)
        }
    }

    /// Gives up on the rest of the body: the connection is closed, not reused.
    func abandon() async {
        guard let connection else { return }
        self.connection = nil
        connection.close()
        await pool.discard(connection.key)
    }

    deinit {
        guard let connection else { return }
        // Dropped unread. Drain a small remainder so the connection can be reused; otherwise close.
        let pool = self.pool
        let pin = self.pin
        let keepAlive = self.keepAlive
        let logger = self.logger
        Task {
            let drained = keepAlive ? await connection.drainResponse(limit: Self.drainLimit) : false
            logger.debug("unread body \(drained ? "drained" : "not drainable, closing")", metadata: ["connection": "\(connection.id)"])
            if drained {
                await Self.release(connection, reusable: connection.isReusable, pool: pool, pin: pin)
            } else {
                connection.close()
                await pool.discard(connection.key)
            }
        }
    }
}
