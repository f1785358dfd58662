import AsyncHTTP
import Tracing

/// Tracing for an `HTTPClient`: one OpenTelemetry client span per request sent, the W3C trace
/// context injected into its headers, and a child span for each new connection.
///
/// Off by default. Turn it on with one line on the configuration, then bootstrap a tracer as usual (swift-otel,
/// or any `Tracer`):
///
/// ```swift
/// import AsyncHTTP
/// import AsyncHTTPTracing
///
/// var configuration = HTTPClient.Configuration()
/// configuration.enableTracing()          // uses InstrumentationSystem.tracer
/// let client = HTTPClient(configuration: configuration)
/// ```
///
/// The span follows OpenTelemetry's HTTP client semantic conventions; see ``TracingMiddleware`` for the
/// attributes. With no tracer bootstrapped (`NoOpTracer`) each request passes straight through.
public struct HTTPClientTracing: Sendable {
    /// The tracer spans go to; nil reads `InstrumentationSystem.tracer` at each request, so a tracer
    /// bootstrapped after the client was made is picked up.
    public var tracer: (any Tracer)?
    /// Whether each new connection gets a child span (`connect`), covering the wait for a pool slot, DNS,
    /// TCP and the TLS handshake. On by default; it adds an observer to the client.
    public var connectionSpans: Bool

    /// Tracing with `tracer` (nil: the bootstrapped one) and, unless turned off, connection spans.
    public init(tracer: (any Tracer)? = nil, connectionSpans: Bool = true) {
        self.tracer = tracer
        self.connectionSpans = connectionSpans
    }

    /// The middleware that makes the request spans; install it last in `HTTPClient.Configuration.middleware`
    /// so that it runs once per hop, around the transport.
    public var middleware: TracingMiddleware { TracingMiddleware(tracer: tracer) }

    /// The observer that adds connection spans and retry events to the request span the middleware made.
    public var observer: TracingObserver { TracingObserver(tracer: tracer) }
}

extension HTTPClient.Configuration {
    /// Turns tracing on for a client made from this configuration: appends ``TracingMiddleware`` to
    /// `middleware` and, for connection spans, ``TracingObserver`` to `observers`.
    ///
    /// ```swift
    /// var configuration = HTTPClient.Configuration()
    /// configuration.enableTracing()
    /// ```
    public mutating func enableTracing(_ tracing: HTTPClientTracing = HTTPClientTracing()) {
        middleware.append(tracing.middleware)
        if tracing.connectionSpans { observers.append(tracing.observer) }
    }
}
