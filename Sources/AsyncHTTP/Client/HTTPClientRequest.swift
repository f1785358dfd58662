import HTTPTypes
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#elseif canImport(Foundation)
import Foundation
#endif

/// A request to send with ``HTTPClient/send(_:)``.
///
/// ```swift
/// var request = HTTPClientRequest(url: "https://example.com/api/items")
/// request.method = .post
/// request.headers[.contentType] = "application/json"
/// request.body = .bytes(Array(#"{"name":"pen"}"#.utf8))
/// let response = try await client.send(request)
/// ```
///
/// The URL is validated when the request is sent; an invalid one throws `HTTPClientError.Code.invalidURL`.
public struct HTTPClientRequest: Sendable {
    /// The fields live in one box, copied on write. A request is passed by value through every middleware
    /// step, and copying its two dozen fields one by one (a retain or release each) was about 8 percent of the
    /// CPU with 32 concurrent keep-alive GETs (perf: the request's value-witness copy and destroy functions).
    /// Copying a request is now one retain; the first change to a shared copy copies the box.
    ///
    /// The box holds the request proper (``url``, ``method``, ``body``, … : what the transport reads) in
    /// ``Fields``, and every middleware's settings in ``Options`` (see ``HTTPRequestOption``), so that a new
    /// middleware adds an option type of its own instead of a field here.
    ///
    /// The header fields sit beside the box: they are what the built-in middleware change on nearly every
    /// request (the compression step adds `Accept-Encoding`), and with them inside, each of those changes
    /// copied the whole box (about 3% of the CPU with 32 concurrent GETs, perf). `HTTPFields` is
    /// copy-on-write by itself.
    final class Storage: @unchecked Sendable {
        // @unchecked: a box is written only through `storageForWriting`, which first makes it uniquely
        // referenced; a box that two requests share is never written, only read. The one exception is
        // `parsed`, an atomic that readers may fill (see `cache(_:)`).
        /// Changed only by ``HTTPClientRequest/url``'s setter, which also empties `parsed`.
        var url: String
        var fields = Fields()
        var options = Options()

        /// `url` parsed, filled by the first ``HTTPClientRequest/httpURL()`` so that the steps after it do
        /// not parse it again, and emptied when `url` changes. It holds a +1 reference of its own.
        ///
        /// Filled through an atomic because requests that share this box may ask for it at once, from
        /// different tasks; it only ever goes from nil to a value then. Emptied or replaced only in a box
        /// that is uniquely referenced (through `storageForWriting`), so no reader can be holding the
        /// reference being released. An atomic, not `Mutex` (invisible to the thread sanitizer on Linux, see
        /// `Locked`) or `Locked` (a lock allocated per request): loading it is one plain load on x86.
        /// The parsed URL's own box is what is held: a box of its own around it cost each request an allocation.
        private let parsed: Atomic<Unmanaged<HTTPURL.Parts>?>

        init(url: String) {
            self.url = url
            parsed = Atomic(nil)
        }

        init(copying other: Storage) {
            url = other.url
            fields = other.fields
            options = other.options
            parsed = Atomic(other.parsed.load(ordering: .acquiring)?.retain())
        }

        deinit {
            parsed.load(ordering: .acquiring)?.release()
        }

        /// `url` parsed, if a reader has parsed it since it was last set.
        var cachedURL: HTTPURL? {
            parsed.load(ordering: .acquiring).map { HTTPURL(sharing: $0.takeUnretainedValue()) }
        }

        /// Records `url` parsed; when two readers parse at once, the first to record wins.
        func cache(_ url: HTTPURL) {
            let box = Unmanaged.passRetained(url.sharedParts)
            if !parsed.compareExchange(expected: nil, desired: box, ordering: .acquiringAndReleasing).exchanged {
                box.release()
            }
        }

        /// Empties the cache. Only for a uniquely referenced box (see `parsed`).
        func forgetParsedURL() {
            parsed.exchange(nil, ordering: .acquiringAndReleasing)?.release()
        }
    }

    /// The request proper, read by the transport. Middleware settings are ``Options`` instead.
    struct Fields: Sendable {
        var method: HTTPRequest.Method = .get
        var body: Body?
        var version: HTTPVersion = .http1_1
        var timeout: Duration?
        var inactivityTimeout: Duration?
        var retriesOnTimeout: Int?
        var persistentConnection: Bool = true
        var proxy: ProxySetting?
        var headerProblems: [HTTPClientError] = []
        /// A field rather than an option (``HTTPRequestOption``): setting an option allocates its box and the
        /// option list, and a request that watches its progress reads the handler twice. Together about a tenth
        /// of what observing progress cost per request in `conc` (perf, session 12).
        var progressHandler: HTTPProgressHandler?
    }

    private var storage: Storage

    /// The box, made unique first (copy-on-write).
    private var storageForWriting: Storage {
        mutating get {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
            return storage
        }
    }

    /// The absolute `http` or `https` URL.
    public var url: String {
        get { storage.url }
        set {
            let storage = storageForWriting
            storage.url = newValue
            storage.forgetParsedURL()
        }
    }
    /// The method, `.get` by default (`request.method = .post`).
    public var method: HTTPRequest.Method {
        get { storage.fields.method }
        _modify { yield &storageForWriting.fields.method }
    }
    /// Header fields. `HTTPFields` itself replaces CR, LF and NUL in values with spaces; use
    /// ``setHeader(_:_:)`` to have such values refused with an error instead.
    public var headers: HTTPFields = [:]
    /// The body to send, or nil for none. `Body.bytes(_:)` and files can be sent again (for a redirect or an
    /// authentication retry); a ``Body/stream(_:length:)`` only once.
    public var body: Body? {
        get { storage.fields.body }
        _modify { yield &storageForWriting.fields.body }
    }
    /// `.http1_0` forces HTTP/1.0 (ASIHTTPRequest's `useHTTPVersionOne`): no chunked uploads, no keep-alive
    /// unless the server offers it.
    public var version: HTTPVersion {
        get { storage.fields.version }
        _modify { yield &storageForWriting.fields.version }
    }
    /// A total deadline for this request, from `send` until the last body byte. Overrides the client's.
    public var timeout: Duration? {
        get { storage.fields.timeout }
        _modify { yield &storageForWriting.fields.timeout }
    }
    /// The longest wait for the next byte, overriding the client's (ASIHTTPRequest's `timeOutSeconds`).
    public var inactivityTimeout: Duration? {
        get { storage.fields.inactivityTimeout }
        _modify { yield &storageForWriting.fields.inactivityTimeout }
    }
    /// How often to retry an idempotent request after a timeout, overriding the client's
    /// (ASIHTTPRequest's `numberOfTimesToRetryOnTimeout`).
    public var retriesOnTimeout: Int? {
        get { storage.fields.retriesOnTimeout }
        _modify { yield &storageForWriting.fields.retriesOnTimeout }
    }
    /// Keep the connection open for later requests (ASIHTTPRequest's `shouldAttemptPersistentConnection`).
    /// When false the request goes out with `Connection: close` on a connection of its own.
    public var persistentConnection: Bool {
        get { storage.fields.persistentConnection }
        _modify { yield &storageForWriting.fields.persistentConnection }
    }
    /// The proxy for this request, overriding the client's ``HTTPClient/Configuration/proxy``.
    public var proxy: ProxySetting? {
        get { storage.fields.proxy }
        _modify { yield &storageForWriting.fields.proxy }
    }

    /// Whether ``proxy`` is set, without copying the setting out.
    var hasProxySetting: Bool {
        if case .some = storage.fields.proxy { return true }
        return false
    }

    /// Problems found by ``setHeader(_:_:)``, reported when the request is sent.
    var headerProblems: [HTTPClientError] {
        get { storage.fields.headerProblems }
        _modify { yield &storageForWriting.fields.headerProblems }
    }

    /// What ``progressHandler`` reads and writes (documented in `HTTPClientRequest+Flow.swift`).
    var storedProgressHandler: HTTPProgressHandler? {
        get { storage.fields.progressHandler }
        _modify { yield &storageForWriting.fields.progressHandler }
    }

    // MARK: Options

    /// The value of a middleware's option for this request: the value set, or the option's
    /// ``HTTPRequestOption/defaultValue``. Reading never copies the request's storage; setting copies it
    /// only if another copy of the request shares it.
    ///
    /// ```swift
    /// enum ThrottleOption: HTTPRequestOption { static let defaultValue: Int? = nil }
    /// request[ThrottleOption.self] = 64 * 1024
    /// let limit = request[ThrottleOption.self]
    /// ```
    public subscript<Option: HTTPRequestOption>(option: Option.Type) -> Option.Value {
        get { storage.options.read(option) { $0 } }
        set { storageForWriting.options.set(option, to: newValue) }
    }

    /// Part of an option's value, read in place: `request.option(CompressionOptions.self) { $0.compressesBody }`
    /// copies one `Bool`, where `request[CompressionOptions.self].compressesBody` copies the whole value
    /// (retaining each of its fields) to read it.
    @inline(__always)
    func option<Option: HTTPRequestOption, Part>(_ option: Option.Type, _ part: (Option.Value) -> Part) -> Part {
        storage.options.read(option, part)
    }

    // MARK: The parsed URL

    /// `url` parsed. The first call parses it and keeps the result in the request's storage, shared with
    /// its copies, so the steps after it (each middleware, the transport) do not parse it again; setting
    /// `url` forgets it. Reading never copies the storage.
    func httpURL() throws(HTTPClientError) -> HTTPURL {
        if let url = storage.cachedURL { return url }
        let url = try HTTPURL(storage.url)
        storage.cache(url)
        return url
    }

    /// Records `parsed` as ``url`` parsed, for a caller that already has it (the redirect step resolves
    /// each `Location` into an `HTTPURL`); `parsed` must be what parsing `url` gives.
    mutating func cacheParsedURL(_ parsed: HTTPURL) {
        assert((try? HTTPURL(url)) == parsed, "\(parsed) is not \(url) parsed")
        let storage = storageForWriting
        storage.forgetParsedURL()
        storage.cache(parsed)
    }

    /// For tests: whether ``httpURL()`` has a parse kept, which storage box this request reads, and how
    /// many options it has set.
    var hasParsedURL: Bool { storage.cachedURL != nil }
    var storageIdentity: ObjectIdentifier { ObjectIdentifier(storage) }
    var optionCount: Int { storage.options.count }

    /// Creates a `GET` request for `url`, an absolute `http`, `https` or `http+unix` URL. The URL is checked
    /// when the request is sent.
    ///
    /// ```swift
    /// let request = HTTPClientRequest(url: "https://example.com/")
    /// ```
    public init(url: String) {
        storage = Storage(url: url)
    }

    /// Creates a `GET` request for a Foundation `URL`.
    public init(url: URL) {
        storage = Storage(url: url.absoluteString)
    }

    /// Sets a header from plain strings, refusing what could inject or corrupt a header: a name that is
    /// not an RFC 9110 token, or a value containing CR, LF or NUL. A refused header makes ``HTTPClient/send(_:)``
    /// throw `HTTPClientError.Code.invalidRequest` before anything is sent.
    public mutating func setHeader(_ name: String, _ value: String) {
        do throws(HTTPClientError) {
            try HTTPClientError.mapping { () throws(HTTP1Error) in try HTTP1RequestEncoder.validateHeader(name: name, value: value) }
            guard let fieldName = HTTPField.Name(name) else {
                throw HTTPClientError.invalidRequest("header name '\(name)' is not a valid token")
            }
            headers[fieldName] = value
        } catch {
            headerProblems.append(error)
        }
    }

    /// Adds a header line from plain strings, keeping earlier values of the same name; validated like ``setHeader(_:_:)``.
    public mutating func addHeader(_ name: String, _ value: String) {
        do throws(HTTPClientError) {
            try HTTPClientError.mapping { () throws(HTTP1Error) in try HTTP1RequestEncoder.validateHeader(name: name, value: value) }
            guard let fieldName = HTTPField.Name(name) else {
                throw HTTPClientError.invalidRequest("header name '\(name)' is not a valid token")
            }
            headers.append(HTTPField(name: fieldName, value: value))
        } catch {
            headerProblems.append(error)
        }
    }
}

extension HTTPClientRequest {
    /// A request body: bytes in memory, a file on disk (both can be sent again), or a one-shot stream.
    ///
    /// ```swift
    /// request.body = .bytes(Array("hello".utf8))
    /// request.body = try .file("/tmp/upload.iso")            // streamed from disk, Content-Length from its size
    /// request.body = .stream(chunks, length: .known(1 << 20)) // one-shot
    /// ```
    /// Forms build bodies too: `HTTPClientRequest.setForm(_:encoding:)` with a ``URLEncodedForm`` or a ``MultipartForm``.
    public struct Body: Sendable {
        /// Whether a stream's length is known up front. Known lengths go out with `Content-Length`,
        /// unknown ones with `Transfer-Encoding: chunked`.
        public enum Length: Sendable, Hashable {
            /// This many bytes: sent with `Content-Length`.
            case known(Int)
            /// Not known up front: sent with `Transfer-Encoding: chunked` (with HTTP/1.0, until the connection closes).
            case unknown
        }

        /// The internal seam for every body that is not plain bytes.
        ///
        /// `.stream` carries its length (nil: unknown, sent chunked), whether it may be sent again, and a
        /// factory that makes a *new* chunk source for each send: a file body re-opens its file (so a redirect,
        /// an auth retry or a stale-connection retry starts again from the first byte), a multipart form
        /// re-makes its parts, a one-shot stream hands out its one iterator. `makeSource` is called before the
        /// request head is written, so a file that has gone missing fails before anything is sent.
        ///
        /// A middleware that changes the bytes on their way (compression, pacing) wraps the source and keeps
        /// the rest: see ``mappingSource(length:_:)``.
        enum Storage: Sendable {
            case bytes([UInt8])
            case stream(length: Int?, replayable: Bool, makeSource: @Sendable () throws(HTTPClientError) -> BodyChunkSource)
        }

        let storage: Storage
        /// Set for a body made only of bytes and regular files' ranges (``file(_:offset:length:)``, a multipart
        /// form of such parts): the transport may send it piece by piece, the files with `sendfile`, instead of
        /// pulling `storage`'s chunks. A transform (``mappingSource(length:_:)``) makes a new body without it.
        var directPieces: [DirectPiece]? = nil

        /// Bytes held in memory; replayable, sent with `Content-Length`.
        public static func bytes(_ bytes: [UInt8]) -> Body {
            Body(storage: .bytes(bytes))
        }

        /// Any collection of bytes (for example `string.utf8`), copied into memory.
        public static func bytes(_ bytes: some Collection<UInt8>) -> Body {
            Body(storage: .bytes(Array(bytes)))
        }

        /// A stream of byte chunks, read as the socket can take them. One-shot: a request with a stream
        /// body is never sent twice, so a redirect, auth retry or stale-connection retry fails with
        /// `HTTPClientError.Code.bodyNotReplayable` instead.
        ///
        /// The sequence is iterated by a child task of the request, at most 1 MiB ahead of what the socket has
        /// taken; the chunks waiting are written together. A chunk is never held back to wait for the next.
        /// If the request fails or is cancelled, iteration stops (the child task is cancelled).
        ///
        /// With a `.known` length the body ends at that length, as curl's upload of a known size does: once that
        /// many bytes have gone out, the sequence is not read further (it need not finish; its iterating task is
        /// cancelled, so an `AsyncStream` sees its termination as `.cancelled`), and the request waits for its
        /// response. One that ends short of its length fails the request with `HTTPClientError.Code.invalidRequest`;
        /// so does one that yields more before the last declared byte is written (bytes it yields after that are
        /// never read).
        public static func stream<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, length: Length = .unknown) -> Body
        where Chunks.Element: Collection<UInt8> {
            let knownLength: Int? = if case .known(let n) = length { n } else { nil }
            return Body(storage: .stream(length: knownLength, replayable: false, makeSource: { () throws(HTTPClientError) in
                var iterator = chunks.makeAsyncIterator()
                return BodyChunkSource {
                    guard let element = try await iterator.next() else { return nil }
                    if let array = element as? [UInt8] { return array[...] }
                    if let slice = element as? ArraySlice<UInt8> { return slice }
                    return Array(element)[...]
                }
            }))
        }

        /// The number of bytes, when known before sending.
        public var length: Int? {
            switch storage {
            case .bytes(let bytes): bytes.count
            case .stream(let length, _, _): length
            }
        }

        /// Whether the body can be sent more than once (bytes and files: yes; a stream: no).
        public var isReplayable: Bool {
            switch storage {
            case .bytes: true
            case .stream(_, let replayable, _): replayable
            }
        }

        /// The same body with each send's chunk source passed through `transform` (compression, pacing),
        /// keeping whether it can be sent again. `length` is the new length: the old one for a transform that
        /// keeps the bytes' count (pacing), nil for one that does not (compression).
        /// Bytes in memory are first turned into a one-chunk source.
        func mappingSource(
            length: Int?, _ transform: @escaping @Sendable (BodyChunkSource) -> BodyChunkSource
        ) -> Body {
            switch storage {
            case .bytes(let bytes):
                return Body(storage: .stream(length: length, replayable: true, makeSource: { () throws(HTTPClientError) in
                    var sent = false
                    return transform(BodyChunkSource {
                        if sent || bytes.isEmpty { return nil }
                        sent = true
                        return bytes[...]
                    })
                }))
            case .stream(_, let replayable, let makeSource):
                return Body(storage: .stream(length: length, replayable: replayable, makeSource: { () throws(HTTPClientError) in
                    transform(try makeSource())
                }))
            }
        }
    }
}

/// Pulls the chunks of a streaming request body. Used by one task at a time: made by the task that writes the
/// request (before the head goes out) and handed to the read-ahead task, which alone pulls it from then on.
final class BodyChunkSource: @unchecked Sendable {
    // @unchecked: one owner at a time (see above); `pull`'s state is touched only by that owner.
    private let pull: () async throws -> ArraySlice<UInt8>?
    init(_ pull: @escaping () async throws -> ArraySlice<UInt8>?) { self.pull = pull }
    func next() async throws -> ArraySlice<UInt8>? { try await pull() }
}

extension HTTPRequest.Method {
    /// RFC 9110 §9.2.2: methods whose repetition has the same effect as one request.
    var isIdempotent: Bool {
        switch self {
        case .get, .head, .options, .trace, .put, .delete: true
        default: false
        }
    }
}
