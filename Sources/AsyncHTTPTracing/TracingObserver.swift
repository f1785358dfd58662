import AsyncHTTP
import Tracing

/// Adds to the span ``TracingMiddleware`` made for a hop what only the transport sees: the peer's address,
/// a `connect` child span for each new connection, and a `retry` event (with `http.request.resend_count`)
/// when the transport sends the request again on a fresh connection.
///
/// It finds the hop's span through a task-local, so it does nothing for a request the middleware did not trace
/// (no tracer bootstrapped): the cost left is the client's observation of each request.
public struct TracingObserver: HTTPClientObserver {
    /// The tracer; nil reads `InstrumentationSystem.tracer` for each request (as the middleware does).
    public let tracer: (any Tracer)?

    /// An observer for the spans of `tracer` (nil: the bootstrapped one); install it with ``TracingMiddleware``
    /// (``AsyncHTTP/HTTPClient/Configuration/enableTracing(_:)``).
    public init(tracer: (any Tracer)? = nil) {
        self.tracer = tracer
    }

    /// False with `NoOpTracer`: nothing will be traced, so the client need not observe the request at all.
    public var isObserving: Bool { !((tracer ?? InstrumentationSystem.tracer) is NoOpTracer) }

    /// Records `event` on the current hop's span, if there is one.
    public func observe(_ event: HTTPClientEvent) {
        guard let hop = TracedHop.current else { return }
        switch event.kind {
        case .connectionAcquired(let info):
            hop.connectionAcquired(info, at: event.time)
        case .retry(let reason):
            hop.retried(reason: reason, at: event.time)
        default:
            break
        }
    }
}
