import HTTPTypes

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
/// The URL is validated when the request is sent; an invalid one throws ``HTTPClientError/Code/invalidURL``.
public struct HTTPClientRequest: Sendable {
    /// The fields live in one box, copied on write. A request is passed by value through every middleware
    /// step, and copying its two dozen fields one by one (a retain or release each) was about 8 percent of the
    /// CPU with 32 concurrent keep-alive GETs (perf: the request's value-witness copy and destroy functions).
    /// Copying a request is now one retain; the first change to a shared copy copies the box.
    ///
    /// The header fields and the parsed URL sit beside the box: they are what the built-in middleware change
    /// on nearly every request (the compression step adds `Accept-Encoding`, the redirect step records the
    /// parsed URL), and with them inside, each of those changes copied the whole box (about 3% of the CPU
    /// with 32 concurrent GETs, perf). `HTTPFields` is copy-on-write by itself.
    final class Storage: @unchecked Sendable {
        // @unchecked: a box is written only through `storageForWriting`, which first makes it uniquely
        // referenced; a box that two requests share is never written, only read.
        var url: String
        var method: HTTPRequest.Method = .get
        var body: Body?
        var version: HTTPVersion = .http1_1
        var timeout: Duration?
        var inactivityTimeout: Duration?
        var retriesOnTimeout: Int?
        var persistentConnection: Bool = true
        var redirectPolicy: RedirectPolicy?
        var sensitiveHeaders: Set<HTTPField.Name> = []
        var usesCookieJar: Bool = true
        var acceptsCompressedResponse: Bool?
        var compressesBody: Bool = false
        var keepsRawCompressedBody: Bool = false
        var textDecodingFallback: TextDecodingFallback?
        var credentials: HTTPCredentials?
        var authenticationSchemes: Set<HTTPAuthenticationScheme>?
        var sendsCredentialsPreemptively: Bool = false
        var bearerToken: String?
        var proxy: ProxySetting?
        var connectionPin: ConnectionPin?
        var headerProblems: [HTTPClientError] = []

        init(url: String) {
            self.url = url
        }

        init(copying other: Storage) {
            url = other.url
            method = other.method
            body = other.body
            version = other.version
            timeout = other.timeout
            inactivityTimeout = other.inactivityTimeout
            retriesOnTimeout = other.retriesOnTimeout
            persistentConnection = other.persistentConnection
            redirectPolicy = other.redirectPolicy
            sensitiveHeaders = other.sensitiveHeaders
            usesCookieJar = other.usesCookieJar
            acceptsCompressedResponse = other.acceptsCompressedResponse
            compressesBody = other.compressesBody
            keepsRawCompressedBody = other.keepsRawCompressedBody
            textDecodingFallback = other.textDecodingFallback
            credentials = other.credentials
            authenticationSchemes = other.authenticationSchemes
            sendsCredentialsPreemptively = other.sendsCredentialsPreemptively
            bearerToken = other.bearerToken
            proxy = other.proxy
            connectionPin = other.connectionPin
            headerProblems = other.headerProblems
        }
    }

    private var storage: Storage

    /// ``url`` as the redirect step parsed it, kept while `url` still equals `source`; a box, so that
    /// recording it copies neither the request's box nor the parsed URL's strings.
    final class ParsedURL: Sendable {
        let source: String
        let url: HTTPURL
        init(source: String, url: HTTPURL) {
            self.source = source
            self.url = url
        }
    }

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
        set { storageForWriting.url = newValue }
        _modify { yield &storageForWriting.url }
    }
    public var method: HTTPRequest.Method {
        get { storage.method }
        set { storageForWriting.method = newValue }
        _modify { yield &storageForWriting.method }
    }
    /// Header fields. `HTTPFields` itself replaces CR, LF and NUL in values with spaces; use
    /// ``setHeader(_:_:)`` to have such values refused with an error instead.
    public var headers: HTTPFields = [:]
    public var body: Body? {
        get { storage.body }
        set { storageForWriting.body = newValue }
        _modify { yield &storageForWriting.body }
    }
    /// `.http1_0` forces HTTP/1.0 (ASIHTTPRequest's `useHTTPVersionOne`): no chunked uploads, no keep-alive
    /// unless the server offers it.
    public var version: HTTPVersion {
        get { storage.version }
        set { storageForWriting.version = newValue }
        _modify { yield &storageForWriting.version }
    }
    /// A total deadline for this request, from `send` until the last body byte. Overrides the client's.
    public var timeout: Duration? {
        get { storage.timeout }
        set { storageForWriting.timeout = newValue }
        _modify { yield &storageForWriting.timeout }
    }
    /// The longest wait for the next byte, overriding the client's (ASIHTTPRequest's `timeOutSeconds`).
    public var inactivityTimeout: Duration? {
        get { storage.inactivityTimeout }
        set { storageForWriting.inactivityTimeout = newValue }
        _modify { yield &storageForWriting.inactivityTimeout }
    }
    /// How often to retry an idempotent request after a timeout, overriding the client's
    /// (ASIHTTPRequest's `numberOfTimesToRetryOnTimeout`).
    public var retriesOnTimeout: Int? {
        get { storage.retriesOnTimeout }
        set { storageForWriting.retriesOnTimeout = newValue }
        _modify { yield &storageForWriting.retriesOnTimeout }
    }
    /// Keep the connection open for later requests (ASIHTTPRequest's `shouldAttemptPersistentConnection`).
    /// When false the request goes out with `Connection: close` on a connection of its own.
    public var persistentConnection: Bool {
        get { storage.persistentConnection }
        set { storageForWriting.persistentConnection = newValue }
        _modify { yield &storageForWriting.persistentConnection }
    }

    // MARK: Middleware options. Each nil or default leaves the decision to the client's configuration.

    /// How redirects are followed for this request, replacing the client's
    /// ``HTTPClient/Configuration/redirectPolicy``. `.disabled` returns a 3xx response as it is
    /// (ASIHTTPRequest's `shouldRedirect = NO`).
    public var redirectPolicy: RedirectPolicy? {
        get { storage.redirectPolicy }
        set { storageForWriting.redirectPolicy = newValue }
        _modify { yield &storageForWriting.redirectPolicy }
    }
    /// Headers to remove if a redirect leaves this request's origin, in addition to the policy's
    /// ``RedirectPolicy/sensitiveHeaders`` and the always-removed `Authorization`, `Proxy-Authorization`
    /// and `Cookie`: mark here the credentials you add as custom headers.
    public var sensitiveHeaders: Set<HTTPField.Name> {
        get { storage.sensitiveHeaders }
        set { storageForWriting.sensitiveHeaders = newValue }
        _modify { yield &storageForWriting.sensitiveHeaders }
    }
    /// Send cookies from the client's jar and store the cookies the response sets (ASIHTTPRequest's
    /// `useCookiePersistence`). When false the jar is neither read nor changed; a `Cookie` header you set
    /// is still sent, which is how a request carries cookies of its own.
    public var usesCookieJar: Bool {
        get { storage.usesCookieJar }
        set { storageForWriting.usesCookieJar = newValue }
        _modify { yield &storageForWriting.usesCookieJar }
    }
    /// Ask for a gzip or deflate response and decode it as it streams in, overriding the client's
    /// ``CompressionPolicy/acceptsCompressedResponses`` (ASIHTTPRequest's `allowCompressedResponse`).
    public var acceptsCompressedResponse: Bool? {
        get { storage.acceptsCompressedResponse }
        set { storageForWriting.acceptsCompressedResponse = newValue }
        _modify { yield &storageForWriting.acceptsCompressedResponse }
    }
    /// Compress the body with gzip and send it with `Content-Encoding: gzip` (ASIHTTPRequest's
    /// `shouldCompressRequestBody`). Only for servers known to accept it: HTTP has no way to ask first.
    public var compressesBody: Bool {
        get { storage.compressesBody }
        set { storageForWriting.compressesBody = newValue }
        _modify { yield &storageForWriting.compressesBody }
    }
    /// Keep the compressed bytes of a decoded response too, in ``HTTPClientResponse/rawCompressedBody``
    /// (ASIHTTPRequest's `rawResponseData`).
    public var keepsRawCompressedBody: Bool {
        get { storage.keepsRawCompressedBody }
        set { storageForWriting.keepsRawCompressedBody = newValue }
        _modify { yield &storageForWriting.keepsRawCompressedBody }
    }
    /// What ``HTTPClientResponse/text(upTo:)`` falls back to for this request's response, overriding the
    /// client's ``HTTPClient/Configuration/textDecodingFallback`` (ASIHTTPRequest's `defaultResponseEncoding`).
    public var textDecodingFallback: TextDecodingFallback? {
        get { storage.textDecodingFallback }
        set { storageForWriting.textDecodingFallback = newValue }
        _modify { yield &storageForWriting.textDecodingFallback }
    }

    // MARK: Authentication and proxies

    /// Credentials for this request's origin (ASIHTTPRequest's `username`, `password` and `domain`). Used to
    /// answer a `401` after the URL's own userinfo and before the client's stores and callback (see
    /// ``AuthenticationConfiguration``). Dropped when a redirect leaves the origin.
    public var credentials: HTTPCredentials? {
        get { storage.credentials }
        set { storageForWriting.credentials = newValue }
        _modify { yield &storageForWriting.credentials }
    }
    /// The schemes this request may answer a challenge with; nil allows every supported scheme, strongest
    /// first (Digest, NTLM, Basic: curl's order). curl's `--digest` is `[.digest]`.
    public var authenticationSchemes: Set<HTTPAuthenticationScheme>? {
        get { storage.authenticationSchemes }
        set { storageForWriting.authenticationSchemes = newValue }
        _modify { yield &storageForWriting.authenticationSchemes }
    }
    /// Send Basic credentials (the URL's userinfo or ``credentials``) with the first request, before any
    /// challenge (ASIHTTPRequest's `authenticationScheme = Basic` with `shouldPresentCredentialsBeforeChallenge`;
    /// curl's `-u` does this). It also lets a one-shot body go out authenticated. Off by default.
    public var sendsCredentialsPreemptively: Bool {
        get { storage.sendsCredentialsPreemptively }
        set { storageForWriting.sendsCredentialsPreemptively = newValue }
        _modify { yield &storageForWriting.sendsCredentialsPreemptively }
    }
    /// An OAuth 2.0 bearer token (RFC 6750), sent as `Authorization: Bearer …` to this request's origin only;
    /// on a `401` the client's ``AuthenticationConfiguration/refreshBearerToken`` may replace it once.
    public var bearerToken: String? {
        get { storage.bearerToken }
        set { storageForWriting.bearerToken = newValue }
        _modify { yield &storageForWriting.bearerToken }
    }
    /// The proxy for this request, overriding the client's ``HTTPClient/Configuration/proxy``.
    public var proxy: ProxySetting? {
        get { storage.proxy }
        set { storageForWriting.proxy = newValue }
        _modify { yield &storageForWriting.proxy }
    }

    /// `url` parsed, kept by the first step that parses it (the redirect middleware) so that the steps after
    /// it do not parse it again; trusted only while `url` is still the string it came from.
    var parsedURL: ParsedURL?

    /// `url` parsed, from ``parsedURL`` when it is still current.
    func httpURL() throws(HTTPClientError) -> HTTPURL {
        if let parsedURL, parsedURL.source == url { return parsedURL.url }
        return try HTTPURL(url)
    }

    /// Keeps this request on the connection of an NTLM handshake (set by the auth middleware).
    var connectionPin: ConnectionPin? {
        get { storage.connectionPin }
        set { storageForWriting.connectionPin = newValue }
        _modify { yield &storageForWriting.connectionPin }
    }

    /// Problems found by ``setHeader(_:_:)``, reported when the request is sent.
    var headerProblems: [HTTPClientError] {
        get { storage.headerProblems }
        set { storageForWriting.headerProblems = newValue }
        _modify { yield &storageForWriting.headerProblems }
    }

    public init(url: String) {
        storage = Storage(url: url)
    }

    public init(url: URL) {
        storage = Storage(url: url.absoluteString)
    }

    /// Sets a header from plain strings, refusing what could inject or corrupt a header: a name that is
    /// not an RFC 9110 token, or a value containing CR, LF or NUL. A refused header makes ``HTTPClient/send(_:)``
    /// throw ``HTTPClientError/Code/invalidRequest`` before anything is sent.
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
    /// A request body: bytes in memory (can be sent again) or a one-shot stream.
    public struct Body: Sendable {
        /// Whether a stream's length is known up front. Known lengths go out with `Content-Length`,
        /// unknown ones with `Transfer-Encoding: chunked`.
        public enum Length: Sendable, Hashable {
            case known(Int)
            case unknown
        }

        enum Storage: Sendable {
            case bytes([UInt8])
            case stream(length: Int?, makeSource: @Sendable () -> BodyChunkSource)
        }

        let storage: Storage

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
        /// ``HTTPClientError/Code/bodyNotReplayable`` instead.
        ///
        /// The sequence is iterated by a child task of the request, at most 1 MiB ahead of what the socket has
        /// taken; the chunks waiting are written together. A chunk is never held back to wait for the next.
        /// If the request fails or is cancelled, iteration stops (the child task is cancelled).
        public static func stream<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, length: Length = .unknown) -> Body
        where Chunks.Element: Collection<UInt8> {
            let knownLength: Int? = if case .known(let n) = length { n } else { nil }
            return Body(storage: .stream(length: knownLength, makeSource: {
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
            case .stream(let length, _): length
            }
        }

        /// Whether the body can be sent more than once (bytes: yes; a stream: no).
        public var isReplayable: Bool {
            if case .bytes = storage { return true }
            return false
        }
    }
}

/// Pulls the chunks of a streaming request body. Used by the one task that writes the request.
final class BodyChunkSource {
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
