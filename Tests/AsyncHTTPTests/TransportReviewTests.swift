#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import XCTest

@testable import AsyncHTTP

/// The transport and pool review's findings, each against a real peer on 127.0.0.1 (the raw-socket ``FaultServer``):
/// a connection limit of `Int.max`, and timeout retries after the total deadline.
final class TransportReviewTests: XCTestCase {
    private static func configuration(_ configure: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.inactivityTimeout = .seconds(5) // bounded: no test can hang
        configuration.connectTimeout = .seconds(5)
        configuration.proxy = .none
        configure(&configuration)
        return configuration
    }

    // MARK: 1. maxConnectionsPerHost = .max

    func testAClientWithNoConnectionLimitGetsItsResponses() async throws {
        let server = try FaultServer(script: FaultScript { _, _ in [.response("ok")] })
        defer { server.stop() }
        let client = HTTPClient(configuration: Self.configuration { $0.maxConnectionsPerHost = .max })
        do {
            for _ in 0..<2 {  // the second reuses the first's connection
                let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
                XCTAssertEqual(response.status.code, 200)
                let body = try await response.body.collect(upTo: 100)
                XCTAssertEqual(String(decoding: body, as: UTF8.self), "ok")
            }
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
        XCTAssertEqual(server.connectionsAccepted, 1)
    }

    // MARK: 2. retriesOnTimeout and the total deadline

    func testATLSHandshakeStalledPastTheTotalDeadlineIsNotRetried() async throws {
        // Reads what it is sent as a request head: a ClientHello never ends one, so the handshake gets no answer.
        let server = try FaultServer(script: FaultScript { _, _ in [.response("ok")] })
        defer { server.stop() }
        let client = HTTPClient(configuration: Self.configuration())
        var request = HTTPClientRequest(url: "https://127.0.0.1:\(server.port)/")
        request.timeout = .milliseconds(300)
        request.retriesOnTimeout = 2
        let error = await assertThrows(.timeout) { _ = try await client.send(request) }
        XCTAssertEqual(error?.timeoutPhase, .tlsHandshake, "\(String(describing: error))")
        // A plain request after it: the listener accepts in order, so once it is answered every connection the
        // https request made has been counted.
        let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
        _ = try await response.body.collect(upTo: 100)
        await client.shutdown()
        XCTAssertEqual(server.connectionsAccepted, 2, "one https connection (no retry after the deadline), then the plain one")
    }
}
