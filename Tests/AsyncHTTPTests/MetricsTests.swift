import AsyncHTTPMetrics
import CoreMetrics
import MetricsTestKit
import XCTest

@testable import AsyncHTTP
@testable import AsyncHTTPMetrics

/// The metrics adapter against nginx, recorded into swift-metrics' `TestMetrics` (passed as the factory, so
/// nothing is bootstrapped process-wide).
final class MetricsTests: XCTestCase {
    var metrics: TestMetrics!
    var client: HTTPClient!
    var base = ""

    override func setUp() async throws {
        metrics = TestMetrics()
        let (httpPort, _, _) = try Peers.nginx()
        base = "http://127.0.0.1:\(httpPort)"
        client = makeClient()
    }

    override func tearDown() async throws {
        await client?.shutdown()
    }

    private func makeClient(_ change: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        configuration.compression.acceptsCompressedResponses = false
        change(&configuration)
        configuration.enableMetrics(HTTPClientMetrics(factory: metrics))
        return HTTPClient(configuration: configuration)
    }

    private func get(_ path: String) async throws -> HTTPClientResponse {
        let response = try await client.send(HTTPClientRequest(url: base + path))
        _ = try await response.body.collect(upTo: 1 << 20)
        return response
    }

    func testRequestsByMethodAndStatusClassDurationsAndBytes() async throws {
        _ = try await get("/small.txt")
        _ = try await get("/small.txt")
        let missing = try await get("/no-such-file")
        XCTAssertEqual(missing.status.code, 404)
        var upload = HTTPClientRequest(url: base + "/upload")
        upload.method = .post
        upload.body = .bytes(Array(repeating: UInt8(ascii: "a"), count: 1000))
        let uploaded = try await client.send(upload)
        XCTAssertEqual(uploaded.status.code, 204)

        XCTAssertEqual(metrics.counterTotal(label: "asynchttp.client.requests",
                                            dimensions: [("http.request.method", "GET"), ("http.response.status_class", "2xx")]), 2)
        XCTAssertEqual(metrics.counterTotal(label: "asynchttp.client.requests",
                                            dimensions: [("http.request.method", "GET"), ("http.response.status_class", "4xx")]), 1)
        XCTAssertEqual(metrics.counterTotal(label: "asynchttp.client.requests",
                                            dimensions: [("http.request.method", "POST"), ("http.response.status_class", "2xx")]), 1)

        let port = String(try HTTPURL(base).port)
        let timer = try metrics.expectTimer("http.client.request.duration", [
            ("http.request.method", "GET"), ("http.response.status_code", "200"),
            ("server.address", "127.0.0.1"), ("server.port", port),
        ])
        XCTAssertEqual(timer.values.count, 2)
        XCTAssertTrue(timer.values.allSatisfy { $0 > 0 })

        XCTAssertEqual(metrics.counterTotal(label: "asynchttp.client.request.body.bytes"), 1000)
        // Two 1 KiB files (compression off, so the wire bytes are the file's) and nginx's 404 page.
        let received = metrics.counterTotal(label: "asynchttp.client.response.body.bytes")
        XCTAssertGreaterThan(received, 2048)
        XCTAssertLessThan(received, 2048 + 4096)
        XCTAssertEqual(metrics.counterTotal(label: "asynchttp.client.errors"), 0)
    }

    /// OpenTelemetry's `error.type` for a 4xx or 5xx response is its status code, on the duration too (the tracing
    /// adapter set it, the timer did not); a 2xx has none.
    func testTheDurationOfA4xxCarriesTheStatusCodeAsErrorType() async throws {
        let missing = try await get("/no-such-file")
        XCTAssertEqual(missing.status.code, 404)
        _ = try await get("/small.txt")
        let port = String(try HTTPURL(base).port)
        let timer = try metrics.expectTimer("http.client.request.duration", [
            ("http.request.method", "GET"), ("http.response.status_code", "404"), ("error.type", "404"),
            ("server.address", "127.0.0.1"), ("server.port", port),
        ])
        XCTAssertEqual(timer.values.count, 1)
        let ok = try metrics.expectTimer("http.client.request.duration", [
            ("http.request.method", "GET"), ("http.response.status_code", "200"),
            ("server.address", "127.0.0.1"), ("server.port", port),
        ])
        XCTAssertEqual(ok.values.count, 1)
        XCTAssertEqual(metrics.timers(label: "http.client.request.duration").count, 2)
        XCTAssertEqual(metrics.counterTotal(label: "asynchttp.client.errors"), 0, "a response is not a failed request")
    }

    func testErrorsAreCountedByKind() async throws {
        let port = try unusedPort()
        let error = await assertThrowsHTTPError(.connectFailed) {
            try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(port)/"))
        }
        XCTAssertNotNil(error)
        XCTAssertEqual(metrics.counterTotal(label: "asynchttp.client.errors",
                                            dimensions: [("http.request.method", "GET"), ("error.type", "connectFailed")]), 1)
        XCTAssertEqual(metrics.timers(label: "http.client.request.duration").count, 1)
        XCTAssertEqual(metrics.counterTotal(label: "asynchttp.client.requests"), 0)
    }

    func testPoolGaugesShowIdleLeasedAndWaiting() async throws {
        client = makeClient { $0.maxConnectionsPerHost = 1 }
        let reporter = HTTPClientMetrics(factory: metrics)
        func gauge(_ label: String, _ dimensions: [(String, String)] = []) throws -> Double? {
            try metrics.expectGauge(label, dimensions).lastValue
        }

        _ = try await get("/small.txt")
        await reporter.recordPool(of: client)
        XCTAssertEqual(try gauge("http.client.open_connections", [("http.connection.state", "idle")]), 1)
        XCTAssertEqual(try gauge("http.client.open_connections", [("http.connection.state", "active")]), 0)
        XCTAssertEqual(try gauge("asynchttp.client.pool.open_connections"), 1)
        XCTAssertEqual(try gauge("asynchttp.client.pool.waiting_requests"), 0)

        // Hold one response's body unread: its connection is leased, and a second request must wait.
        let held = try await client.send(HTTPClientRequest(url: base + "/big.bin"))
        let client = self.client!
        let base = self.base
        let second = Task { try await client.send(HTTPClientRequest(url: base + "/small.txt")).body.collect(upTo: 4096) }
        let deadline = ContinuousClock.now + .seconds(10)
        while await client.poolStatistics().waitingRequests == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        await reporter.recordPool(of: client)
        XCTAssertEqual(try gauge("http.client.open_connections", [("http.connection.state", "active")]), 1)
        XCTAssertEqual(try gauge("http.client.open_connections", [("http.connection.state", "idle")]), 0)
        XCTAssertEqual(try gauge("asynchttp.client.pool.waiting_requests"), 1)

        _ = try await held.body.collect(upTo: 16 << 20)
        let small = try await second.value
        XCTAssertEqual(small.count, 1024)
        await reporter.recordPool(of: client)
        XCTAssertEqual(try gauge("asynchttp.client.pool.waiting_requests"), 0)
        XCTAssertEqual(try gauge("asynchttp.client.pool.open_connections"), 1)
    }

    func testReportPoolRecordsUntilCancelled() async throws {
        let reporter = HTTPClientMetrics(factory: metrics)
        let client = self.client!
        let task = Task { await reporter.reportPool(of: client, every: .milliseconds(10)) }
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? metrics.expectGauge("asynchttp.client.pool.open_connections")) == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        task.cancel()
        await task.value
        XCTAssertEqual(try metrics.expectGauge("asynchttp.client.pool.open_connections").lastValue, 0)
    }

    func testStatusClassAndMethodDimensions() {
        XCTAssertEqual(MetricsMiddleware.statusClass(204), "2xx")
        XCTAssertEqual(MetricsMiddleware.statusClass(503), "5xx")
        XCTAssertEqual(MetricsMiddleware.statusClass(999), "other")
        XCTAssertEqual(MethodDimension(.init("PURGE")!).value, "_OTHER")
        XCTAssertEqual(MethodDimension(.patch).value, "PATCH")
    }
}
