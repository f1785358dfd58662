import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// The framing rules of docs/framing.md, end to end: transfer codings under chunked decoded by the transport
/// (or refused by name), singleton `Location`, HTTP/1.x minor versions and status-code classes, from a
/// raw-socket server that sends exactly the bytes of each case.
final class FramingTrustTests: XCTestCase {
    var client: HTTPClient!

    override func setUp() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.inactivityTimeout = .seconds(5)  // bounded: no test can hang
        client = HTTPClient(configuration: configuration)
    }

    override func tearDown() async throws {
        await client?.shutdown()
    }

    /// `bytes` compressed with `coding` (zlib-wrapped for deflate, as RFC 9110 §8.4.1.2 defines it).
    static func compressed(_ bytes: [UInt8], _ coding: ContentCoding = .gzip) throws -> [UInt8] {
        let deflater = Deflater(encoding: coding)
        var output: [UInt8] = []
        try bytes.withUnsafeBytes { input in
            try deflater.compress(input) { output.append(contentsOf: $0) }
            try deflater.finish { output.append(contentsOf: $0) }
        }
        return output
    }

    /// `bytes` in chunked framing, `size` bytes a chunk, with the last chunk and an empty trailer section.
    static func chunked(_ bytes: [UInt8], size: Int) -> [UInt8] {
        var wire: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + size, bytes.count)
            wire += Array((String(end - offset, radix: 16) + "\r\n").utf8) + bytes[offset..<end] + Array("\r\n".utf8)
            offset = end
        }
        return wire + Array("0\r\n\r\n".utf8)
    }

    /// A response to every request on every connection, kept open (keep-alive).
    static func answering(_ response: [UInt8]) -> FaultScript {
        FaultScript { _, _ in [.send(response)] }
    }

    func get(_ server: FaultServer, _ path: String = "/") async throws -> HTTPClientResponse {
        try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)\(path)"))
    }

    // MARK: - Rule 1: transfer codings (RFC 9112 §6.1, §7)

    func testGzipAndDeflateTransferCodingsUnderChunkedAreDecodedAndTheConnectionIsReused() async throws {
        let text = Array(String(repeating: "AsyncHTTP transfer coding test line.\n", count: 500).utf8)
        for (name, coding) in [("gzip", ContentCoding.gzip), ("x-gzip", .gzip), ("deflate", .deflate)] {
            let body = Self.chunked(try Self.compressed(text, coding), size: 100)
            let head = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: \(name), chunked\r\n\r\n".utf8)
            let server = try FaultServer(script: Self.answering(head + body))
            defer { server.stop() }
            for _ in 0..<2 {
                let response = try await get(server)
                let received = try await response.body.collect(upTo: 1 << 20)
                XCTAssertEqual(received.count, text.count, name)
                XCTAssertEqual(received, text, name)
            }
            XCTAssertEqual(server.connectionsAccepted, 1, "\(name): chunked framing proves the end, the connection is reused")
        }
    }

    func testTransferCodingOnABodyThatArrivesWithTheHeadIsDecodedToo() async throws {
        let body = Self.chunked(try Self.compressed(Array("small".utf8)), size: 1000)
        let server = try FaultServer(script: Self.answering(
            Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".utf8) + body))
        defer { server.stop() }
        let received = try await get(server).body.collect(upTo: 100)
        XCTAssertEqual(received, Array("small".utf8))
    }

    func testCorruptOrTruncatedTransferCodedBodyFails() async throws {
        var corrupt = try Self.compressed(Array(String(repeating: "x", count: 1000).utf8))
        corrupt[12] ^= 0xFF
        corrupt[13] ^= 0xFF
        let truncated = Array(try Self.compressed(Array(String(repeating: "y", count: 1000).utf8)).dropLast(4))
        for (bytes, fragment) in [(corrupt, "corrupt"), (truncated, "truncated")] {
            let server = try FaultServer(script: Self.answering(
                Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".utf8) + Self.chunked(bytes, size: 64)))
            defer { server.stop() }
            await assertThrows(.decompressionFailed, containing: fragment) {
                _ = try await self.get(server).body.collect(upTo: 1 << 20)
            }
        }
    }

    func testTransferCodedDecompressionBombIsRefusedWithTheCompressionLimits() async throws {
        // 8 MiB of zeros gzip to about 8 KiB: a ratio of about 1000, over the default limit of 200.
        let bomb = try Self.compressed([UInt8](repeating: 0, count: 8 << 20))
        let server = try FaultServer(script: Self.answering(
            Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".utf8) + Self.chunked(bomb, size: 4096)))
        defer { server.stop() }
        await assertThrows(.bodyLimitExceeded, containing: "decompression bomb") {
            _ = try await self.get(server).body.collect(upTo: 64 << 20)
        }
    }

    func testUnknownOrNonFinalTransferCodingIsAMalformedResponseNamingIt() async throws {
        let cases = [
            ("br, chunked", "unsupported transfer coding 'br'"),
            ("compress, chunked", "unsupported transfer coding 'compress'"),
            ("gzip", "Transfer-Encoding 'gzip' does not end in chunked"),
            ("chunked, gzip", "Transfer-Encoding 'chunked, gzip' does not end in chunked"),
        ]
        for (codings, fragment) in cases {
            let server = try FaultServer(script: Self.answering(
                Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: \(codings)\r\n\r\n3\r\nabc\r\n0\r\n\r\n".utf8)))
            defer { server.stop() }
            await assertThrows(.malformedResponse, containing: fragment) {
                _ = try await self.get(server).body.collect(upTo: 1000)
            }
        }
    }

    // MARK: - Rule 2: a field that must appear once (RFC 9110 §5.3, §10.2.2)

    func testTwoDifferentLocationFieldsAreAMalformedResponseNotAJoinedURL() async throws {
        let server = try FaultServer(script: FaultScript { _, request in
            request == 0
                ? [.response("moved", status: "302 Found", headers: ["Location: /first", "Location: /second"])]
                : [.response("final")]
        })
        defer { server.stop() }
        let error = await assertThrows(.malformedResponse, containing: "Location") {
            _ = try await self.get(server)
        }
        XCTAssertTrue(error?.message.contains("/first") == true && error?.message.contains("/second") == true, "\(String(describing: error))")
        XCTAssertFalse(server.requestHeads.contains { $0.contains("first,") }, "the joined value was requested")
    }

    func testRepeatedIdenticalLocationIsFollowed() async throws {
        let peer = ScriptedPeer([
            .init(HTTPResponse.Status(code: 302), headers: [.location: "/next", .location: "/next"], body: []), .init(.ok),
        ])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: [RedirectMiddleware()])
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(peer.requests.map(\.url), ["http://a.test/", "http://a.test/next"])
    }

    func testDifferentLocationsAreRefusedWithoutARequestAndReturnedWhenRedirectsAreOff() async throws {
        let twice: HTTPFields = [.location: "/a", .location: "/b"]
        let peer = ScriptedPeer([.init(HTTPResponse.Status(code: 301), headers: twice, body: []), .init(.ok)])
        await assertThrowsHTTPError(.malformedResponse) {
            try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: [RedirectMiddleware()])
        }
        XCTAssertEqual(peer.requests.count, 1)
        // Not following redirects, the caller gets the response with both fields, as received.
        let off = ScriptedPeer([.init(HTTPResponse.Status(code: 301), headers: twice, body: [])])
        let response = try await off.send(
            HTTPClientRequest(url: "http://a.test/"), through: [RedirectMiddleware(policy: RedirectPolicy(followsRedirects: false))])
        XCTAssertEqual(response.headers[values: .location], ["/a", "/b"])
    }

    // MARK: - Rule 3: versions and status codes (RFC 9110 §2.5, §15)

    func testHTTP12ResponseIsHandledAsHTTP11() async throws {
        let server = try FaultServer(script: Self.answering(Array("HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)))
        defer { server.stop() }
        for _ in 0..<2 {
            let response = try await get(server)
            XCTAssertEqual(response.version, .http1_1)
            let received = try await response.body.collect(upTo: 100)
            XCTAssertEqual(received, Array("ok".utf8))
        }
        XCTAssertEqual(server.connectionsAccepted, 1, "persistent by default, as HTTP/1.1")
    }

    func testStatusCodeWithoutAClassIsAMalformedResponse() async throws {
        let server = try FaultServer(script: Self.answering(Array("HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n".utf8)))
        defer { server.stop() }
        await assertThrows(.malformedResponse, containing: "invalid status code 600") {
            _ = try await self.get(server)
        }
    }
}
