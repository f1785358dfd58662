import XCTest

@testable import AsyncHTTP

/// A request cancelled between its lease and its write sends nothing, and the connection goes back to the pool.
/// The cancellation comes from an observer of `connectionAcquired`, which runs on the request's task right after
/// the lease: deterministic, where a cancel from outside would race the write.
final class CancelledLeaseTests: XCTestCase {
    final class CancelOnAcquire: HTTPClientObserver, Sendable {
        func observe(_ event: HTTPClientEvent) {
            if case .connectionAcquired = event.kind { withUnsafeCurrentTask { $0?.cancel() } }
        }
    }

    func testARequestCancelledAfterItsLeaseWritesNothingAndTheConnectionIsKept() async throws {
        let server = try FaultServer(script: FaultScript { _, _ in [.response("ok")] })
        defer { server.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.inactivityTimeout = .seconds(5)
        configuration.proxy = .none
        configuration.observers = [CancelOnAcquire()]
        let client = HTTPClient(configuration: configuration)
        let url = "http://127.0.0.1:\(server.port)/"
        let task = Task { try await client.send(HTTPClientRequest(url: url)) }
        await assertThrows(.cancelled) { _ = try await task.value }
        let statistics = await client.poolStatistics()
        XCTAssertEqual(statistics.idleConnections, 1, "the connection went back to the pool")
        XCTAssertEqual(statistics.leasedConnections, 0)
        await client.shutdown()
        // The server accepted the connection; a request would have been read (and answered) by now only if written.
        XCTAssertEqual(server.requestsReceived, 0, "\(server.requestHeads)")
    }
}
