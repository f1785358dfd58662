import HTTPTypes

// The built-in middleware's settings, each step's in an option type of its own (see ``HTTPRequestOption``),
// and the request properties they have always had, kept as conveniences over those options.

// MARK: Redirects

/// ``RedirectMiddleware``'s settings for one request.
struct RedirectOptions: HTTPRequestOption, Sendable {
    var policy: RedirectPolicy?
    var sensitiveHeaders: Set<HTTPField.Name> = []
    static var defaultValue: Self { Self() }
}

extension HTTPClientRequest {
    // Each nil or default leaves the decision to the client's configuration.

    /// How redirects are followed for this request, replacing the client's
    /// ``HTTPClient/Configuration/redirectPolicy``. `.disabled` returns a 3xx response as it is
    /// (ASIHTTPRequest's `shouldRedirect = NO`).
    public var redirectPolicy: RedirectPolicy? {
        get { option(RedirectOptions.self) { $0.policy } }
        set { self[RedirectOptions.self].policy = newValue }
    }
    /// Headers to remove if a redirect leaves this request's origin, in addition to the policy's
    /// ``RedirectPolicy/sensitiveHeaders`` and the always-removed `Authorization`, `Proxy-Authorization`
    /// and `Cookie`: mark here the credentials you add as custom headers.
    public var sensitiveHeaders: Set<HTTPField.Name> {
        get { option(RedirectOptions.self) { $0.sensitiveHeaders } }
        set { self[RedirectOptions.self].sensitiveHeaders = newValue }
    }
}

// MARK: Cookies

/// ``CookieMiddleware``'s settings for one request.
struct CookieOptions: HTTPRequestOption, Sendable {
    var usesCookieJar = true
    static var defaultValue: Self { Self() }
}

extension HTTPClientRequest {
    /// Send cookies from the client's jar and store the cookies the response sets (ASIHTTPRequest's
    /// `useCookiePersistence`). When false the jar is neither read nor changed; a `Cookie` header you set
    /// is still sent, which is how a request carries cookies of its own.
    public var usesCookieJar: Bool {
        get { option(CookieOptions.self) { $0.usesCookieJar } }
        set { self[CookieOptions.self].usesCookieJar = newValue }
    }
}

// MARK: Compression

/// ``CompressionMiddleware``'s settings for one request.
struct CompressionOptions: HTTPRequestOption, Sendable {
    var acceptsCompressedResponse: Bool?
    var compressesBody = false
    var keepsRawCompressedBody = false
    static var defaultValue: Self { Self() }
}

extension HTTPClientRequest {
    /// Ask for a gzip or deflate response and decode it as it streams in, overriding the client's
    /// ``CompressionPolicy/acceptsCompressedResponses`` (ASIHTTPRequest's `allowCompressedResponse`).
    public var acceptsCompressedResponse: Bool? {
        get { option(CompressionOptions.self) { $0.acceptsCompressedResponse } }
        set { self[CompressionOptions.self].acceptsCompressedResponse = newValue }
    }
    /// Compress the body with gzip and send it with `Content-Encoding: gzip` (ASIHTTPRequest's
    /// `shouldCompressRequestBody`). Only for servers known to accept it: HTTP has no way to ask first.
    public var compressesBody: Bool {
        get { option(CompressionOptions.self) { $0.compressesBody } }
        set { self[CompressionOptions.self].compressesBody = newValue }
    }
    /// Keep the compressed bytes of a decoded response too, in ``HTTPClientResponse/rawCompressedBody``
    /// (ASIHTTPRequest's `rawResponseData`).
    public var keepsRawCompressedBody: Bool {
        get { option(CompressionOptions.self) { $0.keepsRawCompressedBody } }
        set { self[CompressionOptions.self].keepsRawCompressedBody = newValue }
    }
}

// MARK: Text decoding

/// The text-decoding fallback of one request's response (recorded on the response by ``RedirectMiddleware``).
enum TextDecodingOption: HTTPRequestOption {
    static var defaultValue: TextDecodingFallback? { nil }
}

extension HTTPClientRequest {
    /// What ``HTTPClientResponse/text(upTo:)`` falls back to for this request's response, overriding the
    /// client's ``HTTPClient/Configuration/textDecodingFallback`` (ASIHTTPRequest's `defaultResponseEncoding`).
    public var textDecodingFallback: TextDecodingFallback? {
        get { self[TextDecodingOption.self] }
        set { self[TextDecodingOption.self] = newValue }
    }
}

// MARK: Authentication

/// ``AuthMiddleware``'s settings for one request.
struct AuthenticationOptions: HTTPRequestOption, Sendable {
    var credentials: HTTPCredentials?
    var schemes: Set<HTTPAuthenticationScheme>?
    var sendsCredentialsPreemptively = false
    var bearerToken: String?
    static var defaultValue: Self { Self() }
}

/// The connection an NTLM handshake is pinned to, set by ``AuthMiddleware`` and read by the transport.
enum ConnectionPinOption: HTTPRequestOption {
    static var defaultValue: ConnectionPin? { nil }
}

extension HTTPClientRequest {
    /// Credentials for this request's origin (ASIHTTPRequest's `username`, `password` and `domain`). Used to
    /// answer a `401` after the URL's own userinfo and before the client's stores and callback (see
    /// ``AuthenticationConfiguration``). Dropped when a redirect leaves the origin.
    ///
    /// Only for `https` origins by default: a request to a plain `http://` URL that carries credentials (here
    /// or in the URL's userinfo) fails with `HTTPClientError.Code.authenticationFailed` before anything is
    /// sent, since Basic would put the password on the wire readable by anyone on the path. Set
    /// ``AuthenticationConfiguration/allowsBasicOverPlainHTTP`` on the client's configuration to allow it
    /// (for a test server, say).
    ///
    /// ```swift
    /// var request = HTTPClientRequest(url: "https://intranet.example/report")
    /// request.credentials = HTTPCredentials(username: "alice", password: "s3cret")
    /// ```
    public var credentials: HTTPCredentials? {
        get { option(AuthenticationOptions.self) { $0.credentials } }
        set { self[AuthenticationOptions.self].credentials = newValue }
    }
    /// The schemes this request may answer a challenge with; nil allows every supported scheme, strongest
    /// first (Digest, NTLM, Basic: curl's order). curl's `--digest` is `[.digest]`.
    public var authenticationSchemes: Set<HTTPAuthenticationScheme>? {
        get { option(AuthenticationOptions.self) { $0.schemes } }
        set { self[AuthenticationOptions.self].schemes = newValue }
    }
    /// Send Basic credentials (the URL's userinfo or ``credentials``) with the first request, before any
    /// challenge (ASIHTTPRequest's `authenticationScheme = Basic` with `shouldPresentCredentialsBeforeChallenge`;
    /// curl's `-u` does this). It also lets a one-shot body go out authenticated. Off by default.
    public var sendsCredentialsPreemptively: Bool {
        get { option(AuthenticationOptions.self) { $0.sendsCredentialsPreemptively } }
        set { self[AuthenticationOptions.self].sendsCredentialsPreemptively = newValue }
    }
    /// An OAuth 2.0 bearer token (RFC 6750), sent as `Authorization: Bearer …` to this request's origin only;
    /// on a `401` the client's ``AuthenticationConfiguration/refreshBearerToken`` may replace it once.
    public var bearerToken: String? {
        get { option(AuthenticationOptions.self) { $0.bearerToken } }
        set { self[AuthenticationOptions.self].bearerToken = newValue }
    }

    /// Keeps this request on the connection of an NTLM handshake (set by the auth middleware).
    var connectionPin: ConnectionPin? {
        get { self[ConnectionPinOption.self] }
        set { self[ConnectionPinOption.self] = newValue }
    }
}
