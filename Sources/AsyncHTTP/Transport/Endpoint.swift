/// A client's connection target settings (``HTTPClient/Configuration/resolve``, ``HTTPClient/Configuration/connectTo``,
/// ``HTTPClient/Configuration/unixSocket``) with a request's own (``HTTPClientRequest/resolve``, …) laid over
/// them, turned into the ``ConnectionKey/Endpoint`` a connection is dialled at.
struct ConnectionTargets: Sendable {
    var resolve: [ResolveOverride] = []
    var connectTo: [ConnectToOverride] = []
    var unixSocket: UnixSocketAddress?

    var isEmpty: Bool { resolve.isEmpty && connectTo.isEmpty && unixSocket == nil }

    /// The client's settings with the request's overrides, each replacing the client's when set.
    func applying(_ options: ConnectionTargetOptions) -> ConnectionTargets {
        ConnectionTargets(resolve: options.resolve ?? resolve, connectTo: options.connectTo ?? connectTo,
                          unixSocket: options.unixSocket ?? unixSocket)
    }

    /// Where a direct connection to `host:port` is dialled, or nil for `host:port` through DNS.
    ///
    /// As curl: a Unix socket replaces everything; otherwise the first `--connect-to` rule that matches
    /// changes the host and port, and then a `--resolve` entry for the (new) host and port, an exact host
    /// before `*`, gives the addresses.
    func endpoint(host: String, port: Int) -> ConnectionKey.Endpoint? {
        if let unixSocket { return .unixSocket(unixSocket) }
        let moved = connectTarget(host: host, port: port)
        let target = moved ?? (host, port)
        if let addresses = addresses(host: target.host, port: target.port) { return .addresses(addresses, port: target.port) }
        return moved.flatMap { $0 == (host, port) ? nil : .host($0.host, port: $0.port) }
    }

    /// Through `proxy`, where the proxy itself is dialled: the addresses a `--resolve` entry gives for its host
    /// and port, or nil for DNS. `--connect-to` never applies to a proxy: curl matches it against the URL's host.
    func proxyEndpoint(_ proxy: ProxyConfiguration) -> ConnectionKey.Endpoint? {
        addresses(host: proxy.host, port: proxy.port).map { .addresses($0, port: proxy.port) }
    }

    /// Through `proxy`, what the proxy is asked to reach instead of the URL's `host:port`, or nil for that:
    /// - where a `--connect-to` rule moves it (curl's test 2050: through an HTTP proxy this is a `CONNECT`
    ///   tunnel to the new host and port, also for a plain-http URL);
    /// - through a `socks5` or `socks4` proxy, which is given addresses that the client resolves, also the addresses a
    ///   `--resolve` entry gives for that host and port. An HTTP, `socks5h` or `socks4a` proxy resolves the name itself,
    ///   so there `--resolve` applies to the proxy's own name only.
    func proxyTarget(host: String, port: Int, through proxy: ProxyConfiguration) -> ConnectionKey.Endpoint? {
        let moved = connectTarget(host: host, port: port)
        let target = moved ?? (host, port)
        if proxy.resolvesTargetLocally, let addresses = addresses(host: target.host, port: target.port) {
            return .addresses(addresses, port: target.port)
        }
        return moved.map { .host($0.host, port: $0.port) }
    }

    /// Where the first `--connect-to` rule for `host:port` moves it; nil when none matches, or the one that
    /// matches names neither a host nor a port (`example.com:443::`), as curl, which then keeps the URL's.
    func connectTarget(host: String, port: Int) -> (host: String, port: Int)? {
        guard let rule = connectTo.first(where: { $0.matches(host: host, port: port) }),
              rule.targetHost != nil || rule.targetPort != nil else { return nil }
        return (rule.targetHost ?? host, rule.targetPort ?? port)
    }

    /// The addresses of the `--resolve` entry for `host:port`: an exact host before `*`.
    private func addresses(host: String, port: Int) -> [String]? {
        let exact = resolve.first { $0.host == host && $0.port == port }
        return (exact ?? resolve.first(where: { $0.matches(host: host, port: port) }))?.addresses
    }
}
