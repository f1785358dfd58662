import HTTPTypes

/// Sends the jar's cookies with each request and stores the cookies each response sets (RFC 6265 §5.3–5.4).
///
/// It sits below the redirect middleware, so it runs once per hop: a cookie set by a 302 is stored
/// before the next hop is sent, and that hop carries it if it matches (the new host, path and scheme
/// decide, not the old).
///
/// A request with ``HTTPClientRequest/usesCookieJar`` off neither reads nor feeds the jar
/// (ASIHTTPRequest's `useCookiePersistence = NO`). A `Cookie` field the caller set goes out either way;
/// with the jar on, the jar's cookies are appended to it in the same field (RFC 6265 §5.4: one `Cookie`
/// field), except those whose name the caller's field already has: the caller's own value wins.
struct CookieMiddleware: HTTPClientMiddleware {
    let jar: CookieJar

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        guard request.usesCookieJar else { return try await next(request) }
        // `contains` first: counting the fields makes an array of their values.
        guard jar.isEmpty && (!request.headers.contains(.cookie) || request.headers[values: .cookie].count <= 1) else {
            return try await sendingCookies(request, next: next)
        }
        // Nothing to send and nothing to merge: only a response that sets cookies needs the jar.
        let response = try await next(request)
        if response.headers.contains(.setCookie) { try await store(response, for: Self.context(of: request)) }
        return response
    }

    // The jar's work is kept out of `intercept`, whose frame every request in flight carries: an async
    // function's frame holds every local of all its paths.

    /// Sends `request` with the jar's cookies merged into its own, and stores what the response sets.
    @inline(never)
    private func sendingCookies(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        let context = try Self.context(of: request)
        var request = request
        let stored = await jar.cookieHeader(for: context)
        let own = request.headers[values: .cookie]
        if stored != nil || own.count > 1 {
            // One field, appended rather than assigned: assigning through `HTTPFields`' subscript splits a
            // Cookie value at each "; " into separate fields (HTTP/2 style), and RFC 6265 §5.4 allows one
            // Cookie field on HTTP/1.1 (servers join repeated ones with ", ", which breaks the pairs).
            request.headers[.cookie] = nil
            request.headers.append(HTTPField(name: .cookie, value: Self.merge(own: own, stored: stored)))
        }
        let response = try await next(request)
        await store(response, for: context)
        return response
    }

    /// Stores the cookies `response` sets, if any.
    @inline(never)
    private func store(_ response: HTTPClientResponse, for context: CookieJar.RequestContext) async {
        let setCookies = response.headers[values: .setCookie]
        if !setCookies.isEmpty {
            await jar.setCookies(fromHeaders: setCookies, for: context)
        }
    }

    private static func context(of request: HTTPClientRequest) throws(HTTPClientError) -> CookieJar.RequestContext {
        let url = try request.httpURL()
        return CookieJar.RequestContext(host: url.host, path: url.path, isSecure: url.isSecure)
    }

    /// One `Cookie` value: the caller's pairs first, then the jar's pairs whose names the caller did not set.
    static func merge(own: [String], stored: String?) -> String {
        guard let stored else { return own.joined(separator: "; ") }
        guard !own.isEmpty else { return stored }
        let ownPairs = own.flatMap { $0.split(separator: ";").map { $0.trimmingWhitespace() } }.filter { !$0.isEmpty }
        let ownNames = Set(ownPairs.map(name(of:)))
        let storedPairs = stored.split(separator: ";").map { $0.trimmingWhitespace() }
            .filter { !$0.isEmpty && !ownNames.contains(name(of: $0)) }
        return (ownPairs + storedPairs).joined(separator: "; ")
    }

    private static func name(of pair: Substring) -> Substring {
        pair.firstIndex(of: "=").map { pair[..<$0].trimmingWhitespace() } ?? pair
    }
}
