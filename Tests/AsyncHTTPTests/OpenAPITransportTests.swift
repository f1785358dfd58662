import Foundation
import OpenAPIRuntime
import XCTest
@testable import AsyncHTTP
@testable import AsyncHTTPOpenAPI

/// ``AsyncHTTPTransport``'s own edge cases, called as a generated client calls it: bodies empty, of known and
/// unknown length both ways, streamed (not collected); a connection dropped mid-body (the iteration throws, no
/// hang); cancellation before the head and mid-body (the connection is closed); a failing request body; the
/// per-request timeout and `prepareRequest`; replayable and one-shot bodies on a 307; joining the server URL
/// and the path. Peers: the in-process NIO server, the FaultServer and httpbin.
final class OpenAPITransportTests: XCTestCase {
    /// A response body must never take longer than this to end, one way or another.
    static let bound: Duration = .seconds(10)

    static func clientConfiguration() -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.inactivityTimeout = .seconds(10) // bounded: no test can hang
        configuration.proxy = .none
        return configuration
    }

    static func send(
        _ transport: AsyncHTTPTransport, _ method: HTTPRequest.Method, _ baseURL: String, _ path: String,
        headers: HTTPFields = [:], body: HTTPBody? = nil, operationID: String = "test"
    ) async throws -> (HTTPResponse, HTTPBody?) {
        try await transport.send(
            HTTPRequest(method: method, scheme: nil, authority: nil, path: path, headerFields: headers),
            body: body, baseURL: URL(string: baseURL)!, operationID: operationID)
    }

    static func collect(_ body: HTTPBody?) async throws -> (bytes: [UInt8], chunks: Int) {
        guard let body else { return ([], 0) }
        var bytes: [UInt8] = []
        var chunks = 0
        for try await chunk in body {
            bytes += chunk
            chunks += 1
        }
        return (bytes, chunks)
    }

    static func chunks(_ payload: [UInt8], size: Int) -> AsyncThrowingStream<HTTPBody.ByteChunk, any Error> {
        AsyncThrowingStream { continuation in
            for start in stride(from: 0, to: payload.count, by: size) {
                continuation.yield(payload[start..<min(start + size, payload.count)])
            }
            continuation.finish()
        }
    }

    // MARK: Bodies

    func testEmptyBodiesBothWays() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient(configuration: Self.clientConfiguration())
        let transport = AsyncHTTPTransport(client: client)

        let (echo, echoBody) = try await Self.send(transport, .post, server.baseURL, "/echo", body: HTTPBody())
        XCTAssertEqual(echo.status, .ok)
        XCTAssertEqual(echo.headerFields[HTTPField.Name("X-Request-Content-Length")!], "0", "an empty known body: Content-Length 0")
        XCTAssertEqual(echoBody?.length, .known(0))
        let echoed = try await Self.collect(echoBody)
        XCTAssertEqual(echoed.bytes, [])

        let (headers, headersBody) = try await Self.send(transport, .get, server.baseURL, "/headers")
        XCTAssertEqual(headers.status, .ok)
        let text = String(decoding: try await Self.collect(headersBody).bytes, as: UTF8.self).lowercased()
        XCTAssertFalse(text.contains("content-length"), "no body, no framing: \(text)")
        XCTAssertFalse(text.contains("transfer-encoding"), "no body, no framing: \(text)")

        let (noContent, noContentBody) = try await Self.send(transport, .get, server.baseURL, "/status/204")
        XCTAssertEqual(noContent.status, .noContent)
        let nothing = try await Self.collect(noContentBody)
        XCTAssertEqual(nothing.bytes, [])

        let (head, headBody) = try await Self.send(transport, .head, server.baseURL, "/bytes?n=1000")
        XCTAssertEqual(head.status, .ok)
        XCTAssertEqual(head.headerFields[.contentLength], "1000")
        XCTAssertNil(headBody, "a HEAD response has no body")

        await client.shutdown()
        try await server.shutdown()
    }

    func testRequestBodyOfUnknownLengthGoesChunkedAndOfKnownLengthWithContentLength() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient(configuration: Self.clientConfiguration())
        let transport = AsyncHTTPTransport(client: client)
        let payload = (0..<300_000).map { UInt8(($0 * 7) % 256) }

        let (chunked, chunkedBody) = try await Self.send(
            transport, .post, server.baseURL, "/echo", body: HTTPBody(Self.chunks(payload, size: 10_000), length: .unknown))
        XCTAssertEqual(chunked.headerFields[HTTPField.Name("X-Request-Transfer-Encoding")!], "chunked")
        XCTAssertNil(chunked.headerFields[HTTPField.Name("X-Request-Content-Length")!])
        let chunkedEcho = try await Self.collect(chunkedBody)
        XCTAssertEqual(chunkedEcho.bytes, payload)

        let (known, knownBody) = try await Self.send(
            transport, .put, server.baseURL, "/echo",
            body: HTTPBody(Self.chunks(payload, size: 10_000), length: .known(Int64(payload.count))))
        XCTAssertEqual(known.headerFields[HTTPField.Name("X-Request-Content-Length")!], "300000")
        XCTAssertNil(known.headerFields[HTTPField.Name("X-Request-Transfer-Encoding")!])
        XCTAssertEqual(knownBody?.length, .known(300_000), "the response's Content-Length")
        let knownEcho = try await Self.collect(knownBody)
        XCTAssertEqual(knownEcho.bytes, payload)

        await client.shutdown()
        try await server.shutdown()
    }

    /// A request body that yields fewer bytes than its known length promised is not sent as if complete.
    func testRequestBodyShorterThanItsKnownLengthFails() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient(configuration: Self.clientConfiguration())
        let transport = AsyncHTTPTransport(client: client)
        do {
            let (_, body) = try await Self.send(transport, .post, server.baseURL, "/echo",
                                           body: HTTPBody(Self.chunks(Array(repeating: 1, count: 10), size: 5), length: .known(20)))
            _ = try await Self.collect(body)
            XCTFail("a 10-byte body sent as 20 bytes")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest, "\(error)")
        }
        await client.shutdown()
        try await server.shutdown()
    }

    func testResponseBodiesStreamWithTheirLengthKnownOrUnknown() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient(configuration: Self.clientConfiguration())
        let transport = AsyncHTTPTransport(client: client)
        let size = 4 << 20

        let (known, knownBody) = try await Self.send(transport, .get, server.baseURL, "/bytes?n=\(size)")
        XCTAssertEqual(known.status, .ok)
        XCTAssertEqual(knownBody?.length, .known(Int64(size)))
        XCTAssertEqual(knownBody?.iterationBehavior, .single, "read from the connection once")
        let knownRead = try await Self.collect(knownBody)
        XCTAssertEqual(knownRead.bytes.count, size)
        XCTAssertNil(TestPattern.firstMismatch(in: knownRead.bytes))
        XCTAssertGreaterThan(knownRead.chunks, 1, "streamed in pieces, not collected into one")

        let (unknown, unknownBody) = try await Self.send(transport, .get, server.baseURL, "/stream?n=\(size)&chunk=65536")
        XCTAssertEqual(unknown.status, .ok)
        XCTAssertNil(unknown.headerFields[.contentLength])
        XCTAssertEqual(unknownBody?.length, .unknown)
        let unknownRead = try await Self.collect(unknownBody)
        XCTAssertEqual(unknownRead.bytes.count, size)
        XCTAssertNil(TestPattern.firstMismatch(in: unknownRead.bytes))
        XCTAssertGreaterThan(unknownRead.chunks, 1)

        await client.shutdown()
        try await server.shutdown()
    }

    /// A `Content-Length` that does not give the body's length is not taken for it: a 304 or 204 has no body
    /// (RFC 9110 §8.6 lets a 304 carry the length of the representation), and chunks frame a body whatever
    /// `Content-Length` says beside them. Taken as the length, `collect(upTo:)` of a 304 with `Content-Length:
    /// 5000000` threw "too many bytes" before reading anything.
    func testAResponseBodysLengthIsTheBodysOwn() async throws {
        let url = try HTTPURL("http://127.0.0.1:9/")
        for status in [204, 304] {
            let response = HTTPClientResponse(status: .init(code: status), headers: [.contentLength: "5000000"], url: url)
            XCTAssertNil(AsyncHTTPTransport.responseBody(response, method: .get), "\(status) has no body")
        }
        let chunked = HTTPClientResponse(status: .ok, headers: [.transferEncoding: "chunked", .contentLength: "999"],
                                         body: .init(bytes: Array("twelve bytes".utf8)), url: url)
        let body = try XCTUnwrap(AsyncHTTPTransport.responseBody(chunked, method: .get))
        XCTAssertEqual(body.length, .unknown)
        let bytes = try await [UInt8](collecting: body, upTo: 1 << 20)
        XCTAssertEqual(bytes, Array("twelve bytes".utf8))
    }

    // MARK: Failures mid-body

    /// The server promises 100 bytes, sends 40 and closes (FIN), or stops inside a chunk: iterating the
    /// `HTTPBody` throws, within the bound, instead of ending as if the body were complete.
    func testConnectionDroppedMidBodyMakesTheIterationThrow() async throws {
        for script in [FaultScript.closeMidBody, .truncatedChunkedBody, .resetMidBody] {
            let server = try FaultServer(script: script)
            let client = HTTPClient(configuration: Self.clientConfiguration())
            let transport = AsyncHTTPTransport(client: client)
            let start = ContinuousClock.now
            let (response, body) = try await Self.send(transport, .get, "http://127.0.0.1:\(server.port)", "/")
            XCTAssertEqual(response.status, .ok)
            do {
                let read = try await Self.collect(body)
                XCTFail("the body ended without an error after \(read.bytes.count) bytes")
            } catch let error as HTTPClientError {
                XCTAssertTrue([.connectionClosed, .ioFailure].contains(error.code), "\(error)")
            }
            XCTAssertLessThan(start.duration(to: .now), Self.bound)
            await client.shutdown()
            server.stop()
        }
    }

    /// A request body whose source fails mid-upload fails the request; the server sees no complete request.
    func testRequestBodyFailingMidUploadFailsTheRequest() async throws {
        struct SourceFailed: Error {}
        let server = try await NIOTestServer()
        let client = HTTPClient(configuration: Self.clientConfiguration())
        let transport = AsyncHTTPTransport(client: client)
        let failing = AsyncThrowingStream<HTTPBody.ByteChunk, any Error> { continuation in
            continuation.yield(ArraySlice(repeating: 7, count: 1000))
            continuation.finish(throwing: SourceFailed())
        }
        let start = ContinuousClock.now
        do {
            let (_, body) = try await Self.send(transport, .post, server.baseURL, "/echo", body: HTTPBody(failing, length: .unknown))
            _ = try await Self.collect(body)
            XCTFail("the request succeeded with a failed body")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest, "\(error)")
            XCTAssertTrue(error.message.contains("SourceFailed"), "the source's error is named: \(error)")
        }
        XCTAssertLessThan(start.duration(to: .now), Self.bound)
        XCTAssertEqual(server.requestsServed, 0, "no response to a request whose body never completed")
        await client.shutdown()
        try await server.waitUntilAllConnectionsClosed()
        try await server.shutdown()
    }

    /// Cancelling the task while it waits for the head stops the request and closes the connection.
    func testCancellationBeforeTheHeadStopsTheRequest() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient(configuration: Self.clientConfiguration())
        let transport = AsyncHTTPTransport(client: client)
        let base = URL(string: server.baseURL)!
        let start = ContinuousClock.now
        let task = Task { () async throws -> HTTPResponse in
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/slow-head?ms=20000")
            return try await transport.send(request, body: nil, baseURL: base, operationID: "slowHead").0
        }
        try await waitUntil("the server accepted the connection") { server.connectionsAccepted == 1 }
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("the request outlived its cancelled task")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .cancelled, "\(error)")
        }
        XCTAssertLessThan(start.duration(to: .now), Self.bound)
        try await server.waitUntilAllConnectionsClosed()
        await client.shutdown()
        try await server.shutdown()
    }

    /// Cancelling the task that iterates the response body stops the read and closes the connection (it is
    /// not reused with half a body in it).
    func testCancellationMidBodyStopsTheReadAndClosesTheConnection() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient(configuration: Self.clientConfiguration())
        let transport = AsyncHTTPTransport(client: client)
        let (response, body) = try await Self.send(transport, .get, server.baseURL, "/slow-body?ms=20000")
        XCTAssertEqual(response.status, .ok)
        let firstChunk = AsyncStream<Void>.makeStream()
        let start = ContinuousClock.now
        let reader = Task {
            defer { firstChunk.continuation.finish() }  // the wait below ends even if the first read fails
            var iterator = body!.makeAsyncIterator()
            let first = try await iterator.next()
            XCTAssertEqual(first.map { String(decoding: $0, as: UTF8.self) }, "part1-")
            firstChunk.continuation.yield()
            return try await iterator.next()
        }
        for await _ in firstChunk.stream { break }
        reader.cancel()
        do {
            let rest = try await reader.value
            XCTFail("the body went on after cancellation: \(String(describing: rest))")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .cancelled, "\(error)")
        }
        XCTAssertLessThan(start.duration(to: .now), Self.bound)
        try await server.waitUntilAllConnectionsClosed()
        XCTAssertEqual(server.requestsServed, 0)
        await client.shutdown()
        try await server.shutdown()
    }

    /// Cancelling the task mid-upload stops the iteration of the request `HTTPBody` (its stream is terminated)
    /// and fails the request with `cancelled`; the server sees no complete request.
    func testCancellationMidUploadStopsIteratingTheRequestBody() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient(configuration: Self.clientConfiguration())
        let transport = AsyncHTTPTransport(client: client)
        let base = URL(string: server.baseURL)!
        // One chunk, then a pull that waits (up to 30 s) for more and notes whether it was cancelled.
        let pulls = Locked(0)
        let waiting = Locked(false)
        let pullCancelled = Locked(false)
        let upload = AsyncStream<HTTPBody.ByteChunk>(unfolding: {
            let pull = pulls.withLock { count in
                count += 1
                return count
            }
            if pull == 1 { return ArraySlice(repeating: 1, count: 4096) }
            waiting.withLock { $0 = true }
            try? await Task.sleep(for: .seconds(30))
            pullCancelled.withLock { $0 = Task.isCancelled }
            return nil
        })
        let start = ContinuousClock.now
        let task = Task { () async throws -> HTTPResponse in
            let request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/discard")
            return try await transport.send(request, body: HTTPBody(upload, length: .unknown), baseURL: base,
                                            operationID: "upload").0
        }
        try await waitUntil("the body waits for its next chunk") { waiting.withLock { $0 } }  // one chunk sent, the next awaited
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("the upload outlived its cancelled task")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .cancelled, "\(error)")
        }
        try await waitUntil("the body's iteration is cancelled") { pullCancelled.withLock { $0 } }  // the body's iteration was cancelled
        XCTAssertLessThan(start.duration(to: .now), Self.bound)
        try await server.waitUntilAllConnectionsClosed()
        XCTAssertEqual(server.requestsServed, 0)
        await client.shutdown()
        try await server.shutdown()
    }

    // MARK: Configuration

    func testTimeoutIsAppliedToEachRequest() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient(configuration: Self.clientConfiguration())
        let transport = AsyncHTTPTransport(configuration: .init(client: client, timeout: .milliseconds(300)))
        let start = ContinuousClock.now
        do {
            _ = try await Self.send(transport, .get, server.baseURL, "/slow-head?ms=5000")
            XCTFail("the timeout did not fire")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertEqual(error.timeoutPhase, .total)
        }
        XCTAssertLessThan(start.duration(to: .now), .seconds(4))
        let (ok, okBody) = try await Self.send(transport, .get, server.baseURL, "/hello")
        XCTAssertEqual(ok.status, .ok)
        let hello = try await Self.collect(okBody)
        XCTAssertEqual(hello.bytes, Array("hello".utf8))
        await client.shutdown()
        try await server.shutdown()
    }

    func testPrepareRequestSeesTheOperationAndChangesTheRequest() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient(configuration: Self.clientConfiguration())
        let transport = AsyncHTTPTransport(configuration: .init(client: client, prepareRequest: { request, operationID in
            request.headers[HTTPField.Name("X-Operation")!] = operationID
        }))
        let (_, body) = try await Self.send(transport, .get, server.baseURL, "/headers?a=1", headers: [.accept: "text/plain"],
                                       operationID: "listHeaders")
        let text = String(decoding: try await Self.collect(body).bytes, as: UTF8.self)
        XCTAssertTrue(text.contains("target: /headers?a=1\n"), text)
        XCTAssertTrue(text.contains("X-Operation: listHeaders\n"), text)
        XCTAssertTrue(text.contains("Accept: text/plain\n"), text)
        await client.shutdown()
        try await server.shutdown()
    }

    /// A 307 makes the client send the body again: an `HTTPBody` that can be iterated more than once (bytes) is
    /// sent again, a one-shot stream fails with `bodyNotReplayable` instead of sending a truncated body.
    func testRedirectResendsAReplayableBodyAndRefusesAOneShotOne() async throws {
        let base = try Peers.httpbin()
        let client = HTTPClient(configuration: Self.clientConfiguration())
        let transport = AsyncHTTPTransport(client: client)
        let path = "/redirect-to?url=%2Fanything%2Fafter&status_code=307"

        let (response, body) = try await Self.send(transport, .post, base, path, headers: [.contentType: "text/plain"],
                                              body: HTTPBody("replayed"))
        XCTAssertEqual(response.status, .ok)
        let echo = try JSONSerialization.jsonObject(with: Data(try await Self.collect(body).bytes)) as? [String: Any]
        XCTAssertEqual(echo?["url"] as? String, base + "/anything/after")
        XCTAssertEqual(echo?["method"] as? String, "POST")
        XCTAssertEqual(echo?["data"] as? String, "replayed")

        let oneShot = HTTPBody(Self.chunks(Array("once".utf8), size: 2), length: .known(4), iterationBehavior: .single)
        do {
            _ = try await Self.send(transport, .post, base, path, body: oneShot)
            XCTFail("a one-shot body was sent twice")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .bodyNotReplayable, "\(error)")
        }
        await client.shutdown()
    }

    // MARK: The URL

    func testServerURLAndPathAreJoined() throws {
        XCTAssertEqual(try AsyncHTTPTransport.joinedURL("http://h:81/api", "/items?a=1"), "http://h:81/api/items?a=1")
        XCTAssertEqual(try AsyncHTTPTransport.joinedURL("http://h:81/api/", "/items"), "http://h:81/api/items")
        XCTAssertEqual(try AsyncHTTPTransport.joinedURL("https://h", "/items"), "https://h/items")
        XCTAssertEqual(try AsyncHTTPTransport.joinedURL("https://h/", "/"), "https://h/")
        XCTAssertEqual(try AsyncHTTPTransport.joinedURL("https://h", nil), "https://h/")
        XCTAssertEqual(try AsyncHTTPTransport.joinedURL("https://h", "?q=1"), "https://h/?q=1")
        XCTAssertEqual(try AsyncHTTPTransport.joinedURL("https://h/v1", "?q=1"), "https://h/v1?q=1")
        func code(_ base: String, _ path: String) -> HTTPClientError.Code? {
            do {
                _ = try AsyncHTTPTransport.joinedURL(base, path)
                return nil
            } catch {
                return error.code
            }
        }
        XCTAssertEqual(code("https://h/api?key=1", "/items"), .invalidURL, "a server URL with a query")
        XCTAssertEqual(code("ftp://h/", "/items"), .invalidURL)
        XCTAssertEqual(code("https://h", "items"), .invalidRequest)
        XCTAssertEqual(code("https://h", "/items#top"), .invalidRequest)
        XCTAssertEqual(code("https://h", "/it ems"), .invalidURL)
    }
}
