import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// `HTTPClientRequest` keeps most fields in a shared copy-on-write box (headers and the parsed URL beside it);
/// copies must still behave as values.
final class HTTPClientRequestTests: XCTestCase {
    func testCopiesAreIndependentValues() {
        var original = HTTPClientRequest(url: "http://127.0.0.1/a")
        original.headers[.accept] = "text/plain"
        original.credentials = HTTPCredentials(username: "u", password: "p")
        var copy = original

        copy.url = "http://127.0.0.1/b"
        copy.headers[.accept] = "application/json"
        copy.headers[.userAgent] = "copy"
        copy.method = .post
        copy.credentials = nil
        copy.persistentConnection = false

        XCTAssertEqual(original.url, "http://127.0.0.1/a")
        XCTAssertEqual(original.headers[.accept], "text/plain")
        XCTAssertNil(original.headers[.userAgent])
        XCTAssertEqual(original.method, .get)
        XCTAssertEqual(original.credentials?.username, "u")
        XCTAssertTrue(original.persistentConnection)

        XCTAssertEqual(copy.url, "http://127.0.0.1/b")
        XCTAssertEqual(copy.headers[.accept], "application/json")
        XCTAssertEqual(copy.method, .post)
        XCTAssertNil(copy.credentials)
        XCTAssertFalse(copy.persistentConnection)
    }

    func testInPlaceMutationOfAUniqueRequestKeepsEveryField() {
        var request = HTTPClientRequest(url: "http://127.0.0.1/")
        for index in 0..<100 { request.headers.append(HTTPField(name: .accept, value: "type/\(index)")) }
        request.setHeader("X-Trace", "1")
        request.setHeader("Bad Name", "x")  // refused: recorded, not set
        XCTAssertEqual(request.headers[values: .accept].count, 100)
        XCTAssertEqual(request.headers[HTTPField.Name("X-Trace")!], "1")
        XCTAssertEqual(request.headerProblems.count, 1)
    }

    func testCopyTakenBeforeAMutationKeepsTheOldParsedURL() throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:8080/x")
        request.parsedURL = .init(source: request.url, url: try HTTPURL(request.url))
        let before = request
        request.url = "http://127.0.0.1:9090/y"
        XCTAssertEqual(try before.httpURL().port, 8080)
        XCTAssertEqual(try request.httpURL().port, 9090, "a stale parsedURL must not be trusted")
    }
}
