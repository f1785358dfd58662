import Foundation
import HTTPTypes
import XCTest
@testable import AsyncHTTP

/// `URLEncodedForm` and `MultipartForm` as bytes, without a network (httpbin's view of them is in
/// `UploadIntegrationTests`).
final class FormEncodingTests: XCTestCase {
    func testURLEncodingFollowsTheWHATWGSerializerAndKeepsRepeatedNamesInOrder() {
        var form = URLEncodedForm()
        form.append("q", "swift http")
        form.append("tag", "a&b=c")
        form.append("tag", "*-._~!")
        form.append("ünï", "€/+")
        XCTAssertEqual(String(decoding: form.encoded(), as: UTF8.self),
                       "q=swift+http&tag=a%26b%3Dc&tag=*-._%7E%21&%C3%BCn%C3%AF=%E2%82%AC%2F%2B")
    }

    func testSetReplacesEveryPairOfTheNameWhereTheFirstWas() {
        var form = URLEncodedForm([("a", "1"), ("b", "2"), ("a", "3")])
        form.set("a", "9")
        XCTAssertEqual(String(decoding: form.encoded(), as: UTF8.self), "a=9&b=2")
    }

    func testLatin1EncodesBytesAndWritesUnmappableCharactersAsReferences() {
        var form = URLEncodedForm()
        form.append("name", "café €")
        XCTAssertEqual(String(decoding: form.encoded(encoding: .isoLatin1), as: UTF8.self), "name=caf%E9+%26%238364%3B")
        var request = HTTPClientRequest(url: "http://127.0.0.1/")
        request.setForm(form, encoding: .isoLatin1)
        XCTAssertEqual(request.headers[.contentType], "application/x-www-form-urlencoded; charset=ISO-8859-1")
    }

    func testAFormMakesAGETAPOSTButLeavesAChosenMethod() throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1/")
        request.setForm(URLEncodedForm([("a", "1")]))
        XCTAssertEqual(request.method, .post)
        XCTAssertEqual(request.headers[.contentType], "application/x-www-form-urlencoded")
        XCTAssertEqual(request.body?.length, 3)

        var put = HTTPClientRequest(url: "http://127.0.0.1/")
        put.method = .put
        var multipart = MultipartForm()
        multipart.append("a", "1")
        try put.setForm(multipart)
        XCTAssertEqual(put.method, .put)
        XCTAssertTrue(put.headers[.contentType]!.hasPrefix("multipart/form-data; boundary=AsyncHTTPBoundary"))
    }

    func testMultipartBytesWithAFixedBoundary() async throws {
        var form = MultipartForm(boundary: "XyZ")
        form.append("title", "Hello \"quoted\"\r\nname")
        form.append("file", data: [0, 1, 2, 255], filename: "a.png")
        form.append("note", data: Array("text".utf8), filename: "n.txt", contentType: "text/x-custom")
        let (body, contentType) = try form.makeBody()
        XCTAssertEqual(contentType, "multipart/form-data; boundary=XyZ")
        let bytes = try await collect(body)
        let expected: [UInt8] = Array("""
        --XyZ\r
        Content-Disposition: form-data; name="title"\r
        \r
        Hello "quoted"\r
        name\r
        --XyZ\r
        Content-Disposition: form-data; name="file"; filename="a.png"\r
        Content-Type: image/png\r
        \r

        """.utf8) + [0, 1, 2, 255] + Array("""
        \r
        --XyZ\r
        Content-Disposition: form-data; name="note"; filename="n.txt"\r
        Content-Type: text/x-custom\r
        \r
        text\r
        --XyZ--\r

        """.utf8)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), String(decoding: expected, as: UTF8.self))
        XCTAssertEqual(bytes, expected)
        XCTAssertEqual(body.length, expected.count)
    }

    /// A part's own fields (curl's `;headers=`): after Content-Disposition and Content-Type, in order; with curl's
    /// rules, a Content-Disposition among them is sent instead of the part's, and a Content-Type is the part's type
    /// only when none is given (in the type's place, not again after it); a CR LF in a value cannot start a line
    /// (HTTPField makes it spaces); the form's length counts them.
    func testPartHeadersFollowThePartsOwnFieldsAndCanReplaceThem() async throws {
        var form = MultipartForm(boundary: "B")
        var extra = HTTPFields()
        extra[HTTPField.Name("X-Note")!] = "one"
        extra.append(HTTPField(name: HTTPField.Name("X-Evil")!, value: "a\r\n--B\r\nX: y"))
        form.append("a", "text", headers: extra)
        form.append("b", data: [1], filename: "b.bin", contentType: "x/own", headers: [.contentType: "x/mine"])
        var typed = HTTPFields()
        typed[HTTPField.Name("X-First")!] = "1"
        typed[.contentType] = "x/from-field"
        form.append("d", data: [3], filename: "d.png", headers: typed)
        form.append("c", rawValue: [2], headers: [.contentDisposition: "form-data; name=\"renamed\""])
        let (body, _) = try form.makeBody()
        let text = String(decoding: try await collect(body), as: UTF8.self)
        XCTAssertTrue(text.contains("Content-Disposition: form-data; name=\"a\"\r\nX-Note: one\r\nX-Evil: a  --B  X: y\r\n\r\ntext\r\n"), text)
        XCTAssertTrue(text.contains("Content-Disposition: form-data; name=\"b\"; filename=\"b.bin\"\r\nContent-Type: x/own\r\n\r\n"), text)
        XCTAssertFalse(text.contains("x/mine"), "the type given wins, as curl's type= over a headers= Content-Type")
        XCTAssertTrue(text.contains("name=\"d\"; filename=\"d.png\"\r\nContent-Type: x/from-field\r\nX-First: 1\r\n\r\n\u{3}\r\n"), text)
        XCTAssertFalse(text.contains("image/png"), "the field's type comes before a guess from the file name")
        XCTAssertTrue(text.contains("--B\r\nContent-Disposition: form-data; name=\"renamed\"\r\n\r\n\u{2}\r\n"), text)
        XCTAssertEqual(text.components(separatedBy: "\r\n--B").count, 5, "three parts' ends and the form's: nothing in a value made a delimiter")
        XCTAssertEqual(body.length, text.utf8.count)
    }

    /// A streamed part that yields more or less than its declared length fails the form at that part: the form's
    /// length is the parts' sum, and a body that stops at its length (as a known-length body now does) would
    /// otherwise go out with the closing delimiter cut off, or padded.
    func testAStreamedPartThatRunsOverOrShortOfItsLengthFailsTheForm() async throws {
        for (yielded, message) in [(20, "part 's' produced more than its declared length of 10 bytes"),
                                   (5, "part 's' ended after 5 of its declared 10 bytes")] {
            var form = MultipartForm(boundary: "B")
            let (chunks, continuation) = AsyncStream<[UInt8]>.makeStream()
            continuation.yield(Array(repeating: 7, count: yielded))
            continuation.finish()
            form.append("s", body: .stream(chunks, length: .known(10)))
            form.append("after", "x")
            let (body, _) = try form.makeBody()
            do {
                let bytes = try await collect(body)
                XCTFail("\(yielded) bytes for 10 made a form of \(bytes.count) bytes")
            } catch let error as HTTPClientError {
                XCTAssertEqual(error.code, .invalidRequest)
                XCTAssertTrue(error.message.contains(message), error.message)
            }
        }
    }

    func testNamesAreEscapedAsBrowsersDo() async throws {
        var form = MultipartForm(boundary: "b")
        form.append("a\"b\r\nc", data: [], filename: "x\".txt")
        let bytes = try await collect(try form.makeBody().body)
        XCTAssertTrue(String(decoding: bytes, as: UTF8.self)
            .contains(#"Content-Disposition: form-data; name="a%22b%0D%0Ac"; filename="x%22.txt""#))
    }

    func testABoundaryFoundInAPartIsRefusedAndARandomOneAvoidsThePart() throws {
        var form = MultipartForm(boundary: "secret")
        form.append("f", "this value contains\r\n--secret")
        XCTAssertThrowsError(try form.makeBody()) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .invalidRequest)
        }
        var random = MultipartForm()
        random.append("f", "plain")
        let type = try random.makeBody().contentType
        let boundary = String(type.dropFirst("multipart/form-data; boundary=".count))
        XCTAssertEqual(boundary.count, "AsyncHTTPBoundary".count + 24)
        XCTAssertNotEqual(try random.makeBody().contentType, type, "a new boundary per body")
        XCTAssertThrowsError(try MultipartForm(boundary: "bad\u{1}").makeBody())
        // A boundary with characters a token may not hold goes in quotes (it used to go bare: a strict parser then
        // rejected the request, or cut the boundary at the '=' and found no parts).
        for (boundary, field) in [("----=_Part_0", "boundary=\"----=_Part_0\""), ("a b", "boundary=\"a b\""),
                                  ("plain-1.x_y", "boundary=plain-1.x_y")] {
            var form = MultipartForm(boundary: boundary)
            form.append("k", "v")
            XCTAssertEqual(try form.makeBody().contentType, "multipart/form-data; " + field)
        }
    }

    func testFilePartsAreStreamedWithTheLengthKnownUpFrontAndAStreamPartMakesItChunked() async throws {
        let path = try temporaryFile(bytes: Array(repeating: 7, count: 300_000), name: "part.jpg")
        var form = MultipartForm(boundary: "B")
        form.append("a", "1")
        try form.appendFile("photo", path: path)
        let (body, _) = try form.makeBody()
        XCTAssertTrue(body.isReplayable)
        let first = try await collect(body)
        XCTAssertEqual(body.length, first.count)
        XCTAssertTrue(String(decoding: first.prefix(200), as: UTF8.self).contains(
            "name=\"photo\"; filename=\"part.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n"))
        let value1 = try await collect(body)
        XCTAssertEqual(value1, first, "replayed: each send re-opens the file")

        form.append("live", body: .stream(AsyncStream<[UInt8]> { $0.yield([1, 2]); $0.finish() }))
        let (chunked, _) = try form.makeBody()
        XCTAssertNil(chunked.length)
        XCTAssertFalse(chunked.isReplayable)
    }

    /// A part's known length is the caller's: `.known(.max)` trapped the process adding it up in makeBody (and
    /// setForm), and a negative one shrank the form's Content-Length below the bytes sent. Both are invalidRequest now.
    func testAPartLengthThatOverflowsOrIsNegativeIsAnInvalidRequest() throws {
        func stream(_ length: Int) -> HTTPClientRequest.Body {
            .stream(AsyncStream<[UInt8]> { $0.finish() }, length: .known(length))
        }
        var huge = MultipartForm(boundary: "B")
        huge.append("a", "1")
        huge.append("huge", body: stream(.max))
        XCTAssertThrowsError(try huge.makeBody()) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .invalidRequest)
            XCTAssertTrue("\(error)".contains("multipart form length overflows"), "\(error)")
            XCTAssertTrue("\(error)".contains("'huge'"), "names the part: \(error)")
        }
        var request = HTTPClientRequest(url: "http://a.test/upload")
        XCTAssertThrowsError(try request.setForm(huge)) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .invalidRequest)
        }
        XCTAssertNil(request.body)

        var two = MultipartForm(boundary: "B")
        two.append("first", body: stream(.max / 2))
        two.append("second", body: stream(.max / 2))
        XCTAssertThrowsError(try two.makeBody()) { error in
            XCTAssertTrue("\(error)".contains("'second'"), "\(error)")
        }

        var negative = MultipartForm(boundary: "B")
        negative.append("a", "1")
        negative.append("minus", body: stream(-10))
        XCTAssertThrowsError(try negative.makeBody()) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .invalidRequest)
            XCTAssertTrue("\(error)".contains("part 'minus' has a negative length"), "\(error)")
        }
        // After a part of unknown length too: the negative one is refused, not hidden by the chunked total.
        var unknownFirst = MultipartForm(boundary: "B")
        unknownFirst.append("live", body: .stream(AsyncStream<[UInt8]> { $0.finish() }))
        unknownFirst.append("minus", body: stream(-1))
        XCTAssertThrowsError(try unknownFirst.makeBody())
    }

    func testMissingFilesFailWhenAddedAndContentTypesComeFromTheExtension() {
        var form = MultipartForm()
        XCTAssertThrowsError(try form.appendFile("f", path: "/nonexistent/dir/file.bin")) { error in
            let error = error as? HTTPClientError
            XCTAssertEqual(error?.code, .invalidRequest)
            XCTAssertTrue(error?.message.contains("/nonexistent/dir/file.bin") == true, "\(String(describing: error))")
        }
        XCTAssertThrowsError(try HTTPClientRequest.Body.file("/")) { error in
            XCTAssertTrue((error as? HTTPClientError)?.message.contains("directory") == true)
        }
        XCTAssertEqual(MediaTypes.forFileName("A.JPG"), "image/jpeg")
        XCTAssertEqual(MediaTypes.forFileName("report.pdf"), "application/pdf")
        XCTAssertEqual(MediaTypes.forFileName("noext"), "application/octet-stream")
        XCTAssertEqual(MediaTypes.forFileName(".hidden"), "application/octet-stream")
    }

    func testFileBodyRangeAndShrinkingFile() async throws {
        let bytes = (0..<1000).map { UInt8($0 % 251) }
        let path = try temporaryFile(bytes: bytes, name: "range.bin")
        let body = try HTTPClientRequest.Body.file(URL(fileURLWithPath: path), offset: 100, length: 50)
        XCTAssertThrowsError(try HTTPClientRequest.Body.file(URL(string: "https://example.com/x")!))
        XCTAssertEqual(body.length, 50)
        let value2 = try await collect(body)
        XCTAssertEqual(value2, Array(bytes[100..<150]))
        XCTAssertThrowsError(try HTTPClientRequest.Body.file(path, offset: 990, length: 20))
        let whole = try HTTPClientRequest.Body.file(path)
        try Data(bytes.prefix(10)).write(to: URL(fileURLWithPath: path))
        do {
            _ = try await collect(whole)
            XCTFail("a file that shrank must not be sent short")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest)
        }
    }

    // MARK: Helpers

    func collect(_ body: HTTPClientRequest.Body) async throws -> [UInt8] {
        switch body.storage {
        case .bytes(let bytes): return bytes
        case .stream(_, _, let makeSource):
            let source = try makeSource()
            var out: [UInt8] = []
            for _ in 0..<100_000 {
                guard let chunk = try await source.next() else { return out }
                out += chunk
            }
            XCTFail("the source did not end")
            return out
        }
    }

    func temporaryFile(bytes: [UInt8], name: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("forms-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }
}
