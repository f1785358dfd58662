import HTTPTypes
import XCTest

@testable import AsyncHTTP
@testable import AsyncHTTP1

final class HTTP1ResponseParserTests: XCTestCase {
    // MARK: - Harness

    /// How the wire bytes reach the parser (h11's test_io.py: whole, byte by byte, with leftovers).
    enum Feeding: CaseIterable {
        case whole
        case oneByteAtATime
        /// Whole, followed by the start of a next response that must be left unconsumed.
        case withTrailingBytes
    }

    struct Parsed {
        var head: HTTP1ResponseHead
        var body: [UInt8]
        var trailers: HTTPFields?
    }

    static let nextResponse = Array("HTTP/1.1 204 No Content\r\n\r\n".utf8)

    /// Runs `wire` through a fresh parser, checking the API contract on every call: `.needMoreData` consumes
    /// everything given, `.body` ranges lie within the given buffer and end at `consumed`, exactly one head,
    /// `bytesReceived` equals the response's size, and after `.end` nothing more is consumed.
    func run(
        _ wire: [UInt8], method: HTTPRequest.Method = .get, feeding: Feeding, closeAtEnd: Bool = false,
        limits: HTTP1ResponseParser.Limits = .init(), file: StaticString = #filePath, line: UInt = #line
    ) throws -> Parsed {
        var parser = HTTP1ResponseParser(limits: limits)
        parser.expectResponse(to: method)
        XCTAssertTrue(parser.isAwaitingHead, file: file, line: line)
        let trailing = feeding == .withTrailingBytes ? Self.nextResponse : []
        let input = wire + trailing
        let step = feeding == .oneByteAtATime ? 1 : max(input.count, 1)
        var fed = 0
        var pending: [UInt8] = []
        var head: HTTP1ResponseHead?
        var body: [UInt8] = []
        var trailers: HTTPFields?
        var ended = false

        func handle(_ event: HTTP1ResponseParser.Event, consumed: Int) {
            switch event {
            case .needMoreData:
                XCTAssertEqual(consumed, pending.count, "needMoreData must consume everything", file: file, line: line)
            case .head(let parsedHead):
                XCTAssertNil(head, "a second head", file: file, line: line)
                head = parsedHead
            case .body(let range):
                XCTAssertNotNil(head, "body before head", file: file, line: line)
                XCTAssertFalse(range.isEmpty, "empty body event", file: file, line: line)
                XCTAssertEqual(consumed, range.upperBound, file: file, line: line)
                body += pending[range]
            case .end(let parsedTrailers):
                XCTAssertNotNil(head, "end before head", file: file, line: line)
                trailers = parsedTrailers
                ended = true
            }
        }

        while !ended {
            if fed < input.count {
                let end = min(fed + step, input.count)
                pending += input[fed..<end]
                fed = end
            } else if closeAtEnd {
                handle(try parser.endOfInput(), consumed: 0)
                XCTAssertTrue(ended, "endOfInput did not end the response", file: file, line: line)
                break
            } else {
                XCTFail("the parser wants more data after the whole response", file: file, line: line)
                throw HTTP1Error(.connectionClosed, "test input ended")
            }
            while !ended {
                let (event, consumed) = try pending.withUnsafeBytes { try parser.parse($0) }
                XCTAssertLessThanOrEqual(consumed, pending.count, file: file, line: line)
                handle(event, consumed: consumed)
                pending.removeFirst(consumed)
                if event == .needMoreData { break }
            }
        }
        XCTAssertTrue(parser.isComplete, file: file, line: line)
        XCTAssertNil(parser.remainingContentLength, file: file, line: line)
        XCTAssertEqual(parser.bytesReceived, wire.count, "bytesReceived", file: file, line: line)
        let leftover = pending + input[fed...]
        XCTAssertEqual(leftover, trailing, "bytes after the response must be left unconsumed", file: file, line: line)
        let idle = try leftover.withUnsafeBytes { try parser.parse($0) }
        XCTAssertEqual(idle.event, .needMoreData, file: file, line: line)
        XCTAssertEqual(idle.consumed, 0, file: file, line: line)
        return Parsed(head: head!, body: body, trailers: trailers)
    }

    /// Parses in every applicable feeding and checks they agree; returns the result. A body read until close
    /// cannot have trailing bytes (they would be body), so that feeding is skipped for it.
    func parseAllWays(
        _ wire: String, method: HTTPRequest.Method = .get, closeAtEnd: Bool = false,
        limits: HTTP1ResponseParser.Limits = .init(), file: StaticString = #filePath, line: UInt = #line
    ) throws -> Parsed {
        try parseAllWays(Array(wire.utf8), method: method, closeAtEnd: closeAtEnd, limits: limits, file: file, line: line)
    }

    func parseAllWays(
        _ wire: [UInt8], method: HTTPRequest.Method = .get, closeAtEnd: Bool = false,
        limits: HTTP1ResponseParser.Limits = .init(), file: StaticString = #filePath, line: UInt = #line
    ) throws -> Parsed {
        let whole = try run(wire, method: method, feeding: .whole, closeAtEnd: closeAtEnd, limits: limits, file: file, line: line)
        var feedings: [Feeding] = [.oneByteAtATime]
        if !closeAtEnd { feedings.append(.withTrailingBytes) }
        for feeding in feedings {
            let other = try run(wire, method: method, feeding: feeding, closeAtEnd: closeAtEnd, limits: limits, file: file, line: line)
            XCTAssertEqual(other.head, whole.head, "\(feeding)", file: file, line: line)
            XCTAssertEqual(other.body, whole.body, "\(feeding)", file: file, line: line)
            XCTAssertEqual(other.trailers, whole.trailers, "\(feeding)", file: file, line: line)
        }
        return whole
    }

    /// Asserts that parsing `wire` fails with `code` and a message containing `fragment`, fed whole and one
    /// byte at a time.
    func assertFails(
        _ wire: [UInt8], method: HTTPRequest.Method = .get, code: HTTP1Error.Code, _ fragment: String,
        limits: HTTP1ResponseParser.Limits = .init(), file: StaticString = #filePath, line: UInt = #line
    ) {
        for feeding in [Feeding.whole, .oneByteAtATime] {
            do {
                let parsed = try run(wire, method: method, feeding: feeding, limits: limits, file: file, line: line)
                XCTFail("\(feeding): parsed \(parsed.head.status) instead of failing with '\(fragment)'", file: file, line: line)
            } catch let error as HTTP1Error {
                XCTAssertEqual(error.code, code, "\(feeding): \(error)", file: file, line: line)
                XCTAssertTrue(error.message.contains(fragment), "\(feeding): '\(error.message)' lacks '\(fragment)'", file: file, line: line)
            } catch {
                XCTFail("\(feeding): unexpected \(error)", file: file, line: line)
            }
        }
    }

    func assertFails(
        _ wire: String, method: HTTPRequest.Method = .get, code: HTTP1Error.Code = .malformedResponse, _ fragment: String,
        limits: HTTP1ResponseParser.Limits = .init(), file: StaticString = #filePath, line: UInt = #line
    ) {
        assertFails(Array(wire.utf8), method: method, code: code, fragment, limits: limits, file: file, line: line)
    }

    /// Feeds `wire` (which must not complete the response) then ends the input; returns the error.
    func closedError(_ wire: String, method: HTTPRequest.Method = .get, file: StaticString = #filePath, line: UInt = #line) -> HTTP1Error? {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: method)
        var bytes = Array(wire.utf8)
        do {
            while true {
                let (event, consumed) = try bytes.withUnsafeBytes { try parser.parse($0) }
                bytes.removeFirst(consumed)
                if event == .needMoreData { break }
                if case .end = event {
                    XCTFail("the response completed", file: file, line: line)
                    return nil
                }
            }
            _ = try parser.endOfInput()
            XCTFail("endOfInput did not throw", file: file, line: line)
            return nil
        } catch let error as HTTP1Error {
            return error
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
            return nil
        }
    }

    func fields(_ pairs: KeyValuePairs<String, String>) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    // MARK: - Content-Length

    func testContentLengthBodyParsedWholeByteByByteAndWithTrailingBytes() throws {
        let parsed = try parseAllWays("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello")
        XCTAssertEqual(
            parsed.head,
            HTTP1ResponseHead(
                version: .http1_1, status: .init(code: 200, reasonPhrase: "OK"),
                headers: fields(["Content-Length": "5", "Content-Type": "text/plain"]), keepAlive: true))
        XCTAssertEqual(parsed.body, Array("hello".utf8))
        XCTAssertNil(parsed.trailers)
    }

    /// The length progress reads from the head: what the framing announced, never a field looked up again.
    func testAnnouncedBodyLengthFollowsTheFraming() throws {
        XCTAssertEqual(try parseAllWays("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc").head.announcedBodyLength, 3)
        XCTAssertNil(try parseAllWays("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n").head.announcedBodyLength)
        XCTAssertNil(try parseAllWays("HTTP/1.1 200 OK\r\n\r\nabc", closeAtEnd: true).head.announcedBodyLength)
        XCTAssertEqual(try parseAllWays("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n").head.announcedBodyLength, 0)
        XCTAssertEqual(try parseAllWays("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", method: .head).head.announcedBodyLength, 0)
    }

    func testZeroContentLengthEndsAtTheHead() throws {
        let parsed = try parseAllWays("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(parsed.body, [])
        XCTAssertTrue(parsed.head.keepAlive)
    }

    func testBinaryBodyWithCRLFAndNULBytesIsPassedThroughUnchanged() throws {
        let body: [UInt8] = [0, 13, 10, 13, 10, 255, 72, 84, 84, 80, 47, 49]
        let parsed = try parseAllWays(Array("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n".utf8) + body)
        XCTAssertEqual(parsed.body, body)
    }

    func testIdenticalDuplicateContentLengthsAreAccepted() throws {
        XCTAssertEqual(try parseAllWays("HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello").body, Array("hello".utf8))
        XCTAssertEqual(
            try parseAllWays("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello").body, Array("hello".utf8))
        XCTAssertEqual(try parseAllWays("HTTP/1.1 200 OK\r\nContent-Length: 005\r\n\r\nhello").body, Array("hello".utf8))
    }

    func testRemainingContentLengthCountsDown() throws {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        let wire = Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789".utf8)
        let head = try wire[..<40].withUnsafeBytes { try parser.parse($0) }
        guard case .head = head.event else { return XCTFail("expected the head, got \(head.event)") }
        XCTAssertEqual(parser.remainingContentLength, 10)
        let first = try wire[head.consumed..<head.consumed + 4].withUnsafeBytes { try parser.parse($0) }
        XCTAssertEqual(first.event, .body(0..<4))
        XCTAssertEqual(parser.remainingContentLength, 6)
        let rest = try wire[(head.consumed + 4)...].withUnsafeBytes { try parser.parse($0) }
        XCTAssertEqual(rest.event, .body(0..<6))
        XCTAssertEqual(parser.remainingContentLength, 0)
        XCTAssertFalse(parser.isComplete)
        let end = try [UInt8]().withUnsafeBytes { try parser.parse($0) }
        XCTAssertEqual(end.event, .end(trailers: nil))
        XCTAssertEqual(end.consumed, 0)
        XCTAssertTrue(parser.isComplete)
    }

    // MARK: - Chunked

    func testChunkedBodyParsedWholeByteByByteAndWithTrailingBytes() throws {
        let parsed = try parseAllWays(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        XCTAssertEqual(parsed.body, Array("hello world".utf8))
        XCTAssertNil(parsed.trailers)
        XCTAssertTrue(parsed.head.keepAlive)
    }

    func testChunkedBodyWithExtensionsAndTrailersParsedOneByteAtATime() throws {
        let parsed = try parseAllWays(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Expires, X-Checksum\r\n\r\n"
                + "5;name=value\r\nhello\r\n"
                + "A ; ext=\"quoted;\" ; other\r\n0123456789\r\n"
                + "1a\r\nabcdefghijklmnopqrstuvwxyz\r\n"
                + "0;last=yes\r\nExpires: never\r\nX-Checksum:  abc \r\n\r\n")
        XCTAssertEqual(parsed.body, Array("hello0123456789abcdefghijklmnopqrstuvwxyz".utf8))
        XCTAssertEqual(parsed.trailers, fields(["Expires": "never", "X-Checksum": "abc"]))
    }

    func testTransferEncodingIsCaseInsensitiveAndFinalCodingChunkedIsChunked() throws {
        let upper = try parseAllWays("HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        XCTAssertEqual(upper.body, Array("abc".utf8))
        // The body is still gzip-coded; de-chunking is the parser's whole job (the transport inflates it).
        let layered = try parseAllWays(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: , chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        XCTAssertEqual(layered.body, Array("abc".utf8))
        XCTAssertTrue(layered.head.keepAlive)
        XCTAssertEqual(layered.head.transferCoding, .gzip)
    }

    func testFramingFieldsInTrailersAreKeptButNotInterpreted() throws {
        let parsed = try parseAllWays(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n"
                + "Content-Length: 99\r\nContent-Length: nonsense\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(parsed.body, Array("abc".utf8))
        XCTAssertEqual(parsed.trailers?[values: .contentLength], ["99", "nonsense"])
    }

    func testChunkedTrailersObeyTheFieldCountLimit() {
        let limits = HTTP1ResponseParser.Limits(maxHeadBytes: 1024, maxHeaderCount: 2)
        assertFails(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
            code: .headerLimitExceeded, "more than 2 trailer fields", limits: limits)
    }

    func testChunkedTrailersObeyTheSizeLimit() throws {
        let limits = HTTP1ResponseParser.Limits(maxHeadBytes: 64, maxHeaderCount: 100)
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
        // The trailer section (field lines and the empty line) may be 64 bytes, not 65.
        let fits = "X: " + String(repeating: "a", count: 57) + "\r\n\r\n"
        XCTAssertEqual(fits.utf8.count, 64)
        XCTAssertEqual(try parseAllWays(head + fits, limits: limits).trailers?[HTTPField.Name("X")!]?.utf8.count, 57)
        assertFails(
            head + "X: " + String(repeating: "a", count: 58) + "\r\n\r\n", code: .headerLimitExceeded,
            "trailer section exceeds the limit of 64 bytes", limits: limits)
    }

    func testChunkSizeLineIsBounded() throws {
        let longExtension = String(repeating: "x", count: HTTP1ResponseParser.maxChunkLineBytes)
        assertFails(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;" + longExtension + "\r\nhello\r\n0\r\n\r\n",
            "chunk size line longer than 4096 bytes")
        let fits = String(repeating: "x", count: HTTP1ResponseParser.maxChunkLineBytes - 4)
        XCTAssertEqual(
            try parseAllWays("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;" + fits + "\r\nhello\r\n0\r\n\r\n").body,
            Array("hello".utf8))
    }

    func testLargestChunkSizeParsesAndOneMoreDigitOverflows() throws {
        XCTAssertEqual(try Array("7fffffffffffffff".utf8).withUnsafeBytes { try HTTP1ResponseParser.parseChunkSizeLine($0) }, Int.max)
        XCTAssertEqual(try Array("000000000000000000001\r".utf8).withUnsafeBytes { try HTTP1ResponseParser.parseChunkSizeLine($0) }, 1)
        XCTAssertThrowsError(try Array("8000000000000000".utf8).withUnsafeBytes { try HTTP1ResponseParser.parseChunkSizeLine($0) }) {
            XCTAssertEqual(($0 as? HTTP1Error)?.message, "chunk size '8000000000000000' is too large")
        }
    }

    // MARK: - Read until close

    func testLargestContentLengthAndChunkSizeStartABody() throws {
        for wire in ["HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nab",
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\nab"] {
            var parser = HTTP1ResponseParser()
            parser.expectResponse(to: .get)
            let bytes = Array(wire.utf8)
            let (head, consumed) = try bytes.withUnsafeBytes { try parser.parse($0) }
            guard case .head = head else { return XCTFail("no head: \(head)") }
            let (body, _) = try bytes[consumed...].withUnsafeBytes { try parser.parse($0) }
            XCTAssertEqual(body, .body(bytes.count - consumed - 2..<bytes.count - consumed))
        }
    }

    func testBodyWithoutLengthIsReadUntilClose() throws {
        let parsed = try parseAllWays("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of this\r\nis body", closeAtEnd: true)
        XCTAssertEqual(parsed.body, Array("all of this\r\nis body".utf8))
        XCTAssertFalse(parsed.head.keepAlive)
    }

    func testHTTP10BodyWithoutLengthIsReadUntilCloseEvenWithKeepAlive() throws {
        let parsed = try parseAllWays("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nabc", closeAtEnd: true)
        XCTAssertEqual(parsed.body, Array("abc".utf8))
        XCTAssertFalse(parsed.head.keepAlive)
    }

    func testTransferEncodingWhoseFinalCodingIsNotChunkedIsRefused() throws {
        // RFC 9112 §6.3 rule 4 would read such a body until close; this client refuses it (docs/framing.md).
        assertFails("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                    "Transfer-Encoding 'chunked, gzip' does not end in chunked")
    }

    func testEmptyReadUntilCloseBody() throws {
        let parsed = try parseAllWays("HTTP/1.1 200 OK\r\n\r\n", closeAtEnd: true)
        XCTAssertEqual(parsed.body, [])
    }

    // MARK: - Responses without a body

    func testHeadResponseHasNoBodyDespiteContentLength() throws {
        let parsed = try parseAllWays("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", method: .head)
        XCTAssertEqual(parsed.body, [])
        XCTAssertEqual(parsed.head.headers[.contentLength], "1000")
        XCTAssertTrue(parsed.head.keepAlive)
        let chunked = try parseAllWays("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", method: .head)
        XCTAssertEqual(chunked.body, [])
    }

    func test204And304HaveNoBody() throws {
        for status in ["204 No Content", "304 Not Modified"] {
            let parsed = try parseAllWays("HTTP/1.1 \(status)\r\nContent-Length: 10\r\nETag: \"x\"\r\n\r\n")
            XCTAssertEqual(parsed.body, [], status)
            XCTAssertTrue(parsed.head.keepAlive, status)
        }
    }

    func testSuccessfulConnectHasNoBodyAndLeavesTunnelBytesUnconsumed() throws {
        let parsed = try parseAllWays("HTTP/1.1 200 Connection established\r\n\r\n", method: .connect)
        XCTAssertEqual(parsed.head.status.reasonPhrase, "Connection established")
        XCTAssertFalse(parsed.head.keepAlive, "a tunnel is no HTTP connection to reuse")
        // A refused CONNECT is an ordinary response with a body.
        let refused = try parseAllWays("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 2\r\n\r\nno", method: .connect)
        XCTAssertEqual(refused.body, Array("no".utf8))
    }

    func testBodilessHeadIsFollowedByEndConsumingNothing() throws {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .head)
        let wire = Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1".utf8)
        let head = try wire.withUnsafeBytes { try parser.parse($0) }
        XCTAssertEqual(head.consumed, wire.count - 8)
        let end = try wire[head.consumed...].withUnsafeBytes { try parser.parse($0) }
        XCTAssertEqual(end.event, .end(trailers: nil))
        XCTAssertEqual(end.consumed, 0)
    }

    // MARK: - Interim responses

    func testInterimResponsesAreSkipped() throws {
        let parsed = try parseAllWays(
            "HTTP/1.1 100 Continue\r\n\r\n"
                + "HTTP/1.1 102 Processing\r\n\r\n"
                + "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertEqual(parsed.head.status.code, 200)
        XCTAssertEqual(parsed.head.headers, fields(["Content-Length": "2"]))
        XCTAssertEqual(parsed.body, Array("ok".utf8))
    }

    func testInterimResponseMeansTheServerAnswered() throws {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .post)
        let result = try Array("HTTP/1.1 100 Continue\r\n\r\n".utf8).withUnsafeBytes { try parser.parse($0) }
        XCTAssertEqual(result.event, .needMoreData)
        XCTAssertEqual(parser.bytesReceived, 25)
        XCTAssertFalse(parser.isAwaitingHead)
    }

    func testSwitchingProtocolsIsAnErrorBecauseNoUpgradeWasRequested() {
        assertFails("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", "101 Switching Protocols")
    }

    /// A long WebDAV operation may send `102 Processing` every few seconds: many interim responses are parsed
    /// (curl counts none; the old limit of five failed such a request), while an endless stream of them ends at
    /// four heads' worth of bytes.
    func testManyInterimResponsesAreSkippedAndAnEndlessStreamOfThemIsRejected() throws {
        let processing = "HTTP/1.1 102 Processing\r\n\r\n"
        let many = String(repeating: processing, count: 60) + "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
        XCTAssertEqual(try parseAllWays(many + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").head.status.code, 200)
        var limits = HTTP1ResponseParser.Limits()
        limits.maxHeadBytes = 1024
        let endless = String(repeating: processing, count: 4 * 1024 / processing.utf8.count + 1)
        assertFails(endless + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "interim 1xx responses went on for more than 4096 bytes",
                    limits: limits)
        // A head limit of Int.max ("no limit") does not overflow the budget (it trapped).
        limits.maxHeadBytes = .max
        XCTAssertEqual(try parseAllWays(many + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", limits: limits).head.status.code, 200)
    }

    // MARK: - Status line

    func testStatusLineVariants() throws {
        let cases: [(wire: String, version: HTTPVersion, code: Int, reason: String)] = [
            ("HTTP/1.1 200 OK\r\n", .http1_1, 200, "OK"),
            ("HTTP/1.0 404 Not Found\r\n", .http1_0, 404, "Not Found"),
            ("HTTP/1.1 200\r\n", .http1_1, 200, ""),
            ("HTTP/1.1 200 \r\n", .http1_1, 200, ""),
            ("HTTP/1.1 500 Internal  Server\tError \r\n", .http1_1, 500, "Internal  Server\tError "),
            ("HTTP/1.1 599 Custom\r\n", .http1_1, 599, "Custom"),
            ("HTTP/1.1 100\r\n\r\nHTTP/1.1 299 Whatever\r\n", .http1_1, 299, "Whatever"),
        ]
        for (wire, version, code, reason) in cases {
            let parsed = try parseAllWays(wire + "Content-Length: 0\r\n\r\n")
            XCTAssertEqual(parsed.head.version, version, wire)
            XCTAssertEqual(parsed.head.status.code, code, wire)
            XCTAssertEqual(parsed.head.status.reasonPhrase, reason, wire)
        }
    }

    func testReasonPhraseIsDecodedAsLatin1() throws {
        let wire = Array("HTTP/1.1 200 Ok".utf8) + [0xE9] + Array("\r\nContent-Length: 0\r\n\r\n".utf8)
        XCTAssertEqual(try parseAllWays(wire).head.status.reasonPhrase, "Oké")
    }

    func testBareLineFeedsAreAccepted() throws {
        let parsed = try parseAllWays("HTTP/1.1 200 OK\nContent-Length: 3\nX-A: b\n\nabc")
        XCTAssertEqual(parsed.head.headers, fields(["Content-Length": "3", "X-A": "b"]))
        XCTAssertEqual(parsed.body, Array("abc".utf8))
        let chunked = try parseAllWays("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\r\n\n3\nabc\n0\nX-T: 1\n\n")
        XCTAssertEqual(chunked.body, Array("abc".utf8))
        XCTAssertEqual(chunked.trailers, fields(["X-T": "1"]))
    }

    // MARK: - Fields

    func testFieldValuesAreTrimmedAndKeepOrderAndCase() throws {
        let parsed = try parseAllWays(
            "HTTP/1.1 200 OK\r\nset-cookie: a=1\r\nX-Empty:\r\nX-Blank:   \t\r\nX-Inner: a \t b\r\nSet-Cookie: b=2\r\n"
                + "X-Symbols!#$%&'*+-.^_`|~: v\r\nContent-Length: 0\r\n\r\n")
        let headers = parsed.head.headers
        XCTAssertEqual(headers[values: .setCookie], ["a=1", "b=2"])
        XCTAssertEqual(headers[HTTPField.Name("X-Empty")!], "")
        XCTAssertEqual(headers[HTTPField.Name("X-Blank")!], "")
        XCTAssertEqual(headers[HTTPField.Name("X-Inner")!], "a \t b")
        XCTAssertEqual(headers[HTTPField.Name("X-Symbols!#$%&'*+-.^_`|~")!], "v")
        XCTAssertEqual(headers.first?.name.rawName, "set-cookie", "the received spelling is kept")
        XCTAssertEqual(headers.count, 7)
    }

    func testObsFoldIsReplacedBySingleSpace() throws {
        let parsed = try parseAllWays(
            "HTTP/1.1 200 OK\r\nX-Folded: a\r\n   b  \r\n\tc\r\nX-Start:\r\n next\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(parsed.head.headers[HTTPField.Name("X-Folded")!], "a b c")
        XCTAssertEqual(parsed.head.headers[HTTPField.Name("X-Start")!], "next")
    }

    func testObsTextInFieldValuesIsKept() throws {
        let wire = Array("HTTP/1.1 200 OK\r\nX-Name: caf".utf8) + [0xC3, 0xA9] + Array("\r\nContent-Length: 0\r\n\r\n".utf8)
        XCTAssertEqual(try parseAllWays(wire).head.headers[HTTPField.Name("X-Name")!], "café")
    }

    func testKeepAliveHeaderParameters() throws {
        let cases: [(String, Int?, Int?)] = [
            ("timeout=5, max=100", 5, 100),
            ("Timeout=7", 7, nil),
            ("max=3 , timeout = \"9\"", 9, 3),
            ("timeout=abc, max=-1, foo=2", nil, nil),
            ("timeout=99999999999999999999", nil, nil),
        ]
        for (value, timeout, max) in cases {
            let head = try parseAllWays("HTTP/1.1 200 OK\r\nKeep-Alive: \(value)\r\nContent-Length: 0\r\n\r\n").head
            XCTAssertEqual(head.keepAliveTimeout, timeout, value)
            XCTAssertEqual(head.keepAliveMax, max, value)
        }
    }

    // MARK: - Keep-alive

    func testKeepAliveSemantics() throws {
        let cases: [(version: String, fields: String, keepAlive: Bool)] = [
            ("HTTP/1.1", "Content-Length: 0", true),
            ("HTTP/1.1", "Connection: close\r\nContent-Length: 0", false),
            ("HTTP/1.1", "Connection: CLOSE\r\nContent-Length: 0", false),
            ("HTTP/1.1", "Connection: keep-alive, Close\r\nContent-Length: 0", false),
            ("HTTP/1.1", "Connection: upgrade\r\nConnection: close\r\nContent-Length: 0", false),
            ("HTTP/1.1", "Connection: closed\r\nContent-Length: 0", true),
            ("HTTP/1.1", "Connection: ,,\r\nContent-Length: 0", true),
            ("HTTP/1.1", "Transfer-Encoding: chunked", true),
            ("HTTP/1.1", "Content-Length: 3\r\nTransfer-Encoding: chunked", false),
            ("HTTP/1.0", "Content-Length: 0", false),
            ("HTTP/1.0", "Connection: keep-alive\r\nContent-Length: 0", true),
            ("HTTP/1.0", "Connection: Keep-Alive\r\nContent-Length: 0", true),
            ("HTTP/1.0", "Connection: keep-alive, close\r\nContent-Length: 0", false),
            ("HTTP/1.0", "Connection: foo,  keep-alive \r\nContent-Length: 0", true),
        ]
        for (version, fieldLines, keepAlive) in cases {
            let body = fieldLines.contains("chunked") ? "0\r\n\r\n" : ""
            let parsed = try parseAllWays("\(version) 200 OK\r\n\(fieldLines)\r\n\r\n\(body)")
            XCTAssertEqual(parsed.head.keepAlive, keepAlive, "\(version) \(fieldLines)")
        }
    }

    func testTransferEncodingOverridesContentLength() throws {
        // RFC 9112 §6.3 rule 3: chunked framing wins, and the connection must not be reused.
        let parsed = try parseAllWays(
            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        XCTAssertEqual(parsed.body, Array("abc".utf8))
        XCTAssertFalse(parsed.head.keepAlive)
    }

    // MARK: - Limits

    func testHeadSizeLimitIsExactAndNamesTheNumber() throws {
        let limits = HTTP1ResponseParser.Limits(maxHeadBytes: 64, maxHeaderCount: 100)
        let start = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: "  // 39 bytes, 4 more for "\r\n\r\n"
        let fits = start + String(repeating: "a", count: 64 - 43) + "\r\n\r\n"
        XCTAssertEqual(fits.utf8.count, 64)
        XCTAssertEqual(try parseAllWays(fits, limits: limits).head.status.code, 200)
        assertFails(
            start + String(repeating: "a", count: 65 - 43) + "\r\n\r\n", code: .headerLimitExceeded,
            "response head exceeds the limit of 64 bytes", limits: limits)
    }

    func testHeadSizeLimitStopsAnEndlessHeadWithoutBufferingIt() {
        var parser = HTTP1ResponseParser(limits: .init(maxHeadBytes: 1024, maxHeaderCount: 100))
        parser.expectResponse(to: .get)
        let junk = [UInt8](repeating: UInt8(ascii: "a"), count: 600)
        XCTAssertNoThrow(try junk.withUnsafeBytes { try parser.parse($0) })
        XCTAssertThrowsError(try junk.withUnsafeBytes { try parser.parse($0) }) { error in
            XCTAssertEqual((error as? HTTP1Error)?.code, .headerLimitExceeded)
        }
    }

    func testHeaderCountLimit() throws {
        let limits = HTTP1ResponseParser.Limits(maxHeadBytes: 4096, maxHeaderCount: 3)
        XCTAssertEqual(try parseAllWays("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nContent-Length: 0\r\n\r\n", limits: limits).head.headers.count, 3)
        assertFails(
            "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nContent-Length: 0\r\n\r\n", code: .headerLimitExceeded,
            "more than 3 header fields", limits: limits)
    }

    func testDefaultLimitsAllowAHundredFieldsButNotMore() throws {
        let hundred = (1...99).map { "X-\($0): v\r\n" }.joined() + "Content-Length: 0\r\n"
        XCTAssertEqual(try parseAllWays("HTTP/1.1 200 OK\r\n" + hundred + "\r\n").head.headers.count, 100)
        assertFails("HTTP/1.1 200 OK\r\n" + hundred + "X-Last: v\r\n\r\n", code: .headerLimitExceeded, "more than 100 header fields")
    }

    // MARK: - Malformed responses

    func testMalformedResponsesAreRejectedWithAReason() {
        let ok = "HTTP/1.1 200 OK\r\n"
        let chunked = ok + "Transfer-Encoding: chunked\r\n\r\n"
        let cases: [(wire: String, fragment: String)] = [
            // Status line
            ("HTTP/2.0 200 OK\r\n\r\n", "unsupported HTTP version HTTP/2.0"),
            ("HTTP/3.0 200 OK\r\n\r\n", "unsupported HTTP version HTTP/3.0"),
            ("HTTP/1.10 200 OK\r\n\r\n", "three digits required"),
            ("HTTP/0.9 200 OK\r\n\r\n", "unsupported HTTP version HTTP/0.9"),
            ("http/1.1 200 OK\r\n\r\n", "invalid status line 'http/1.1 200 OK'"),
            ("ICY 200 OK\r\n\r\n", "invalid status line 'ICY 200 OK'"),
            ("HTTP/1.1\r\n\r\n", "three digits required"),
            ("HTTP/1.1 20 OK\r\n\r\n", "three digits required"),
            ("HTTP/1.1 2000 OK\r\n\r\n", "three digits required"),
            ("HTTP/1.1  200 OK\r\n\r\n", "three digits required"),
            ("HTTP/1.1 2x0 OK\r\n\r\n", "three digits required"),
            ("HTTP/1.1 099 Low\r\n\r\n", "invalid status code 99"),
            ("HTTP/1.1 200 O\u{1}K\r\n\r\n", "control character 0x01 in reason phrase"),
            ("HTTP/1.1 200 O\rK\r\n\r\n", "control character 0x0D in reason phrase"),
            ("\r\nHTTP/1.1 200 OK\r\n\r\n", "empty status line"),
            // Field lines
            (ok + "Bad Name: x\r\n\r\n", "invalid character 0x20 in header name 'Bad '"),
            (ok + "Content-Length : 5\r\n\r\nhello", "whitespace between header name 'Content-Length' and its colon"),
            (ok + "Content-Length\t: 5\r\n\r\nhello", "whitespace between header name 'Content-Length' and its colon"),
            (ok + "NoColon\r\n\r\n", "header line without a colon: 'NoColon'"),
            (ok + ": value\r\n\r\n", "empty header name"),
            (ok + "X(A): v\r\n\r\n", "invalid character '(' in header name 'X('"),
            (ok + "X-A: a\u{1}b\r\n\r\n", "header 'X-A' value contains control character 0x01"),
            (ok + "X-A: a\rb\r\n\r\n", "header 'X-A' value contains control character 0x0D"),
            (ok + "X-A: a\u{7F}\r\n\r\n", "header 'X-A' value contains control character 0x7F"),
            (ok + "X-A: a\r\n b\u{0}\r\n\r\n", "header 'X-A' value contains control character 0x00"),
            (ok + " X-A: b\r\nContent-Length: 0\r\n\r\n", "header section starts with a whitespace-prefixed line"),
            // Framing
            (ok + "Content-Length: abc\r\n\r\n", "invalid Content-Length 'abc'"),
            (ok + "Content-Length: -1\r\n\r\n", "invalid Content-Length '-1'"),
            (ok + "Content-Length: +5\r\n\r\nhello", "invalid Content-Length '+5'"),
            (ok + "Content-Length:\r\n\r\n", "invalid Content-Length ''"),
            (ok + "Content-Length: 5,,5\r\n\r\nhello", "invalid Content-Length '5,,5'"),
            (ok + "Content-Length: 0x10\r\n\r\n", "invalid Content-Length '0x10'"),
            (ok + "Content-Length: 5, 6\r\n\r\nhello", "conflicting Content-Length values 5 and 6"),
            (ok + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello", "conflicting Content-Length values 5 and 6"),
            (ok + "Content-Length: 99999999999999999999\r\n\r\n", "Content-Length '99999999999999999999' is too large"),
            ("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "Transfer-Encoding in an HTTP/1.0 response"),
            (ok + "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", "chunked more than once"),
            (ok + "Transfer-Encoding:\r\n\r\n", "empty Transfer-Encoding"),
            (ok + "Transfer-Encoding: chu nked\r\n\r\n", "invalid Transfer-Encoding 'chu nked'"),
            // Chunked body
            (chunked + "zz\r\n", "invalid chunk size 'zz'"),
            (chunked + "\r\n", "invalid chunk size ''"),
            (chunked + " 5\r\nhello\r\n0\r\n\r\n", "invalid chunk size '5'"),
            (chunked + "5x\r\nhello\r\n0\r\n\r\n", "invalid chunk size '5x'"),
            (chunked + "-5\r\nhello\r\n0\r\n\r\n", "invalid chunk size '-5'"),
            (chunked + "0x5\r\nhello\r\n0\r\n\r\n", "invalid chunk size '0x5'"),
            (chunked + "fffffffffffffffff\r\n", "chunk size 'fffffffffffffffff' is too large"),
            (chunked + "5;a\u{1}b\r\nhello\r\n0\r\n\r\n", "control character 0x01 in chunk extension"),
            (chunked + "5\r\nhelloX\r\n0\r\n\r\n", "missing CRLF after chunk data (found 'X')"),
            (chunked + "5\r\nhello\rX\r\n0\r\n\r\n", "missing CRLF after chunk data (found 'X')"),
            (chunked + "5\r\nhello\r\r\n0\r\n\r\n", "missing CRLF after chunk data (found 0x0D)"),
            (chunked + "5\r\nhello6\r\n world\r\n0\r\n\r\n", "missing CRLF after chunk data (found '6')"),
            (chunked + "0\r\nBad Trailer\r\n\r\n", "invalid character 0x20 in trailer name 'Bad '"),
            (chunked + "0\r\nNoColon\r\n\r\n", "trailer line without a colon: 'NoColon'"),
            (chunked + "0\r\n folded: x\r\n\r\n", "trailer section starts with a whitespace-prefixed line"),
            (chunked + "0\r\nX-T: a\u{2}\r\n\r\n", "trailer 'X-T' value contains control character 0x02"),
        ]
        for (wire, fragment) in cases {
            assertFails(wire, fragment)
        }
    }

    func testNonASCIIHeaderNameIsRejected() {
        let wire = Array("HTTP/1.1 200 OK\r\nNa".utf8) + [0xC3, 0xAF] + Array("ve: x\r\n\r\n".utf8)
        assertFails(wire, code: .malformedResponse, "invalid character 0xC3 in header name")
    }

    func testErrorMessagesEscapeUnprintableBytes() {
        assertFails("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\u{1B}[31m\r\n", "invalid chunk size '\\x1B[31m'")
    }

    func testParserStaysFailedUntilTheNextResponse() throws {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        let bad = Array("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n".utf8)
        XCTAssertThrowsError(try bad.withUnsafeBytes { try parser.parse($0) })
        XCTAssertThrowsError(try Array("more".utf8).withUnsafeBytes { try parser.parse($0) }) { error in
            XCTAssertEqual((error as? HTTP1Error)?.message, "invalid Content-Length 'x'")
        }
        parser.expectResponse(to: .get)
        let good = Array("HTTP/1.1 204 No Content\r\n\r\n".utf8)
        let result = try good.withUnsafeBytes { try parser.parse($0) }
        guard case .head(let head) = result.event else { return XCTFail("expected a head, got \(result.event)") }
        XCTAssertEqual(head.status.code, 204)
    }

    // MARK: - End of input

    func testConnectionClosedBeforeTheHead() {
        let error = closedError("")
        XCTAssertEqual(error?.code, .connectionClosed)
        XCTAssertEqual(error?.message, "connection closed before the response head")
        XCTAssertEqual(error?.bytesReceived, 0)
    }

    func testConnectionClosedInsideTheHead() {
        let error = closedError("HTTP/1.1 200 OK\r\nContent-Le")
        XCTAssertEqual(error?.code, .connectionClosed)
        XCTAssertEqual(error?.message, "connection closed after 27 bytes of an incomplete response head")
        XCTAssertEqual(error?.bytesReceived, 27)
    }

    func testConnectionClosedAfterAnInterimResponse() {
        let error = closedError("HTTP/1.1 100 Continue\r\n\r\n")
        XCTAssertEqual(error?.message, "connection closed after an interim 1xx response, before the final response head")
        XCTAssertEqual(error?.bytesReceived, 25)
    }

    func testTruncatedContentLengthBodyAtEOFReportsBytesReceived() {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n"
        let error = closedError(head + String(repeating: "x", count: 1200))
        XCTAssertEqual(error?.code, .connectionClosed)
        XCTAssertEqual(error?.message, "connection closed after 1200 of 5000 body bytes")
        XCTAssertEqual(error?.bytesReceived, head.utf8.count + 1200)
    }

    func testTruncatedChunkedBodyAtEOF() {
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        for (wire, bodyBytes) in [("5\r\nhel", 3), ("5\r\nhello", 5), ("5\r\nhello\r", 5), ("5\r\nhello\r\n", 5), ("5\r\nhello\r\na", 5)] {
            let error = closedError(head + wire)
            XCTAssertEqual(error?.message, "connection closed inside a chunked body after \(bodyBytes) body bytes (before the last chunk)", wire)
            XCTAssertEqual(error?.bytesReceived, (head + wire).utf8.count, wire)
        }
        let inTrailers = closedError(head + "0\r\nX-T: 1\r\n")
        XCTAssertEqual(inTrailers?.message, "connection closed inside the trailer section of a chunked body")
    }

    func testEndOfInputAfterTheLastContentLengthByteEndsTheResponse() throws {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        var wire = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        while !wire.isEmpty {
            let (_, consumed) = try wire.withUnsafeBytes { try parser.parse($0) }
            wire.removeFirst(consumed)
        }
        XCTAssertEqual(try parser.endOfInput(), .end(trailers: nil))
        XCTAssertTrue(parser.isComplete)
        XCTAssertEqual(try parser.endOfInput(), .needMoreData, "nothing is pending after the end")
    }

    // MARK: - Reuse

    func testPipelinedResponsesParseOneAfterAnotherFromOneBuffer() throws {
        var parser = HTTP1ResponseParser()
        let wire = Array(
            ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"
                + "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"
                + "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n").utf8)
        var offset = 0
        var bodies: [String] = []
        for method in [HTTPRequest.Method.get, .head, .get] {
            parser.expectResponse(to: method)
            XCTAssertTrue(parser.isAwaitingHead)
            var body: [UInt8] = []
            let start = offset
            responseLoop: while true {
                let (event, consumed) = try wire[offset...].withUnsafeBytes { try parser.parse($0) }
                switch event {
                case .needMoreData: return XCTFail("ran out of input")
                case .head: break
                case .body(let range): body += wire[(offset + range.lowerBound)..<(offset + range.upperBound)]
                case .end: offset += consumed; break responseLoop
                }
                offset += consumed
            }
            XCTAssertEqual(parser.bytesReceived, offset - start)
            XCTAssertTrue(parser.isComplete)
            bodies.append(String(decoding: body, as: UTF8.self))
        }
        XCTAssertEqual(bodies, ["one", "", "two"])
        XCTAssertEqual(offset, wire.count)
    }

    /// The parser reuses the previous head's fields where a head repeats them byte for byte; every head on
    /// a keep-alive connection must still come out exactly as a fresh parser would parse it, whether a field
    /// changed its value, its name (or only its case), fields were added or dropped, or a value was folded.
    func testHeadsOnOneConnectionEqualWhatAFreshParserSees() throws {
        let heads = [
            "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 04 Mar 2025 10:00:00 GMT\r\nX-Id: 1\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 04 Mar 2025 10:00:01 GMT\r\nX-Id: 2\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 04 Mar 2025 10:00:01 GMT\r\nX-Id: 2\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nserver: nginx\r\nDate: Tue, 04 Mar 2025 10:00:01 GMT\r\nX-Other: 2\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 404 Not Found\r\nserver: nginx\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 404 Gone Away\r\nserver: nginx\r\nContent-Length: 0\r\nA: 1\r\nB: 2\r\nC: caf\u{E9}\r\n\r\n",
            "HTTP/1.1 200 OK\r\nserver: nginx\r\nContent-Length: 0\r\nA: 1\r\n  folded\r\nB: 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\nserver: nginx\r\nContent-Length: 0\r\nA: 1\r\nB: 2\r\n\r\n",
            "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
        ]
        for feeding in Feeding.allCases {
            var parser = HTTP1ResponseParser()
            for text in heads {
                let wire = Array(text.utf8)
                parser.expectResponse(to: .get)
                var reused: HTTP1ResponseHead?
                var offset = 0
                let step = feeding == .oneByteAtATime ? 1 : wire.count
                while offset < wire.count, reused == nil {
                    let end = min(offset + step, wire.count)
                    var position = offset
                    while position <= end {
                        let (event, consumed) = try wire[position..<end].withUnsafeBytes { try parser.parse($0) }
                        position += consumed
                        if case .head(let head) = event { reused = head }
                        if case .needMoreData = event { break }
                        if reused != nil { break }
                    }
                    offset = position
                }
                let fresh = try run(wire, feeding: .whole).head
                XCTAssertEqual(reused, fresh, "\(feeding): \(text.debugDescription)")
                XCTAssertEqual(reused.map { $0.headers.map(\.name.rawName) }, fresh.headers.map(\.name.rawName))
                XCTAssertEqual(reused?.status.reasonPhrase, fresh.status.reasonPhrase)
                // Finish the (empty) body so the parser is ready for the next response.
                let (event, _) = try [UInt8]().withUnsafeBytes { try parser.parse($0) }
                XCTAssertEqual(event, .end(trailers: nil))
            }
        }
    }

    /// Parses `wire` (one response with an empty body, or a failing one) with `parser`, fed in two parts split
    /// at `split`; returns the head, or nil if parsing threw.
    func parseHead(_ wire: [UInt8], with parser: inout HTTP1ResponseParser, split: Int) -> HTTP1ResponseHead? {
        parser.expectResponse(to: .get)
        var pending: [UInt8] = []
        var head: HTTP1ResponseHead?
        do {
            for part in [wire[..<split], wire[split...]] {
                pending += part
                while true {
                    let (event, consumed) = try pending.withUnsafeBytes { try parser.parse($0) }
                    pending.removeFirst(consumed)
                    if case .head(let parsed) = event { head = parsed }
                    if case .end = event { return head }
                    if case .needMoreData = event { break }
                }
            }
        } catch {
            return nil
        }
        XCTFail("the response did not end")
        return nil
    }

    /// A head whose parsing stops part way (its bytes run out, or a line is invalid) after some of its fields
    /// replaced the previous head's must leave nothing of itself behind: every later head on the connection
    /// still comes out exactly as a fresh parser sees it, wherever the bytes were split.
    func testHeadsReusedAfterASplitOrFailedHeadEqualWhatAFreshParserSees() throws {
        let first = "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 04 Mar 2025 10:00:00 GMT\r\nX-Id: 1\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
        let changed = "HTTP/1.1 200 OK\r\nServer: other\r\nDate: Tue, 04 Mar 2025 10:00:01 GMT\r\nX-Ids: 2\r\nContent-Length: 0\r\nConnection: close\r\nExtra: 1\r\n\r\n"
        let failing = [
            "HTTP/1.1 200 OK\r\nServer: other\r\nDate: Tue, 04 Mar 2025 10:00:01 GMT\r\nX-Id: 2\r\nContent-Length: 0\r\nContent-Length: 1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nServer: other\r\nDate: Tue, 04 Mar 2025 10:00:01 GMT\r\nX-Id: 2\r\nBad Name: 1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 04 Mar 2025 10:00:00 GMT\r\nX-Id: 1\r\nContent-Length: 0\r\nConnection: keep-alive\r\nX: \u{7F}\r\n\r\n",
        ]
        let after = [first, changed, first]
        for middle in [changed] + failing {
            let middleWire = Array(middle.utf8)
            for split in 0...middleWire.count {
                var parser = HTTP1ResponseParser()
                XCTAssertNotNil(parseHead(Array(first.utf8), with: &parser, split: 0))
                let parsed = parseHead(middleWire, with: &parser, split: split)
                if failing.contains(middle) {
                    XCTAssertNil(parsed, "\(middle.debugDescription) split at \(split)")
                } else {
                    XCTAssertEqual(parsed, try run(middleWire, feeding: .whole).head, "split at \(split)")
                }
                for text in after {
                    let wire = Array(text.utf8)
                    let reused = parseHead(wire, with: &parser, split: min(split, wire.count))
                    let fresh = try run(wire, feeding: .whole).head
                    XCTAssertEqual(reused, fresh, "after \(middle.debugDescription) split at \(split)")
                    XCTAssertEqual(reused.map { $0.headers.map(\.name.rawName) }, fresh.headers.map(\.name.rawName))
                }
            }
        }
    }

    /// Framing fields repeated byte for byte from the previous head are still interpreted: a conflict with a
    /// new Content-Length, a repeated chunked coding and a repeated `Connection: close` all count.
    func testRepeatedFramingFieldsAreStillInterpreted() throws {
        var parser = HTTP1ResponseParser()
        let base = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\nKeep-Alive: timeout=5\r\n"
        let head = parseHead(Array((base + "\r\n").utf8), with: &parser, split: 0)
        XCTAssertEqual(head?.keepAlive, false)
        XCTAssertEqual(head?.keepAliveTimeout, 5)
        let again = parseHead(Array((base + "\r\n").utf8), with: &parser, split: 0)
        XCTAssertEqual(again, head)
        XCTAssertNil(parseHead(Array((base + "Content-Length: 1\r\n\r\n").utf8), with: &parser, split: 0))
        XCTAssertEqual(parseHead(Array((base + "\r\n").utf8), with: &parser, split: 0), head)

        let chunked = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8)
        XCTAssertEqual(parseHead(chunked, with: &parser, split: 0), try run(chunked, feeding: .whole).head)
        XCTAssertEqual(parseHead(chunked, with: &parser, split: 0), try run(chunked, feeding: .whole).head)
        let twice = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8)
        XCTAssertNil(parseHead(twice, with: &parser, split: 0))
        // A repeated line followed by an obs-fold continuation is folded, not reused as it was.
        let folded = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n  , gzip\r\n\r\n".utf8)
        parser.expectResponse(to: .get)
        XCTAssertNotNil(parseHead(chunked, with: &parser, split: 0))
        // Folded, the codings are "chunked , gzip": the final coding is gzip, which this client refuses.
        XCTAssertThrowsError(try folded.withUnsafeBytes { [parser] bytes in
            var copy = parser
            copy.expectResponse(to: .get)
            return try copy.parse(bytes)
        }) { error in
            XCTAssertTrue("\(error)".contains("'chunked, gzip' does not end in chunked"), "\(error)")
        }
    }

    /// The common chunk-size line (hex digits and CRLF) takes a shortcut; the lines around it must not.
    func testChunkSizeLinesOfEveryShape() throws {
        let body = try parseAllWays(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "1\r\na\r\nA\r\n0123456789\r\nf;ext=1\r\n0123456789abcde\r\n00000000000000000000002\r\nxy\r\n"
                + "3 \r\nxyz\n1\nz\r\n0\r\n\r\n").body
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "a0123456789" + "0123456789abcde" + "xy" + "xyz" + "z")
        assertFails("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1x\r\na\r\n0\r\n\r\n", "invalid chunk size")
        assertFails("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n", "missing CRLF after chunk data")
        assertFails("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\r\n0\r\n\r\n", "missing CRLF after chunk data")
    }

    // MARK: - Trust: transfer codings, versions, status codes, chunk lines, unclean ends (docs/framing.md)

    /// RFC 9112 §7: gzip, x-gzip and deflate under chunked are reported in the head for the transport to
    /// decode; the parser only de-chunks. Plain chunked reports none.
    func testKnownTransferCodingsUnderChunkedAreReportedInTheHead() throws {
        let cases: [(codings: String, coding: HTTP1TransferCoding?)] = [
            ("Transfer-Encoding: gzip, chunked", .gzip),
            ("Transfer-Encoding: x-gzip, chunked", .gzip),
            ("Transfer-Encoding: GZIP,chunked", .gzip),
            ("Transfer-Encoding: deflate\r\nTransfer-Encoding: chunked", .deflate),
            ("Transfer-Encoding: chunked", nil),
        ]
        for (codings, coding) in cases {
            let parsed = try parseAllWays("HTTP/1.1 200 OK\r\n\(codings)\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
            XCTAssertEqual(parsed.head.transferCoding, coding, codings)
            XCTAssertEqual(parsed.body, Array("abc".utf8), codings)
            XCTAssertTrue(parsed.head.keepAlive, codings)
        }
        // A Content-Length alongside is ignored (§6.3 rule 3) and the connection is not reused.
        let both = try parseAllWays("HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")
        XCTAssertEqual(both.head.transferCoding, .gzip)
        XCTAssertFalse(both.head.keepAlive)
    }

    /// RFC 9112 §6.1: a recipient that does not understand a transfer coding must refuse the message; the
    /// error names the coding. Stacked compression codings and a final coding other than chunked are refused
    /// too. A response without a body (HEAD, 204, 304) carries no coded bytes, so its codings do not matter.
    func testUnknownStackedOrNonFinalTransferCodingsAreRefusedByName() throws {
        let ok = "HTTP/1.1 200 OK\r\n"
        let cases: [(wire: String, fragment: String)] = [
            (ok + "Transfer-Encoding: br, chunked\r\n\r\n0\r\n\r\n", "unsupported transfer coding 'br'"),
            (ok + "Transfer-Encoding: compress, chunked\r\n\r\n0\r\n\r\n", "unsupported transfer coding 'compress'"),
            (ok + "Transfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n", "unsupported transfer coding 'identity'"),
            (ok + "Transfer-Encoding: gzip\r\nTransfer-Encoding: zstd, chunked\r\n\r\n0\r\n\r\n", "unsupported transfer coding 'zstd'"),
            (ok + "Transfer-Encoding: br\r\n\r\nabc", "unsupported transfer coding 'br'"),
            (ok + "Transfer-Encoding: gzip\r\n\r\nabc", "Transfer-Encoding 'gzip' does not end in chunked"),
            (ok + "Transfer-Encoding: deflate\r\n\r\nabc", "Transfer-Encoding 'deflate' does not end in chunked"),
            (ok + "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n",
             "Transfer-Encoding 'chunked, gzip' does not end in chunked"),
            (ok + "Transfer-Encoding: gzip, deflate, chunked\r\n\r\n0\r\n\r\n", "stacked transfer codings 'gzip, deflate, chunked'"),
            (ok + "Transfer-Encoding: gzip, gzip, chunked\r\n\r\n0\r\n\r\n", "stacked transfer codings"),
        ]
        for (wire, fragment) in cases {
            assertFails(wire, fragment)
        }
        let head = try parseAllWays(ok + "Transfer-Encoding: br, chunked\r\n\r\n", method: .head)
        XCTAssertNil(head.head.transferCoding)
        for status in ["204 No Content", "304 Not Modified"] {
            let parsed = try parseAllWays("HTTP/1.1 \(status)\r\nTransfer-Encoding: gzip\r\n\r\n")
            XCTAssertNil(parsed.head.transferCoding, status)
        }
    }

    /// RFC 9110 §2.5: a higher minor version of a major version we implement is processed as the highest
    /// minor version we implement. HTTP/1.2 … HTTP/1.9 are HTTP/1.1 (persistent by default, chunked allowed).
    func testMinorVersionsAboveOneAreHandledAsHTTP11() throws {
        for minor in 2...9 {
            let plain = try parseAllWays("HTTP/1.\(minor) 200 OK\r\nContent-Length: 2\r\n\r\nok")
            XCTAssertEqual(plain.head.version, .http1_1, "1.\(minor)")
            XCTAssertTrue(plain.head.keepAlive, "1.\(minor)")
            let chunked = try parseAllWays("HTTP/1.\(minor) 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
            XCTAssertEqual(chunked.body, Array("ok".utf8), "1.\(minor)")
        }
    }

    /// RFC 9110 §15: status codes are three digits, and the first digit is the class, 1 to 5. Codes 600–999
    /// have no class a client could fall back on (§15: "treat it as x00 of its class"), so they are refused;
    /// unknown codes inside a class are kept as received.
    func testStatusCodesOutsideTheFiveClassesAreRefused() throws {
        for code in ["000", "099", "600", "700", "999"] {
            assertFails("HTTP/1.1 \(code) Whatever\r\nContent-Length: 0\r\n\r\n", "invalid status code \(Int(code)!)")
        }
        for code in [199, 299, 418, 599] where code >= 200 {
            let parsed = try parseAllWays("HTTP/1.1 \(code) Whatever\r\nContent-Length: 0\r\n\r\n")
            XCTAssertEqual(parsed.head.status.code, code)
        }
        // An unknown 1xx is an interim response, skipped like 100 and 103.
        XCTAssertEqual(try parseAllWays("HTTP/1.1 199 Odd\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").head.status.code, 200)
    }

    /// RFC 9112 §7.1.1: `chunk-size [ chunk-ext ]` with `chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] )`,
    /// name a token and value a token or quoted-string. Accepted besides the grammar: whitespace (SP, HTAB)
    /// before the CRLF, as h11 does. Everything else is refused.
    func testChunkSizeLineWhitespaceAndExtensionsAcceptedAsTheGrammarSays() throws {
        let accepted = [
            "3", "3 ", "3\t", "3 \t ", "003", "3;a", "3;a=b", "3 ;a=b", "3\t;a", "3; a", "3;a =b", "3;a= b", "3;a = b",
            "3;a=b;c", "3;a=b ;c=d", "3;a;b;c", "3;a=\"b c\"", "3;a=\"b;c=d\"", "3;a=\"\\\"q\\\\\"", "3;a=\"\"",
            "3;!#$%&'*+-.^_`|~=x", "3;a=b ", "3;a=\"v\" \t",
        ]
        for line in accepted {
            // The same extensions on the last chunk.
            let last = "0" + line.drop(while: \.isHexDigit)
            let parsed = try parseAllWays("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(line)\r\nabc\r\n\(last)\r\n\r\n")
            XCTAssertEqual(parsed.body, Array("abc".utf8), line.debugDescription)
        }
        let refused: [(line: String, fragment: String)] = [
            (" 3", "invalid chunk size '3'"),
            ("\t3", "invalid chunk size"),
            ("3 3", "invalid chunk size '3 3'"),
            ("3x", "invalid chunk size '3x'"),
            ("+3", "invalid chunk size '+3'"),
            ("3;", "invalid chunk extension ';'"),
            ("3; ", "invalid chunk extension"),
            ("3;;a", "invalid chunk extension ';;a'"),
            ("3;=b", "invalid chunk extension ';=b'"),
            ("3;a=", "invalid chunk extension ';a='"),
            ("3;a b", "invalid chunk extension ';a b'"),
            ("3;a=b c", "invalid chunk extension ';a=b c'"),
            ("3;a=\"b", "invalid chunk extension ';a=\"b'"),
            ("3;a=\"b\"c", "invalid chunk extension"),
            ("3;a=b\"", "invalid chunk extension"),
            ("3;a(b)", "invalid chunk extension"),
            ("3;a=b,c", "invalid chunk extension"),
            ("3 ,a", "invalid chunk size"),
            ("3;a\u{1}", "control character 0x01 in chunk extension"),
            ("3;a=\"\u{7F}\"", "control character 0x7F in chunk extension"),
            ("3\r;a", "invalid chunk size"),
            ("3\u{0B}", "invalid chunk size"),
        ]
        for (line, fragment) in refused {
            assertFails("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(line)\r\nabc\r\n0\r\n\r\n", fragment)
            // The last chunk's line is held to the same rules.
            guard line.hasPrefix("3") else { continue }
            assertFails("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\(line.dropFirst())\r\n\r\n",
                        fragment.replacingOccurrences(of: "'3", with: "'0"))
        }
    }

    /// RFC 9112 §9.8: a body delimited by the connection's close is complete only if the close was clean
    /// (over TLS: close_notify). An unclean end truncates it; framing that proves completeness still ends.
    func testUncleanEndOfInputIsATruncationOnlyForABodyReadUntilClose() throws {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        let wire = Array("HTTP/1.1 200 OK\r\n\r\nsome body".utf8)
        _ = try wire.withUnsafeBytes { try parser.parse($0) }
        let body = try wire.withUnsafeBytes { try parser.parse(UnsafeRawBufferPointer(rebasing: $0[19...])) }
        XCTAssertEqual(body.event, .body(0..<9))
        XCTAssertThrowsError(try parser.endOfInput(unclean: true)) { error in
            let error = error as? HTTP1Error
            XCTAssertEqual(error?.code, .connectionClosed)
            XCTAssertEqual(error?.bytesReceived, wire.count)
            XCTAssertTrue(error?.message.contains("close_notify") == true, "\(String(describing: error))")
        }
        // A clean end of the same body ends it.
        XCTAssertEqual(try parseAllWays(wire, closeAtEnd: true).body, Array("some body".utf8))
        // Complete Content-Length and chunked bodies, and bodiless responses, end whatever the close was like.
        for complete in ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "HTTP/1.1 204 No Content\r\n\r\n"] {
            var parser = HTTP1ResponseParser()
            parser.expectResponse(to: .get)
            let bytes = Array(complete.utf8)
            var offset = 0
            while offset < bytes.count {
                offset += try bytes.withUnsafeBytes { try parser.parse(UnsafeRawBufferPointer(rebasing: $0[offset...])).consumed }
            }
            XCTAssertNoThrow(try parser.endOfInput(unclean: true), complete)
        }
    }

    // MARK: - Byte helpers

    func testTokenMasksMatchRFC9110TokenCharacters() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for byte in UInt8.min...UInt8.max {
            XCTAssertEqual(ByteScanner.isTokenCharacter(byte), tchar.contains(byte), "byte \(byte)")
        }
    }

    func testByteEqualitySeesADifferenceAtEveryPosition() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            XCTAssertTrue(bytes.withUnsafeBytes { a in bytes.withUnsafeBytes { b in ByteScanner.equals(a, b) } })
            for position in 0..<length {
                var other = bytes
                other[position] ^= 0x20
                XCTAssertFalse(bytes.withUnsafeBytes { a in other.withUnsafeBytes { b in ByteScanner.equals(a, b) } }, "length \(length) position \(position)")
            }
            let longer = bytes + [0]
            XCTAssertFalse(bytes.withUnsafeBytes { a in longer.withUnsafeBytes { b in ByteScanner.equals(a, b) } })
        }
    }

    func testByteSearchFindsTheFirstMatchAtEveryPosition() {
        for length in 0..<40 {
            for position in 0..<max(length, 1) {
                var bytes = [UInt8](repeating: 0x0B, count: length)
                if position < length {
                    bytes[position] = 0x0A
                    // A second match and bytes next to 0x0A in value must not confuse the word-at-a-time scan.
                    if position + 3 < length { bytes[position + 3] = 0x0A }
                    if position > 0 { bytes[position - 1] = 0x09 }
                }
                for start in 0...length {
                    let expected = bytes[min(start, length)...].firstIndex(of: 0x0A)
                    let found = bytes.withUnsafeBytes { ByteScanner.firstIndex(of: 0x0A, in: $0, from: start) }
                    XCTAssertEqual(found, expected, "length \(length) position \(position) start \(start)")
                }
            }
        }
    }
}
