import XCTest

@testable import AsyncHTTP

/// A proxy's `Proxy-Connection` counts as `Connection` does (curl): an HTTP/1.0 proxy's `407` with
/// `Proxy-Connection: keep-alive` keeps the connection for the next `CONNECT`, and an HTTP/1.1 one's with only
/// `Proxy-Connection: close` does not. The proxy is the raw-socket ``FaultServer``; after the `200` the tunnel
/// leads back to it, and it answers the tunnelled request too.
final class ProxyConnectionHeaderTests: XCTestCase {
    private static let established = "HTTP/1.1 200 Connection established\r\n\r\n"

    private func client(proxyPort: Int) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.inactivityTimeout = .seconds(5)  // bounded
        configuration.connectTimeout = .seconds(5)
        var proxy = ProxyConfiguration(kind: .http, host: "127.0.0.1", port: proxyPort,
                                       credentials: HTTPCredentials(username: "user", password: "secret"))
        proxy.alwaysTunnel = true
        configuration.proxy = .proxy(proxy)
        return HTTPClient(configuration: configuration)
    }

    private func fetch(_ client: HTTPClient, port: Int) async throws -> String {
        do {
            let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(port)/"))
            XCTAssertEqual(response.status.code, 200)
            let body = try await response.body.collect(upTo: 100)
            await client.shutdown()
            return String(decoding: body, as: UTF8.self)
        } catch {
            await client.shutdown()
            throw error
        }
    }

    func testAnHTTP10ProxysKeepAlive407KeepsTheConnectionForTheNextCONNECT() async throws {
        let challenge = "HTTP/1.0 407 Proxy Authentication Required\r\nProxy-Connection: keep-alive\r\nContent-Length: 0\r\n"
            + "Proxy-Authenticate: Basic realm=\"proxy\"\r\n\r\n"
        let server = try FaultServer(script: FaultScript { connection, request in
            guard connection == 0 else { return [.close] }
            switch request {
            case 0: return [.send(challenge)]
            case 1: return [.send(Self.established)]
            default: return [.response("ok")]
            }
        })
        defer { server.stop() }
        let body = try await fetch(client(proxyPort: server.port), port: server.port)
        XCTAssertEqual(body, "ok")
        XCTAssertEqual(server.connectionsAccepted, 1, "the answer to the 407 went out on its connection")
        XCTAssertTrue(server.requestHeads.dropFirst().first?.contains("Proxy-Authorization: Basic") == true,
                      "\(server.requestHeads)")
    }

    func testAnHTTP11ProxysProxyConnectionClose407IsAnsweredOnANewConnection() async throws {
        let challenge = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Connection: close\r\nContent-Length: 0\r\n"
            + "Proxy-Authenticate: Basic realm=\"proxy\"\r\n\r\n"
        let server = try FaultServer(script: FaultScript { connection, request in
            if connection == 0 { return [.send(challenge), .close] }
            return request == 0 ? [.send(Self.established)] : [.response("ok")]
        })
        defer { server.stop() }
        let body = try await fetch(client(proxyPort: server.port), port: server.port)
        XCTAssertEqual(body, "ok")
        XCTAssertEqual(server.connectionsAccepted, 2)
    }
}
