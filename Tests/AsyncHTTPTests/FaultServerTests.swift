import XCTest
@testable import AsyncHTTP

/// What no proper server does, from a raw-socket server: every case ends in a typed error or a correct
/// recovery, never a hang, a crash or a short body presented as complete.
final class FaultServerTests: XCTestCase {
    var client: HTTPClient!

    override func setUp() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.inactivityTimeout = .seconds(5) // bounded: no test can hang
        client = HTTPClient(configuration: configuration)
    }

    override func tearDown() async throws {
        await client?.shutdown()
    }

    func withServer(_ script: FaultScript, _ body: (FaultServer) async throws -> Void) async throws {
        let server = try FaultServer(script: script)
        defer { server.stop() }
        try await body(server)
    }

    func testCloseAfterTheHeadIsConnectionClosedNotAShortBody() async throws {
        try await withServer(.closeAfterHead) { server in
            let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
            XCTAssertEqual(response.status, .ok)
            let error = await assertThrows(.connectionClosed, containing: "0 of 100") {
                _ = try await response.body.collect(upTo: 1000)
            }
            XCTAssertNotNil(error?.bytesReceived)
        }
    }

    func testCloseMidBodyIsConnectionClosed() async throws {
        try await withServer(.closeMidBody) { server in
            let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
            await assertThrows(.connectionClosed) { _ = try await response.body.collect(upTo: 1 << 20) }
        }
    }

    func testTruncatedChunkedBodyIsConnectionClosed() async throws {
        try await withServer(.truncatedChunkedBody) { server in
            let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
            await assertThrows(.connectionClosed) { _ = try await response.body.collect(upTo: 1 << 20) }
        }
    }

    func testGarbageStatusLineIsMalformedResponse() async throws {
        try await withServer(.garbageStatusLine) { server in
            await assertThrows(.malformedResponse) {
                _ = try await self.client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
            }
        }
    }

    func testSlowDripWithinTheInactivityTimeoutSucceeds() async throws {
        try await withServer(.slowDrip(everyMs: 2)) { server in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")
            request.inactivityTimeout = .milliseconds(500)
            let response = try await client.send(request)
            let value1 = try await response.body.collect(upTo: 100)
            XCTAssertEqual(value1, Array("hello".utf8))
        }
    }

    func testSlowDripPastTheTotalDeadlineTimesOut() async throws {
        try await withServer(.slowDrip(everyMs: 100)) { server in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")
            request.timeout = .milliseconds(300)
            let error = await assertThrows(.timeout) {
                _ = try await self.client.send(request).body.collect(upTo: 100)
            }
            XCTAssertEqual(error?.timeoutPhase, .total)
        }
    }

    func testServerThatNeverRespondsHitsTheHeadTimeout() async throws {
        try await withServer(.neverResponds) { server in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")
            request.inactivityTimeout = .milliseconds(200)
            let error = await assertThrows(.timeout) { _ = try await self.client.send(request) }
            XCTAssertEqual(error?.timeoutPhase, .head)
        }
    }

    func testServerThatNeverReadsHitsTheWriteTimeout() async throws {
        try await withServer(.neverReads) { server in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")
            request.method = .post
            request.body = .bytes([UInt8](repeating: 7, count: 64 << 20)) // far more than the socket buffers hold
            request.inactivityTimeout = .milliseconds(300)
            let error = await assertThrows(.timeout) { _ = try await self.client.send(request) }
            XCTAssertEqual(error?.timeoutPhase, .write)
        }
    }

    func testStaleKeepAliveConnectionIsRetriedOnceForGET() async throws {
        try await withServer(.staleKeepAlive) { server in
            let url = "http://127.0.0.1:\(server.port)/"
            let first = try await client.send(HTTPClientRequest(url: url))
            let value2 = try await first.body.collect(upTo: 100)
            XCTAssertEqual(value2, Array("hello".utf8))
            // The server reads this request on the reused connection and closes without answering.
            let second = try await client.send(HTTPClientRequest(url: url))
            let value3 = try await second.body.collect(upTo: 100)
            XCTAssertEqual(value3, Array("hello".utf8))
            XCTAssertEqual(server.connectionsAccepted, 2, "retried once, on a new connection")
            XCTAssertEqual(server.requestsReceived, 3)
        }
    }

    func testPOSTWhoseBytesWentOutIsNeverSentTwice() async throws {
        try await withServer(.staleKeepAlive) { server in
            let url = "http://127.0.0.1:\(server.port)/"
            _ = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            var post = HTTPClientRequest(url: url)
            post.method = .post
            post.body = .bytes(Array("order=1".utf8))
            await assertThrows(.connectionClosed) { _ = try await self.client.send(post) }
            XCTAssertEqual(server.connectionsAccepted, 1, "no second connection: the POST was not repeated")
            XCTAssertEqual(server.requestsReceived, 2)
        }
    }
}
