import HTTPTypes

/// Answers `401` challenges from the origin, and `407` challenges from an HTTP proxy that forwards a plain
/// `http` request, by sending the request again with credentials (a `CONNECT` tunnel's `407` is answered by
/// the transport, which shares this client's ``Authenticator``).
///
/// Sits after redirect and before cookies (see `HTTPClient+Middleware.swift`): each redirect hop is
/// authenticated afresh for its own origin, and a challenge's `Set-Cookie` reaches the retry.
///
/// - A `401` with no credentials available is returned as it is, as curl and URLSession do.
/// - A retry needs a replayable body; a one-shot stream fails with `HTTPClientError.Code.bodyNotReplayable`
///   when there are credentials to answer with, before any callback is asked (with none, the `401` is returned).
/// - NTLM's three messages go out on one connection, pinned in the pool for the handshake.
/// - A request with ``HTTPClientRequest/bearerToken`` sends it, and on a `401` asks
///   ``AuthenticationConfiguration/refreshBearerToken`` once for a new one. Over plain `http` the token is
///   refused (`HTTPClientError.Code.authenticationFailed`) unless the configuration allows it, as Basic.
struct AuthMiddleware: HTTPClientMiddleware {
    let authenticator: Authenticator
    let proxies: ProxyRouter

    /// A challenged body is read this far so the connection can be reused for the retry; more is dropped.
    static let drainLimit = 64 * 1024
    /// RFC 7615 §3 and §4: the fields a server's answer to accepted credentials may carry (`nextnonce`).
    static let authenticationInfo = HTTPField.Name("Authentication-Info")!
    static let proxyAuthenticationInfo = HTTPField.Name("Proxy-Authentication-Info")!

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        var request = request
        // Before the request goes out: a callback decline that comes back after this fails the request unasked.
        let began = AuthExchange.declines.load(ordering: .relaxed)
        guard try passesThrough(&request) else { return try await negotiate(request, first: nil, began: began, next: next) }
        let response = try await next(request)
        guard response.status.code == 401 else { return response }
        return try await answer(response, to: request, began: began, next: next)
    }

    /// The challenge to a request that went out as it was. Its own function: the optional made for
    /// ``negotiate(_:first:began:next:)`` would otherwise take room in the frame of every request's `intercept`.
    @inline(never)
    private func answer(
        _ challenge: HTTPClientResponse, to request: HTTPClientRequest, began: Int, next: Next
    ) async throws -> HTTPClientResponse {
        try await negotiate(request, first: challenge, began: began, next: next)
    }

    /// Whether `request` goes out as it is: no bearer token, nothing to present before a challenge, no plain-http
    /// proxy to authenticate with. Its response then needs this step only if it is a `401`.
    ///
    /// The common case, kept out of ``negotiate(_:first:began:next:)``: an async function's frame holds every local
    /// of all its paths, and every request in flight carries the frames of the steps it is in (about 19 KiB for
    /// the whole negotiation against a few hundred bytes for this).
    @inline(never)
    private func passesThrough(_ request: inout HTTPClientRequest) throws(HTTPClientError) -> Bool {
        let url = try request.httpURL()
        let proxy = try proxies.route(recordingOn: &request, url: url)
        guard !proxies.sendsAbsoluteForm(request, url: url, to: proxy), request.bearerToken == nil else { return false }
        return request.headers[.authorization] != nil
            || !(request.sendsCredentialsPreemptively || authenticator.mayPresentBeforeChallenge)
    }

    /// The whole exchange: credentials presented before a challenge, and each `401`/`407` answered. `first` is
    /// the response to `request` when it already went out as it was (``passesThrough(_:)``); then nothing is
    /// presented before the challenge, as nothing was.
    @inline(never)
    private func negotiate(
        _ request: HTTPClientRequest, first: HTTPClientResponse?, began: Int, next: Next
    ) async throws -> HTTPClientResponse {
        let url = try request.httpURL()
        var request = request
        let proxy = try proxies.route(recordingOn: &request, url: url)
        let viaPlainProxy = proxies.sendsAbsoluteForm(request, url: url, to: proxy)
        let method = request.method.rawValue
        // RFC 7616 §3.4: digest-uri is the request-target, which is the absolute form through a proxy.
        let uri = viaPlainProxy ? url.absoluteFormTarget : url.requestTarget
        // For Digest auth-int: the body's bytes, [] for no body, nil for a stream that cannot be hashed ahead, and
        // nil for bytes the compression middleware below will gzip (`compressesBody`): auth-int hashes the body as
        // sent, and these are not those bytes (a hash of them was refused by a server that checks it). Then `auth`
        // is answered, or, when only auth-int is offered, the request fails saying so.
        let body: [UInt8]? = switch request.body?.storage {
        case nil: []
        case .bytes(let bytes)?: request.compressesBody && !request.headers.contains(.contentEncoding) ? nil : bytes
        case .stream?: nil
        }

        var origin = AuthExchange(
            isProxy: false, scheme: url.scheme, host: url.host, port: url.port, target: url,
            urlCredentials: url.user.map { HTTPCredentials(username: $0, password: url.password ?? "") },
            requestCredentials: request.credentials, allowedSchemes: request.authenticationSchemes)
        origin.began = began
        var proxySide: AuthExchange? = nil
        if viaPlainProxy, let proxy {
            proxySide = AuthExchange(
                isProxy: true, scheme: proxy.kind == .https ? "https" : "http", host: proxy.host, port: proxy.port, target: url,
                urlCredentials: nil, requestCredentials: proxy.credentials, allowedSchemes: proxy.authenticationSchemes)
            proxySide?.began = began
        }

        // A request that already went out as it was (`first`: no bearer token, no plain-http proxy) presented
        // nothing, and presents nothing now: its challenge is answered below.
        if let token = request.bearerToken {
            if let refusal = Authenticator.plainHTTPRefusal(.bearer, urlScheme: url.scheme, host: url.host, isProxy: false,
                                                            configuration: authenticator.configuration) {
                throw refusal
            }
            request.headers[.authorization] = "Bearer " + token
        } else if first == nil, request.headers[.authorization] == nil,
                  request.sendsCredentialsPreemptively || authenticator.mayPresentBeforeChallenge,
                  let value = try await authenticator.preemptiveAuthorization(
                      for: &origin, method: method, uri: uri, body: body, basicRequested: request.sendsCredentialsPreemptively) {
            request.headers[.authorization] = value
        }
        let proxyBasicAtOnce = proxy?.sendsCredentialsPreemptively ?? false
        if var side = proxySide, request.headers[.proxyAuthorization] == nil,
           authenticator.mayPresentBeforeChallenge || proxyBasicAtOnce {
            if let value = try await authenticator.preemptiveAuthorization(
                for: &side, method: method, uri: uri, body: body, basicRequested: proxyBasicAtOnce) {
                request.headers[.proxyAuthorization] = value
            }
            proxySide = side
        }

        var pin: ConnectionPin?
        /// Whose handshake holds `pin`: the origin's (`Authorization`) or an HTTP proxy's (`Proxy-Authorization`).
        var pinnedField: HTTPField.Name?
        defer { pin?.release() }
        var refreshedBearer = false
        // Bounded: every round either returns, or advances an exchange whose rounds `respond` caps.
        var first = first
        for _ in 0..<32 {
            let response: HTTPClientResponse
            if let given = first.take() { response = given } else { response = try await next(request) }
            let code = response.status.code
            // Asked before any callback: a one-shot body cannot go out again, so credentials the callback would
            // give (or a Digest nonce count) would be spent on a retry that never happens.
            let unsendable = request.body.map(\.isReplayable) == false
                ? HTTPClientError(.bodyNotReplayable,
                    "\(url.host) asked for authentication (\(code)), which means sending the \(request.method) body again,"
                        + " but the body is a one-shot stream; use .bytes for a replayable body, or send credentials"
                        + " before the challenge (sendsCredentialsPreemptively)")
                : nil
            let answer: AuthorizationValue?
            let field: HTTPField.Name
            if code == 407, var side = proxySide {
                answer = try await authenticator.respond(
                    to: AuthChallenge.parse(response.headers[values: .proxyAuthenticate]), exchange: &side,
                    method: method, uri: uri, body: body, unsendable: unsendable)
                proxySide = side
                field = .proxyAuthorization
            } else if code == 401, let token = request.bearerToken {
                guard !refreshedBearer, let refresh = authenticator.configuration.refreshBearerToken else {
                    return try await finish(response, origin: origin, proxy: proxySide)
                }
                if let unsendable { throw unsendable }
                guard let fresh = try await refresh(url.redactedDescription, token) else {
                    return try await finish(response, origin: origin, proxy: proxySide)
                }
                refreshedBearer = true
                request.bearerToken = fresh
                answer = AuthorizationValue(value: "Bearer " + fresh, startsConnectionHandshake: false, endsConnectionHandshake: false)
                field = .authorization
            } else if code == 401 {
                answer = try await authenticator.respond(
                    to: AuthChallenge.parse(response.headers[values: .wwwAuthenticate]), exchange: &origin,
                    method: method, uri: uri, body: body, unsendable: unsendable)
                field = .authorization
            } else {
                return try await finish(response, origin: origin, proxy: proxySide)
            }
            guard let answer else { return try await finish(response, origin: origin, proxy: proxySide) }
            if let unsendable { throw unsendable } // (the authenticator threw it already; kept as the last word)
            if answer.startsConnectionHandshake {
                pin?.release()
                pin = ConnectionPin()
                pinnedField = field
                request.connectionPin = pin
            } else if !answer.endsConnectionHandshake, pin != nil, field == pinnedField {
                // Another scheme after an NTLM handshake (ended, or given up after its negotiate message): its pin
                // lets go of any connection parked there, and the answer takes any connection (the transport would
                // take a spent pin for a connection lost mid-handshake). Only on the handshake's own side: an answer
                // for the other (a proxy's stale Digest nonce in the middle of the origin's NTLM handshake) leaves
                // the pin, since the handshake's last message still needs its connection.
                pin?.release()
                pin = nil
                request.connectionPin = nil
            }
            // Read the challenge's body so its connection can carry the retry (NTLM needs that very connection); as it
            // came, not inflated, so the limit counts the bytes on the connection.
            _ = try? await response.body.undecoded.collect(upTo: Self.drainLimit)
            // Only now: a challenge whose body was still arriving ends its response here, and its connection must
            // be parked in the pin for the last message, not given back to the pool, where another request could
            // take it first (or park a connection the last message would then take instead).
            if answer.endsConnectionHandshake { pin?.release() }
            // `Connection: close`: the server and the pool both let the connection go after this response.
            if answer.closesConnection { request.persistentConnection = false }
            request.headers[field] = answer.value
            // The other side's Digest answer goes again with the next nonce count, not as it was (a replay to it).
            if field == .authorization, var side = proxySide, request.headers[.proxyAuthorization] != nil {
                if let renewed = try await authenticator.renewedAuthorization(for: &side, method: method, uri: uri, body: body) {
                    request.headers[.proxyAuthorization] = renewed
                }
                proxySide = side
            } else if field == .proxyAuthorization, request.headers[.authorization] != nil, request.bearerToken == nil,
                      let renewed = try await authenticator.renewedAuthorization(for: &origin, method: method, uri: uri, body: body) {
                request.headers[.authorization] = renewed
            }
            request.resendCount += 1
        }
        throw HTTPClientError(.authenticationFailed, "authentication with \(url.host) did not settle after 32 rounds")
    }

    /// Records what worked and hands back the final response. Only a response that shows the credentials
    /// were accepted (``Authenticator/accepts(status:)``: 2xx, 3xx) is remembered; the authenticator decides.
    private func finish(_ response: HTTPClientResponse, origin: AuthExchange, proxy: AuthExchange?) async throws -> HTTPClientResponse {
        let code = response.status.code
        // `Authentication-Info` / `Proxy-Authentication-Info` may name the next Digest nonce (RFC 7616 §3.5), but
        // only in an answer from the network: a stored one (a cache hit, or a head freshened by a 304) names a
        // nonce of its time, and would move the space back to it.
        let live = response.cacheStatus == nil || response.cacheStatus == .miss
        if origin.current != nil {
            await authenticator.succeeded(
                origin, status: code, authenticationInfo: live ? response.headers[values: Self.authenticationInfo] : [])
        }
        if let proxy, proxy.current != nil {
            await authenticator.succeeded(
                proxy, status: code, authenticationInfo: live ? response.headers[values: Self.proxyAuthenticationInfo] : [])
        }
        return response
    }
}
