import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// The compression middleware against a scripted peer: Accept-Encoding, streaming inflate, limits,
/// errors, raw bytes, request-body gzip, and text decoding of what comes out.
final class CompressionMiddlewareTests: XCTestCase {
    func compression(_ policy: CompressionPolicy = CompressionPolicy()) -> [any HTTPClientMiddleware] {
        [CompressionMiddleware(policy: policy)]
    }

    /// JSON-ish text that compresses about 5:1, like real API responses.
    let sample: [UInt8] = {
        var text = ""
        for index in 0..<4000 { text += #"{"id":\#(index),"name":"item \#(index * 7919 % 1000)","ok":true},"# }
        return Array(text.utf8)
    }()

    func encoded(_ bytes: [UInt8], _ coding: ContentCoding) throws -> [UInt8] {
        let deflater = Deflater(encoding: coding)
        var output: [UInt8] = []
        try bytes.withUnsafeBytes { input in
            try deflater.compress(input) { output.append(contentsOf: $0) }
            try deflater.finish { output.append(contentsOf: $0) }
        }
        return output
    }

    func gzipReply(_ bytes: [UInt8], chunkSize: Int? = nil, coding: String = "gzip") throws -> ScriptedPeer.Reply {
        let body = try encoded(bytes, .gzip)
        let headers = HTTPFields([("Content-Encoding", coding), ("Content-Length", "\(body.count)"),
                                  ("Content-Type", "application/json")])
        guard let chunkSize else { return .init(.ok, headers: headers, body: body) }
        let chunks = stride(from: 0, to: body.count, by: chunkSize).map { Array(body[$0..<min($0 + chunkSize, body.count)]) }
        return .init(.ok, headers: headers, chunks: chunks)
    }

    // MARK: Accept-Encoding

    func testAcceptEncodingGzipDeflateIsSentByDefault() async throws {
        let peer = ScriptedPeer([.init(.ok)])
        _ = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        XCTAssertEqual(peer.requests[0].headers[.acceptEncoding], "gzip, deflate")
    }

    func testAcceptEncodingIsNotSentWhenTurnedOffPerRequestOrForTheClient() async throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request.acceptsCompressedResponse = false
        let peer = ScriptedPeer([.init(.ok)])
        _ = try await peer.send(request, through: compression())
        XCTAssertNil(peer.requests[0].headers[.acceptEncoding])

        let clientOff = ScriptedPeer([.init(.ok)])
        _ = try await clientOff.send(HTTPClientRequest(url: "http://a.test/"),
                                     through: compression(.init(acceptsCompressedResponses: false)))
        XCTAssertNil(clientOff.requests[0].headers[.acceptEncoding])

        var on = HTTPClientRequest(url: "http://a.test/")
        on.acceptsCompressedResponse = true
        let requestOn = ScriptedPeer([.init(.ok)])
        _ = try await requestOn.send(on, through: compression(.init(acceptsCompressedResponses: false)))
        XCTAssertEqual(requestOn.requests[0].headers[.acceptEncoding], "gzip, deflate", "the request overrides the client")
    }

    // MARK: Decoding

    /// A range of a compressed representation cannot be inflated on its own: a request with `Range` does not ask
    /// for gzip, and a 206 is handed over as it came (inflating one used to fail with "data truncated" or
    /// "incorrect header check", so the range could not be read at all).
    func testARangeIsNotAskedCompressedAndA206IsNotInflated() async throws {
        var ranged = HTTPClientRequest(url: "http://a.test/")
        ranged.headers[.range] = "bytes=0-99"
        let compressed = try encoded(sample, .gzip)
        let slice = Array(compressed[0..<100])
        let peer = ScriptedPeer([.init(.partialContent, headers: HTTPFields([
            ("Content-Encoding", "gzip"), ("Content-Range", "bytes 0-99/\(compressed.count)"), ("Content-Length", "100"),
        ]), body: slice)])
        let response = try await peer.send(ranged, through: compression())
        XCTAssertNil(peer.requests[0].headers[.acceptEncoding])
        XCTAssertEqual(response.headers[.contentEncoding], "gzip", "it still describes the bytes")
        let body = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body, slice)

        // A 206 to a request this step asked gzip for (the range came from elsewhere): still not inflated.
        let asked = HTTPClientRequest(url: "http://a.test/")
        let askedPeer = ScriptedPeer([.init(.partialContent, headers: HTTPFields([("Content-Encoding", "gzip"), ("Content-Length", "100")]),
                                            body: slice)])
        let askedResponse = try await askedPeer.send(asked, through: compression())
        XCTAssertEqual(askedPeer.requests[0].headers[.acceptEncoding], "gzip, deflate")
        let askedBody = try await askedResponse.body.collect(upTo: 1 << 20)
        XCTAssertEqual(askedBody, slice)
    }


    func testGzipResponseIsInflatedAndLosesItsEncodingHeaders() async throws {
        let peer = ScriptedPeer([try gzipReply(sample)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        XCTAssertTrue(response.isCompressed)
        XCTAssertNil(response.headers[.contentEncoding], "it no longer describes the body")
        XCTAssertNil(response.headers[.contentLength], "it gave the compressed size")
        XCTAssertEqual(response.headers[.contentType], "application/json")
        let body = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body, sample)
    }

    func testDeflateResponsesInZlibAndRawFormsAreInflated() async throws {
        let zlibWrapped = try encoded(sample, .deflate)
        // Raw deflate (RFC 1951), as some servers send for "deflate": the zlib stream minus header and Adler-32.
        let raw = Array(zlibWrapped.dropFirst(2).dropLast(4))
        for body in [zlibWrapped, raw] {
            let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", "deflate")]), body: body)])
            let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
            let decoded = try await response.body.collect(upTo: 1 << 20)
            XCTAssertEqual(decoded, sample)
        }
    }

    func testCompressedBodyArrivingOneByteAtATimeInflatesToTheSameBytes() async throws {
        let peer = ScriptedPeer([try gzipReply(Array(sample.prefix(20_000)), chunkSize: 1)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        let body = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body, Array(sample.prefix(20_000)))
    }

    func testABodyThatInflatesFarBeyondOneStepComesInBoundedStepsAndWhole() async throws {
        // 1 MiB of text in a single compressed chunk: each step of the body is at most `outputChunkSize`, and an
        // exact multiple of it (1 MiB = 4 × 256 KiB) still ends cleanly after the last full step.
        let text = [UInt8]((0..<(1 << 20)).map { UInt8(ascii: "a") + UInt8($0 % 251 % 26) })
        for chunkSize in [nil, 100, 70_000] as [Int?] {
            let peer = ScriptedPeer([try gzipReply(text, chunkSize: chunkSize)])
            let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
            var decoded: [UInt8] = [], steps = 0
            for try await step in response.body {
                XCTAssertLessThanOrEqual(step.count, CompressionMiddleware.outputChunkSize)
                XCTAssertFalse(step.isEmpty)
                decoded += step
                steps += 1
            }
            XCTAssertEqual(decoded, text, "chunks of \(chunkSize.map(String.init) ?? "all")")
            XCTAssertGreaterThanOrEqual(steps, 4)
        }
    }

    func testARawDeflateBodyWhoseLastMatchOverflowsAStepIsDrainedBeforeItsEnd() async throws {
        // Raw deflate of 16,400 × "a": zlib reads the whole input (the last match and the end-of-block code share
        // its last bytes) while the first 16 KiB step is full and 16 bytes of the match still wait inside zlib. The
        // body must drain them instead of declaring the end (which would call the stream truncated).
        let text = [UInt8](repeating: UInt8(ascii: "a"), count: 16_400)
        let raw = Array(try encoded(text, .deflate).dropFirst(2).dropLast(4))
        let probe = Inflater(encoding: .deflate, limits: .unlimited)
        var array = [UInt8](repeating: 0, count: CompressionMiddleware.minimumOutputChunkSize)
        let first = try raw.withUnsafeBytes { input in try array.withUnsafeMutableBytes { try probe.decompress(input, into: $0) } }
        XCTAssertEqual(first.consumed, raw.count, "the case this test is for: all input read…")
        XCTAssertEqual(first.produced, array.count, "…and the step full")
        let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", "deflate")]), body: raw)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        let decoded = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(decoded, text)
    }

    func testContentEncodingIsMatchedCaseInsensitivelyAndXGzipIsGzip() async throws {
        for coding in ["GZIP", "x-gzip", " gzip "] {
            let peer = ScriptedPeer([try gzipReply(sample, coding: coding)])
            let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
            let body = try await response.body.collect(upTo: 1 << 20)
            XCTAssertEqual(body, sample, coding)
        }
    }

    func testEmptyBodyLabelledGzipIsAnEmptyBody() async throws {
        let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", "gzip"), ("Content-Length", "0")]))])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        let body = try await response.body.collect(upTo: 100)
        XCTAssertEqual(body, [])
    }

    func testTruncatedGzipFailsWithDecompressionFailedInsteadOfEndingShort() async throws {
        let whole = try encoded(sample, .gzip)
        let cut = Array(whole.prefix(whole.count / 2))
        let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", "gzip")]), chunks: [cut])])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        var received = 0
        let error = await assertThrowsHTTPError(.decompressionFailed) {
            for try await chunk in response.body { received += chunk.count }
        }
        XCTAssertTrue(error?.message.contains("truncated") ?? false, error?.message ?? "")
        XCTAssertLessThan(received, sample.count)
    }

    func testTruncatedGzipTrailerFails() async throws {
        let whole = try encoded(sample, .gzip)
        // Everything but the last 4 bytes (ISIZE): the data is all there, but the stream did not end.
        let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", "gzip")]), body: Array(whole.dropLast(4)))])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        await assertThrowsHTTPError(.decompressionFailed) { try await response.body.collect(upTo: 1 << 20) }
    }

    func testCorruptGzipFailsWithDecompressionFailed() async throws {
        var body = try encoded(sample, .gzip)
        for index in stride(from: 20, to: 60, by: 1) { body[index] ^= 0x5A }
        let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", "gzip")]), body: body)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        await assertThrowsHTTPError(.decompressionFailed) { try await response.body.collect(upTo: 1 << 20) }
    }

    func testBodyThatIsNotGzipAtAllFails() async throws {
        let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", "gzip")]), body: Array("plain text".utf8))])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        await assertThrowsHTTPError(.decompressionFailed) { try await response.body.collect(upTo: 1 << 20) }
    }

    func testDecompressionBombIsStoppedByTheRatioLimit() async throws {
        let zeros = [UInt8](repeating: 0, count: 50 << 20)  // 50 MiB of zeros gzip to about 50 KiB
        let peer = ScriptedPeer([try gzipReply(zeros, chunkSize: 16 * 1024)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        var received = 0
        let error = await assertThrowsHTTPError(.bodyLimitExceeded) {
            for try await chunk in response.body { received += chunk.count }
        }
        XCTAssertTrue(error?.message.contains("200 times") ?? false, error?.message ?? "")
        XCTAssertLessThan(received, 4 << 20, "stopped early, not after inflating it all")
    }

    func testMaxDecompressedBytesCapsTheBody() async throws {
        let peer = ScriptedPeer([try gzipReply(sample)])
        let policy = CompressionPolicy(maxDecompressedBytes: 10_000, maxDecompressionRatio: nil)
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression(policy))
        var received = 0
        await assertThrowsHTTPError(.bodyLimitExceeded) {
            for try await chunk in response.body { received += chunk.count }
        }
        XCTAssertLessThanOrEqual(received, 10_000, "never more than the limit reaches the caller")
    }

    func testCollectLimitCountsDecodedBytes() async throws {
        let peer = ScriptedPeer([try gzipReply(sample)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        let encodedSize = try encoded(sample, .gzip).count
        await assertThrowsHTTPError(.bodyLimitExceeded) { try await response.body.collect(upTo: encodedSize + 1) }
    }

    func testRawCompressedBytesAreKeptWhenAsked() async throws {
        let compressed = try encoded(sample, .gzip)
        var request = HTTPClientRequest(url: "http://a.test/")
        request.keepsRawCompressedBody = true
        let peer = ScriptedPeer([try gzipReply(sample, chunkSize: 1000)])
        let response = try await peer.send(request, through: compression())
        let body = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body, sample)
        XCTAssertEqual(response.rawCompressedBody, compressed, "ASIHTTPRequest's rawResponseData")

        let notAsked = ScriptedPeer([try gzipReply(sample)])
        let plain = try await notAsked.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        XCTAssertNil(plain.rawCompressedBody)
    }

    func testCallerWhoSetsAcceptEncodingGetsTheEncodedBytes() async throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request.headers[.acceptEncoding] = "gzip"
        let compressed = try encoded(sample, .gzip)
        let peer = ScriptedPeer([try gzipReply(sample)])
        let response = try await peer.send(request, through: compression())
        XCTAssertEqual(peer.requests[0].headers[.acceptEncoding], "gzip")
        XCTAssertTrue(response.isCompressed)
        XCTAssertEqual(response.headers[.contentEncoding], "gzip", "still encoded, so still labelled")
        let body = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body, compressed)
    }

    func testRequestWithCompressionOffGetsTheEncodedBytesOfAServerThatCompressesAnyway() async throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request.acceptsCompressedResponse = false
        let peer = ScriptedPeer([try gzipReply(sample)])
        let response = try await peer.send(request, through: compression())
        XCTAssertTrue(response.isCompressed)
        XCTAssertEqual(response.headers[.contentEncoding], "gzip")
    }

    func testResponsesWithoutContentAreNotDecoded() async throws {
        let headers = HTTPFields([("Content-Encoding", "gzip")])
        var head = HTTPClientRequest(url: "http://a.test/")
        head.method = .head
        for (request, status) in [(head, HTTPResponse.Status.ok), (HTTPClientRequest(url: "http://a.test/"), .noContent),
                                  (HTTPClientRequest(url: "http://a.test/"), .notModified)] {
            let peer = ScriptedPeer([.init(status, headers: headers)])
            let response = try await peer.send(request, through: compression())
            XCTAssertEqual(response.headers[.contentEncoding], "gzip", "\(request.method) \(status)")
            let body = try await response.body.collect(upTo: 100)
            XCTAssertEqual(body, [])
        }
    }

    func testUnknownOrStackedCodingsArePassedThrough() async throws {
        for coding in ["br", "gzip, gzip"] {
            let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", coding)]), body: [1, 2, 3])])
            let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
            XCTAssertTrue(response.isCompressed)
            XCTAssertEqual(response.headers[.contentEncoding], coding)
            let body = try await response.body.collect(upTo: 100)
            XCTAssertEqual(body, [1, 2, 3])
        }
    }

    func testIdentityIsNotCompressed() async throws {
        let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", "identity")]), body: [1])])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        XCTAssertFalse(response.isCompressed)
    }

    // MARK: Request bodies

    func testBytesBodyIsGzippedWithContentEncodingAndStaysReplayable() async throws {
        var request = HTTPClientRequest(url: "http://a.test/upload")
        request.method = .post
        request.body = .bytes(sample)
        request.compressesBody = true
        let peer = ScriptedPeer([.init(.ok)])
        _ = try await peer.send(request, through: compression())
        let sent = peer.requests[0]
        XCTAssertEqual(sent.headers[.contentEncoding], "gzip")
        XCTAssertTrue(sent.body?.isReplayable ?? false)
        let maybeBytes = try await bodyBytes(sent.body)
        let bytes = try XCTUnwrap(maybeBytes)
        XCTAssertEqual(sent.body?.length, bytes.count)
        XCTAssertLessThan(bytes.count, sample.count / 3)
        XCTAssertEqual(try Inflater.decompress(bytes, encoding: .gzip), sample)
    }

    func testStreamBodyIsGzippedAsItIsSentWithUnknownLength() async throws {
        var request = HTTPClientRequest(url: "http://a.test/upload")
        request.method = .put
        let parts = stride(from: 0, to: sample.count, by: 7000).map { Array(sample[$0..<min($0 + 7000, sample.count)]) }
        request.body = .stream(oneShotStream(parts), length: .known(sample.count))
        request.compressesBody = true
        let peer = ScriptedPeer([.init(.ok)])
        _ = try await peer.send(request, through: compression())
        let sent = peer.requests[0]
        XCTAssertEqual(sent.headers[.contentEncoding], "gzip")
        XCTAssertNil(sent.body?.length, "the compressed length is not known up front: sent chunked")
        let maybeBytes = try await bodyBytes(sent.body)
        let bytes = try XCTUnwrap(maybeBytes)
        XCTAssertEqual(try Inflater.decompress(bytes, encoding: .gzip), sample)
    }

    func testEmptyStreamBodyGzipsToAValidEmptyMember() async throws {
        var request = HTTPClientRequest(url: "http://a.test/upload")
        request.method = .post
        request.body = .stream(oneShotStream([]))
        request.compressesBody = true
        let peer = ScriptedPeer([.init(.ok)])
        _ = try await peer.send(request, through: compression())
        let maybeBytes = try await bodyBytes(peer.requests[0].body)
        let bytes = try XCTUnwrap(maybeBytes)
        XCTAssertFalse(bytes.isEmpty)
        XCTAssertEqual(try Inflater.decompress(bytes, encoding: .gzip), [])
    }

    func testBodyWithAContentEncodingAlreadyIsSentAsItIs() async throws {
        var request = HTTPClientRequest(url: "http://a.test/upload")
        request.method = .post
        request.body = .bytes([1, 2, 3])
        request.headers[.contentEncoding] = "br"
        request.compressesBody = true
        let peer = ScriptedPeer([.init(.ok)])
        _ = try await peer.send(request, through: compression())
        let sent = try await bodyBytes(peer.requests[0].body)
        XCTAssertEqual(sent, [1, 2, 3])
        XCTAssertEqual(peer.requests[0].headers[.contentEncoding], "br")
    }

    func testBodyIsNotCompressedUnlessAsked() async throws {
        var request = HTTPClientRequest(url: "http://a.test/upload")
        request.method = .post
        request.body = .bytes(sample)
        let peer = ScriptedPeer([.init(.ok)])
        _ = try await peer.send(request, through: compression())
        XCTAssertNil(peer.requests[0].headers[.contentEncoding])
        let sent = try await bodyBytes(peer.requests[0].body)
        XCTAssertEqual(sent, sample)
    }

    // MARK: Text

    func testTextOfAGzippedISO8859Body() async throws {
        let latin1: [UInt8] = Array("caf".utf8) + [0xE9]  // "café" in ISO-8859-1
        let body = try encoded(latin1, .gzip)
        let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", "gzip"),
                                                                ("Content-Type", "text/plain; charset=ISO-8859-1")]), body: body)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        let text = try await response.text(upTo: 1000)
        XCTAssertEqual(text, "café")
    }

    func testTextFallbackComesFromTheRequestThenTheClient() async throws {
        let bytes: [UInt8] = [0x93, 0x68, 0x69, 0x94]  // “hi” in Windows-1252, not valid UTF-8, no charset
        let chain: [any HTTPClientMiddleware] = [RedirectMiddleware(textDecodingFallback: .init(encoding: .windows1252))]

        let client = ScriptedPeer([.init(.ok, body: bytes)])
        let fromClient = try await client.send(HTTPClientRequest(url: "http://a.test/"), through: chain)
        let clientText = try await fromClient.text(upTo: 100)
        XCTAssertEqual(clientText, "\u{201C}hi\u{201D}")

        var request = HTTPClientRequest(url: "http://a.test/")
        request.textDecodingFallback = .init(encoding: .isoLatin1)
        let perRequest = ScriptedPeer([.init(.ok, body: bytes)])
        let fromRequest = try await perRequest.send(request, through: chain)
        let requestText = try await fromRequest.text(upTo: 100)
        XCTAssertEqual(requestText, "\u{93}hi\u{94}", "ISO-8859-1 maps 0x93 to the C1 control U+0093")

        let bare = ScriptedPeer([.init(.ok, body: bytes)])
        let plain = try await bare.send(HTTPClientRequest(url: "http://a.test/"), through: [])
        let defaultText = try await plain.text(upTo: 100)
        XCTAssertEqual(defaultText, "\u{93}hi\u{94}", "ISO-8859-1 by default, as ASIHTTPRequest")
    }

    // MARK: Text of a body left coded

    /// A caller who copied a browser's `Accept-Encoding` gets the coded bytes from `body`, but `text()` inflates
    /// them (the old code decoded the gzip bytes as ISO-8859-1 and returned them with no error).
    func testTextInflatesABodyLeftCodedForACallersAcceptEncoding() async throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request.headers[.acceptEncoding] = "gzip, deflate, br"
        let response = try await ScriptedPeer([try gzipReply(sample)]).send(request, through: compression())
        XCTAssertEqual(response.headers[.contentEncoding], "gzip")
        let text = try await response.text(upTo: 1 << 20)
        XCTAssertEqual(text, String(decoding: sample, as: UTF8.self))
    }

    /// More than five codings (curl's limit) are refused before any inflater is made: a head may list thousands over
    /// as many nested layers, each holding zlib's state (hundreds of MB). Six layers used to be undone.
    func testTextRefusesMoreThanFiveCodings() async throws {
        var body = sample
        for _ in 0..<6 { body = try encoded(body, .gzip) }
        let coding = Array(repeating: "gzip", count: 6).joined(separator: ", ")
        let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", coding)]), body: body)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        do {
            _ = try await response.text(upTo: 1 << 20)
            XCTFail("six codings were undone")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .decompressionFailed)
            XCTAssertTrue(error.message.contains("at most 5"), error.message)
        }
    }

    /// `gzip, gzip` (left coded by the step, as Go does) is undone twice, last coding first; `maxBytes` counts
    /// the decoded bytes.
    func testTextUndoesStackedCodingsAndCountsDecodedBytes() async throws {
        let twice = try encoded(try encoded(sample, .gzip), .deflate)
        let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", "gzip, deflate")]), body: twice)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        XCTAssertEqual(response.headers[.contentEncoding], "gzip, deflate")
        let text = try await response.text(upTo: 1 << 20)
        XCTAssertEqual(text, String(decoding: sample, as: UTF8.self))

        let limited = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", "gzip, deflate")]), body: twice)])
        let small = try await limited.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        await assertThrowsHTTPError(.bodyLimitExceeded) { try await small.text(upTo: twice.count + 1) }
    }

    /// The client's decompression limits hold for a body `text()` inflates.
    func testTextOfABodyLeftCodedKeepsTheDecompressionLimits() async throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request.headers[.acceptEncoding] = "gzip"
        let policy = CompressionPolicy(maxDecompressedBytes: 10_000, maxDecompressionRatio: nil)
        let response = try await ScriptedPeer([try gzipReply(sample)]).send(request, through: compression(policy))
        let error = await assertThrowsHTTPError(.bodyLimitExceeded) { try await response.text(upTo: 1 << 20) }
        XCTAssertTrue(error?.message.contains("10000") ?? false, error?.message ?? "")
    }

    /// A coding zlib cannot undo is an error naming it, and so is a coded 206: never coded bytes passed off as text.
    func testTextOfABodyInACodingItCannotUndoFailsNamingIt() async throws {
        for coding in ["br", "zstd", "gzip, br"] {
            let peer = ScriptedPeer([.init(.ok, headers: HTTPFields([("Content-Encoding", coding)]), body: [0x1B, 0x02, 0x03])])
            let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
            let error = await assertThrowsHTTPError(.decompressionFailed) { try await response.text(upTo: 100) }
            XCTAssertTrue(error?.message.contains("'\(coding.hasPrefix("gzip") ? "br" : coding)'") ?? false, error?.message ?? "")
        }
        let compressed = try encoded(sample, .gzip)
        let partial = ScriptedPeer([.init(.partialContent, headers: HTTPFields([("Content-Encoding", "gzip")]),
                                          body: Array(compressed.prefix(100)))])
        let response = try await partial.send(HTTPClientRequest(url: "http://a.test/"), through: compression())
        let error = await assertThrowsHTTPError(.decompressionFailed) { try await response.text(upTo: 1 << 20) }
        XCTAssertTrue(error?.message.contains("206") ?? false, error?.message ?? "")

        // No content at all: nothing to decode, nothing to refuse.
        var head = HTTPClientRequest(url: "http://a.test/")
        head.method = .head
        for (request, status) in [(HTTPClientRequest(url: "http://a.test/"), HTTPResponse.Status.noContent), (head, .ok)] {
            let empty = ScriptedPeer([.init(status, headers: HTTPFields([("Content-Encoding", "br")]))])
            let none = try await empty.send(request, through: compression())
            let text = try await none.text(upTo: 100)
            XCTAssertEqual(text, "", "\(request.method) \(status)")
        }
    }
}
