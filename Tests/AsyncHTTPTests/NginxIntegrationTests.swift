import Foundation
import XCTest
@testable import AsyncHTTP

/// Integration against a real nginx on loopback, started by ./scripts/test.sh
/// (keepalive_timeout 2s, static files, HTTPS with a generated certificate).
final class NginxIntegrationTests: XCTestCase {
    func testStaticFilesOverKeepAlive() async throws {
        let nginx = try Peers.nginx()
        let client = HTTPClient()
        let expected = try Array(Data(contentsOf: URL(fileURLWithPath: try Peers.directory() + "/www/big.bin")))
        for _ in 0..<3 {
            let small = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/small.txt"))
            let value1 = try await small.body.collect(upTo: 4096).count
            XCTAssertEqual(value1, 1024)
            let big = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/big.bin"))
            let value2 = try await big.body.collect(upTo: 16 << 20)
            XCTAssertEqual(value2, expected)
        }
        let missing = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/missing"))
        XCTAssertEqual(missing.status, .notFound)
        XCTAssertEqual(client.connectionsOpened, 1)
        await client.shutdown()
    }

    func testHTTPSWithTheGeneratedCertificate() async throws {
        let nginx = try Peers.nginx()
        var tls = TLSConfiguration()
        tls.trustRoots = .file(nginx.caFile)
        let client = HTTPClient(configuration: .init(tls: tls))
        for host in ["localhost", "127.0.0.1"] {
            let response = try await client.send(HTTPClientRequest(url: "https://\(host):\(nginx.httpsPort)/big.bin"))
            let value3 = try await response.body.collect(upTo: 16 << 20).count
            XCTAssertEqual(value3, 8 << 20)
        }
        await client.shutdown()
    }

    func testConnectionClosedByNginxKeepaliveTimeoutIsNotReusedOrIsRetried() async throws {
        let nginx = try Peers.nginx()
        let client = HTTPClient()
        let url = "http://127.0.0.1:\(nginx.httpPort)/small.txt"
        _ = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 4096)
        // nginx closes idle keep-alive connections after 2 s; ours are kept 60 s.
        try await Task.sleep(for: .milliseconds(2600))
        let response = try await client.send(HTTPClientRequest(url: url))
        let value4 = try await response.body.collect(upTo: 4096).count
        XCTAssertEqual(value4, 1024)
        XCTAssertEqual(client.connectionsOpened, 2, "the closed connection was detected and replaced")
        await client.shutdown()
    }

    func testConcurrentRequestsAgainstNginx() async throws {
        let nginx = try Peers.nginx()
        let client = HTTPClient()
        let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/small.txt")).body.collect(upTo: 4096).count
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        XCTAssertEqual(sizes, Array(repeating: 1024, count: 200))
        XCTAssertLessThanOrEqual(client.connectionsOpened, 8)
        await client.shutdown()
    }
}
