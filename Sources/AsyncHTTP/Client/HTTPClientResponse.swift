import HTTPTypes

/// A response whose head has arrived. The body streams on: read it with `for try await` or
/// ``Body/collect(upTo:)``.
///
/// ```swift
/// let response = try await client.send(request)
/// guard response.status == .ok else { return }
/// for try await chunk in response.body {      // ArraySlice<UInt8>: index from chunk.startIndex
///     try file.write(contentsOf: chunk)
/// }
/// ```
public struct HTTPClientResponse: Sendable {
    /// The status of the final response (after redirects and authentication rounds): `response.status.code` is
    /// the number, `response.status.reasonPhrase` the text. A 404 or 500 is a response, not an error.
    public var status: HTTPResponse.Status
    /// The response's header fields, as received (`response.headers[.contentType]`,
    /// `response.headers[values: .setCookie]`).
    public var headers: HTTPFields
    /// The HTTP version the server answered with.
    public var version: HTTPVersion
    /// The body, streamed from the connection as you read it; read it once, or call ``Body/collect(upTo:)``.
    /// The connection goes back to the pool when the body has been read to its end (or is dropped).
    public var body: Body
    /// The URL this response came from (after redirects, the last one). Never with a password: a URL given
    /// as `https://user:password@host/` is `https://user@host/` here (`HTTPURL.removingPassword`), as
    /// browsers show it, so that printing a response never prints the secret.
    public var url: HTTPURL {
        didSet { if url.password != nil { url = url.removingPassword } }
    }
    /// The URL the request was sent to, before any redirect; without its password, as ``url``.
    public var originalURL: HTTPURL {
        didSet { if originalURL.password != nil { originalURL = originalURL.removingPassword } }
    }
    /// The redirects followed to get this response, oldest first; empty when there were none.
    /// `history.count` is curl's `%{num_redirects}`. Their URLs are without password, as ``url``.
    public var history: [RedirectHop] = [] {
        didSet {
            if history.contains(where: { $0.url.password != nil }) {
                history = history.map { hop in
                    var hop = hop
                    hop.url = hop.url.removingPassword
                    return hop
                }
            }
        }
    }
    /// Whether the server sent the body with a content coding (`Content-Encoding` other than `identity`),
    /// ASIHTTPRequest's `isResponseCompressed`. When AsyncHTTP decoded it, the body yields the decoded bytes
    /// and the `Content-Encoding` and `Content-Length` fields are gone (they described the encoded body);
    /// when `Content-Encoding` is still there, the body is still encoded (``text(upTo:)`` inflates gzip and deflate).
    public var isCompressed = false
    /// Whether the request the transport sent for this response carried `Authorization`, whichever step put it
    /// there: the cache step above a user's middleware (a signer, a bearer token) does not see that field, and
    /// RFC 9111 §3.5 applies to it all the same. Set only by a client with a cache, the one reader (its
    /// ``CacheMiddleware``); false otherwise.
    var requestCarriedAuthorization = false
    /// What the client's ``HTTPClient/Configuration/cache`` did for this response: `hit`, `miss`,
    /// `revalidated` or `stale` (see ``HTTPCacheStatus``); nil when no cache took part (no cache configured,
    /// or a method other than GET). ``didUseCachedResponse`` is ASIHTTPRequest's name for the common question.
    public var cacheStatus: HTTPCacheStatus?
    /// Collects the encoded bytes while a decoded body is read, when the request asked for them.
    var rawBodyRecorder: RawBodyRecorder?
    /// What ``text(upTo:)`` falls back to; set by the redirect middleware from the request or client.
    var textDecodingFallback = TextDecodingFallback()
    /// The limits ``text(upTo:)`` inflates a body still carrying `Content-Encoding` with (the defaults when nil); set
    /// by the compression step from the client's ``CompressionPolicy`` when the response has a `Content-Encoding`.
    /// A reference the step made once, so that a response grows by a pointer, not by the limits.
    var decompressionLimits: DecompressionLimits.Shared?

    /// Creates a response: for middleware that answers without the network (a cache, a test double).
    public init(status: HTTPResponse.Status, headers: HTTPFields = [:], version: HTTPVersion = .http1_1,
                body: Body = Body(), url: HTTPURL) {
        self.status = status
        self.headers = headers
        self.version = version
        self.body = body
        self.url = url.removingPassword
        self.originalURL = self.url
    }

    /// The body as the server sent it, still compressed, when the request set
    /// ``HTTPClientRequest/keepsRawCompressedBody`` and the response was decoded (ASIHTTPRequest's
    /// `rawResponseData`); nil otherwise. It fills as ``body`` is read: complete once the body has been
    /// read to its end.
    ///
    /// Bounded at 32 MiB of compressed bytes: past that the copy is dropped and this is nil, while ``body``
    /// goes on decoding normally. A partial copy is never returned, so a non-nil value read after the body
    /// ended is the whole compressed body (see docs/compression.md).
    public var rawCompressedBody: [UInt8]? { rawBodyRecorder?.bytes }

    /// Reads the body and decodes it as text, failing with `HTTPClientError.Code.bodyLimitExceeded` past
    /// `maxBytes` (counted after decompression).
    ///
    /// A body still coded (its `Content-Encoding` is still there: the request set its own `Accept-Encoding`, or the
    /// server used codings unasked or stacked them, `gzip, gzip`) is inflated here when every coding is `gzip` or
    /// `deflate`, within the client's decompression limits (``CompressionPolicy``); any other coding (`br`, `zstd`)
    /// fails with `HTTPClientError.Code.decompressionFailed` naming it, and so does a coded 206 (a slice of the
    /// coded bytes cannot be inflated on its own): the coded bytes are never passed off as text. An empty body (a
    /// HEAD's) is "".
    ///
    /// The encoding (see ``TextEncoding/decode(_:contentType:fallback:)``) is a byte order mark's, else the
    /// `Content-Type` charset, else UTF-8 if the bytes are valid UTF-8, else the fallback: ISO-8859-1 unless
    /// ``HTTPClientRequest/textDecodingFallback`` or ``HTTPClient/Configuration/textDecodingFallback`` says
    /// otherwise. JSON (`application/json`, `+json`) is always UTF-8 (RFC 8259 §8.1). A declared charset this
    /// platform cannot decode (see ``TextEncoding``) fails with `HTTPClientError.Code.malformedResponse` naming it
    /// rather than guessing; an unknown name is ignored, as browsers do. What cannot be decoded becomes U+FFFD.
    ///
    /// ```swift
    /// let page = try await client.send(request).text(upTo: 1 << 20)
    /// ```
    public func text(upTo maxBytes: Int) async throws -> String {
        try await text(upTo: maxBytes, fallback: textDecodingFallback)
    }

    /// ``text(upTo:)`` with an explicit fallback encoding.
    public func text(upTo maxBytes: Int, fallback: TextDecodingFallback) async throws -> String {
        var body = self.body
        if headers.contains(.contentEncoding) {
            switch decodedForText() {
            case .success(let decoded):
                body = decoded
            case .failure(let error):
                // Empty (a HEAD's body): nothing was coded, nothing to refuse. One chunk tells, whatever the size.
                var iterator = body.makeAsyncIterator()
                while let chunk = try await iterator.next() {
                    if !chunk.isEmpty { throw error }
                }
                return ""
            }
        }
        let bytes = try await body.collect(upTo: maxBytes)
        return try TextEncoding.decodeChecked(bytes, contentType: contentTypeForText, fallback: fallback)
    }

    /// The `Content-Type` that decides the charset: each field's value, joined with ", " when there are several
    /// (``TextEncoding`` takes the last media type, as the WHATWG's "extract a MIME type" does).
    private var contentTypeForText: String? { headers[.contentType] }

    /// The most content codings ``text(upTo:)`` undoes, curl's limit.
    private static let maxTextCodings = 5

    /// ``body`` with the content codings still listed in `Content-Encoding` undone, for ``text(upTo:)``; the error
    /// for a coding zlib cannot undo, or for a coded 206.
    private func decodedForText() -> Result<Body, HTTPClientError> {
        let codings = CompressionMiddleware.contentCodings(headers)
        // No content to decode (RFC 9110 §6.4.1; a HEAD's body is empty and inflates to nothing).
        guard !codings.isEmpty, status.code != 204, status.code != 304 else { return .success(body) }
        // As curl (at most 5): each layer inflates up to 200 times its input and holds zlib's state, so a head
        // listing thousands of codings over as many nested gzip layers would cost hundreds of MB.
        guard codings.count <= Self.maxTextCodings else {
            return .failure(HTTPClientError(.decompressionFailed,
                "the body is still coded with \(codings.count) content codings; text(upTo:) undoes at most \(Self.maxTextCodings)"))
        }
        let listed = codings.joined(separator: ", ")
        guard status.code != 206 else {
            return .failure(HTTPClientError(.decompressionFailed,
                "a 206 with Content-Encoding '\(listed)' is a slice of the coded bytes and cannot be decoded as text;"
                    + " read its bytes from body"))
        }
        let limits = decompressionLimits?.limits ?? DecompressionLimits()
        var decoded = body
        // Applied in the order listed: undone last first (RFC 9110 §8.4).
        for token in codings.reversed() {
            guard let coding = ContentCoding(token: token) else {
                return .failure(HTTPClientError(.decompressionFailed,
                    "the body is still coded with '\(token)' (Content-Encoding '\(listed)'), which AsyncHTTP cannot"
                        + " decode (only gzip and deflate); read its bytes from body"))
            }
            decoded = Body(inflating: InflatingBody(compressed: decoded, coding: coding, limits: limits, recorder: nil))
        }
        return .success(decoded)
    }
}

extension HTTPClientResponse {
    /// The response body as an `AsyncSequence` of byte chunks.
    ///
    /// Backpressure: bytes are read from the socket only as the consumer asks for the next chunk.
    /// A body from the network is read once; iterating it a second time yields what is left (nothing, after
    /// a full pass). A body read straight from its connection whose read failed, or that ``collect(upTo:)`` gave
    /// up at its limit, throws that error again on every later read, never an early end. A body a middleware
    /// transforms (decompressed, recorded into the cache) is read once: read it again only after a full pass.
    /// Dropping a body unread is fine: the connection drains a small remainder for reuse, or is closed.
    ///
    /// Chunks are `ArraySlice<UInt8>` so they can share the read buffer without a copy: index them from
    /// `chunk.startIndex`, or call `Array(chunk)`.
    public struct Body: AsyncSequence, Sendable {
        /// A chunk of the body as it arrived.
        public typealias Element = ArraySlice<UInt8>
        /// Reading fails with `HTTPClientError` (a timeout, a closed connection, a decoding error).
        public typealias Failure = any Error

        enum Storage: Sendable {
            /// One chunk: most bodies that arrive with their head are one read (no array made for it).
            case chunk(ArraySlice<UInt8>)
            case buffered([ArraySlice<UInt8>])
            case connection(ResponseBodyStream)
            case sequence(@Sendable () -> ChunkIterator)
        }

        let storage: Storage
        /// For a body inflated as it is read (the compression step's), the coded body under it: a body nobody reads
        /// (a redirect's, a challenge's) is drained through it, without inflating (``undecoded``).
        let coded: Coded?

        /// Holds the coded body by reference (a body cannot hold a body).
        final class Coded: Sendable {
            let body: Body
            init(_ body: Body) { self.body = body }
        }

        /// An empty body.
        public init() {
            storage = .buffered([])
            coded = nil
        }

        /// A body held in memory.
        public init(bytes: [UInt8]) {
            storage = bytes.isEmpty ? .buffered([]) : .chunk(bytes[...])
            coded = nil
        }

        /// A body produced by any sequence of chunks: middleware uses this to wrap a body
        /// (decompression, throttling, progress).
        public init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) where Chunks.Element == ArraySlice<UInt8> {
            storage = .sequence({
                var iterator = chunks.makeAsyncIterator()
                return ChunkIterator { try await iterator.next() }
            })
            coded = nil
        }

        init(storage: Storage) {
            self.storage = storage
            coded = nil
        }

        /// `inflating`'s decoded bytes, remembering the coded body under it (``undecoded``).
        init(inflating: InflatingBody) {
            storage = .sequence({
                var iterator = inflating.makeAsyncIterator()
                return ChunkIterator { try await iterator.next() }
            })
            coded = Coded(inflating.compressed)
        }

        /// The body under any inflating the compression step put over it: the bytes as they came, to be dropped.
        /// A redirect's or a challenge's body is drained through this, so its drain limit counts the bytes on the
        /// connection and nothing is inflated for nobody.
        var undecoded: Body {
            var body = self
            while let coded = body.coded { body = coded.body }
            return body
        }

        /// Reads the body's chunks in order.
        public struct AsyncIterator: AsyncIteratorProtocol {
            var first: ArraySlice<UInt8>?
            var buffered: [ArraySlice<UInt8>]
            var index = 0
            let stream: ResponseBodyStream?
            let iterator: ChunkIterator?

            /// The next chunk, or nil at the end of the body.
            public mutating func next() async throws -> ArraySlice<UInt8>? {
                if let chunk = first {
                    first = nil
                    return chunk
                }
                if index < buffered.count {
                    defer { index += 1 }
                    return buffered[index]
                }
                if let stream { return try await stream.next() }
                if let iterator { return try await iterator.next() }
                return nil
            }
        }

        /// An iterator over the chunks. A body streamed from a connection has one reader at a time
        /// (a second one fails with `HTTPClientError.Code.bodyInUse`).
        public func makeAsyncIterator() -> AsyncIterator {
            switch storage {
            case .chunk(let chunk): AsyncIterator(first: chunk, buffered: [], stream: nil, iterator: nil)
            case .buffered(let chunks): AsyncIterator(first: nil, buffered: chunks, stream: nil, iterator: nil)
            case .connection(let stream): AsyncIterator(first: nil, buffered: [], stream: stream, iterator: nil)
            case .sequence(let make): AsyncIterator(first: nil, buffered: [], stream: nil, iterator: make())
            }
        }

        /// Reads the whole body into memory, failing with `HTTPClientError.Code.bodyLimitExceeded` as
        /// soon as it would exceed `maxBytes` (the connection is then closed, not drained).
        public func collect(upTo maxBytes: Int) async throws -> [UInt8] {
            var bytes: [UInt8] = []
            if case .chunk(let chunk) = storage, chunk.count <= maxBytes { return Array(chunk) }
            if case .buffered(let chunks) = storage, chunks.count == 1, chunks[0].count <= maxBytes {
                return Array(chunks[0])
            }
            for try await chunk in self {
                guard bytes.count + chunk.count <= maxBytes else {
                    let error = HTTPClientError(.bodyLimitExceeded, "the body is larger than the limit of \(maxBytes) bytes")
                    if case .connection(let stream) = storage { await stream.abandon(because: error) }
                    throw error
                }
                if bytes.isEmpty { bytes.reserveCapacity(Swift.min(maxBytes, Swift.max(chunk.count, 16 * 1024))) }
                bytes.append(contentsOf: chunk)
            }
            return bytes
        }
    }
}

/// Pulls chunks from a wrapped sequence; used by one consumer at a time.
final class ChunkIterator {
    private let pull: () async throws -> ArraySlice<UInt8>?
    init(_ pull: @escaping () async throws -> ArraySlice<UInt8>?) { self.pull = pull }
    func next() async throws -> ArraySlice<UInt8>? { try await pull() }
}
