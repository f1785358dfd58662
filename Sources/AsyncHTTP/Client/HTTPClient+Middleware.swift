extension HTTPClient {
    /// The built-in chain, outermost first. The order is the design card's and matters:
    ///
    /// 1. redirect — outermost, so every hop runs through everything below it afresh
    ///    (a cookie set on a 302 is stored, and sent on the next hop, by the cookie step below);
    /// 2. auth — a 401 retry goes through cookies too, so a challenge's Set-Cookie reaches the retry;
    /// 3. cookies — sees every request as it finally goes out and every response as it arrives;
    /// 4. compression — adds Accept-Encoding and inflates, below cookies (headers only) and above the cache,
    ///    so the cache stores what the server sent;
    /// 5. cache — answers without touching the network when it can;
    /// 6. throttle — innermost, shaping the bytes that really cross the network (the request's own limit; the
    ///    client's shared one is applied by the transport to every request);
    /// then the pool.
    ///
    /// Members not built yet are simply absent; the order of the rest holds.
    ///
    /// Redirect and compression are always present, because a request can turn either on when the client
    /// has it off (``HTTPClientRequest/redirectPolicy``, ``HTTPClientRequest/acceptsCompressedResponse``),
    /// and the redirect step also records ``HTTPClientResponse/originalURL`` and ``HTTPClientResponse/history``.
    /// Auth is always present: any request can carry credentials or meet a challenge.
    /// The cookie step is present when the configuration has a ``Configuration/cookieJar``, the cache step
    /// when it has a ``Configuration/cache``.
    static func builtInMiddleware(
        _ configuration: Configuration, authenticator: Authenticator, proxies: ProxyRouter,
        flow: NetworkFlow = NetworkFlow(bytesPerSecond: nil)
    ) -> [any HTTPClientMiddleware] {
        var chain: [any HTTPClientMiddleware] = [
            RedirectMiddleware(policy: configuration.redirectPolicy, textDecodingFallback: configuration.textDecodingFallback,
                               // A user step (inside this one) may keep cookies of its own, without the jar.
                               keepsCookies: configuration.cookieJar != nil || !configuration.middleware.isEmpty),
            AuthMiddleware(authenticator: authenticator, proxies: proxies),
        ]
        if let jar = configuration.cookieJar {
            chain.append(CookieMiddleware(jar: jar))
        }
        chain.append(CompressionMiddleware(policy: configuration.compression))
        if let cache = configuration.cache {
            chain.append(CacheMiddleware(cache: cache))
        }
        chain.append(ThrottleMiddleware(flow: flow, logger: configuration.logger(for: .throttling)))
        return chain
    }
}
