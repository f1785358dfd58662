import HTTPTypes

/// How far one request has got: body bytes sent and received, and the totals when they are known.
///
/// Download bytes are the response body **as it crossed the wire** (after `chunked` framing is removed, before
/// any `Content-Encoding` is decoded), so they count up to the `Content-Length` the server announced. A
/// compressed response read with decoding on yields more bytes to the reader than this counts.
///
/// Values never run backwards. When a request is sent again (a stale keep-alive connection, a retry after a
/// timeout, a 307/308 redirect or an authentication round that resends the body), the upload count holds at
/// its highest point until the resend passes it. The bodies of redirect and authentication responses that the
/// client follows (3xx with `Location`, 401, 407) are not counted: the download follows the response that
/// ``HTTPClient/send(_:)`` returns.
///
/// A response that did not cross the wire (a fresh or stale copy from the ``HTTPClient/Configuration/cache``,
/// the cache's own `504`) is reported whole and final as `send` returns it, as ASIHTTPRequest reported a cached
/// response: its length (the body's, or its `Content-Length`) received of that length.
///
/// Every send ends with exactly one final value, also one that fails before it leaves the client (the client
/// was shut down, its configuration is invalid) and a batch member that never started. A final value says how
/// it ended: ``didFail`` is set when the transfer did not end normally, and the fractions then count only the
/// bytes that moved.
public struct HTTPTransferProgress: Sendable, Hashable {
    /// Request body bytes written to the connection.
    public var bytesSent: Int = 0
    /// The request body's length on the wire, when known (bytes, or a stream of known length); 0 without a body.
    ///
    /// Until the head goes out, the length of the body the caller gave; from then on, that of the body written
    /// after it, which ``bytesSent`` counts up to: a body the client compresses
    /// (``HTTPClientRequest/compressesBody``) or frames (S3's `aws-chunked`) has another length, and nil when it
    /// goes out chunked. A later hop without a body (a `303` turned into a `GET`) leaves it as it was.
    public var bytesExpectedToSend: Int?
    /// Response body bytes received, as the server sent them (see above).
    public var bytesReceived: Int = 0
    /// The response's `Content-Length`, when it has one (0 for `HEAD`, 204 and 304); nil before the head.
    public var bytesExpectedToReceive: Int?
    /// This is the request's last value: its response body ended, failed or was dropped, or the request failed.
    public var isFinal = false
    /// Set on the final value of a transfer that did not end normally: the send failed or was cancelled (also
    /// before it left the client), or the response body failed part-way (a timeout, a closed connection, a
    /// cancelled read). Not set while the transfer runs, nor when the body ended normally.
    ///
    /// A response body dropped before its end sets it too, unless every byte of its known length had arrived (as
    /// URLSession ends a task cancelled part-way with an error): its bytes did not all come.
    public var didFail = false

    /// Creates a progress value; the client makes these, tests and custom bodies may too.
    public init(bytesSent: Int = 0, bytesExpectedToSend: Int? = nil, bytesReceived: Int = 0,
                bytesExpectedToReceive: Int? = nil, isFinal: Bool = false, didFail: Bool = false) {
        self.bytesSent = bytesSent
        self.bytesExpectedToSend = bytesExpectedToSend
        self.bytesReceived = bytesReceived
        self.bytesExpectedToReceive = bytesExpectedToReceive
        self.isFinal = isFinal
        self.didFail = didFail
    }

    /// The fraction of the download done, 0…1: the bytes received of a known total, also in the final value
    /// (a transfer that failed half-way stays at its half, as curl's meter does); nil while the total is
    /// unknown, and 1 for a final value of unknown total that ended normally (a chunked body read to its end).
    public var downloadFraction: Double? {
        guard let total = bytesExpectedToReceive else { return isFinal && !didFail ? 1 : nil }
        return total == 0 ? 1 : min(1, Double(bytesReceived) / Double(total))
    }

    /// The fraction of the upload done, 0…1, counted as ``downloadFraction``; nil while the total is unknown.
    public var uploadFraction: Double? {
        guard let total = bytesExpectedToSend else { return isFinal && !didFail ? 1 : nil }
        return total == 0 ? 1 : min(1, Double(bytesSent) / Double(total))
    }

    /// The final value of a send that failed before any event of its own (the client was shut down, its
    /// configuration is invalid, a batch member never started).
    static func failedBeforeSending(_ request: HTTPClientRequest) -> HTTPTransferProgress {
        HTTPTransferProgress(bytesExpectedToSend: request.body.map { $0.length } ?? 0, isFinal: true, didFail: true)
    }
}

/// Who receives a request's progress, and how often (ASIHTTPRequest's upload and download progress delegates).
///
/// Values come at most every ``minimumInterval``, and, when the total is known, only after at least
/// ``minimumFraction`` more of it is done; the first value after the response head (which brings the total)
/// and the final value (``HTTPTransferProgress/isFinal``) always come. The handler runs on the task moving the
/// bytes: keep it short.
///
/// ```swift
/// var request = HTTPClientRequest(url: "https://example.com/big.iso")
/// request.progressHandler = HTTPProgressHandler { progress in
///     print(progress.bytesReceived, "of", progress.bytesExpectedToReceive ?? -1)
/// }
/// ```
public struct HTTPProgressHandler: Sendable {
    /// 100 ms: ten updates a second at most (curl redraws its meter once a second; a progress bar wants more).
    public var minimumInterval: Duration
    /// 1 %: a known-length transfer reports at most about a hundred steps.
    public var minimumFraction: Double
    /// Called with each update that passes the interval and fraction filters, and always with the final one.
    public let report: @Sendable (HTTPTransferProgress) -> Void

    /// Creates a handler that calls `report` at most every `minimumInterval`, or when the transfer moved by
    /// `minimumFraction` of its known length, and always for the final value.
    public init(minimumInterval: Duration = .milliseconds(100), minimumFraction: Double = 0.01,
                _ report: @escaping @Sendable (HTTPTransferProgress) -> Void) {
        self.minimumInterval = minimumInterval
        self.minimumFraction = minimumFraction
        self.report = report
    }
}

/// The progress of one `send`, from the observation's events. A value with the time passed in.
///
/// Rules (see ``HTTPTransferProgress``): counts never go down; the bodies of responses the chain follows
/// (redirects with a `Location`, 401, 407) are held apart and counted only if that response turns out to be
/// the one `send` returned; the final value comes once, when the returned response's body ends, fails or is
/// dropped, when the send fails, or as `send` returns a response the transport did not bring (a cache's).
struct TransferProgressTracker: Sendable {
    private(set) var progress: HTTPTransferProgress
    private let isHead: Bool
    /// Bytes of the current response, and whether it is one the chain may follow instead of returning.
    private var responseBytes = 0
    private var responseTotal: Int?
    private var responseIsInterim = false
    /// `send` returned: the current response is the user's.
    private var returned = false
    /// The current response's body ended (or it had none that is still to come).
    private var responseEnded = false
    /// The status of the last response head from the transport; nil when none came.
    private var lastStatus: Int?

    init(method: HTTPRequest.Method, uploadTotal: Int?) {
        progress = HTTPTransferProgress(bytesExpectedToSend: uploadTotal)
        isHead = method == .head
    }

    /// What an event changed: nothing, a value to report (subject to throttling), or one to report now.
    enum Change: Comparable {
        case none
        case update
        case important

        /// What two changes applied together amount to: the stronger one.
        func combined(with other: Change) -> Change { max(self, other) }
    }

    /// A hop's head went out with a body of `length` bytes on the wire (nil: chunked): the upload total is that
    /// body's, which may differ from the caller's (a body the chain compressed, an `aws-chunked` one), so that
    /// the count of bytes written runs up to it.
    mutating func bodyStarted(length: Int?) -> Change {
        guard !progress.isFinal, progress.bytesExpectedToSend != length else { return .none }
        progress.bytesExpectedToSend = length
        return .update
    }

    mutating func bodySent(total: Int) -> Change {
        guard total > progress.bytesSent, !progress.isFinal else { return .none }
        progress.bytesSent = total
        return .update
    }

    /// A response head: its status, the body length its framing announced (0 for none, nil when unknown:
    /// chunked or read until close; ``HTTP1ResponseHead/announcedBodyLength``), and whether it has a
    /// `Location` (asked only for a 3xx).
    mutating func headReceived(status: HTTPResponse.Status, bodyLength: Int?, hasLocation: @autoclosure () -> Bool) -> Change {
        guard !progress.isFinal else { return .none }
        responseBytes = 0
        responseEnded = false
        let code = status.code
        lastStatus = code
        responseIsInterim = code == 401 || code == 407 || ((300...399).contains(code) && code != 304 && hasLocation())
        if isHead || code == 204 || code == 304 || (100...199).contains(code) {
            responseTotal = 0
        } else {
            responseTotal = bodyLength
        }
        guard !responseIsInterim else { return .none }
        return adopt()
    }

    /// Makes the current response the counted one: its total, and its bytes if they are ahead.
    private mutating func adopt() -> Change {
        let before = progress
        progress.bytesExpectedToReceive = responseTotal
        progress.bytesReceived = max(progress.bytesReceived, responseBytes)
        return progress == before ? .none : .important
    }

    mutating func bodyReceived(_ count: Int) -> Change {
        guard count > 0, !progress.isFinal else { return .none }
        responseBytes += count
        guard !responseIsInterim, responseBytes > progress.bytesReceived else { return .none }
        progress.bytesReceived = responseBytes
        return .update
    }

    /// A response's body ended. Final if `send` already returned it.
    mutating func finished() -> Change {
        responseEnded = true
        guard returned else { return .none }
        return finish()
    }

    /// `send` returned its response (`status`). Final at once if that response's body has already ended (it came
    /// with the head), or if the response did not come from the transport: no head came, or the transport's
    /// last was a `304` or a hop the chain follows and `send` returned another status (the cache's fresh or stale
    /// copy, its `504`, a revalidated copy, a redirect's next hop from the cache). Such a response is reported whole (`localBodyLength`: its body's length when known),
    /// as ASIHTTPRequest's `useDataFromCache` did: its body never crosses the wire, and reading it needs no meter.
    mutating func sendReturned(status: Int? = nil, localBodyLength: @autoclosure () -> Int? = nil) -> Change {
        guard !progress.isFinal else { return .none }
        returned = true
        // The last head the transport brought was a 304 the cache turned into its copy, or a hop the chain
        // followed (a redirect whose next hop the cache answered): `send` returned something else.
        if let status, lastStatus == nil || (lastStatus == 304 && status != 304) || (responseIsInterim && status != lastStatus) {
            let length = isHead || status == 204 || status == 304 ? 0 : localBodyLength().map { max(0, $0) }
            progress.bytesExpectedToReceive = length
            progress.bytesReceived = max(progress.bytesReceived, length ?? 0)
            return finish()
        }
        var change = Change.none
        if responseIsInterim {
            responseIsInterim = false
            change = adopt()
        }
        if responseEnded { return finish() }
        return change
    }

    /// An exchange failed (the transport's `failed` event). The returned response's body: final, with
    /// ``HTTPTransferProgress/didFail``. Before `send` has returned, the chain may still recover (a retry step
    /// sends again, the cache serves its stale copy), so the end waits for ``sendThrew()`` or
    /// ``sendReturned(status:localBodyLength:)``: a failure the chain recovered from made the progress final
    /// (and failed) before the transfer that followed.
    mutating func ended() -> Change {
        guard returned else { return .none }
        return finish(failed: true)
    }

    /// `send` threw: final, with ``HTTPTransferProgress/didFail``.
    mutating func sendThrew() -> Change { finish(failed: true) }

    private mutating func finish(failed: Bool = false) -> Change {
        guard !progress.isFinal else { return .none }
        progress.isFinal = true
        progress.didFail = failed
        return .important
    }
}

/// Decides which progress values reach the handler: at most one per interval, and with a known total only
/// after a minimum fraction more is done; important values (the total arriving, the final one) always.
struct ProgressThrottle: Sendable {
    /// In nanoseconds (``MonotonicTime``).
    let minimumInterval: UInt64
    let minimumFraction: Double
    private var lastTime: MonotonicTime?
    private var lastReported: HTTPTransferProgress?

    init(minimumInterval: Duration, minimumFraction: Double) {
        self.minimumInterval = minimumInterval.wholeNanoseconds
        self.minimumFraction = max(0, minimumFraction)
    }

    /// `now` is read only when it matters: for an update, and for an important value that is not the last (the
    /// time of the final one is never compared with anything).
    mutating func shouldReport(_ progress: HTTPTransferProgress, _ change: TransferProgressTracker.Change,
                               now: @autoclosure () -> MonotonicTime) -> Bool {
        switch change {
        case .none:
            return false
        case .important:
            if !progress.isFinal { lastTime = now() }
        case .update:
            let now = now()
            if let lastTime, now.nanoseconds &- lastTime.nanoseconds < minimumInterval, now >= lastTime { return false }
            if let last = lastReported, !Self.movedEnough(from: last, to: progress, by: minimumFraction) { return false }
            lastTime = now
        }
        lastReported = progress
        return true
    }

    /// Whether either direction moved by `fraction` of its known total (any movement when the total is unknown).
    static func movedEnough(from last: HTTPTransferProgress, to now: HTTPTransferProgress, by fraction: Double) -> Bool {
        func moved(_ before: Int, _ after: Int, total: Int?) -> Bool {
            guard after > before else { return false }
            guard let total, total > 0 else { return true }
            return Double(after - before) >= fraction * Double(total)
        }
        return moved(last.bytesSent, now.bytesSent, total: now.bytesExpectedToSend)
            || moved(last.bytesReceived, now.bytesReceived, total: now.bytesExpectedToReceive)
    }
}

/// A request's progress handler at work inside its observation: the tracker and the throttle. A value kept in
/// the observation's state, under its lock (``RequestObservation``), so observing progress allocates nothing of
/// its own; the handler is called outside the lock with what ``apply(at:_:)`` returns.
struct ProgressState: Sendable {
    var tracker: TransferProgressTracker
    var throttle: ProgressThrottle

    init(_ handler: HTTPProgressHandler, method: HTTPRequest.Method, uploadTotal: Int?) {
        tracker = TransferProgressTracker(method: method, uploadTotal: uploadTotal)
        throttle = ProgressThrottle(minimumInterval: handler.minimumInterval, minimumFraction: handler.minimumFraction)
    }

    /// Applies one change to the tracker; the value to report, if the throttle lets it through.
    mutating func apply(
        at now: @autoclosure () -> MonotonicTime, _ body: (inout TransferProgressTracker) -> TransferProgressTracker.Change
    ) -> HTTPTransferProgress? {
        let change = body(&tracker)
        return throttle.shouldReport(tracker.progress, change, now: now()) ? tracker.progress : nil
    }
}

extension HTTPClientResponse {
    /// The body's length when it is known without reading it: held in memory, or else its `Content-Length`
    /// (for a response the transport did not bring, whose progress is reported whole: ``TransferProgressTracker``).
    var knownBodyLength: Int? {
        switch body.storage {
        case .chunk(let chunk): return chunk.count
        case .buffered(let chunks): return chunks.reduce(0) { $0 + $1.count }
        case .connection, .sequence:
            guard let value = headers[.contentLength], let length = Int(value), length >= 0 else { return nil }
            return length
        }
    }
}
