import HTTPTypes
import XCTest

@testable import AsyncHTTP
@testable import AsyncHTTP1
import AsyncHTTPCore

final class HTTP1RequestEncoderTests: XCTestCase {
    func encode(
        method: HTTPRequest.Method = .get, target: String = "/", host: String = "example.com",
        headers: HTTPFields = [:], framing: HTTP1BodyFraming = .none, version: HTTPVersion = .http1_1,
        userAgent: String? = nil
    ) throws -> String {
        var buffer: [UInt8] = []
        try HTTP1RequestEncoder.encodeHead(
            method: method, target: target, host: host, headers: headers, framing: framing, version: version,
            userAgent: userAgent, into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    func assertInvalidRequest(
        _ fragment: String, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void
    ) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            guard let error = error as? HTTP1Error else { return XCTFail("unexpected \(error)", file: file, line: line) }
            XCTAssertEqual(error.code, .invalidRequest, file: file, line: line)
            XCTAssertTrue(error.message.contains(fragment), "'\(error.message)' lacks '\(fragment)'", file: file, line: line)
        }
    }

    // MARK: - Heads

    func testHostPortIsWrittenAfterTheName() throws {
        for (host, port, expected) in [
            ("example.com", 8080, "example.com:8080"), ("[::1]", 443, "[::1]:443"), ("h", 0, "h:0"), ("h", 9, "h:9"),
            ("h", 10, "h:10"), ("h", 65535, "h:65535"),
        ] {
            var buffer: [UInt8] = []
            try HTTP1RequestEncoder.encodeHead(
                method: .get, target: "/", host: host, port: port, headers: [:], framing: .none, version: .http1_1,
                userAgent: nil, into: &buffer)
            XCTAssertEqual(String(decoding: buffer, as: UTF8.self), "GET / HTTP/1.1\r\nHost: \(expected)\r\n\r\n")
        }
        // Through a parsed URL: the default port is left out, IPv6 in brackets, a Unix socket as localhost.
        for (url, expected) in [
            ("http://example.com:8080/", "example.com:8080"), ("http://example.com:80/", "example.com"),
            ("https://[::1]:8443/", "[::1]:8443"), ("https://[::1]/", "[::1]"), ("http+unix://%2Ftmp%2Fs.sock/", "localhost"),
        ] {
            let parsed = try HTTPURL(url)
            let parts = parsed.hostHeaderParts
            XCTAssertEqual(parts.port.map { parts.name + ":" + String($0) } ?? parts.name, expected, url)
            XCTAssertEqual(parsed.hostHeader, expected, url)
        }
    }

    func testGETHeadHasHostFirstThenFieldsThenUserAgent() throws {
        let head = try encode(
            target: "/search?q=swift", host: "example.com:8080", headers: [.accept: "*/*", .acceptEncoding: "gzip"],
            userAgent: "AsyncHTTP/1.0")
        XCTAssertEqual(
            head,
            "GET /search?q=swift HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nAccept-Encoding: gzip\r\n"
                + "User-Agent: AsyncHTTP/1.0\r\n\r\n")
    }

    func testCallerHostFieldIsKeptInPlaceAndNotDuplicated() throws {
        let host = HTTPField.Name("Host")!
        var headers = HTTPFields()
        headers[.accept] = "*/*"
        headers[host] = "virtual.example"
        let head = try encode(host: "example.com", headers: headers)
        XCTAssertEqual(head, "GET / HTTP/1.1\r\nAccept: */*\r\nHost: virtual.example\r\n\r\n")
    }

    func testCallerUserAgentWinsOverTheDefault() throws {
        let head = try encode(headers: [.userAgent: "custom/2"], userAgent: "AsyncHTTP/1.0")
        XCTAssertEqual(head, "GET / HTTP/1.1\r\nHost: example.com\r\nUser-Agent: custom/2\r\n\r\n")
        XCTAssertEqual(try encode(userAgent: nil), "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
    }

    func testContentLengthFramingReplacesCallerFramingFields() throws {
        let headers: HTTPFields = [.contentLength: "999", .transferEncoding: "chunked", .contentType: "text/plain"]
        let head = try encode(method: .post, target: "/upload", headers: headers, framing: .contentLength(5))
        XCTAssertEqual(
            head, "POST /upload HTTP/1.1\r\nHost: example.com\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n")
        XCTAssertEqual(
            try encode(method: .post, framing: .contentLength(0)),
            "POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 0\r\n\r\n")
    }

    func testChunkedFramingAddsTransferEncoding() throws {
        let head = try encode(method: .put, headers: [.contentLength: "3"], framing: .chunked)
        XCTAssertEqual(head, "PUT / HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n")
    }

    func testNoFramingDropsCallerFramingFields() throws {
        let head = try encode(headers: [.contentLength: "10", .transferEncoding: "gzip, chunked"], framing: .none)
        XCTAssertEqual(head, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
    }

    func testHTTP10RequestLine() throws {
        XCTAssertEqual(
            try encode(framing: .contentLength(2), version: .http1_0),
            "GET / HTTP/1.0\r\nHost: example.com\r\nContent-Length: 2\r\n\r\n")
    }

    func testHeadIsAppendedToExistingBufferContents() throws {
        var buffer = Array("previous".utf8)
        try HTTP1RequestEncoder.encodeHead(
            method: .delete, target: "/x", host: "h", headers: [:], framing: .none, version: .http1_1, userAgent: nil,
            into: &buffer)
        XCTAssertEqual(String(decoding: buffer, as: UTF8.self), "previousDELETE /x HTTP/1.1\r\nHost: h\r\n\r\n")
    }

    func testExtensionMethodsAndAbsoluteAndAuthorityTargetsAreWritten() throws {
        XCTAssertEqual(
            try encode(method: HTTPRequest.Method("PROPFIND")!, target: "/dav/"),
            "PROPFIND /dav/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        XCTAssertEqual(
            try encode(method: .connect, target: "example.com:443", host: "example.com:443"),
            "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
        XCTAssertEqual(
            try encode(target: "http://example.com/a?b"), "GET http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\n\r\n")
    }

    // MARK: - Rejections

    func testChunkedBodyOverHTTP10IsRejected() {
        assertInvalidRequest("chunked request body needs HTTP/1.1") {
            _ = try encode(method: .post, framing: .chunked, version: .http1_0)
        }
    }

    func testOtherHTTPVersionsAreRejected() {
        assertInvalidRequest("cannot send an HTTP/2.0 request") {
            _ = try encode(version: HTTPVersion(major: 2, minor: 0))
        }
    }

    func testNegativeContentLengthIsRejected() {
        assertInvalidRequest("negative Content-Length -1") { _ = try encode(method: .post, framing: .contentLength(-1)) }
    }

    func testInvalidRequestTargetsAreRejected() {
        let cases: [(String, String)] = [
            ("", "empty request target"),
            ("/a b", "request target contains a space at offset 2"),
            ("/a\r\nX-Injected: 1", "request target contains control character 0x0D at offset 2"),
            ("/a\nb", "control character 0x0A at offset 2"),
            ("/a\u{0}b", "control character 0x00 at offset 2"),
            ("/a\tb", "control character 0x09 at offset 2"),
            ("/a\u{7F}", "control character 0x7F at offset 2"),
            ("/caf\u{E9}", "non-ASCII byte 0xC3 at offset 4"),
        ]
        for (target, fragment) in cases {
            assertInvalidRequest(fragment) { _ = try encode(target: target) }
        }
    }

    func testHostAndUserAgentWithLineBreaksAreRejected() {
        assertInvalidRequest("header 'Host' value contains a carriage return") {
            _ = try encode(host: "example.com\r\nX-Injected: 1")
        }
        assertInvalidRequest("header 'User-Agent' value contains a line feed") { _ = try encode(userAgent: "a\nb") }
    }

    func testFailedEncodingLeavesTheBufferAsItWas() {
        var buffer = Array("keep".utf8)
        XCTAssertThrowsError(
            try HTTP1RequestEncoder.encodeHead(
                method: .get, target: "/", host: "h", headers: [.accept: "*/*"], framing: .none, version: .http1_1,
                userAgent: "bad\r\nagent", into: &buffer))
        XCTAssertEqual(buffer, Array("keep".utf8))
    }

    func testFieldValuesWithLineBreaksCannotReachTheWire() throws {
        // HTTPFields legalizes such values to spaces; the encoder's own check is the second line of defence.
        var headers = HTTPFields()
        headers[HTTPField.Name("X-A")!] = "a\r\nX-Injected: 1"
        let head = try encode(headers: headers)
        XCTAssertFalse(head.contains("\r\nX-Injected"))
        XCTAssertEqual(head.split(separator: "\r\n", omittingEmptySubsequences: false).count, 5)  // request line, Host, X-A, "", ""
    }

    // MARK: - validateHeader

    func testValidateHeaderAcceptsTokensAndOrdinaryValues() throws {
        try HTTP1RequestEncoder.validateHeader(name: "X-Custom_1.2!#$%&'*+^`|~", value: "any value\twith tab, ü and \"quotes\"")
        try HTTP1RequestEncoder.validateHeader(name: "Accept", value: "")
    }

    func testValidateHeaderRejectsBadNamesAndValues() {
        let cases: [(name: String, value: String, fragment: String)] = [
            ("X-A", "a\nb", "header 'X-A' value contains a line feed"),
            ("X-A", "a\rb", "header 'X-A' value contains a carriage return"),
            ("X-A", "a\u{0}b", "header 'X-A' value contains a NUL byte"),
            ("", "v", "empty header name"),
            ("X A", "v", "invalid character 0x20 at offset 1 in header name 'X A'"),
            ("X-A:", "v", "invalid character ':' at offset 3 in header name 'X-A:'"),
            ("X\r\nB", "v", "invalid character 0x0D at offset 1 in header name 'X\\x0D\\x0AB'"),
            ("Ü", "v", "invalid character 0xC3 at offset 0"),
            ("(x)", "v", "invalid character '(' at offset 0"),
        ]
        for (name, value, fragment) in cases {
            assertInvalidRequest(fragment) { try HTTP1RequestEncoder.validateHeader(name: name, value: value) }
        }
    }

    // MARK: - Chunks

    func testChunkHeaderIsLowercaseHexThenCRLF() {
        let cases: [(Int, String)] = [
            (1, "1\r\n"), (9, "9\r\n"), (10, "a\r\n"), (255, "ff\r\n"), (256, "100\r\n"), (4096, "1000\r\n"),
            (0x1a2b, "1a2b\r\n"), (Int.max, "7fffffffffffffff\r\n"),
        ]
        for (size, expected) in cases {
            var buffer = Array("x".utf8)
            HTTP1RequestEncoder.chunkHeader(size: size, into: &buffer)
            XCTAssertEqual(String(decoding: buffer, as: UTF8.self), "x" + expected, "size \(size)")
        }
    }

    func testChunkFramingConstants() {
        XCTAssertEqual(HTTP1RequestEncoder.chunkTrailer, Array("\r\n".utf8))
        XCTAssertEqual(HTTP1RequestEncoder.lastChunk, Array("0\r\n\r\n".utf8))
    }

    func testEncodedChunkedBodyParsesBackThroughTheChunkDecoder() throws {
        // Our own chunk writer and chunk reader agree: reuse the response parser on a synthetic response.
        var wire = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        let parts = [Array("hello ".utf8), [UInt8](repeating: 0x61, count: 300), Array("!".utf8)]
        for part in parts {
            HTTP1RequestEncoder.chunkHeader(size: part.count, into: &wire)
            wire += part + HTTP1RequestEncoder.chunkTrailer
        }
        wire += HTTP1RequestEncoder.lastChunk
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        var body: [UInt8] = []
        var offset = 0
        while !parser.isComplete {
            let (event, consumed) = try wire[offset...].withUnsafeBytes { try parser.parse($0) }
            if case .body(let range) = event { body += wire[(offset + range.lowerBound)..<(offset + range.upperBound)] }
            XCTAssertNotEqual(event, .needMoreData)
            offset += consumed
        }
        XCTAssertEqual(body, parts.flatMap { $0 })
        XCTAssertEqual(offset, wire.count)
    }

    /// A caller's `Proxy-Authorization` goes only in a head an HTTP proxy reads (a plain-http request in absolute
    /// form). Sent directly, through a CONNECT tunnel or through SOCKS, the head reaches the origin, which must
    /// not see the proxy's password.
    func testProxyAuthorizationIsSentOnlyToAnHTTPProxy() throws {
        var request = HTTPClientRequest(url: "https://a.test/")
        request.headers[.proxyAuthorization] = "Basic cHJveHk6c2VjcmV0"
        let direct = try PreparedRequest(request, url: try HTTPURL("https://a.test/"), userAgent: nil)
        XCTAssertFalse(String(decoding: direct.head, as: UTF8.self).lowercased().contains("proxy-authorization"))
        var plain = HTTPClientRequest(url: "http://a.test/")
        plain.headers[.proxyAuthorization] = "Basic cHJveHk6c2VjcmV0"
        let viaProxy = try PreparedRequest(plain, url: try HTTPURL("http://a.test/"), userAgent: nil, absoluteForm: true)
        XCTAssertTrue(String(decoding: viaProxy.head, as: UTF8.self).contains("Proxy-Authorization: Basic cHJveHk6c2VjcmV0\r\n"))
    }
}

final class HTTP1RequestEncoderCookieTests: XCTestCase {
    func testCookiePairsSplitByHTTPFieldsGoOutAsOneCookieLine() throws {
        var headers = HTTPFields()
        headers[.cookie] = "a=1; b=2"
        var buffer: [UInt8] = []
        try HTTP1RequestEncoder.encodeHead(method: .get, target: "/", host: "h", headers: headers, framing: .none,
                                           version: .http1_1, userAgent: nil, into: &buffer)
        let text = String(decoding: buffer, as: UTF8.self)
        XCTAssertEqual(text.components(separatedBy: "Cookie:").count - 1, 1, text)
        XCTAssertTrue(text.contains("Cookie: a=1; b=2\r\n"), text)
    }

}
