import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// `HTTPClientRequest` keeps most fields in a shared copy-on-write box (headers beside it), with the parsed
/// URL cached inside; copies must still behave as values.
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

    func testTheProgressHandlerIsAFieldThatCopiesKeepApart() {
        var original = HTTPClientRequest(url: "http://127.0.0.1/a")
        XCTAssertNil(original.progressHandler)
        original.progressHandler = HTTPProgressHandler(minimumInterval: .milliseconds(7)) { _ in }
        var copy = original
        copy.progressHandler = nil
        XCTAssertNotNil(original.progressHandler)
        XCTAssertEqual(original.progressHandler?.minimumInterval, .milliseconds(7))
        XCTAssertNil(copy.progressHandler)
        copy.progressHandler?.minimumFraction = 0.5  // optional chaining through the setter: still none
        XCTAssertNil(copy.progressHandler)
        original.progressHandler?.minimumFraction = 0.5
        XCTAssertEqual(original.progressHandler?.minimumFraction, 0.5)
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
        XCTAssertEqual(try request.httpURL().port, 8080)
        let before = request
        request.url = "http://127.0.0.1:9090/y"
        XCTAssertEqual(try before.httpURL().port, 8080)
        XCTAssertEqual(try request.httpURL().port, 9090, "a stale parsed URL must not be trusted")
    }

    func testTheURLIsParsedOnceAndForgottenWhenItChanges() throws {
        var request = HTTPClientRequest(url: "http://a.test/x")
        XCTAssertFalse(request.hasParsedURL, "parsed lazily, not on init")
        let box = request.storageIdentity
        XCTAssertEqual(try request.httpURL().host, "a.test")
        XCTAssertTrue(request.hasParsedURL)
        XCTAssertEqual(request.storageIdentity, box, "kept without copying the box")

        request.method = .post  // another field: the parse stays
        XCTAssertTrue(request.hasParsedURL)
        request.url += "y"  // the URL: it goes
        XCTAssertFalse(request.hasParsedURL)
        XCTAssertEqual(try request.httpURL().path, "/xy")
    }

    func testAWriteToASharedRequestCopiesTheParseWithTheBox() throws {
        let original = HTTPClientRequest(url: "http://a.test/x")
        _ = try original.httpURL()
        var copy = original
        copy.method = .put
        XCTAssertNotEqual(copy.storageIdentity, original.storageIdentity)
        XCTAssertTrue(copy.hasParsedURL, "the copy's box starts with the parse")
        copy.url = "http://b.test/"
        XCTAssertEqual(try copy.httpURL().host, "b.test")
        XCTAssertEqual(try original.httpURL().host, "a.test")
    }

    func testAnInvalidURLIsReportedEachTimeAndNotKept() {
        let request = HTTPClientRequest(url: "ftp://a.test/")
        for _ in 0..<2 {
            XCTAssertThrowsError(try request.httpURL()) { XCTAssertEqual(($0 as? HTTPClientError)?.code, .invalidURL) }
        }
        XCTAssertFalse(request.hasParsedURL)
    }

    func testARedirectHopCarriesTheResolvedURLAlreadyParsed() async throws {
        let peer = ScriptedPeer([.redirect(302, to: "/next?q=1#top"), .init(.ok)])
        _ = try await peer.send(HTTPClientRequest(url: "http://a.test/start"), through: [RedirectMiddleware()])
        let hop = peer.requests[1]
        XCTAssertEqual(hop.url, "http://a.test/next?q=1#top")
        XCTAssertTrue(hop.hasParsedURL)
        XCTAssertEqual(try hop.httpURL(), try HTTPURL(hop.url))
    }

    func testRequestsSharingABoxMayParseItAtOnce() async throws {
        let request = HTTPClientRequest(url: "http://a.test:8080/x")
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 { group.addTask { try request.httpURL().port } }
            for try await port in group { XCTAssertEqual(port, 8080) }
        }
        XCTAssertTrue(request.hasParsedURL)
    }
}
