import AsyncHTTP
import AsyncHTTPMetrics
import AsyncHTTPTracing
import Logging
import MetricsTestKit
import Tracing
import XCTest

/// The telemetry snippets of README.md, docs/telemetry.md and the two DocC catalogues, compiled and run
/// against nginx: a snippet that stops compiling fails this build.
final class TelemetryDocExamplesTests: XCTestCase {
    func testReadmeSnippetTurnsOnTracingMetricsAndLogTopics() async throws {
        let (httpPort, _, _) = try Peers.nginx()
        let metrics = TestMetrics()
        let tracer = W3CTestTracer()

        // README.md, "Tracing, metrics and logging" (with a test tracer and factory in place of bootstrapping).
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        configuration.enableTracing(HTTPClientTracing(tracer: tracer))
        configuration.enableMetrics(HTTPClientMetrics(factory: metrics))
        configuration.logger.logLevel = .debug
        configuration.logTopics = [.persistentConnections]
        let client = HTTPClient(configuration: configuration)
        let gauges = Task { await HTTPClientMetrics(factory: metrics).reportPool(of: client, every: .seconds(10)) }

        XCTAssertEqual(configuration.middleware.count, 2)
        XCTAssertEqual(configuration.observers.count, 2)

        // The DocC catalogue's "Getting started": inside a span of the caller's, the request's span is its child.
        try await tracer.withSpan("refresh") { _ in
            let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(httpPort)/small.txt"))
            _ = try await response.body.collect(upTo: 1 << 20)
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? metrics.expectGauge("asynchttp.client.pool.open_connections")) == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        gauges.cancel()
        await gauges.value
        await client.shutdown()

        let refresh = try XCTUnwrap(tracer.finished.first { $0.operationName == "refresh" })
        let get = try XCTUnwrap(tracer.finished.first { $0.kind == .client })
        XCTAssertEqual(get.parentSpanID, refresh.spanID)
        XCTAssertEqual(metrics.counterTotal(label: "asynchttp.client.requests"), 1)
        XCTAssertNotNil(try metrics.expectGauge("asynchttp.client.pool.open_connections").lastValue)
    }
}
