import Foundation
import XCTest
@testable import AsyncHTTP

/// `HTTPClient.send(_: HTTPRequest, body:)`: swift-http-types values in and out, against httpbin (which echoes
/// what it received as JSON), nginx over HTTPS, and the in-process NIO server (bodies and their framing), plus
/// the pseudo-header fields that cannot make an HTTP/1 request, refused before anything is sent.
final class HTTPTypesSendTests: XCTestCase {
    /// httpbin's `/anything` echo, decoded.
    struct Echo: Decodable {
        let method: String
        let url: String
        let headers: [String: String]
        let args: [String: String]
        let data: String
    }

    func authority(of base: String) -> String {
        String(base.dropFirst("http://".count))
    }

    func testMethodAuthorityPathQueryHeadersAndBodyReachTheServer() async throws {
        let base = try Peers.httpbin()
        let client = HTTPClient()
        defer { Task { await client.shutdown() } }
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[HTTPField.Name("X-Types-Test")!] = "one"
        fields.append(HTTPField(name: HTTPField.Name("X-Types-Test")!, value: "two"))
        let request = HTTPRequest(method: .put, scheme: "http", authority: authority(of: base),
                                  path: "/anything/some%20path?q=a%26b&n=2", headerFields: fields)
        let (response, body) = try await client.send(request, body: .bytes(Array(#"{"k":"v"}"#.utf8)))
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.headerFields[.contentType], "application/json")
        let echo = try JSONDecoder().decode(Echo.self, from: Data(try await body.collect(upTo: 1 << 20)))
        XCTAssertEqual(echo.method, "PUT")
        XCTAssertEqual(echo.url, base + "/anything/some%20path?q=a%26b&n=2")
        XCTAssertEqual(echo.args, ["q": "a&b", "n": "2"])
        XCTAssertEqual(echo.headers["Host"], authority(of: base), "Host comes from :authority")
        XCTAssertEqual(echo.headers["X-Types-Test"], "one,two", "repeated fields both sent, in order")
        XCTAssertEqual(echo.data, #"{"k":"v"}"#)
    }

    func testResponseStatusReasonAndHeaderFieldsComeBackAsHTTPResponse() async throws {
        let base = try Peers.httpbin()
        let client = HTTPClient()
        defer { Task { await client.shutdown() } }
        let (teapot, teapotBody) = try await client.send(
            HTTPRequest(method: .get, scheme: "http", authority: authority(of: base), path: "/status/418"))
        XCTAssertEqual(teapot.status.code, 418)
        XCTAssertEqual(teapot.status.reasonPhrase, "I'M A TEAPOT", "the reason phrase as the server sent it")
        _ = try await teapotBody.collect(upTo: 1 << 16)

        let (response, body) = try await client.send(
            HTTPRequest(method: .get, scheme: "http", authority: authority(of: base),
                        path: "/response-headers?X-Custom=v1&X-Custom=v2&Set-Cookie=a%3D1"))
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.headerFields[values: HTTPField.Name("X-Custom")!], ["v1", "v2"])
        XCTAssertEqual(response.headerFields[.setCookie], "a=1")
        let received = try await body.collect(upTo: 1 << 16)
        XCTAssertEqual(response.headerFields[.contentLength].flatMap { Int($0) }, received.count)
    }

    func testHeadHasAnEmptyBody() async throws {
        let base = try Peers.httpbin()
        let client = HTTPClient()
        defer { Task { await client.shutdown() } }
        let (response, body) = try await client.send(
            HTTPRequest(method: .head, scheme: "http", authority: authority(of: base), path: "/bytes/100"))
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.headerFields[.contentLength], "100")
        let bytes = try await body.collect(upTo: 1000)
        XCTAssertEqual(bytes, [])
    }

    /// The client's middleware runs underneath: the redirect step follows httpbin's 302, and a middleware of
    /// the configuration sees (and changes) the request made from the `HTTPRequest`.
    func testTheClientsMiddlewareAppliesUnderneath() async throws {
        struct Stamp: HTTPClientMiddleware {
            func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
                var request = request
                request.headers[HTTPField.Name("X-Stamped")!] = request.method.rawValue
                return try await next(request)
            }
        }
        let base = try Peers.httpbin()
        var configuration = HTTPClient.Configuration()
        configuration.middleware = [Stamp()]
        let client = HTTPClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        let (response, body) = try await client.send(
            HTTPRequest(method: .get, scheme: "http", authority: authority(of: base),
                        path: "/redirect-to?url=%2Fanything%2Fafter"))
        XCTAssertEqual(response.status, .ok, "the 302 was followed")
        let echo = try JSONDecoder().decode(Echo.self, from: Data(try await body.collect(upTo: 1 << 20)))
        XCTAssertEqual(echo.url, base + "/anything/after")
        XCTAssertEqual(echo.headers["X-Stamped"], "GET")
    }

    func testHTTPSSchemeAndAuthorityWithTheClientsTLSConfiguration() async throws {
        let nginx = try Peers.nginx()
        var tls = TLSConfiguration()
        tls.trustRoots = .file(nginx.caFile)
        let client = HTTPClient(configuration: .init(tls: tls))
        defer { Task { await client.shutdown() } }
        let (response, body) = try await client.send(
            HTTPRequest(method: .get, scheme: "https", authority: "localhost:\(nginx.httpsPort)", path: "/small.txt"))
        XCTAssertEqual(response.status, .ok)
        let count = try await body.collect(upTo: 1 << 16).count
        XCTAssertEqual(count, 1024)
    }

    /// A streamed body of unknown length goes out chunked, one of known length with Content-Length; the
    /// response body streams back from the NIO server's echo.
    func testStreamedBodiesWithKnownAndUnknownLength() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        let payload = (0..<100_000).map { UInt8($0 % 251) }
        let chunks = stride(from: 0, to: payload.count, by: 7000).map { Array(payload[$0..<min($0 + 7000, payload.count)]) }
        let authority = String(server.baseURL.dropFirst("http://".count))
        for length in [HTTPClientRequest.Body.Length.unknown, .known(payload.count)] {
            let stream = AsyncStream<[UInt8]> { continuation in
                for chunk in chunks { continuation.yield(chunk) }
                continuation.finish()
            }
            let (response, body) = try await client.send(
                HTTPRequest(method: .post, scheme: "http", authority: authority, path: "/echo"),
                body: .stream(stream, length: length))
            XCTAssertEqual(response.status, .ok)
            if length == .unknown {
                XCTAssertEqual(response.headerFields[HTTPField.Name("X-Request-Transfer-Encoding")!], "chunked")
            } else {
                XCTAssertEqual(response.headerFields[HTTPField.Name("X-Request-Content-Length")!], "100000")
            }
            let echoed = try await body.collect(upTo: 1 << 20)
            XCTAssertEqual(echoed, payload)
        }
        await client.shutdown()
        try await server.shutdown()
    }

    // MARK: Pseudo-header fields that cannot make an HTTP/1 request

    func testPseudoHeaderFieldsMakeTheURL() throws {
        let request = try HTTPClientRequest(
            HTTPRequest(method: .delete, scheme: "HTTPS", authority: "Example.COM:8443", path: "/a/b?c=d",
                        headerFields: [.accept: "text/plain"]))
        XCTAssertEqual(request.url, "HTTPS://Example.COM:8443/a/b?c=d")
        let url = try request.httpURL()
        XCTAssertEqual(url.scheme, "https")
        XCTAssertEqual(url.host, "example.com")
        XCTAssertEqual(url.port, 8443)
        XCTAssertEqual(url.requestTarget, "/a/b?c=d")
        XCTAssertEqual(request.method, .delete)
        XCTAssertEqual(request.headers[.accept], "text/plain")
        XCTAssertNil(request.body)
    }

    func testRequestsThatCannotBeSentOverHTTP1AreRefusedWithTheReason() {
        func refusal(_ request: HTTPRequest) -> HTTPClientError? {
            do {
                _ = try HTTPClientRequest(request)
                return nil
            } catch {
                return error
            }
        }
        var noScheme = HTTPRequest(method: .get, scheme: "http", authority: "example.com", path: "/")
        noScheme.scheme = nil
        XCTAssertEqual(refusal(noScheme)?.code, .invalidRequest)
        XCTAssertEqual(refusal(HTTPRequest(method: .get, scheme: "http", authority: nil, path: "/"))?.code, .invalidRequest)
        XCTAssertEqual(refusal(HTTPRequest(method: .get, scheme: "http", authority: "", path: "/"))?.code, .invalidRequest)

        let userinfo = refusal(HTTPRequest(method: .get, scheme: "http", authority: "bob:hunter2@example.com", path: "/"))
        XCTAssertEqual(userinfo?.code, .invalidRequest)
        XCTAssertFalse(userinfo?.description.contains("hunter2") ?? true, "the password is not quoted")

        XCTAssertEqual(refusal(HTTPRequest(method: .options, scheme: "http", authority: "example.com", path: "*"))?.code,
                       .invalidRequest, "the asterisk form is not supported")
        XCTAssertEqual(refusal(HTTPRequest(method: .get, scheme: "http", authority: "example.com", path: nil))?.code,
                       .invalidRequest)
        XCTAssertEqual(refusal(HTTPRequest(method: .get, scheme: "http", authority: "example.com", path: "relative"))?.code,
                       .invalidRequest)
        XCTAssertEqual(refusal(HTTPRequest(method: .get, scheme: "http", authority: "example.com", path: "/a#frag"))?.code,
                       .invalidRequest, "a fragment would be dropped silently")
        // An authority holding a '/', '?' or '#' moved the path: "example.com#" with "/v1/items" went out as "GET /".
        for authority in ["example.com#", "example.com?", "example.com/admin"] {
            XCTAssertEqual(refusal(HTTPRequest(method: .get, scheme: "http", authority: authority, path: "/v1/items"))?.code,
                           .invalidRequest, authority)
        }
        XCTAssertEqual(refusal(HTTPRequest(method: .get, scheme: "ftp", authority: "example.com", path: "/"))?.code,
                       .invalidURL)
        XCTAssertEqual(refusal(HTTPRequest(method: .get, scheme: "http", authority: "example.com:99999", path: "/"))?.code,
                       .invalidURL)
        XCTAssertEqual(refusal(HTTPRequest(method: .get, scheme: "http", authority: "example.com", path: "/a b"))?.code,
                       .invalidURL)
        var extendedConnect = HTTPRequest(method: .connect, scheme: "https", authority: "example.com", path: "/chat")
        extendedConnect.extendedConnectProtocol = "websocket"
        XCTAssertEqual(refusal(extendedConnect)?.code, .invalidRequest)
    }

    /// A refused request throws from `send` before any connection is made.
    func testSendThrowsBeforeConnecting() async throws {
        let client = HTTPClient()
        defer { Task { await client.shutdown() } }
        do {
            _ = try await client.send(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:9", path: "*"))
            XCTFail("sent a request with the asterisk form")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest)
        }
        XCTAssertEqual(client.connectionsOpened, 0)
    }
}
