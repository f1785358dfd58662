import AsyncHTTP
import Synchronization
import Tracing

/// Makes an OpenTelemetry HTTP client span for every request that reaches it, and injects the trace context
/// (W3C `traceparent` and `tracestate`, or whatever the tracer propagates) into the request's headers.
///
/// Installed as the client's own middleware (``AsyncHTTP/HTTPClient/Configuration/enableTracing(_:)`` does it), it sits
/// innermost, so each redirect hop and each authentication round is a span of its own, as the conventions
/// ask, all siblings under the caller's current span.
///
/// Attributes (OpenTelemetry HTTP client semantic conventions):
///
/// | attribute | value |
/// |---|---|
/// | `http.request.method` | the method; `_OTHER` (with `http.request.method_original`) for one the conventions do not list |
/// | `url.full` | the URL without userinfo or fragment, with the values of secret-looking query parameters replaced by `REDACTED` |
/// | `url.scheme`, `server.address`, `server.port` | from the URL |
/// | `http.request.resend_count` | when the request was sent before in this `send` (redirects, authentication, retries) |
/// | `network.peer.address`, `network.peer.port` | the socket's peer (with ``TracingObserver``) |
/// | `network.protocol.version` | `1.1` or `1.0` |
/// | `http.response.status_code` | the status |
/// | `error.type` | the `HTTPClientError.Code` name, or the status code for a 4xx or 5xx |
///
/// The span's status is `error` for a failure and for a 4xx or 5xx response. It ends when the response body
/// ends (read to its end, failed, or dropped), or at once for a response without a body.
///
/// With `NoOpTracer` (no tracer bootstrapped) the request passes through untouched.
public struct TracingMiddleware: HTTPClientMiddleware {
    /// The tracer; nil reads `InstrumentationSystem.tracer` for each request.
    public let tracer: (any Tracer)?

    /// A middleware sending spans to `tracer`, or to the bootstrapped tracer when nil.
    public init(tracer: (any Tracer)? = nil) {
        self.tracer = tracer
    }

    /// Starts the span, injects the context, runs `next` inside the span's context, and records the outcome.
    public func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        let tracer = self.tracer ?? InstrumentationSystem.tracer
        // Nothing to record and nothing to propagate: pass through at the cost of one type check.
        if tracer is NoOpTracer { return try await next(request) }
        return try await traced(request, tracer: tracer, next: next)
    }

    private func traced<T: Tracer>(_ request: HTTPClientRequest, tracer: T, next: Next) async throws -> HTTPClientResponse {
        let start = ContinuousClock.now
        let method = HTTPMethodName(request.method)
        let parent = ServiceContext.current ?? .topLevel
        let span = tracer.startSpan(method.spanName, context: parent, ofKind: .client)
        var attributes = SpanAttributes()
        attributes["http.request.method"] = method.name
        if let original = method.original { attributes["http.request.method_original"] = original }
        if let url = try? HTTPURL(request.url) {
            attributes["url.full"] = url.loggableDescription
            attributes["url.scheme"] = url.scheme
            attributes["server.address"] = url.host
            attributes["server.port"] = url.port
        } else {
            attributes["url.full"] = HTTPURL.redacting(request.url)
        }
        if request.resendCount > 0 { attributes["http.request.resend_count"] = request.resendCount }
        span.attributes.merge(attributes)

        var request = request
        tracer.inject(span.context, into: &request.headers, using: HTTPFieldsInjector())
        let hop = TracedHop(span: span, start: start, resendCount: request.resendCount) { name, instant in
            tracer.startSpan(name, context: span.context, ofKind: .internal, at: instant)
        }
        let response: HTTPClientResponse
        do {
            response = try await TracedHop.$current.withValue(hop) {
                try await ServiceContext.withValue(span.context) { try await next(request) }
            }
        } catch {
            hop.failed(error)
            throw error
        }
        return hop.received(response, method: request.method)
    }
}

/// An `Injector` writing into `HTTPFields`: the trace context goes into a request's headers with it.
/// A key that is not a valid field name is skipped.
public struct HTTPFieldsInjector: Injector {
    /// An injector.
    public init() {}

    /// Sets `key: value`, replacing a field of that name (a caller's own `traceparent` is not sent twice).
    public func inject(_ value: String, forKey key: String, into carrier: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        carrier[name] = value
    }
}

/// The method as the conventions name it: the nine of RFC 9110 and PATCH by name, any other as `_OTHER`.
struct HTTPMethodName {
    var name: String
    var original: String?
    /// `{method}`, or `HTTP` for `_OTHER` (the conventions' span name without a route template).
    var spanName: String { original == nil ? name : "HTTP" }

    static let known: Set<String> = ["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE", "QUERY"]

    init(_ method: HTTPRequest.Method) {
        if Self.known.contains(method.rawValue) {
            name = method.rawValue
        } else {
            name = "_OTHER"
            original = method.rawValue
        }
    }
}

/// One traced hop: the span, its start, and what the observer adds while the hop runs. Found by
/// ``TracingObserver`` through a task-local while the hop's `next` runs.
final class TracedHop: Sendable {
    @TaskLocal static var current: TracedHop?

    let span: any Span
    let start: ContinuousClock.Instant
    private let startChild: @Sendable (String, WallInstant) -> any Span
    private let state: Locked<State>

    private struct State {
        var resendCount: Int
        var ended = false
    }

    init(span: any Span, start: ContinuousClock.Instant, resendCount: Int,
         startChild: @escaping @Sendable (String, WallInstant) -> any Span) {
        self.span = span
        self.start = start
        self.startChild = startChild
        self.state = Locked(State(resendCount: resendCount))
    }

    /// A new connection: a child span from the hop's start (pool wait, DNS, TCP, TLS) to `time`.
    func connectionAcquired(_ info: HTTPClientEvent.ConnectionInfo, at time: ContinuousClock.Instant) {
        let peer = PeerAddress(info.remoteAddress)
        if let peer {
            span.attributes["network.peer.address"] = peer.address
            if let port = peer.port { span.attributes["network.peer.port"] = port }
        }
        guard !info.reused else { return }
        let child = startChild("connect", WallInstant(start))
        child.attributes["asynchttp.connection.id"] = info.id
        child.attributes["asynchttp.connection.route"] = info.route
        if let peer {
            child.attributes["network.peer.address"] = peer.address
            if let port = peer.port { child.attributes["network.peer.port"] = port }
        }
        if info.route.hasPrefix("https") { child.attributes["tls.resumed"] = info.tlsSessionResumed }
        child.end(at: WallInstant(time))
    }

    /// The transport sends the request again on a new connection (a stale keep-alive connection, a timeout).
    func retried(reason: String, at time: ContinuousClock.Instant) {
        let count = state.withLock { state in
            state.resendCount += 1
            return state.resendCount
        }
        span.attributes["http.request.resend_count"] = count
        span.addEvent(SpanEvent(name: "retry", at: WallInstant(time), attributes: ["asynchttp.retry.reason": .string(reason)]))
    }

    func failed(_ error: any Error) {
        let type: String
        if let error = error as? HTTPClientError { type = error.code.rawValue } else { type = "_OTHER" }
        span.attributes["error.type"] = type
        span.recordError(error)
        span.setStatus(SpanStatus(code: .error))
        end()
    }

    /// Records the status and hands back the response, its body wrapped to end the span when it ends.
    func received(_ response: HTTPClientResponse, method: HTTPRequest.Method) -> HTTPClientResponse {
        let code = response.status.code
        span.attributes["http.response.status_code"] = code
        span.attributes["network.protocol.version"] = response.version == .http1_0 ? "1.0" : "1.1"
        if code >= 400 {
            // Client spans: 4xx and 5xx are both errors (the conventions' "Status" section).
            span.attributes["error.type"] = String(code)
            span.setStatus(SpanStatus(code: .error))
        }
        // No body to wait for: HEAD, 1xx, 204, 304, or an empty Content-Length.
        if method == .head || code == 204 || code == 304 || (100..<200).contains(code)
            || response.headers[.contentLength] == "0" {
            end()
            return response
        }
        var response = response
        response.body = HTTPClientResponse.Body(SpanEndingBody(base: response.body, ending: SpanEnding(self)))
        return response
    }

    /// Ends the span once, whoever comes first (body end, failure, drop).
    func end() {
        let first = state.withLock { state in
            defer { state.ended = true }
            return !state.ended
        }
        if first { span.end() }
    }

    /// As ``failed(_:)``: `error.type` is the code's name, or `_OTHER` for an error that is not an `HTTPClientError`
    /// (a `CancellationError` from the body's source), which left it unset, or a 4xx's status code in its place.
    func bodyFailed(_ error: any Error) {
        guard !(state.withLock { $0.ended }) else { return }
        span.attributes["error.type"] = (error as? HTTPClientError)?.code.rawValue ?? "_OTHER"
        span.recordError(error)
        span.setStatus(SpanStatus(code: .error))
        end()
    }
}

/// Ends a hop's span when the last reference to the body goes (a body dropped unread).
final class SpanEnding: Sendable {
    let hop: TracedHop
    init(_ hop: TracedHop) { self.hop = hop }
    deinit { hop.end() }
}

/// The response body, ending the span at its end, on its failure, or when dropped.
struct SpanEndingBody: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let base: HTTPClientResponse.Body
    let ending: SpanEnding

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: HTTPClientResponse.Body.AsyncIterator
        let ending: SpanEnding

        mutating func next() async throws -> ArraySlice<UInt8>? {
            do {
                guard let chunk = try await base.next() else {
                    ending.hop.end()
                    return nil
                }
                return chunk
            } catch {
                ending.hop.bodyFailed(error)
                throw error
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), ending: ending)
    }
}

/// An instant for the tracer: nanoseconds since the Unix epoch, from a `ContinuousClock` instant.
struct WallInstant: TracerInstant {
    var nanosecondsSinceEpoch: UInt64

    init(nanosecondsSinceEpoch: UInt64) { self.nanosecondsSinceEpoch = nanosecondsSinceEpoch }

    /// The wall-clock time of `instant`: now on the wall clock, less how long ago `instant` was.
    init(_ instant: ContinuousClock.Instant) {
        let wallNow = DefaultTracerClock.now.nanosecondsSinceEpoch
        let ago = instant.duration(to: .now)
        let (seconds, attoseconds) = ago.components
        let nanos = Int64(seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
        nanosecondsSinceEpoch = nanos >= 0 ? wallNow &- UInt64(min(Int64(wallNow), nanos)) : wallNow &+ UInt64(-nanos)
    }

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch }
}

/// `address:port`, `[v6]:port` or `unix:path` split for `network.peer.*`.
struct PeerAddress {
    var address: String
    var port: Int?

    init?(_ text: String) {
        guard !text.isEmpty else { return nil }
        if text.hasPrefix("unix:") {
            address = String(text.dropFirst(5))
            return
        }
        guard let colon = text.lastIndex(of: ":") else {
            address = text
            return
        }
        var host = text[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        address = String(host)
        port = Int(text[text.index(after: colon)...])
    }
}
