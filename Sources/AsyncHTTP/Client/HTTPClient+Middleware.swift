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
    /// 6. throttle — innermost, shaping the bytes that really cross the network;
    /// then the pool.
    ///
    /// Members not built yet are simply absent; the order of the rest holds.
    static func builtInMiddleware(_ configuration: Configuration) -> [any HTTPClientMiddleware] {
        []
    }
}
