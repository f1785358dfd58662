import XCTest
@testable import AsyncHTTP

/// `Configuration.userAgent` goes into every head the client writes, a proxy's `CONNECT` too, which is built
/// apart from the request encoder: a CR, LF or NUL in it is refused when the client is made, before any head.
final class UserAgentConfigurationTests: XCTestCase {
    func testALineBreakOrNULInTheUserAgentIsAnInvalidConfiguration() {
        for (agent, what) in [("ok\r\nX-Injected: 1", "a carriage return"), ("ok\nX-Injected: 1", "a line feed"),
                              ("ok\u{0}", "a NUL byte")] {
            var configuration = HTTPClient.Configuration()
            configuration.userAgent = agent
            XCTAssertThrowsError(try configuration.validate(), agent.debugDescription) { error in
                let error = error as? HTTPClientError
                XCTAssertEqual(error?.code, .invalidConfiguration)
                XCTAssertTrue(error?.message.contains("userAgent contains \(what)") ?? false, "\(String(describing: error))")
                XCTAssertFalse(error?.message.contains("X-Injected") ?? true, "the value is not repeated")
            }
        }
        var fine = HTTPClient.Configuration()
        fine.userAgent = "AsyncHTTP/1 (Linux; +https://example.test/bot) ünïcode"
        XCTAssertNoThrow(try fine.validate())
        fine.userAgent = nil
        XCTAssertNoThrow(try fine.validate())
    }

    /// Through a CONNECT proxy (the raw-socket server stands in for one): nothing reaches it, where the tunnel's
    /// head used to carry the injected line.
    func testABadUserAgentSendsNoCONNECT() async throws {
        let server = try FaultServer(script: FaultScript { _, _ in [.send("HTTP/1.1 200 Connection established\r\n\r\n"), .hold] })
        defer { server.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.userAgent = "agent\r\nX-Injected: 1"
        configuration.proxy = .proxy(try ProxyConfiguration(url: "http://127.0.0.1:\(server.port)"))
        configuration.inactivityTimeout = .seconds(5)
        let client = HTTPClient(configuration: configuration)
        do {
            _ = try await client.send(HTTPClientRequest(url: "https://origin.test/"))
            XCTFail("a request went out with a CR LF in the User-Agent")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidConfiguration, "\(error)")
        }
        await client.shutdown()
        XCTAssertEqual(server.connectionsAccepted, 0)
    }
}
