import Foundation
import HTTPTypes
import Synchronization
import XCTest

@testable import AsyncHTTP

/// Redirects, cookies, compression and text decoding through the default client, against real peers:
/// httpbin and nginx (started by `./scripts/test.sh`) and the raw-socket fault server.
final class MiddlewareIntegrationTests: XCTestCase {
    var client: HTTPClient!

    override func setUp() async throws {
        client = HTTPClient()
    }

    override func tearDown() async throws {
        await client?.shutdown()
    }

    func httpbin(_ path: String) throws -> String { try Peers.httpbin() + path }

    func get(_ url: String) async throws -> (HTTPClientResponse, [UInt8]) {
        let response = try await client.send(HTTPClientRequest(url: url))
        return (response, try await response.body.collect(upTo: 16 << 20))
    }

    func json(_ bytes: [UInt8]) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(bytes))
        return try XCTUnwrap(object as? [String: Any], "not a JSON object: \(String(decoding: bytes, as: UTF8.self))")
    }

    // MARK: httpbin: redirects

    func testRedirectNFollowsEveryHopToGet() async throws {
        let (response, body) = try await get(httpbin("/redirect/4"))
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.url.path, "/get")
        XCTAssertEqual(response.originalURL.path, "/redirect/4")
        XCTAssertEqual(response.history.map(\.url.path), ["/redirect/4", "/relative-redirect/3", "/relative-redirect/2", "/relative-redirect/1"])
        XCTAssertEqual(try json(body)["url"] as? String, response.url.description)
    }

    func testRelativeAndAbsoluteRedirectsAreResolved() async throws {
        for kind in ["relative", "absolute"] {
            let (response, _) = try await get(httpbin("/\(kind)-redirect/3"))
            XCTAssertEqual(response.status, .ok, kind)
            XCTAssertEqual(response.url.description, try httpbin("/get"), kind)
            XCTAssertEqual(response.history.count, 3, kind)
        }
    }

    func testTenRedirectsAreFollowedAndElevenAreTooMany() async throws {
        let (ten, _) = try await get(httpbin("/redirect/10"))
        XCTAssertEqual(ten.history.count, 10)
        await assertThrowsHTTPError(.tooManyRedirects) { try await self.get(self.httpbin("/redirect/11")) }
    }

    func testRedirectToEachStatusWithAPostBody() async throws {
        for code in [301, 302, 303, 307, 308] {
            var request = HTTPClientRequest(url: try httpbin("/redirect-to?url=/anything&status_code=\(code)"))
            request.method = .post
            request.headers[.contentType] = "application/x-www-form-urlencoded"
            request.body = .bytes(Array("x=1".utf8))
            let response = try await client.send(request)
            let echo = try json(try await response.body.collect(upTo: 1 << 20))
            XCTAssertEqual(response.history.first?.status.code, code)
            if code >= 307 {
                XCTAssertEqual(echo["method"] as? String, "POST", "\(code) keeps the method")
                XCTAssertEqual(echo["form"] as? [String: String], ["x": "1"], "\(code) keeps the body")
            } else {
                XCTAssertEqual(echo["method"] as? String, "GET", "\(code) switches to GET")
                XCTAssertEqual(echo["form"] as? [String: String], [:])
                let headers = try XCTUnwrap(echo["headers"] as? [String: String])
                XCTAssertNil(headers["Content-Type"], "\(code): the body's headers went with it")
            }
        }
    }

    func testRedirectNotFollowedWhenTurnedOffPerRequest() async throws {
        var request = HTTPClientRequest(url: try httpbin("/redirect/1"))
        request.redirectPolicy = .disabled
        let response = try await client.send(request)
        XCTAssertEqual(response.status.code, 302)
        XCTAssertEqual(response.headers[.location], "/get")
    }

    func testAuthorizationGoesToTheSameOriginButNotToAnother() async throws {
        // 127.0.0.1 and localhost are the same server but different origins.
        let base = try Peers.httpbin()
        let port = try XCTUnwrap(HTTPURL(base).port)
        for (target, kept) in [("/headers", true), ("http://localhost:\(port)/headers", false)] {
            var request = HTTPClientRequest(url: base + "/redirect-to?url=" + target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
            request.headers[.authorization] = "Bearer secret"
            let response = try await client.send(request)
            let echo = try json(try await response.body.collect(upTo: 1 << 20))
            let headers = try XCTUnwrap(echo["headers"] as? [String: String])
            XCTAssertEqual(headers["Authorization"], kept ? "Bearer secret" : nil, target)
        }
    }

    // MARK: httpbin: cookies

    func testCookiesSetOnA302AreSentOnTheNextHopAndDeleted() async throws {
        let (set, setBody) = try await get(httpbin("/cookies/set?a=1&b=2"))
        XCTAssertEqual(set.url.path, "/cookies", "followed the 302 that set them")
        XCTAssertEqual(try json(setBody)["cookies"] as? [String: String], ["a": "1", "b": "2"])

        let (_, deletedBody) = try await get(httpbin("/cookies/delete?a"))
        XCTAssertEqual(try json(deletedBody)["cookies"] as? [String: String], ["b": "2"])
    }

    func testRequestWithTheJarOffSendsOnlyItsOwnCookies() async throws {
        _ = try await get(httpbin("/cookies/set?a=1"))
        var request = HTTPClientRequest(url: try httpbin("/cookies"))
        request.usesCookieJar = false
        request.headers[.cookie] = "mine=2"
        let response = try await client.send(request)
        let echo = try json(try await response.body.collect(upTo: 1 << 20))
        XCTAssertEqual(echo["cookies"] as? [String: String], ["mine": "2"])
    }

    func testSetCookieFromResponseHeadersIsStored() async throws {
        let (response, _) = try await get(httpbin("/response-headers?Set-Cookie=rh%3D1%3B%20Path%3D%2F&X-Extra=yes"))
        XCTAssertEqual(response.headers[HTTPField.Name("X-Extra")!], "yes")
        let (_, body) = try await get(httpbin("/cookies"))
        XCTAssertEqual(try json(body)["cookies"] as? [String: String], ["rh": "1"])
    }

    func testClientWithoutAJarSendsNoCookies() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.cookieJar = nil
        let jarless = HTTPClient(configuration: configuration)
        let response = try await jarless.send(HTTPClientRequest(url: try httpbin("/cookies/set?a=1")))
        let echo = try json(try await response.body.collect(upTo: 1 << 20))
        XCTAssertEqual(echo["cookies"] as? [String: String], [:])
        await jarless.shutdown()
    }

    // MARK: httpbin: compression and text

    func testGzipAndDeflateResponsesAreDecoded() async throws {
        for (path, flag) in [("/gzip", "gzipped"), ("/deflate", "deflated")] {
            let (response, body) = try await get(httpbin(path))
            XCTAssertTrue(response.isCompressed, path)
            XCTAssertNil(response.headers[.contentEncoding], path)
            XCTAssertNil(response.headers[.contentLength], path)
            let echo = try json(body)
            XCTAssertEqual(echo[flag] as? Bool, true, path)
            let headers = try XCTUnwrap(echo["headers"] as? [String: String])
            XCTAssertEqual(headers["Accept-Encoding"], "gzip, deflate")
        }
    }

    func testGzipRawBytesAreKeptWhenAsked() async throws {
        var request = HTTPClientRequest(url: try httpbin("/gzip"))
        request.keepsRawCompressedBody = true
        let response = try await client.send(request)
        let body = try await response.body.collect(upTo: 1 << 20)
        let raw = try XCTUnwrap(response.rawCompressedBody)
        XCTAssertEqual(Array(raw.prefix(2)), [0x1F, 0x8B], "a gzip member")
        XCTAssertEqual(try Inflater.decompress(raw, encoding: .gzip), body)
    }

    func testEncodingUTF8PageDecodesToText() async throws {
        let response = try await client.send(HTTPClientRequest(url: try httpbin("/encoding/utf8")))
        let text = try await response.text(upTo: 1 << 20)
        XCTAssertTrue(text.contains("Markus Kuhn [ˈmaʳkʊs kuːn]"), String(text.prefix(300)))
        XCTAssertTrue(text.contains("∮ E⋅da = Q"))
    }

    func testDeclaredCharsetFromResponseHeadersDecidesTheText() async throws {
        // httpbin answers with an ASCII JSON body whatever Content-Type it is told to add (it sends its own
        // application/json too; the fields join into one value that still declares the charset). Decoded as
        // the declared UTF-16LE, ASCII pairs become other characters: proof the header decided.
        let url = try httpbin("/response-headers?Content-Type=text%2Fplain%3B%20charset%3Dutf-16le")
        let response = try await client.send(HTTPClientRequest(url: url))
        let text = try await response.text(upTo: 1 << 20)
        XCTAssertFalse(text.contains("Content-Type"), "decoded as UTF-16LE, not as ASCII")
        let latin = try await client.send(HTTPClientRequest(url: try httpbin("/response-headers?Content-Type=text%2Fplain%3B%20charset%3Dus-ascii")))
        let ascii = try await latin.text(upTo: 1 << 20)
        XCTAssertTrue(ascii.contains("\"Content-Type\""))
    }

    // MARK: nginx: gzip of a large file

    /// A deterministic 4 MiB text file in nginx's root (gzip is on for text/plain there).
    func largeTextFile() throws -> (name: String, bytes: [UInt8]) {
        var text = ""
        for line in 0..<65_536 { text += "line \(line): AsyncHTTP streams gzip from nginx \(line * 2_654_435_761 % 9973)\n" }
        let bytes = Array(text.utf8)
        let path = try Peers.directory() + "/www/middleware-large.txt"
        if (try? Data(contentsOf: URL(fileURLWithPath: path))) != Data(bytes) {
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        }
        return ("middleware-large.txt", bytes)
    }

    func testNginxGzipsALargeFileAndItInflatesAsItStreams() async throws {
        let file = try largeTextFile()
        let port = try Peers.nginx().httpPort
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/\(file.name)")
        request.keepsRawCompressedBody = true
        let response = try await client.send(request)
        XCTAssertTrue(response.isCompressed, "nginx compressed it")
        var chunks = 0
        var body: [UInt8] = []
        for try await chunk in response.body {
            chunks += 1
            body += chunk
        }
        XCTAssertEqual(body.count, file.bytes.count)
        XCTAssertTrue(body == file.bytes)
        XCTAssertGreaterThan(chunks, 10, "decoded piece by piece, not at the end")
        let raw = try XCTUnwrap(response.rawCompressedBody)
        XCTAssertLessThan(raw.count, file.bytes.count / 3)
    }

    func testNginxLargeFileWithoutCompressionComesAsIs() async throws {
        let file = try largeTextFile()
        let port = try Peers.nginx().httpPort
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/\(file.name)")
        request.acceptsCompressedResponse = false
        let response = try await client.send(request)
        XCTAssertFalse(response.isCompressed)
        XCTAssertEqual(response.headers[.contentLength], String(file.bytes.count))
        let body = try await response.body.collect(upTo: 16 << 20)
        XCTAssertTrue(body == file.bytes)
    }

    // MARK: Fault server

    /// Text that gzip cannot shrink to nothing (about 2.5:1), so a prefix of its encoding is really a prefix.
    func noisyText(lines: Int) -> [UInt8] {
        Array((0..<lines).map { "\($0): \($0 &* 2_654_435_761 % 1_000_003)\n" }.joined().utf8)
    }

    func gzipResponse(_ body: [UInt8]) -> FaultAction {
        .send(Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
    }

    func testCorruptGzipFromTheServerFailsWithDecompressionFailed() async throws {
        var body = try gzipped(noisyText(lines: 2000))
        for index in 12..<40 { body[index] ^= 0xFF }
        let server = try FaultServer(script: FaultScript([[gzipResponse(body)]]))
        defer { server.stop() }
        let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
        await assertThrowsHTTPError(.decompressionFailed) { try await response.body.collect(upTo: 1 << 20) }
    }

    func testTruncatedGzipWithCompleteFramingFailsInsteadOfEndingShort() async throws {
        let whole = try gzipped(noisyText(lines: 5000))
        let server = try FaultServer(script: FaultScript([[gzipResponse(Array(whole.prefix(whole.count / 2)))]]))
        defer { server.stop() }
        let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
        let error = await assertThrowsHTTPError(.decompressionFailed) { try await response.body.collect(upTo: 1 << 20) }
        XCTAssertTrue(error?.message.contains("truncated") ?? false, error?.message ?? "")
    }

    func testGzipBodyCutByTheConnectionClosingIsAnError() async throws {
        let whole = try gzipped(noisyText(lines: 5000))
        let head = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(whole.count)\r\n\r\n"
        let server = try FaultServer(script: FaultScript([[.send(Array(head.utf8) + whole.prefix(100)), .close]]))
        defer { server.stop() }
        let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
        await assertThrowsHTTPError(.connectionClosed) { try await response.body.collect(upTo: 1 << 20) }
    }

    /// Answers every request with what `reply(n)` says, `n` counting requests across connections.
    func server(_ reply: @escaping @Sendable (Int) -> FaultAction) throws -> FaultServer {
        let count = Locked(0)
        return try FaultServer(script: FaultScript { _, _ in
            let n = count.withLock { n in
                defer { n += 1 }
                return n
            }
            return [reply(n)]
        })
    }

    func testRedirectLoopFromTheServerIsDetected() async throws {
        let server = try server { n in .response("", status: "302 Found", headers: ["Location: /\(n % 2 == 0 ? "b" : "a")"]) }
        defer { server.stop() }
        await assertThrowsHTTPError(.redirectLoop) {
            try await self.client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/a"))
        }
        XCTAssertEqual(server.requestsReceived, 2, "/a, /b, and /a again is not requested")
    }

    func testEndlessRedirectsStopAtTheLimit() async throws {
        let server = try server { n in .response("moved", status: "301 Moved Permanently", headers: ["Location: /\(n + 1)"]) }
        defer { server.stop() }
        await assertThrowsHTTPError(.tooManyRedirects) {
            try await self.client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/0"))
        }
        XCTAssertEqual(server.requestsReceived, 11)
        XCTAssertEqual(server.connectionsAccepted, 1, "each redirect body was drained and its connection reused")
    }

    func testCookieFromA302IsOnTheWireOfTheNextHop() async throws {
        let server = try server { n in
            n == 0 ? .response("", status: "302 Found", headers: ["Location: /next", "Set-Cookie: hop=1; Path=/"])
                : .response("done")
        }
        defer { server.stop() }
        let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/start"))
        _ = try await response.body.collect(upTo: 100)
        let heads = server.requestHeads
        XCTAssertEqual(heads.count, 2)
        XCTAssertFalse(heads[0].lowercased().contains("cookie:"))
        XCTAssertTrue(heads[1].contains("GET /next HTTP/1.1"), heads[1])
        XCTAssertTrue(heads[1].lowercased().contains("cookie: hop=1"), heads[1])
    }

    func testGzippedRequestBodyGoesOutCompressed() async throws {
        let server = try server { _ in .response("ok") }
        defer { server.stop() }
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/upload")
        request.method = .post
        request.body = .bytes(Array(String(repeating: "squeeze ", count: 1000).utf8))
        request.compressesBody = true
        let response = try await client.send(request)
        _ = try await response.body.collect(upTo: 100)
        let head = try XCTUnwrap(server.requestHeads.first).lowercased()
        XCTAssertTrue(head.contains("content-encoding: gzip"), head)
        let length = try XCTUnwrap(head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") })
        XCTAssertLessThan(Int(length.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? .max, 200)
    }
}
