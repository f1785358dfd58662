import AsyncHTTP
import CoreMetrics
import Synchronization

/// Counts each request that reaches it (every redirect hop and authentication round is one) and times it
/// to the response head: `http.client.request.duration`, `asynchttp.client.requests`, `asynchttp.client.errors`.
/// Installed by ``AsyncHTTP/HTTPClient/Configuration/enableMetrics(_:)``.
public struct MetricsMiddleware: HTTPClientMiddleware {
    let metrics: HTTPClientMetrics

    /// The middleware for `metrics`.
    public init(_ metrics: HTTPClientMetrics = HTTPClientMetrics()) {
        self.metrics = metrics
    }

    /// Times `next`, then counts the response by method and status class, or the failure by kind.
    public func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        let start = ContinuousClock.now
        let factory = metrics.resolvedFactory
        let method = MethodDimension(request.method)
        var server: [(String, String)] = []
        if metrics.recordsServerAddress, let url = try? HTTPURL(request.url) {
            server = [("server.address", url.host), ("server.port", String(url.port))]
        }
        let hop = MeteredHop()
        do {
            let response = try await MeteredHop.$current.withValue(hop) { try await next(request) }
            let elapsed = start.duration(to: .now)
            let code = response.status.code
            var dimensions = [("http.request.method", method.value), ("http.response.status_code", String(code))]
            // The conventions' error.type for a response: its status code, for a 4xx or 5xx (the tracing adapter's too).
            if code >= 400 { dimensions.append(("error.type", String(code))) }
            Timer(label: MetricName.requestDuration, dimensions: dimensions + server, factory: factory)
                .recordNanoseconds(Self.nanoseconds(elapsed))
            Counter(label: MetricName.requests,
                    dimensions: [("http.request.method", method.value), ("http.response.status_class", Self.statusClass(code))],
                    factory: factory).increment()
            return response
        } catch {
            let elapsed = start.duration(to: .now)
            let type = (error as? HTTPClientError)?.code.rawValue ?? "_OTHER"
            Timer(label: MetricName.requestDuration,
                  dimensions: [("http.request.method", method.value), ("error.type", type)] + server,
                  factory: factory).recordNanoseconds(Self.nanoseconds(elapsed))
            Counter(label: MetricName.errors, dimensions: [("http.request.method", method.value), ("error.type", type)],
                    factory: factory).increment()
            throw error
        }
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// `1xx` … `5xx` (anything else as `other`).
    static func statusClass(_ code: Int) -> String {
        switch code {
        case 100..<600: "\(code / 100)xx"
        default: "other"
        }
    }
}

/// The method as OpenTelemetry records it: known methods by name, any other as `_OTHER` (bounded cardinality).
struct MethodDimension {
    var value: String
    static let known: Set<String> = ["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE", "QUERY"]
    init(_ method: HTTPRequest.Method) {
        value = Self.known.contains(method.rawValue) ? method.rawValue : "_OTHER"
    }
}

/// What ``MetricsObserver`` needs across the events of one hop: the running total of body bytes already
/// counted for the current attempt. Found through a task-local while the hop's `next` runs.
final class MeteredHop: Sendable {
    @TaskLocal static var current: MeteredHop?
    private let sentTotal = Locked(0)

    /// The bytes not counted yet, given the attempt's running `total` (a retry starts again from zero).
    func sentDelta(total: Int) -> Int {
        sentTotal.withLock { counted in
            let delta = total >= counted ? total - counted : total
            counted = total
            return delta
        }
    }

    /// A new attempt (a connection was acquired): the running total starts again.
    func attemptStarted() { sentTotal.withLock { $0 = 0 } }
}
