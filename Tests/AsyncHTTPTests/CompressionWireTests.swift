import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// Content codings against a raw-socket peer (``FaultServer``): a content coding under a transfer coding, and the
/// coded bodies of redirects and challenges, which are drained as they came rather than inflated.
final class CompressionWireTests: XCTestCase {
    func makeClient(_ change: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        change(&configuration)
        return HTTPClient(configuration: configuration)
    }

    /// About `count` bytes of text that gzip about 20:1.
    func text(_ count: Int) -> [UInt8] {
        var text = ""
        var line = 0
        while text.utf8.count < count {
            text += "line \(line % 97) of the page, \(line % 13) times\n"
            line += 1
        }
        return Array(text.utf8)
    }

    static func response(status: String, headers: [String], body: [UInt8]) -> FaultAction {
        let head = "HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n"
        return .send(Array(head.utf8) + body)
    }

    /// `Transfer-Encoding: gzip, chunked` with `Content-Encoding: gzip`: each inflater checks its 200:1 ratio against
    /// its own input, so decoding both would allow 200 × 200 against the wire. The connection undoes the transfer
    /// coding; the content coding is left, labelled, and `text()` (bounded by its `maxBytes`) still reads it. The old
    /// code inflated both (the Content-Encoding assertion fails on it).
    func testAContentCodingUnderATransferCodingIsLeftCodedAndTextStillReadsIt() async throws {
        let plain = text(50_000)
        let contentCoded = try gzipped(plain)
        let wire = try gzipped(contentCoded)
        var chunked: [UInt8] = []
        for start in stride(from: 0, to: wire.count, by: 1000) {
            let chunk = wire[start..<min(start + 1000, wire.count)]
            chunked += Array((String(chunk.count, radix: 16) + "\r\n").utf8) + chunk + Array("\r\n".utf8)
        }
        chunked += Array("0\r\n\r\n".utf8)
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Encoding: gzip\r\nContent-Type: text/plain\r\n\r\n"
        let reply = Array(head.utf8) + chunked
        let server = try FaultServer(script: FaultScript { _, _ in [.send(reply)] })
        defer { server.stop() }
        let client = makeClient()
        let url = "http://127.0.0.1:\(server.port)/"

        let response = try await client.send(HTTPClientRequest(url: url))
        XCTAssertEqual(response.headers[.contentEncoding], "gzip", "left coded, and labelled so")
        XCTAssertTrue(response.isCompressed)
        let body = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body, contentCoded, "the transfer coding undone, the content coding not")

        let again = try await client.send(HTTPClientRequest(url: url))
        let decoded = try await again.text(upTo: 1 << 20)
        XCTAssertEqual(decoded, String(decoding: plain, as: UTF8.self))
    }

    /// A gzipped redirect page that inflates past the 64 KiB drain limit: drained as it came (about 10 KB), so the
    /// connection carries the next hop. The old code inflated it, stopped at 64 KiB decoded and dropped the rest,
    /// and the next hop went out on a second connection.
    func testAGzippedRedirectBodyIsDrainedUninflatedAndItsConnectionReused() async throws {
        let page = try gzipped(text(200_000))
        XCTAssertLessThan(page.count, 32 * 1024)
        let redirect = Self.response(status: "302 Found", headers: ["Location: /next", "Content-Encoding: gzip"], body: page)
        let done = Self.response(status: "200 OK", headers: [], body: Array("done".utf8))
        let server = try FaultServer(script: FaultScript { _, request in request == 0 ? [redirect] : [done] })
        defer { server.stop() }
        let client = makeClient()
        let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/start"))
        XCTAssertEqual(response.status, .ok)
        let body = try await response.body.collect(upTo: 100)
        XCTAssertEqual(body, Array("done".utf8))
        XCTAssertEqual(server.connectionsAccepted, 1, "the redirect's connection carried the next hop")
        XCTAssertEqual(client.connectionsOpened, 1)
    }

    /// The same for a challenge's body: the retry goes out on the connection that brought the 401 (as NTLM needs).
    func testAGzippedChallengeBodyIsDrainedUninflatedAndItsConnectionReused() async throws {
        let page = try gzipped(text(200_000))
        let challenge = Self.response(status: "401 Unauthorized",
                                      headers: [#"WWW-Authenticate: Basic realm="r""#, "Content-Encoding: gzip"], body: page)
        let accepted = Self.response(status: "200 OK", headers: [], body: Array("in".utf8))
        let server = try FaultServer(script: FaultScript { _, request in request == 0 ? [challenge] : [accepted] })
        defer { server.stop() }
        let client = makeClient { $0.authentication.allowsBasicOverPlainHTTP = true }
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/private")
        request.credentials = HTTPCredentials(username: "alice", password: "wonder")
        let response = try await client.send(request)
        XCTAssertEqual(response.status, .ok)
        _ = try await response.body.collect(upTo: 100)
        XCTAssertEqual(server.connectionsAccepted, 1, "the challenge's connection carried the answer")
        XCTAssertEqual(server.requestHeads.count, 2)
    }
}
