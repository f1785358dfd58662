import HTTPTypes
import Synchronization
import XCTest

@testable import AsyncHTTP

/// Stands in for the connection pool at the end of a middleware chain: records every request that
/// reaches it and answers each with what `respond` returns. No sockets: the chain is tested as values.
final class ScriptedPeer: Sendable {
    struct Reply: Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        /// The body as the chunks it arrives in.
        var chunks: [[UInt8]]

        init(_ status: HTTPResponse.Status, headers: HTTPFields = [:], body: [UInt8] = []) {
            self.status = status
            self.headers = headers
            self.chunks = body.isEmpty ? [] : [body]
        }

        init(_ status: HTTPResponse.Status, headers: HTTPFields = [:], chunks: [[UInt8]]) {
            self.status = status
            self.headers = headers
            self.chunks = chunks
        }

        static func redirect(_ code: Int, to location: String, extra: HTTPFields = [:]) -> Reply {
            var headers = extra
            headers[.location] = location
            return Reply(HTTPResponse.Status(code: code), headers: headers, body: Array("moved".utf8))
        }
    }

    private let received = Locked<[HTTPClientRequest]>([])
    /// How many redirect bodies were read to their end before the next request went out.
    private let bodiesReadToEnd = Locked(0)
    private let respond: @Sendable (_ request: HTTPClientRequest, _ index: Int) throws -> Reply

    init(_ respond: @escaping @Sendable (_ request: HTTPClientRequest, _ index: Int) throws -> Reply) {
        self.respond = respond
    }

    /// Answers the requests in order with `replies`; a request beyond them is a test failure (500).
    convenience init(_ replies: [Reply]) {
        self.init { _, index in index < replies.count ? replies[index] : Reply(.internalServerError) }
    }

    var requests: [HTTPClientRequest] { received.withLock { $0 } }
    var completedBodies: Int { bodiesReadToEnd.withLock { $0 } }

    func handle(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        let index = received.withLock { list in
            list.append(request)
            return list.count - 1
        }
        let reply = try respond(request, index)
        let body = HTTPClientResponse.Body(ChunkList(chunks: reply.chunks.map { $0[...] }, peer: self))
        return HTTPClientResponse(status: reply.status, headers: reply.headers, body: body, url: try HTTPURL(request.url))
    }

    /// Sends `request` through `middleware` (outermost first) to this peer.
    func send(_ request: HTTPClientRequest, through middleware: [any HTTPClientMiddleware]) async throws -> HTTPClientResponse {
        try await composeChain(middleware) { try await self.handle($0) }(request)
    }

    fileprivate func bodyEnded() { bodiesReadToEnd.withLock { $0 += 1 } }
}

/// A body of fixed chunks that tells the peer when it has been read to its end.
private struct ChunkList: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let chunks: [ArraySlice<UInt8>]
    let peer: ScriptedPeer

    struct Iterator: AsyncIteratorProtocol {
        var chunks: [ArraySlice<UInt8>]
        var index = 0
        let peer: ScriptedPeer
        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard index < chunks.count else {
                if index == chunks.count { peer.bodyEnded() }
                index += 1
                return nil
            }
            defer { index += 1 }
            return chunks[index]
        }
    }

    func makeAsyncIterator() -> Iterator { Iterator(chunks: chunks, peer: peer) }
}

extension HTTPFields {
    init(_ pairs: [(String, String)]) {
        self.init()
        for (name, value) in pairs { append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
    }
}

/// The bytes a request body would send, streamed or not.
func bodyBytes(_ body: HTTPClientRequest.Body?) async throws -> [UInt8]? {
    guard let body else { return nil }
    switch body.storage {
    case .bytes(let bytes):
        return bytes
    case .stream(_, _, let makeSource):
        let source = try makeSource()
        var bytes: [UInt8] = []
        while let chunk = try await source.next() { bytes += chunk }
        return bytes
    }
}

/// A one-shot stream of the given chunks, as a caller would pass to `.stream`.
func oneShotStream(_ chunks: [[UInt8]]) -> AsyncStream<[UInt8]> {
    AsyncStream { continuation in
        for chunk in chunks { continuation.yield(chunk) }
        continuation.finish()
    }
}

/// Asserts that `body` throws an ``HTTPClientError`` with `code`, and returns it.
@discardableResult
func assertThrowsHTTPError<T>(
    _ code: HTTPClientError.Code, _ body: () async throws -> T, file: StaticString = #filePath, line: UInt = #line
) async -> HTTPClientError? {
    do {
        let value = try await body()
        XCTFail("expected \(code), got a \(type(of: value))", file: file, line: line)
    } catch let error as HTTPClientError {
        XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
        return error
    } catch {
        XCTFail("expected HTTPClientError \(code), got \(error)", file: file, line: line)
    }
    return nil
}
