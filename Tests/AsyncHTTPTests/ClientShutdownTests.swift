import XCTest

@testable import AsyncHTTP

/// `shutdown()` as the documentation promises it: it cannot fail (so it does not throw), calling it again is
/// harmless, and a client that was shut down refuses requests with `.shutdown` before touching the network.
final class ClientShutdownTests: XCTestCase {
    func testShutdownTwiceIsHarmlessAndLaterRequestsAreRefused() async {
        let client = HTTPClient()
        await client.shutdown()
        await client.shutdown()
        do {
            // Port 1 on loopback: if the client tried the network it would fail with .connectFailed instead.
            _ = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:1/"))
            XCTFail("a shut-down client sent a request")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .shutdown)
        } catch {
            XCTFail("unexpected error \(error)")
        }
    }

    func testSharedClientIgnoresShutdown() async throws {
        await HTTPClient.shared.shutdown()
        // Still usable: the request fails on the network (nothing listens on port 1), not with .shutdown.
        do {
            _ = try await HTTPClient.shared.send(HTTPClientRequest(url: "http://127.0.0.1:1/"))
            XCTFail("nothing listens on 127.0.0.1:1")
        } catch let error as HTTPClientError {
            XCTAssertNotEqual(error.code, .shutdown)
        }
    }
}
