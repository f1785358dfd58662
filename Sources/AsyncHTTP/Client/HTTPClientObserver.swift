import HTTPTypes

/// Watches requests without changing them: logging, metrics, progress, `ahttp -v`.
///
/// Observers see what middleware cannot: the exact bytes of each request head as the encoder wrote them,
/// whether a connection was new or reused, body bytes as they cross the socket, retries, and timings.
/// They cannot alter anything (watching is not changing: Alamofire's `EventMonitor`, Go's `httptrace`).
///
/// ```swift
/// struct Printer: HTTPClientObserver {
///     func observe(_ event: HTTPClientEvent) {
///         if case .headSent(let bytes) = event.kind { print(String(decoding: bytes, as: UTF8.self)) }
///     }
/// }
/// var configuration = HTTPClient.Configuration()
/// configuration.observers = [Printer()]
/// ```
///
/// `observe` is called synchronously on the task doing the work, in order for one request; keep it short
/// and never block. With no observers configured nothing is built or recorded: observing costs nothing
/// until it is asked for.
public protocol HTTPClientObserver: Sendable {
    /// Called for each event, synchronously, in order for one request. Keep it short; never block.
    func observe(_ event: HTTPClientEvent)

    /// Whether this observer wants the events of the request being sent now; read once per ``HTTPClient/send(_:)``.
    /// True by default. When every observer of a client answers false (a tracing observer with no tracer
    /// bootstrapped), the request is not observed at all and costs what it costs with no observers.
    var isObserving: Bool { get }
}

extension HTTPClientObserver {
    /// Always observing.
    public var isObserving: Bool { true }
}

/// One thing that happened to a request.
public struct HTTPClientEvent: Sendable {
    /// Identifies one ``HTTPClient/send(_:)``: every hop, retry and body event of it carries the same number.
    public var requestID: UInt64
    /// When it happened.
    public var time: ContinuousClock.Instant
    /// What happened.
    public var kind: Kind

    /// The events, in the order they happen to a request.
    public enum Kind: Sendable {
        /// `send` was called. The URL is shown without its userinfo.
        case queued(method: HTTPRequest.Method, url: String)
        /// A connection was leased for one attempt (each hop of a redirect and each retry leases one).
        case connectionAcquired(ConnectionInfo)
        /// The request head went out: exactly these bytes (an `Authorization` header included, as curl's `-v`
        /// shows it; an observer that logs should redact it).
        case headSent([UInt8])
        /// Request body bytes went out; the total so far for this attempt.
        case bodyBytesSent(total: Int)
        /// The final response head arrived (interim 1xx responses are not reported).
        case headReceived(status: HTTPResponse.Status, version: HTTPVersion, headers: HTTPFields)
        /// Response body bytes arrived, as they are handed to the reader (before decompression).
        case bodyBytesReceived(Int)
        /// The request is sent again on a new connection, and why.
        case retry(reason: String)
        /// A redirect is being followed (URL shown without its userinfo).
        case redirect(status: Int, location: String)
        /// A response ended: its body was read to the end (one per hop of a redirect or round of authentication).
        case finished(Timings)
        /// The attempt failed; or the request failed before its first attempt (a header the encoder refuses, a
        /// cancellation) or in a step of the chain, when no `finished` or `failed` came before: every request that
        /// is `queued` and whose `send` throws ends with one of the two.
        case failed(HTTPClientError, Timings)
    }

    /// The connection an attempt runs on.
    public struct ConnectionInfo: Sendable, Hashable {
        /// The client's number for the connection (the one in its debug log lines).
        public var id: Int
        /// Whether it carried an earlier request.
        public var reused: Bool
        /// Whether its TLS handshake resumed a cached session (false for plain http).
        public var tlsSessionResumed: Bool
        /// `scheme://host:port` of the origin, and the proxy if there is one.
        public var route: String
        /// The socket's peer: `address:port` (`[address]:port` for IPv6, `unix:path` for a Unix socket). The
        /// proxy's address when there is one. Tracing reports it as `network.peer.address`.
        public var remoteAddress: String = ""
        /// The proxy's answers to `CONNECT` while this connection was opened, oldest first: a `407` that was
        /// answered, then the `2xx` that opened the tunnel (curl's `-i` shows them before the origin's head).
        /// Empty for a reused connection, and for one that is direct, through SOCKS, or forwarded by an HTTP
        /// proxy in absolute form.
        public var tunnelResponses: [TunnelResponse] = []
    }

    /// A proxy's answer to `CONNECT`: its status line and fields (it has no body that is read past the head), and
    /// the `CONNECT` it answered.
    public struct TunnelResponse: Sendable, Hashable {
        /// The status, `200 Connection established` for a tunnel that opened.
        public var status: HTTPResponse.Status
        /// The proxy's HTTP version.
        public var version: HTTPVersion
        /// The response's fields.
        public var headers: HTTPFields
        /// The `CONNECT` request head this answers, as it was written, blank line included (curl's `-v` shows it
        /// with `> `). It holds the `Proxy-Authorization` value when one was sent: redact before showing it, as
        /// for ``HTTPClientEvent/Kind/headSent(_:)``.
        public var request: [UInt8] = []

        /// Creates an answer from its parts.
        public init(status: HTTPResponse.Status, version: HTTPVersion, headers: HTTPFields, request: [UInt8] = []) {
            self.status = status
            self.version = version
            self.headers = headers
            self.request = request
        }
    }

    /// Times since the request was queued; nil for a phase not reached.
    public struct Timings: Sendable, Hashable {
        /// Until a connection was leased (new or reused).
        public var connection: Duration?
        /// Until the request head had been written.
        public var headSent: Duration?
        /// Until the response head arrived.
        public var headReceived: Duration?
        /// Until this event.
        public var total: Duration
    }
}

/// The observation of one `send`: its number, the client's observers, the request's progress handler, and the
/// state they share (timing marks, the progress tracker and its throttle). Made only when the client has
/// observers or the request a progress handler, and found by the transport and the middleware through a
/// task-local.
///
/// One allocation per observed request: the fixed parts and the mutable state are one `Locked` value, whose
/// mutex guards only `state`; the fixed parts are read without it (`Locked.unlockedPointer`), as nothing writes
/// them after `make`. The profile of `conc` with a progress handler on every request showed a second object
/// (the progress reporter's own lock) as the largest part of what observing cost.
struct RequestObservation: Sendable {
    /// The observation of the send this task runs (bound with the request's number, ``RequestLogContext``).
    static var current: RequestObservation? { RequestLogContext.scope?.observation }

    private let storage: Locked<Header>

    struct Header {
        let requestID: UInt64
        let observers: [any HTTPClientObserver]
        /// The request's own progress handler, fed from the same events as the observers.
        let handler: HTTPProgressHandler?
        /// When `send` was called; only with observers (a progress handler alone has no use for timings).
        let start: MonotonicTime
        /// Guarded by the mutex.
        var state: State
    }

    struct State {
        var marks = Marks()
        var progress: ProgressState?
        /// A `finished` or `failed` event went out: the request has had its last event.
        var ended = false
        /// `send` returned its response (recorded only with observers): a body given up on from now on ends the
        /// request; before, it was a hop's that the chain gave up on, and the request goes on.
        var returned = false
        /// The returned response had its `finished` or `failed` (an earlier hop's `finished` sets only `ended`).
        var returnedEnded = false
    }

    struct Marks {
        var connection: MonotonicTime?
        var headSent: MonotonicTime?
        var headReceived: MonotonicTime?
    }

    /// The observation of `request`, if the client has observers or the request a progress handler.
    static func make(
        for request: HTTPClientRequest, requestID: UInt64, observers: [any HTTPClientObserver]
    ) -> RequestObservation? {
        let handler = request.progressHandler
        // Observers that all decline this request count as none (see `HTTPClientObserver.isObserving`).
        let observers = observers.contains { $0.isObserving } ? observers : []
        guard !observers.isEmpty || handler != nil else { return nil }
        return make(requestID: requestID, observers: observers, handler: handler, method: request.method,
                    uploadTotal: request.body.map { $0.length } ?? 0)
    }

    /// An observation with these parts (`uploadTotal`: the request body's length, nil when unknown).
    static func make(
        requestID: UInt64, observers: [any HTTPClientObserver], handler: HTTPProgressHandler?,
        method: HTTPRequest.Method = .get, uploadTotal: Int? = 0
    ) -> RequestObservation {
        let header = Header(
            requestID: requestID, observers: observers, handler: handler,
            start: observers.isEmpty ? MonotonicTime(nanoseconds: 0) : .now,
            state: State(progress: handler.map { ProgressState($0, method: method, uploadTotal: uploadTotal) }))
        return RequestObservation(storage: Locked(header))
    }

    /// The fixed parts of the header: never written after `make`, so read without the lock.
    private var fixed: UnsafePointer<Header> { storage.unlockedPointer }

    var requestID: UInt64 { fixed.pointee.requestID }

    private var hasObservers: Bool { !fixed.pointee.observers.isEmpty }

    /// Whether the request has a progress handler.
    var observesProgress: Bool { fixed.pointee.handler != nil }

    @inline(__always)
    private func withState<Result>(_ body: (inout State) -> Result) -> Result {
        storage.withLock { body(&$0.state) }
    }

    /// Applies one change to the progress tracker and calls the handler (outside the lock) if the throttle lets
    /// the value through.
    func updateProgress(
        at now: @autoclosure () -> MonotonicTime = .now, _ body: (inout TransferProgressTracker) -> TransferProgressTracker.Change
    ) {
        guard observesProgress else { return }
        let report = withState { $0.progress?.apply(at: now(), body) }
        if let report { fixed.pointee.handler?.report(report) }
    }

    /// Tells the observers (their events carry `ContinuousClock` instants, the public type) and the progress
    /// handler (which keeps `MonotonicTime`, read only when there is one).
    private func emit(_ kind: HTTPClientEvent.Kind) {
        let observers = fixed.pointee.observers
        if !observers.isEmpty {
            let event = HTTPClientEvent(requestID: requestID, time: .now, kind: kind)
            for observer in observers { observer.observe(event) }
        }
        guard observesProgress else { return }
        switch kind {
        case .bodyBytesSent(let total): updateProgress(at: .now) { $0.bodySent(total: total) }
        case .bodyBytesReceived(let count): updateProgress(at: .now) { $0.bodyReceived(count) }
        case .finished: updateProgress(at: .now) { $0.finished() }
        case .failed: updateProgress(at: .now) { $0.ended() }
        default: break
        }
    }

    /// `send`'s chain returned its response (the progress follows that response from now on). Called by
    /// ``HTTPClient/send(_:)`` itself rather than through a wrapping closure: the extra async frame cost more than
    /// the update (perf, `conc` with a progress handler on every request).
    func sendReturned() {
        updateProgress(at: .now) { $0.sendReturned() }
    }

    /// `send` returned its response: for observers, a body given up on from now on ends the request.
    func markReturned() {
        guard hasObservers else { return }
        withState { $0.returned = true }
    }

    /// A response body was dropped before its end (not an observer event: the connection is drained or closed).
    ///
    /// The returned response's progress ends final and failed (``HTTPTransferProgress/didFail``) unless every byte
    /// of a known length had arrived: its bytes did not all come, so it must not read as complete, as URLSession
    /// ends a task cancelled part-way with an error (`NSURLErrorCancelled`) and a cancelled `Progress`. A body the
    /// chain drops before `send` returns (a redirect's, a challenge's) ends only that response, as before.
    func bodyDropped() {
        updateProgress(at: .now) { tracker in
            if let total = tracker.progress.bytesExpectedToReceive, tracker.progress.bytesReceived >= total {
                return tracker.finished()  // whole: only the end of the body was not read
            }
            let change = tracker.ended()  // final and failed once `send` has returned, else nothing
            return change == .none ? tracker.finished() : change
        }
    }

    /// A dropped body's connection was settled: the rest was read (`drained`) or the connection closed. Observers
    /// get the end they wait for: `finished` when the response ended on the wire, else `failed` with `cancelled`
    /// (URLSession ends a task cancelled part-way with `NSURLErrorCancelled`).
    ///
    /// Called only for the body of the response `send` returned, decided when it was dropped
    /// (``awaitsTheReturnedEnd``): a hop's body dropped by the chain, settled later in another task, would report
    /// among the next hop's events.
    func dropSettled(drained: Bool) {
        guard hasObservers, withState({ !$0.returnedEnded }) else { return }
        if drained {
            finished()
        } else {
            failed(HTTPClientError(.cancelled, "the response body was dropped before its end; the connection was closed"))
        }
    }

    /// Whether observers still wait for the end of the response `send` returned: read when its body is dropped.
    var awaitsTheReturnedEnd: Bool {
        hasObservers && withState { $0.returned && !$0.returnedEnded }
    }

    /// The reader gave up on the body at a limit (``HTTPClientResponse/Body/collect(upTo:)``). Once `send` has
    /// returned, the request ends there: observers get `error` as its `failed` event, and the progress ends failed.
    /// A hop's body that the chain gives up on (a challenge's it drains up to a limit) ends only that hop.
    func bodyAbandoned(_ error: HTTPClientError) {
        guard awaitsTheReturnedEnd else { return bodyDropped() }
        failed(error)
    }

    private func timings() -> HTTPClientEvent.Timings {
        let start = fixed.pointee.start
        let marks = withState { $0.marks }
        return .init(connection: marks.connection.map { start.duration(to: $0) },
                     headSent: marks.headSent.map { start.duration(to: $0) },
                     headReceived: marks.headReceived.map { start.duration(to: $0) },
                     total: start.duration(to: .now))
    }

    /// `url` is built only for observers (a progress handler has no use for it).
    func queued(method: HTTPRequest.Method, url: @autoclosure () -> String) {
        guard hasObservers else { return }
        emit(.queued(method: method, url: url()))
    }

    /// `info` is built only for observers (its route is a formatted string).
    func connectionAcquired(_ info: @autoclosure () -> HTTPClientEvent.ConnectionInfo) {
        guard hasObservers else { return }
        let now = MonotonicTime.now
        withState { $0.marks = Marks(connection: now) }
        emit(.connectionAcquired(info()))
    }

    /// The head went out. `bodyLength`: the length of the body that follows it on the wire (nil when unknown:
    /// chunked), which may differ from the caller's (a body compressed by the chain, an S3 `aws-chunked` body);
    /// omitted for a head without a body.
    func headSent(_ bytes: [UInt8], bodyLength: Int?? = .none) {
        if case .some(let length) = bodyLength, observesProgress {
            updateProgress(at: .now) { $0.bodyStarted(length: length) }
        }
        guard hasObservers else { return }
        let now = MonotonicTime.now
        withState { $0.marks.headSent = now }
        emit(.headSent(bytes))
    }

    func bodySent(total: Int) { emit(.bodyBytesSent(total: total)) }

    /// `bodyLength`: what the framing announced (``HTTP1ResponseHead/announcedBodyLength``), for progress.
    func headReceived(status: HTTPResponse.Status, version: HTTPVersion, headers: HTTPFields, bodyLength: Int?) {
        updateProgress { $0.headReceived(status: status, bodyLength: bodyLength, hasLocation: headers[.location] != nil) }
        guard hasObservers else { return }
        let now = MonotonicTime.now
        withState { $0.marks.headReceived = now }
        let event = HTTPClientEvent(requestID: requestID, time: .now,
                                    kind: .headReceived(status: status, version: version, headers: headers))
        for observer in fixed.pointee.observers { observer.observe(event) }
    }

    func bodyReceived(_ count: Int) { emit(.bodyBytesReceived(count)) }

    /// A whole body that came with its head (`chunks`), then its end: for observers an event per chunk and
    /// `finished`; for a progress handler alone one update under one lock.
    func bodyReceivedWhole(_ chunks: [ArraySlice<UInt8>]) {
        guard !hasObservers else {
            for chunk in chunks { bodyReceived(chunk.count) }
            finished()
            return
        }
        let count = chunks.reduce(0) { $0 + $1.count }
        updateProgress(at: .now) { tracker in tracker.bodyReceived(count).combined(with: tracker.finished()) }
    }

    func retry(reason: String) { emit(.retry(reason: reason)) }

    func redirect(status: Int, location: String) { emit(.redirect(status: status, location: location)) }

    func finished() {
        guard hasObservers else {
            updateProgress(at: .now) { $0.finished() }
            return
        }
        withState { state in
            state.ended = true
            if state.returned { state.returnedEnded = true }
        }
        emit(.finished(timings()))
    }

    func failed(_ error: HTTPClientError) {
        guard hasObservers else {
            updateProgress(at: .now) { $0.ended() }
            return
        }
        withState { state in
            state.ended = true
            if state.returned { state.returnedEnded = true }
        }
        emit(.failed(error, timings()))
    }

    /// `send` threw `error` and no `finished` or `failed` event went out (the request failed before its first
    /// attempt, or in a step of the chain rather than the transport): observers get the `failed` they wait for.
    /// An error that is no `HTTPClientError` (a user step's own) is reported as what it says.
    func sendThrew(_ error: any Error) {
        guard hasObservers, !withState({ $0.ended }) else { return }
        let reported: HTTPClientError = switch error {
        case let error as HTTPClientError: error
        case is CancellationError: .cancelled
        default: HTTPClientError(.invalidRequest, "a middleware step failed: \(error)")
        }
        failed(reported)
    }
}
