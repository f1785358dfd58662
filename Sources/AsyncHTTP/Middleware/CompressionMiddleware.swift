import HTTPTypes

/// How a client asks for compressed responses and guards against decompression bombs.
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// configuration.compression.maxDecompressedBytes = 100 << 20   // refuse bodies that inflate past 100 MiB
///
/// var request = HTTPClientRequest(url: "https://example.com/archive.tar.gz")
/// request.acceptsCompressedResponse = false   // no Accept-Encoding, bytes as stored
/// ```
public struct CompressionPolicy: Sendable, Hashable {
    /// Send `Accept-Encoding: gzip, deflate` and decode such responses as they stream in (ASIHTTPRequest's
    /// `allowCompressedResponse`, on by default there too). A request can override it with
    /// ``HTTPClientRequest/acceptsCompressedResponse``.
    public var acceptsCompressedResponses: Bool
    /// The most bytes one body may inflate to, or nil for no absolute cap (the default: curl, Go, URLSession
    /// and browsers have none, and a gzipped download can rightly inflate to gigabytes on its way to disk).
    /// Past it the body fails with `HTTPClientError.Code.bodyLimitExceeded`.
    public var maxDecompressedBytes: Int?
    /// The most decompressed bytes per compressed byte, over the body so far, or nil for no check.
    /// 200: Apache httpd's `mod_deflate` (`DeflateInflateRatioLimit`); text and JSON compress 3–20:1, a bomb
    /// of zeros about 1000:1. Past it the body fails with `HTTPClientError.Code.bodyLimitExceeded`.
    public var maxDecompressionRatio: Int?
    /// The ratio is enforced only once this many bytes have been inflated, so a small, very repetitive body
    /// is never refused. 1 MiB: where a bomb starts to cost memory worth caring about.
    public var decompressionRatioAppliesAfter: Int

    /// Creates a policy; every parameter defaults to the value described on its property.
    public init(
        acceptsCompressedResponses: Bool = true, maxDecompressedBytes: Int? = nil, maxDecompressionRatio: Int? = 200,
        decompressionRatioAppliesAfter: Int = 1 << 20
    ) {
        self.acceptsCompressedResponses = acceptsCompressedResponses
        self.maxDecompressedBytes = maxDecompressedBytes
        self.maxDecompressionRatio = maxDecompressionRatio
        self.decompressionRatioAppliesAfter = decompressionRatioAppliesAfter
    }

    var limits: DecompressionLimits {
        DecompressionLimits(maxBytes: maxDecompressedBytes, maxRatio: maxDecompressionRatio,
                            ratioAppliesAfter: decompressionRatioAppliesAfter)
    }
}

/// Asks for gzip and deflate, inflates responses as their bytes arrive, and gzips request bodies when asked.
///
/// Responses are decoded only when this middleware sent the `Accept-Encoding` itself, as Go's transport
/// does: a caller who sets `Accept-Encoding` by hand gets the bytes as the server sent them (and
/// ``HTTPClientResponse/isCompressed`` says whether they are encoded). So are stacked codings, a 206, and a content
/// coding under a transfer coding; ``HTTPClientResponse/text(upTo:)`` inflates what is left coded in gzip or deflate.
///
/// A decoded response loses its `Content-Encoding` and `Content-Length` fields, since neither describes
/// the body it now carries (Go does the same and sets `Uncompressed`; URLSession keeps both, so its
/// `expectedContentLength` is the compressed size). ``HTTPClientResponse/isCompressed`` stays true.
struct CompressionMiddleware: HTTPClientMiddleware {
    let policy: CompressionPolicy
    /// The bound of ``HTTPClientResponse/rawCompressedBody`` (``RawBodyRecorder/defaultLimit``; tests lower it).
    var rawBodyLimit = RawBodyRecorder.defaultLimit

    /// What is advertised. Not `br` or `zstd`: zlib decodes only these two.
    static let acceptEncoding = "gzip, deflate"
    /// ``acceptEncoding`` as a field, made once (making a field checks its value).
    static let acceptEncodingField = HTTPField(name: .acceptEncoding, value: acceptEncoding)

    /// Compressed input is fed to zlib this much at a time, so one step of the body yields at most about
    /// 16 MiB even at deflate's worst ratio (≈1032:1) when the ratio check is off (the transfer-coding
    /// decoder's bound; the response body's steps are bounded by ``outputChunkSize``).
    static let inputSliceSize = 16 * 1024

    /// The most decoded bytes one step of an inflated response body yields: zlib writes straight into the
    /// array handed to the reader, at most this big. 256 KiB: zlib copies the last 32 KiB of each call's output
    /// into its window, so a large call keeps that copy an eighth of the bytes (gzip benchmark, perf: with
    /// 64 KiB calls into a reused buffer and a copy out of it, `memmove` was 7 % of the client's CPU).
    static let outputChunkSize = 256 * 1024

    /// The smallest array a step starts with when little input is waiting: a small body gets a small array.
    static let minimumOutputChunkSize = 16 * 1024

    /// `policy`'s limits, made once for every response this step labels (``HTTPClientResponse/text(upTo:)``).
    let limits: DecompressionLimits.Shared

    init(policy: CompressionPolicy = CompressionPolicy()) {
        self.policy = policy
        limits = DecompressionLimits.Shared(policy.limits)
    }

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        var request = request
        let decodes = try prepare(&request)
        var response = try await next(request)
        decode(&response, to: request, decodes: decodes)
        return response
    }

    // The work before and after the request goes out is synchronous and kept out of `intercept`: an async
    // function's frame holds every local of all its paths, and every request in flight carries the frames of
    // the steps it is in.

    /// Compresses the request's body if it asks for that, and adds `Accept-Encoding` when this step will decode
    /// the response (returned).
    @inline(never)
    private func prepare(_ request: inout HTTPClientRequest) throws(HTTPClientError) -> Bool {
        if request.compressesBody { try Self.gzipBody(of: &request) }
        // Not for a range: a range of a compressed representation cannot be inflated on its own (Go's transport
        // does not ask for gzip with a `Range` either).
        let decodes = (request.acceptsCompressedResponse ?? policy.acceptsCompressedResponses)
            && !request.headers.contains(.acceptEncoding) && !request.headers.contains(.range)
        // Appended: the field is known to be absent, and the subscript's setter would search for it again.
        if decodes { request.headers.append(Self.acceptEncodingField) }
        return decodes
    }

    /// `response`, its body inflated as it is read when it is compressed and this step decodes it.
    /// In place (`inout`): a response passed by value and returned would be copied, retaining each of its
    /// fields, and the original released.
    @inline(never)
    private func decode(_ response: inout HTTPClientResponse, to request: HTTPClientRequest, decodes: Bool) {
        guard response.headers.contains(.contentEncoding) else { return }
        let codings = Self.contentCodings(response.headers)
        guard !codings.isEmpty else { return }
        response.isCompressed = true
        // What `text(upTo:)` inflates a body left coded with.
        response.decompressionLimits = limits
        // Only one coding is decoded; stacked codings ("gzip, gzip") are left for the caller, as Go does.
        // A 206 is a slice of the coded bytes: it is handed over as it came, `Content-Encoding` and all.
        // Nor under a transfer coding the connection undid (`Transfer-Encoding: gzip, chunked`): each inflater checks
        // its ratio against its own input, so the two would allow 200 × 200 against the bytes on the wire (the
        // parser refuses stacked transfer codings for the same reason). Left coded, as stacked content codings are.
        guard decodes, codings.count == 1, let coding = ContentCoding(token: codings[0]),
              Self.hasBody(response, method: request.method), response.status.code != 206,
              !Self.hadTransferCoding(response.headers)
        else { return }

        let recorder = request.keepsRawCompressedBody ? RawBodyRecorder(limit: rawBodyLimit) : nil
        // Remembering the coded body under it, so that a drain can reach it (`Body.undecoded`).
        response.body = HTTPClientResponse.Body(
            inflating: InflatingBody(compressed: response.body, coding: coding, limits: policy.limits, recorder: recorder))
        response.rawBodyRecorder = recorder
        response.headers[.contentEncoding] = nil
        response.headers[.contentLength] = nil
    }

    /// The codings of `Content-Encoding` (RFC 9110 §8.4), lowercased, in the order applied, without `identity`.
    static func contentCodings(_ headers: HTTPFields) -> [String] {
        headers[values: .contentEncoding].flatMap { value in
            value.split(separator: ",").map { $0.trimmingWhitespace().lowercased() }
        }.filter { !$0.isEmpty && $0 != "identity" }
    }

    /// Whether `Transfer-Encoding` lists a coding other than `chunked` (the parser accepts only gzip and deflate
    /// there, undone by the connection): the body reached this step already inflated once.
    static func hadTransferCoding(_ headers: HTTPFields) -> Bool {
        guard headers.contains(.transferEncoding) else { return false }
        return headers[values: .transferEncoding].contains { value in
            value.split(separator: ",").contains { element in
                let coding = element.trimmingWhitespace().lowercased()
                return !coding.isEmpty && coding != "chunked" && coding != "identity"
            }
        }
    }

    /// RFC 9110 §6.4.1: no content in responses to HEAD, nor in 1xx, 204 and 304 responses.
    static func hasBody(_ response: HTTPClientResponse, method: HTTPRequest.Method) -> Bool {
        let code = response.status.code
        return method != .head && code >= 200 && code != 204 && code != 304
    }

    // MARK: Request bodies

    /// Replaces the body with its gzip encoding and sets `Content-Encoding: gzip` (ASIHTTPRequest's
    /// `shouldCompressRequestBody`). Bytes are compressed at once and stay replayable with a known length;
    /// a stream is compressed as it is sent, so its length becomes unknown (chunked). A body that already
    /// has a `Content-Encoding` is sent as it is.
    static func gzipBody(of request: inout HTTPClientRequest) throws(HTTPClientError) {
        guard let body = request.body, !request.headers.contains(.contentEncoding) else { return }
        switch body.storage {
        case .bytes(let bytes):
            let deflater = Deflater(encoding: .gzip)
            var compressed: [UInt8] = []
            compressed.reserveCapacity(bytes.count / 2 + 64)
            try bytes.withUnsafeBytes { input in
                Result { () throws(HTTPClientError) in
                    try deflater.compress(input) { compressed.append(contentsOf: $0) }
                    try deflater.finish { compressed.append(contentsOf: $0) }
                }
            }.get()
            request.body = .bytes(compressed)
        case .stream:
            request.body = body.mappingSource(length: nil) { gzipping($0) }
        }
        request.headers[.contentEncoding] = "gzip"
    }

    /// A source that yields the gzip encoding of `source`'s chunks.
    static func gzipping(_ source: BodyChunkSource) -> BodyChunkSource {
        let deflater = Deflater(encoding: .gzip)
        var ended = false
        return BodyChunkSource {
            // zlib holds back small inputs; pull until it has something to say, or the input ends.
            while !ended {
                var compressed: [UInt8] = []
                if let chunk = try await source.next() {
                    try chunk.withUnsafeBytes { input in
                        try deflater.compress(input) { compressed.append(contentsOf: $0) }
                    }
                } else {
                    ended = true
                    try deflater.finish { compressed.append(contentsOf: $0) }
                }
                if !compressed.isEmpty { return compressed[...] }
            }
            return nil
        }
    }
}

/// A response body that inflates another as it is read. Decoded bytes are counted by
/// ``HTTPClientResponse/Body/collect(upTo:)``'s limit, as the caller would expect.
///
/// A body that ends before its compressed stream does fails with `HTTPClientError.Code.decompressionFailed`
/// rather than ending early: a truncated body never passes for a complete one.
struct InflatingBody: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>

    let compressed: HTTPClientResponse.Body
    let coding: ContentCoding
    let limits: DecompressionLimits
    let recorder: RawBodyRecorder?

    func makeAsyncIterator() -> Iterator {
        Iterator(compressed: compressed.makeAsyncIterator(), inflater: Inflater(encoding: coding, limits: limits),
                 recorder: recorder)
    }

    struct Iterator: AsyncIteratorProtocol {
        var compressed: HTTPClientResponse.Body.AsyncIterator
        let inflater: Inflater
        let recorder: RawBodyRecorder?
        /// Compressed bytes received but not yet inflated.
        var pending: ArraySlice<UInt8> = []
        /// The last step filled its array: zlib may hold more decoded bytes, to be drained before waiting for
        /// more input (or declaring the end).
        var outputWasFull = false
        var ended = false

        /// A failure (the body cut short, an inflate error, a read error) drops the recorder's copy before it is
        /// rethrown: the copy would be a truncated body, which ``HTTPClientResponse/rawCompressedBody`` never returns.
        mutating func next() async throws -> ArraySlice<UInt8>? {
            do {
                return try await step()
            } catch {
                recorder?.discard()
                throw error
            }
        }

        private mutating func step() async throws -> ArraySlice<UInt8>? {
            while !ended {
                if pending.isEmpty && !outputWasFull {
                    guard let chunk = try await compressed.next() else {
                        ended = true
                        try inflater.finish()  // throws if the compressed stream was cut short
                        return nil
                    }
                    recorder?.append(chunk)
                    pending = chunk
                    continue
                }
                // About what this input inflates to (JSON and text: 4–10×), within the bounds.
                let capacity = Swift.min(CompressionMiddleware.outputChunkSize,
                                         Swift.max(CompressionMiddleware.minimumOutputChunkSize, pending.count * 8))
                let inflater = self.inflater
                var consumed = 0
                let decoded = try pending.withUnsafeBytes { input in
                    try [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                        let step = try inflater.decompress(input, into: UnsafeMutableRawBufferPointer(buffer))
                        consumed = step.consumed
                        count = step.produced
                    }
                }
                pending = pending.dropFirst(consumed)
                outputWasFull = decoded.count == capacity
                if !decoded.isEmpty { return decoded[...] }
            }
            return nil
        }
    }
}

/// The compressed bytes of a response as they pass through ``InflatingBody``
/// (``HTTPClientResponse/rawCompressedBody``), up to ``limit``.
///
/// Bounded: past ``limit`` recording stops, the bytes kept so far are dropped, and ``bytes`` is nil from then
/// on. The decoded body goes on (it is streamed, not kept); only the copy is given up. A truncated copy is
/// never handed out, so it cannot pass for the whole body, and failing the body instead would punish a caller
/// who only wanted the copy as a convenience.
///
/// `@unchecked` is not needed: the bytes live in a `Mutex`. The body's reader appends, anyone may read.
final class RawBodyRecorder: Sendable {
    /// 32 MiB. ASIHTTPRequest's `rawResponseData` kept everything, so a big gzipped download sat in memory
    /// twice (the copy and what the caller collected). The copy exists to inspect or re-save a response, which
    /// is a page or an API answer, not a download; 32 MiB is a thousand times the typical compressed page
    /// (tens of KiB) and small enough that a stream of such requests cannot exhaust a server-side process.
    static let defaultLimit = 32 << 20

    let limit: Int
    private let storage = Locked<State>(.recording([]))

    private enum State {
        case recording([UInt8])
        /// More than ``limit`` bytes went by, or the body failed: nothing is kept.
        case overLimit
    }

    init(limit: Int = RawBodyRecorder.defaultLimit) {
        self.limit = limit
    }

    func append(_ chunk: ArraySlice<UInt8>) {
        storage.withLock { state in
            guard case .recording(var bytes) = state else { return }
            guard bytes.count + chunk.count <= limit else {
                state = .overLimit  // frees what was kept
                return
            }
            state = .overLimit  // releases the array's reference so the append does not copy it
            bytes.append(contentsOf: chunk)
            state = .recording(bytes)
        }
    }

    /// Drops the copy for good: the body failed, and what was recorded is not the whole of it.
    func discard() {
        storage.withLock { $0 = .overLimit }
    }

    /// The bytes recorded so far, or nil once the body went past ``limit`` or failed.
    var bytes: [UInt8]? {
        storage.withLock { state in
            if case .recording(let bytes) = state { return bytes }
            return nil
        }
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    func trimmingWhitespace() -> Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}
