import HTTPTypes

// swift-http-types' `HTTPRequest` / `HTTPResponse` in and out, for code that already speaks them (Hummingbird,
// swift-openapi-runtime, gRPC). Nothing here is a second path: an `HTTPRequest` becomes an `HTTPClientRequest`
// and goes through `send(_:)`, so the client's middleware (redirects, authentication, cookies, compression,
// cache), observers, proxies and timeouts apply exactly as they do to any other request.

extension HTTPClient {
    /// Sends a swift-http-types request and returns the response head as an `HTTPResponse`, with the body
    /// streaming on.
    ///
    /// The request's pseudo-header fields make the URL: `scheme://authority/path` (see
    /// ``HTTPClientRequest/init(_:body:)`` for what is refused); its `method` and `headerFields` are sent as
    /// they are. The response's `HTTPResponse` carries the status (code and reason phrase) and every header
    /// field in the order received.
    ///
    /// ```swift
    /// let request = HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/v1/items",
    ///                           headerFields: [.contentType: "application/json"])
    /// let (response, body) = try await client.send(request, body: .bytes(Array(#"{"name":"pen"}"#.utf8)))
    /// guard response.status == .created else { return }
    /// let bytes = try await body.collect(upTo: 1 << 20)
    /// ```
    ///
    /// Throws `HTTPClientError` as ``send(_:)`` does; a request whose pseudo-header fields cannot make an
    /// `http`/`https` URL throws `HTTPClientError/Code/invalidRequest` or `HTTPClientError/Code/invalidURL`
    /// before anything is sent.
    ///
    /// - Parameters:
    ///   - request: The request head: method, scheme, authority, path and header fields.
    ///   - body: The request body, if any (bytes, a file, a stream; see ``HTTPClientRequest/Body``).
    /// - Returns: The response head and its body, an `AsyncSequence` of byte chunks read as you iterate.
    public func send(
        _ request: HTTPRequest, body: HTTPClientRequest.Body? = nil
    ) async throws -> (HTTPResponse, HTTPClientResponse.Body) {
        let response = try await send(try HTTPClientRequest(request, body: body))
        return (response.httpResponse, response.body)
    }
}

extension HTTPClientRequest {
    /// A request made from a swift-http-types `HTTPRequest`: the URL from its `scheme`, `authority` and `path`,
    /// its `method` and `headerFields` as they are, and `body`. Set further options (``timeout``, middleware
    /// options) on the result before sending it with ``HTTPClient/send(_:)``.
    ///
    /// ```swift
    /// var request = try HTTPClientRequest(HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/"))
    /// request.timeout = .seconds(30)
    /// let response = try await client.send(request)
    /// ```
    ///
    /// Throws `HTTPClientError/Code/invalidRequest` when the pseudo-header fields cannot make an origin-form
    /// request over HTTP/1.x: no `scheme` or `authority`, an authority with userinfo (RFC 9113 §8.3.1 forbids it,
    /// and it would be taken as credentials) or with a `/`, `?` or `#`, a path that does not start with `/` (the asterisk form `*` and a
    /// `CONNECT` request's authority form are not supported), a path with a `#` (a fragment is never sent), or
    /// the extended-CONNECT `:protocol` field (HTTP/2 and 3 only). Throws `HTTPClientError/Code/invalidURL`
    /// for what `HTTPURL` refuses (a scheme other than `http`/`https`, a bad port, a space).
    public init(_ request: HTTPRequest, body: Body? = nil) throws(HTTPClientError) {
        guard let scheme = request.scheme, !scheme.isEmpty else {
            throw .invalidRequest("the HTTPRequest has no scheme (its :scheme pseudo-header field): need http or https")
        }
        guard let authority = request.authority, !authority.isEmpty else {
            throw .invalidRequest("the HTTPRequest has no authority (its :authority pseudo-header field): need a host")
        }
        guard !authority.utf8.contains(UInt8(ascii: "@")) else {
            // The authority is not quoted: its userinfo may be a password.
            throw .invalidRequest("the HTTPRequest's authority contains userinfo ('@'), which RFC 9113 §8.3.1 forbids; use credentials instead")
        }
        // A `/`, `?` or `#` would end the authority inside the URL made from it and move the rest into the path,
        // query or fragment: `example.com#` with `/v1/items` went out as `GET /`.
        if let bad = authority.utf8.first(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            throw .invalidRequest("the HTTPRequest's authority '\(authority.prefix(64))' contains '\(Character(Unicode.Scalar(bad)))',"
                + " which cannot be part of a host and port")
        }
        guard request.extendedConnectProtocol == nil else {
            throw .invalidRequest("the HTTPRequest has a :protocol pseudo-header field (extended CONNECT), which HTTP/1.x cannot send")
        }
        let path = request.path ?? ""
        guard path.utf8.first == UInt8(ascii: "/") else {
            let shown = path.isEmpty ? "no path" : "path '\(path.prefix(64))'"
            throw .invalidRequest("the HTTPRequest has \(shown); only origin-form paths starting with '/' can be sent")
        }
        guard !path.utf8.contains(UInt8(ascii: "#")) else {
            throw .invalidRequest("the HTTPRequest's path '\(path.prefix(64))' contains '#': a fragment is never sent, percent-encode it as %23")
        }
        let string = scheme + "://" + authority + path
        let url = try HTTPURL(string)
        guard !url.isUnixSocket else {
            throw .invalidRequest("the HTTPRequest's scheme '\(scheme)' names a Unix socket; build an HTTPClientRequest from a URL instead")
        }
        self.init(url: string)
        cacheParsedURL(url)
        method = request.method
        headers = request.headerFields
        self.body = body
    }
}

extension HTTPClientResponse {
    /// The response head as a swift-http-types `HTTPResponse`: ``status`` (code and reason phrase) and
    /// ``headers``, in the order received.
    public var httpResponse: HTTPResponse {
        HTTPResponse(status: status, headerFields: headers)
    }
}
