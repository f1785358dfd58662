import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// The bound of `HTTPClientResponse.rawCompressedBody` (docs/compression.md, "Raw bytes").
final class RawBodyBoundTests: XCTestCase {
    func testRecorderKeepsBytesUpToItsLimitAndNothingPastIt() {
        let recorder = RawBodyRecorder(limit: 10)
        recorder.append([1, 2, 3, 4][...])
        recorder.append([5, 6, 7, 8, 9, 10][...])
        XCTAssertEqual(recorder.bytes, Array(1...10), "exactly the limit is kept")
        recorder.append([11][...])
        XCTAssertNil(recorder.bytes, "past the limit the copy is dropped, never handed out truncated")
        recorder.append([][...])
        XCTAssertNil(recorder.bytes, "and it stays dropped")
    }

    func testDefaultLimitIs32MiB() {
        XCTAssertEqual(RawBodyRecorder.defaultLimit, 32 << 20)
        XCTAssertEqual(CompressionMiddleware(policy: CompressionPolicy()).rawBodyLimit, 32 << 20)
    }

    func testBodyPastTheLimitStillDecodesAndTheCopyIsNil() async throws {
        let sample = Array(repeating: Array("0123456789abcdefghij".utf8), count: 5_000).flatMap { $0 }
        let deflater = Deflater(encoding: .gzip)
        var compressed: [UInt8] = []
        try sample.withUnsafeBytes { input in
            try deflater.compress(input) { compressed.append(contentsOf: $0) }
            try deflater.finish { compressed.append(contentsOf: $0) }
        }
        let headers = HTTPFields([("Content-Encoding", "gzip"), ("Content-Length", "\(compressed.count)")])
        let chunks = stride(from: 0, to: compressed.count, by: 50).map { Array(compressed[$0..<min($0 + 50, compressed.count)]) }

        var middleware = CompressionMiddleware(policy: CompressionPolicy())
        middleware.rawBodyLimit = compressed.count - 1
        var request = HTTPClientRequest(url: "http://a.test/")
        request.keepsRawCompressedBody = true
        let peer = ScriptedPeer([.init(.ok, headers: headers, chunks: chunks)])
        let response = try await peer.send(request, through: [middleware])
        let body = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body, sample, "the decoded body is not affected by the copy's bound")
        XCTAssertNil(response.rawCompressedBody)

        middleware.rawBodyLimit = compressed.count
        let exact = ScriptedPeer([.init(.ok, headers: headers, chunks: chunks)])
        let whole = try await exact.send(request, through: [middleware])
        _ = try await whole.body.collect(upTo: 1 << 20)
        XCTAssertEqual(whole.rawCompressedBody, compressed, "a body of exactly the limit is kept whole")
    }

    /// A body that fails (the server closes mid-body, the compressed stream is damaged, the read fails) drops the
    /// copy: it returned the truncated bytes, though a partial copy is never to be handed out.
    func testABodyThatFailsLeavesNoCopy() async throws {
        let sample = Array(repeating: Array("0123456789abcdefghij".utf8), count: 2_000).flatMap { $0 }
        let deflater = Deflater(encoding: .gzip)
        var compressed: [UInt8] = []
        try sample.withUnsafeBytes { input in
            try deflater.compress(input) { compressed.append(contentsOf: $0) }
            try deflater.finish { compressed.append(contentsOf: $0) }
        }
        let headers = HTTPFields([("Content-Encoding", "gzip")])
        var request = HTTPClientRequest(url: "http://a.test/")
        request.keepsRawCompressedBody = true
        let middleware = CompressionMiddleware(policy: CompressionPolicy())

        // Cut short: the gzip stream ends before its trailer.
        let half = Array(compressed.prefix(compressed.count / 2))
        let cut = ScriptedPeer([.init(.ok, headers: headers, chunks: [Array(half.prefix(10)), Array(half.dropFirst(10))])])
        let truncated = try await cut.send(request, through: [middleware])
        await assertThrowsHTTPError(.decompressionFailed) { try await truncated.body.collect(upTo: 1 << 20) }
        XCTAssertNil(truncated.rawCompressedBody, "a truncated copy is never returned")

        // Damaged: inflate fails mid-stream.
        var damaged = compressed
        for index in 20..<40 { damaged[index] ^= 0xFF }
        let bad = ScriptedPeer([.init(.ok, headers: headers, chunks: [Array(damaged.prefix(10)), Array(damaged.dropFirst(10))])])
        let corrupt = try await bad.send(request, through: [middleware])
        do {
            _ = try await corrupt.body.collect(upTo: 1 << 20)
            XCTFail("a damaged gzip stream decoded")
        } catch {}
        XCTAssertNil(corrupt.rawCompressedBody)

        // The read fails after some bytes (the connection reset).
        struct Reset: Error {}
        let first = compressed.prefix(30)
        let failing = ScriptedPeer { _, _ in .init(.ok, headers: headers) }
        let reading = try await failing.send(request, through: [
            middleware,
            ReplaceBody(body: HTTPClientResponse.Body(AsyncThrowingStream<ArraySlice<UInt8>, any Error> { continuation in
                continuation.yield(first)
                continuation.finish(throwing: Reset())
            })),
        ])
        do {
            _ = try await reading.body.collect(upTo: 1 << 20)
            XCTFail("the read error was not passed on")
        } catch {}
        XCTAssertNil(reading.rawCompressedBody)
    }
}

/// Replaces the body of the response from below with `body` (a read that fails, for the compression step above).
private struct ReplaceBody: HTTPClientMiddleware {
    let body: HTTPClientResponse.Body
    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        var response = try await next(request)
        response.body = body
        return response
    }
}
