public import AsyncHTTP
public import HTTPTypes
public import OpenAPIRuntime

#if canImport(FoundationEssentials)
// `ClientTransport.send` takes the server's `URL`; FoundationEssentials has it, without the rest of Foundation.
public import struct FoundationEssentials.URL
#else
public import struct Foundation.URL
#endif

/// A swift-openapi-runtime `ClientTransport` that sends the requests of a client made by swift-openapi-generator
/// through an AsyncHTTP `HTTPClient`.
///
/// ```swift
/// import AsyncHTTPOpenAPI
///
/// let client = Client(                                  // generated from your openapi.yaml
///     serverURL: try Servers.Server1.url(),
///     transport: AsyncHTTPTransport(configuration: .init(client: httpClient, timeout: .seconds(30)))
/// )
/// let response = try await client.getGreeting(query: .init(name: "Ada"))
/// ```
///
/// Every request goes through `HTTPClient.send(_:)`: the client's middleware (redirects, authentication,
/// cookies, compression, cache, retries), observers, proxies, TLS settings and timeouts apply as they do to any
/// request the client sends.
///
/// Bodies stream both ways without being collected:
/// - A request `HTTPBody` is sent as it is iterated, with `Content-Length` when its `length` is `.known` and
///   chunked when it is `.unknown`. A body whose `iterationBehavior` is `.multiple` can be sent again (a 307
///   redirect, an authentication retry); a `.single` one is one-shot, and a request that would need it twice
///   fails with `HTTPClientError.Code.bodyNotReplayable`.
/// - The response `HTTPBody` reads the connection as it is iterated (`.single`), with its `length` from
///   `Content-Length` when the server sent one (not after decompression, which removes it). A `HEAD` response has
///   no body (`nil`).
///
/// Cancelling the task that sends the request, or that iterates the response body, stops the request: the
/// connection is closed, not reused, and the call or the iteration throws `HTTPClientError` with the code
/// `HTTPClientError.Code.cancelled`. A connection lost mid-body makes the iteration throw
/// (`HTTPClientError.Code.connectionClosed` or `HTTPClientError.Code.ioFailure`); it never ends early as if
/// the body were complete.
///
/// Errors are `HTTPClientError` values, unchanged, so `code` says what happened; the generated client wraps
/// them in `ClientError`, whose `underlyingError` holds them. A status such as 404 or 500 is not an error here:
/// it reaches the generated client, which maps it to the operation's documented responses.
public struct AsyncHTTPTransport: ClientTransport {
    /// What the transport sends with and the settings it applies to each request.
    public struct Configuration: Sendable {
        /// The client that sends the requests, with its middleware and configuration.
        public var client: HTTPClient

        /// A total deadline for each request, from sending until the last byte of the response body
        /// (`HTTPClientRequest.timeout`); `nil` keeps the client's own timeouts
        /// (`HTTPClient.Configuration`). swift-openapi-async-http-client's transport defaults to one minute;
        /// this one defaults to the client's settings, so that a long streamed body is not cut off by a
        /// deadline the client was not configured with.
        public var timeout: Duration?

        /// Called on each request just before it is sent, with the OpenAPI operation's identifier: set
        /// per-operation options here (`HTTPClientRequest.timeout`, a middleware's option, a header).
        ///
        /// ```swift
        /// configuration.prepareRequest = { request, operationID in
        ///     if operationID == "uploadArchive" { request.timeout = .seconds(600) }
        /// }
        /// ```
        public var prepareRequest: (@Sendable (_ request: inout HTTPClientRequest, _ operationID: String) -> Void)?

        /// A configuration sending with `client`.
        /// - Parameters:
        ///   - client: The client that sends the requests; `HTTPClient.shared` unless given.
        ///   - timeout: A total deadline for each request; `nil` (the default) keeps the client's timeouts.
        ///   - prepareRequest: Called on each request before it is sent, with the operation's identifier.
        public init(
            client: HTTPClient = .shared, timeout: Duration? = nil,
            prepareRequest: (@Sendable (_ request: inout HTTPClientRequest, _ operationID: String) -> Void)? = nil
        ) {
            self.client = client
            self.timeout = timeout
            self.prepareRequest = prepareRequest
        }
    }

    /// The client and settings this transport sends with.
    public var configuration: Configuration

    /// A transport sending with `configuration`'s client (`HTTPClient.shared` by default).
    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// A transport sending with `client`, keeping its timeouts.
    public init(client: HTTPClient) {
        self.init(configuration: .init(client: client))
    }

    /// Sends `request` to `baseURL` with `body` through the configured `HTTPClient`, and returns the response
    /// head once it has arrived, with its body streaming on.
    ///
    /// - Parameters:
    ///   - request: The request from the generated client; its `path` (with the query) is appended to `baseURL`.
    ///   - body: The request body, streamed as it is sent.
    ///   - baseURL: The server URL (`http` or `https`), such as `https://api.example.com/v1`.
    ///   - operationID: The operation's identifier, passed to ``Configuration/prepareRequest``.
    /// - Returns: The response head and its body (`nil` for `HEAD`).
    /// - Throws: `HTTPClientError`: `HTTPClientError.Code.invalidURL` or `HTTPClientError.Code.invalidRequest`
    ///   for a server URL or path that cannot make a request, otherwise what `HTTPClient.send(_:)` throws.
    public func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var clientRequest = try Self.makeRequest(request, body: body, baseURL: baseURL)
        if let timeout = configuration.timeout { clientRequest.timeout = timeout }
        configuration.prepareRequest?(&clientRequest, operationID)
        let response = try await configuration.client.send(clientRequest)
        return (response.httpResponse, Self.responseBody(response, method: request.method))
    }

    // MARK: Conversions

    /// The request to send: `baseURL` joined with the request's path and query, the method and header fields as
    /// they are, and `body` streamed.
    static func makeRequest(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL
    ) throws(HTTPClientError) -> HTTPClientRequest {
        var clientRequest = HTTPClientRequest(url: try joinedURL(baseURL.absoluteString, request.path))
        clientRequest.method = request.method
        clientRequest.headers = request.headerFields
        clientRequest.body = body.map { requestBody($0) }
        return clientRequest
    }

    /// `base` and `path` joined: the base URL's path, without a trailing `/`, then `path` (which holds the
    /// query). As swift-openapi-async-http-client joins them (it appends the percent-encoded path), without
    /// Foundation's `URLComponents`: HTTPURL validates the result and refuses what it would have to repair.
    static func joinedURL(_ base: String, _ path: String?) throws(HTTPClientError) -> String {
        let baseURL = try HTTPURL(base)
        guard baseURL.query == nil, baseURL.fragment == nil else {
            throw HTTPClientError(.invalidURL,
                "the server URL \(baseURL.redactedDescription) has a query or fragment; an OpenAPI server URL cannot")
        }
        let path = path ?? ""
        guard path.isEmpty || path.utf8.first == UInt8(ascii: "/") || path.utf8.first == UInt8(ascii: "?") else {
            throw HTTPClientError(.invalidRequest, "the request path '\(path.prefix(64))' does not start with '/'")
        }
        guard !path.utf8.contains(UInt8(ascii: "#")) else {
            throw HTTPClientError(.invalidRequest,
                "the request path '\(path.prefix(64))' contains '#': a fragment is never sent, percent-encode it as %23")
        }
        var joined = base
        while joined.hasSuffix("/") { joined.removeLast() }
        // `https://host` + `` must still name the root.
        if path.isEmpty || path.utf8.first == UInt8(ascii: "?") {
            if baseURL.path == "/" { joined += "/" }
        }
        joined += path
        _ = try HTTPURL(joined)
        return joined
    }

    /// A request body that streams `body` as it is sent; replayable when `body` can be iterated again.
    static func requestBody(_ body: HTTPBody) -> HTTPClientRequest.Body {
        let length: HTTPClientRequest.Body.Length = switch body.length {
        case .known(let count): .known(Int(count))
        case .unknown: .unknown
        }
        switch body.iterationBehavior {
        case .multiple: return .replayableStream(length: length) { body }
        case .single: return .stream(body, length: length)
        }
    }

    /// The response body as an `HTTPBody` read from the connection as it is iterated: one pass (`.single`), its
    /// length from `Content-Length` when that field gives the body's length. `nil` for a `HEAD` request and for a
    /// `204` or `304`, which have no body (as swift-openapi-async-http-client does for `HEAD`), whatever
    /// `Content-Length` they carry (RFC 9110 §8.6 lets a 304 give the length of the representation it stands
    /// for). With `Transfer-Encoding` the length is unknown: the body is framed by its chunks, and a
    /// `Content-Length` beside them says nothing about it (RFC 9112 §6.3).
    static func responseBody(_ response: HTTPClientResponse, method: HTTPRequest.Method) -> HTTPBody? {
        let status = response.status.code
        if method == .head || status == 204 || status == 304 || (100..<200).contains(status) { return nil }
        let length: HTTPBody.Length
        if !response.headers.contains(.transferEncoding), let field = response.headers[.contentLength],
           let count = Int64(field), count >= 0 {
            length = .known(count)
        } else {
            length = .unknown
        }
        return HTTPBody(response.body, length: length, iterationBehavior: .single)
    }
}
