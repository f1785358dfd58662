import Logging
import Synchronization

/// The streaming side of a response body: it reads the leased connection as the consumer asks, and settles
/// the ``ConnectionLease`` when the body ends (back to the pool), fails (closed), or is dropped unread
/// (drained or closed).
///
/// Ownership: one consumer task reads at a time. A second task calling ``next()`` while a read is in progress
/// gets `HTTPClientError.Code.bodyInUse` instead of racing the first; the `reading` flag is an atomic
/// exchange, and every other field is touched only by the reader that holds it (or by `deinit`).
final class ResponseBodyStream: @unchecked Sendable {
    // @unchecked: `done` and `chunks` are touched only by the task that won the `reading` exchange, or by deinit.
    private let lease: HTTP1Lease
    private let deadlines: Deadlines
    private let logger: Logger
    private let observation: RequestObservation?
    /// The request's number for the log lines written after `send` returned (its task-local is gone by then).
    private let requestID: UInt64?
    /// Counts this response in the client's transfers in flight until the body ends, fails or is dropped.
    private var transfer: NetworkActivity.Transfer?
    /// Chunks that arrived with the head, handed out first.
    private var chunks: [ArraySlice<UInt8>]
    private var chunkIndex = 0
    private var done = false
    /// Why nothing more can be read: the error a read threw, or the limit ``abandon(because:)`` gave up at. Every
    /// later ``next()`` throws it again, so a second pass over a body that failed fails too, instead of ending as
    /// if the body were complete (and never touches the closed connection, whose descriptor number may already
    /// name another connection's socket).
    private var failure: HTTPClientError?
    /// Set by ``abandon(because:)``, whichever task calls it: the next read takes `abandonment` as its failure.
    private let abandoned = Atomic<Bool>(false)
    private let abandonment = Locked<HTTPClientError?>(nil)
    private let reading = Atomic<Bool>(false)

    /// Dropped bodies are drained for reuse only when this little is left; more costs a close instead.
    /// 64 KiB: about one socket buffer, cheaper to read than a new TLS handshake (AHC closes instead; Go
    /// drains up to 256 KiB for the same reason).
    static let drainLimit = 64 * 1024

    init(lease: HTTP1Lease, bufferedChunks: [ArraySlice<UInt8>], deadlines: Deadlines, logger: Logger,
         observation: RequestObservation?, transfer: NetworkActivity.Transfer? = nil) {
        self.lease = lease
        self.transfer = transfer
        self.chunks = bufferedChunks
        self.deadlines = deadlines
        self.logger = logger
        self.observation = observation
        self.requestID = RequestLogContext.requestID
    }

    nonisolated(nonsending) func next() async throws(HTTPClientError) -> ArraySlice<UInt8>? {
        guard !reading.exchange(true, ordering: .acquiring) else {
            throw HTTPClientError(.bodyInUse,
                "another task is already reading this response body; a streamed body has one reader at a time")
        }
        defer { reading.store(false, ordering: .releasing) }
        if let failure { throw failure }
        if abandoned.load(ordering: .acquiring), let error = abandonment.withLock({ $0 }) {
            failure = error
            throw error
        }
        guard !done else { return nil }
        if chunkIndex < chunks.count {
            defer { chunkIndex += 1 }
            let chunk = chunks[chunkIndex]
            observation?.bodyReceived(chunk.count)
            return chunk
        }
        if chunkIndex > 0 {
            chunks = []
            chunkIndex = 0
        }
        let connection = lease.connection
        do {
            if let chunk = try await connection.nextBodyChunk(deadlines: deadlines) {
                observation?.bodyReceived(chunk.count)
                return chunk
            }
        } catch {
            done = true
            failure = error
            transfer = nil
            await lease.discard()
            observation?.failed(error)
            throw error
        }
        done = true
        transfer = nil
        logger.trace("response complete", metadata: [
            "connection": "\(connection.id)", "reusable": "\(connection.isReusable)",
            HTTPClient.requestIDMetadataKey: requestID.map { "\($0)" } ?? "-",
        ])
        // The pool logs the connection's return (parked, closed) in this task, after `send` returned: give its
        // lines the request's number too, when they can be written at all.
        if logger.logLevel <= .debug, let requestID {
            await RequestLogContext.$scope.withValue(.init(requestID: requestID)) { await lease.responseEnded() }
        } else {
            await lease.responseEnded()
        }
        observation?.finished()
        return nil
    }

    /// Gives up on the rest of the body: the connection is closed, not reused, and every later ``next()`` throws
    /// `error` (one that another task has in progress at that moment may end with an I/O error instead).
    ///
    /// The request ends there: observers get `error` as its `failed` event (they would otherwise wait for an end
    /// that never comes), and its progress ends failed.
    func abandon(because error: HTTPClientError) async {
        abandonment.withLock { $0 = error }
        let first = !abandoned.exchange(true, ordering: .acquiringAndReleasing)
        await lease.discard()
        if first { observation?.bodyAbandoned(error) }
    }

    deinit {
        // Dropped unread: drain a small remainder so the connection can be reused; otherwise close.
        if !done {
            // An abandoned body's end was reported by `abandon` (and its lease settled there).
            guard !abandoned.load(ordering: .acquiring) else { return }
            observation?.bodyDropped()
            // Decided now: whether this is the returned response's body, whose end observers wait for.
            var settled: (@Sendable (Bool) -> Void)?
            if let observation, observation.awaitsTheReturnedEnd { settled = { observation.dropSettled(drained: $0) } }
            lease.settleDropped(drainLimit: Self.drainLimit, logger: logger, requestID: requestID, settled: settled)
        }
    }
}
