import XCTest

@testable import AsyncHTTP

/// What a SOCKS proxy is asked to reach: a port set out of range after a `ConnectToOverride`'s init is a typed
/// error (it trapped writing its two bytes), and `socks5` (local resolution) honours `ipAddressFamily` as a direct
/// connection does. dante (`./scripts/test.sh`) reaches nginx on 127.0.0.1 only.
final class SOCKSTargetTests: XCTestCase {
    private func client(_ proxyURL: String, _ change: (inout HTTPClient.Configuration) -> Void) throws -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.inactivityTimeout = .seconds(5)
        configuration.connectTimeout = .seconds(5)
        configuration.proxy = .proxy(try ProxyConfiguration(url: proxyURL))
        change(&configuration)
        return HTTPClient(configuration: configuration)
    }

    func testATargetPortAboveTheRangeSetAfterInitIsAnInvalidRequest() async throws {
        let dante = try Peers.socks5()
        for url in [dante.url, dante.url.replacingOccurrences(of: "socks5://", with: "socks5h://"),
                    dante.url.replacingOccurrences(of: "socks5://", with: "socks4://")] {
            var rule = try ConnectToOverride("origin.invalid:80:127.0.0.1:8080")
            rule.targetPort = 70_000
            let client = try client(url) { $0.connectTo = [rule] }
            await assertThrows(.invalidRequest, containing: "70000", message: url) {
                _ = try await client.send(HTTPClientRequest(url: "http://origin.invalid/small.txt"))
            }
            await client.shutdown()
        }
    }

    func testSOCKS5LocalResolutionTakesTheAddressOfTheAllowedFamily() async throws {
        let dante = try Peers.socks5()
        let nginx = try Peers.nginx()
        // The IPv6 address first: without the filter it is the one sent, and dante reaches no ::1.
        let entry = try ResolveOverride("origin.invalid:\(nginx.httpPort):[::1],127.0.0.1")
        let client = try client(dante.url) {
            $0.resolve = [entry]
            $0.ipAddressFamily = .ipv4
        }
        do {
            let response = try await client.send(HTTPClientRequest(url: "http://origin.invalid:\(nginx.httpPort)/small.txt"))
            XCTAssertEqual(response.status, .ok)
            _ = try await response.body.collect(upTo: 1 << 20)
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
    }
}
