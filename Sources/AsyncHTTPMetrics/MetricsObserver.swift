import AsyncHTTP
import CoreMetrics

/// Counts body bytes as they cross the socket: `asynchttp.client.request.body.bytes` (every attempt's, so a
/// re-sent body counts again, as it crossed the network again) and `asynchttp.client.response.body.bytes`
/// (before decompression). Installed with ``MetricsMiddleware`` by ``AsyncHTTP/HTTPClient/Configuration/enableMetrics(_:)``.
public struct MetricsObserver: HTTPClientObserver {
    let metrics: HTTPClientMetrics

    /// The observer for `metrics`.
    public init(_ metrics: HTTPClientMetrics = HTTPClientMetrics()) {
        self.metrics = metrics
    }

    /// Adds the bytes `event` reports.
    public func observe(_ event: HTTPClientEvent) {
        switch event.kind {
        case .connectionAcquired:
            MeteredHop.current?.attemptStarted()
        case .bodyBytesSent(let total):
            guard let hop = MeteredHop.current else { return }
            let delta = hop.sentDelta(total: total)
            if delta > 0 { Counter(label: MetricName.bytesSent, factory: metrics.resolvedFactory).increment(by: delta) }
        case .bodyBytesReceived(let count):
            if count > 0 { Counter(label: MetricName.bytesReceived, factory: metrics.resolvedFactory).increment(by: count) }
        default:
            break
        }
    }
}
