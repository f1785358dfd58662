import AsyncHTTP
import CoreMetrics

/// swift-metrics instruments for an `HTTPClient`: requests by method and status class, errors by
/// kind, request durations, body bytes both ways, and the connection pool's gauges.
///
/// Off by default; one line turns the request metrics on, and one task reports the pool:
///
/// ```swift
/// import AsyncHTTP
/// import AsyncHTTPMetrics
///
/// var configuration = HTTPClient.Configuration()
/// configuration.enableMetrics()                  // MetricsSystem.factory
/// let client = HTTPClient(configuration: configuration)
/// let pool = Task { await HTTPClientMetrics().reportPool(of: client, every: .seconds(10)) }
/// ```
///
/// The metric names (OpenTelemetry's `http.client.*` where one exists) are listed in docs/telemetry.md and in
/// this product's documentation catalogue.
public struct HTTPClientMetrics: Sendable {
    /// Where the instruments are made; nil uses `MetricsSystem.factory` (whatever was bootstrapped).
    public var factory: (any MetricsFactory)?
    /// Whether the duration timer carries `server.address` and `server.port` (as OpenTelemetry's
    /// `http.client.request.duration` does). Turn it off when a client talks to very many hosts.
    public var recordsServerAddress: Bool

    /// Metrics made by `factory` (nil: the bootstrapped one).
    public init(factory: (any MetricsFactory)? = nil, recordsServerAddress: Bool = true) {
        self.factory = factory
        self.recordsServerAddress = recordsServerAddress
    }

    /// The middleware counting requests, errors, durations and request body bytes.
    public var middleware: MetricsMiddleware { MetricsMiddleware(self) }

    /// The observer counting body bytes as they cross the socket.
    public var observer: MetricsObserver { MetricsObserver(self) }

    var resolvedFactory: any MetricsFactory { factory ?? MetricsSystem.factory }

    /// Records the pool's gauges once (`HTTPClient.poolStatistics()`).
    public func recordPool(of client: HTTPClient) async {
        let statistics = await client.poolStatistics()
        let factory = resolvedFactory
        Gauge(label: MetricName.openConnections, dimensions: [("http.connection.state", "idle")], factory: factory)
            .record(statistics.idleConnections)
        Gauge(label: MetricName.openConnections, dimensions: [("http.connection.state", "active")], factory: factory)
            .record(statistics.leasedConnections)
        Gauge(label: MetricName.poolOpen, factory: factory).record(statistics.openConnections)
        Gauge(label: MetricName.poolWaiting, factory: factory).record(statistics.waitingRequests)
    }

    /// Records the pool's gauges every `interval` until the task is cancelled; run it in a task of its own
    /// (or as a service). The first record is made at once.
    public func reportPool(of client: HTTPClient, every interval: Duration) async {
        while !Task.isCancelled {
            await recordPool(of: client)
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }
}

extension HTTPClient.Configuration {
    /// Turns the request metrics on for a client made from this configuration: appends ``MetricsMiddleware``
    /// to `middleware` and ``MetricsObserver`` to `observers`. The pool's gauges are reported by
    /// ``HTTPClientMetrics/reportPool(of:every:)``.
    ///
    /// ```swift
    /// var configuration = HTTPClient.Configuration()
    /// configuration.enableMetrics()
    /// ```
    public mutating func enableMetrics(_ metrics: HTTPClientMetrics = HTTPClientMetrics()) {
        middleware.append(metrics.middleware)
        observers.append(metrics.observer)
    }
}

/// The metric labels, in one place (the table in docs/telemetry.md lists them with their dimensions).
enum MetricName {
    /// Timer: from the hop's start to the response head (or the failure).
    static let requestDuration = "http.client.request.duration"
    /// Counter: responses, by method and status class.
    static let requests = "asynchttp.client.requests"
    /// Counter: failed requests, by `error.type`.
    static let errors = "asynchttp.client.errors"
    /// Counter: request body bytes written to the socket.
    static let bytesSent = "asynchttp.client.request.body.bytes"
    /// Counter: response body bytes read from the socket (before decompression).
    static let bytesReceived = "asynchttp.client.response.body.bytes"
    /// Gauge: open connections by `http.connection.state` (`idle`, `active`).
    static let openConnections = "http.client.open_connections"
    /// Gauge: idle plus leased connections.
    static let poolOpen = "asynchttp.client.pool.open_connections"
    /// Gauge: requests waiting for a connection.
    static let poolWaiting = "asynchttp.client.pool.waiting_requests"
}
