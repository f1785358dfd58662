/// The chunks of a streamed request body, pulled by a producer task ahead of the task that writes them, up to
/// a byte budget.
///
/// Why: one `send` per chunk makes the kernel push every chunk on its own and wake the receiver for each;
/// with 64 KiB chunks on loopback that doubled the sender's CPU per byte and slowed nginx down (measured in
/// docs/performance.md: 0.46 against 0.24 CPU-s per GiB for 256 KiB sends). With the producer running ahead,
/// the writer finds everything produced while its last write was in the kernel and sends it in one
/// `sendmsg`. A slow producer loses nothing: a chunk goes out as soon as the writer is free, and is never held
/// back to fill a batch. SwiftNIO gets the same effect from its queue of pending writes, flushed with `writev`.
///
/// One producer and one writer. Valid sequences: `push`* then `finish` on the producer side; `take`* then
/// (on any early exit) `close` on the writer side.
final class RequestBodyReadAhead: @unchecked Sendable {
    // @unchecked: every stored property but the constants lives in `state`, touched only under its lock.

    /// What the writer gets: the chunks waiting (in order), their size, and whether the body ended after them.
    struct Batch {
        var chunks: [ArraySlice<UInt8>]
        var bytes: Int
        var ended: Bool
    }

    private struct State {
        var chunks: [ArraySlice<UInt8>] = []
        var bytes = 0
        var ended = false
        var failure: HTTPClientError?
        /// The writer stopped early (its write failed or it was cancelled): the producer should stop too.
        var closed = false
        var waitingWriter: UnsafeContinuation<WriterWake, Never>?
        /// Which of the writer's waits `waitingWriter` is, so that a late timer or cancellation cannot end a
        /// later wait.
        var writerWait: UInt64 = 0
        /// A cancellation of the current wait that came before the writer parked.
        var earlyWake: WriterWake?
        /// Sleeps until the deadline, then times out the writer parked then (started by the first wait that parks).
        var timer: Task<Void, Never>?
        var timerStopped = false
        var waitingProducer: UnsafeContinuation<Bool, Never>?
    }

    /// How a writer's wait for the producer ended.
    enum WriterWake {
        case ready
        case timedOut
        case cancelled
    }

    /// 1 MiB ahead: 16 chunks of 64 KiB (the common chunk size: curl's and nginx's buffers) per `sendmsg`.
    static let defaultBudget = 1 << 20
    /// At most this many chunks per batch, so one `sendmsg` stays far below `IOV_MAX` (1024) even for chunked
    /// encoding, which adds a size line per chunk.
    static let maxChunksPerBatch = 256

    private let budget: Int
    private let state = Locked(State())

    init(budget: Int = RequestBodyReadAhead.defaultBudget) {
        self.budget = budget
    }

    /// The bytes waiting for the writer.
    var bufferedBytes: Int { state.withLock { $0.bytes } }

    /// Whether the writer is parked, waiting for the producer (for tests).
    var writerIsWaiting: Bool { state.withLock { $0.waitingWriter != nil } }

    // MARK: Producer side

    /// Pulls `source` dry into the buffer. Ends the body with the source's error, or with `.cancelled` when the
    /// task was cancelled (an `AsyncStream` ends quietly on cancellation, which must not look like a short body).
    func produce(from source: BodyChunkSource) async {
        do {
            while let chunk = try await source.next() {
                guard await push(chunk) else { return }
            }
            finish(Task.isCancelled ? .cancelled : nil)
        } catch let error as HTTPClientError {
            finish(error)
        } catch is CancellationError {
            finish(.cancelled)
        } catch {
            finish(.invalidRequest("the request body stream failed: \(error)"))
        }
    }

    /// Adds a chunk, suspending while `budget` bytes or more wait to be written. False when the writer has stopped.
    private func push(_ chunk: ArraySlice<UInt8>) async -> Bool {
        let (accepted, wake, full) = state.withLock { state -> (Bool, UnsafeContinuation<WriterWake, Never>?, Bool) in
            guard !state.closed else { return (false, nil, false) }
            state.chunks.append(chunk)
            state.bytes += chunk.count
            let wake = state.waitingWriter
            state.waitingWriter = nil
            return (true, wake, state.bytes >= budget || state.chunks.count >= Self.maxChunksPerBatch)
        }
        wake?.resume(returning: .ready)
        guard accepted else { return false }
        guard full else { return true }
        return await withUnsafeContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool? in
                if state.closed { return false }
                // The writer took the chunks between the check above and now.
                if state.bytes < budget && state.chunks.count < Self.maxChunksPerBatch { return true }
                state.waitingProducer = continuation
                return nil
            }
            if let resumeNow { continuation.resume(returning: resumeNow) }
        }
    }

    /// The body ended: normally (`failure` nil) or with an error the writer will throw.
    private func finish(_ failure: HTTPClientError?) {
        let wake = state.withLock { state -> UnsafeContinuation<WriterWake, Never>? in
            state.ended = true
            state.failure = failure
            defer { state.waitingWriter = nil }
            return state.waitingWriter
        }
        wake?.resume(returning: .ready)
    }

    // MARK: Writer side

    /// Everything waiting, suspending while nothing is. Throws the producer's error once the chunks before it
    /// are taken. A wait for the producer ends at the request's total deadline (`.timeout`, phase `total`) and
    /// when the task is cancelled (`.cancelled`): a body source that stalls, or ignores cancellation, fails the
    /// request at its deadline instead of holding it past. The inactivity timeout does not apply: it measures the
    /// network, and a source may rightly be silent for longer (a command piped into `ahttp -T -`, a live feed;
    /// curl waits for its source too).
    func take(deadlines: Deadlines = Deadlines(inactivity: nil, total: nil)) async throws(HTTPClientError) -> Batch {
        while true {
            let (batch, failure, wake) = state.withLock {
                state -> (Batch?, HTTPClientError?, UnsafeContinuation<Bool, Never>?) in
                if !state.chunks.isEmpty || state.ended {
                    if state.chunks.isEmpty, let failure = state.failure { return (nil, failure, nil) }
                    let batch = Batch(chunks: state.chunks, bytes: state.bytes, ended: state.ended && state.failure == nil)
                    state.chunks = []
                    state.bytes = 0
                    defer { state.waitingProducer = nil }
                    return (batch, nil, state.waitingProducer)
                }
                return (nil, nil, nil)
            }
            wake?.resume(returning: true)
            if let failure { throw failure }
            if let batch { return batch }
            switch await waitForProducer(until: deadlines.total) {
            case .ready: continue
            case .timedOut: throw .timeout(.total, "the request body's source produced nothing before the request's deadline")
            case .cancelled: throw .cancelled
            }
        }
    }

    /// Parks the writer until the producer adds a chunk or ends, `deadline` passes, or the task is cancelled.
    ///
    /// Every wait has the same deadline (the request's total), so one timer task serves them all: started by the
    /// first wait that parks, it sleeps until the deadline and times out the wait parked then; a wait that starts
    /// after the deadline times out by itself. A task per wait cost a streamed upload that parks for most of its
    /// chunks 5 % of its rate.
    private func waitForProducer(until deadline: MonotonicTime?) async -> WriterWake {
        let wait = state.withLock { state -> UInt64 in
            state.writerWait &+= 1
            state.earlyWake = nil
            return state.writerWait
        }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<WriterWake, Never>) in
                let (ready, startTimer) = state.withLock { state -> (WriterWake?, Bool) in
                    if !state.chunks.isEmpty || state.ended { return (.ready, false) }
                    if let early = state.earlyWake { return (early, false) }
                    if Task.isCancelled { return (.cancelled, false) }
                    if let deadline, deadline <= MonotonicTime.now { return (.timedOut, false) }
                    state.waitingWriter = continuation
                    return (nil, deadline != nil && state.timer == nil && !state.timerStopped)
                }
                if let ready { continuation.resume(returning: ready) }
                if startTimer, let deadline { self.startTimer(until: deadline) }
            }
        } onCancel: {
            endWriterWait(wait, with: .cancelled)
        }
    }

    private func startTimer(until deadline: MonotonicTime) {
        let timer = Task { [weak self] in
            // Until the deadline by this clock: a wait that starts after the timer fired must find it passed.
            while case let nanoseconds = MonotonicTime.now.nanoseconds(to: deadline), nanoseconds > 0 {
                do { try await Task.sleep(nanoseconds: nanoseconds) } catch { return }
            }
            self?.expireParkedWriter()
        }
        let stopped = state.withLock { state -> Bool in
            if state.timerStopped || state.timer != nil { return true }
            state.timer = timer
            return false
        }
        if stopped { timer.cancel() }
    }

    /// Times out the parked writer, if any: the deadline has passed.
    private func expireParkedWriter() {
        let writer = state.withLock { state -> UnsafeContinuation<WriterWake, Never>? in
            defer { state.waitingWriter = nil }
            return state.waitingWriter
        }
        writer?.resume(returning: .timedOut)
    }

    /// Ends the timer task, if any; call when the body is written or the writer stopped.
    func stopTimer() {
        let timer = state.withLock { state -> Task<Void, Never>? in
            state.timerStopped = true
            defer { state.timer = nil }
            return state.timer
        }
        timer?.cancel()
    }

    /// Ends the writer's wait `wait` with `wake`: at once if it is parked, or as soon as it parks.
    private func endWriterWait(_ wait: UInt64, with wake: WriterWake) {
        let writer = state.withLock { state -> UnsafeContinuation<WriterWake, Never>? in
            guard state.writerWait == wait else { return nil }
            guard let writer = state.waitingWriter else {
                if state.earlyWake == nil { state.earlyWake = wake }
                return nil
            }
            state.waitingWriter = nil
            return writer
        }
        writer?.resume(returning: wake)
    }

    /// The writer stopped before the end: drops what waits and lets a producer waiting for room return.
    func close() {
        let wake = state.withLock { state -> UnsafeContinuation<Bool, Never>? in
            state.closed = true
            state.chunks = []
            state.bytes = 0
            defer { state.waitingProducer = nil }
            return state.waitingProducer
        }
        wake?.resume(returning: false)
    }
}
