/// What a pooled connection is keyed by: connections are shared only between requests that agree on all of it.
///
/// The pool hashes and compares a key at every lease and release. So the hash is computed once, when the key is
/// made or changed, and the rarely set parts (a proxy, an endpoint) sit in one shared box: a direct key copies
/// as two strings and compares without touching them (before: about 1.4 µs of hashing, comparing and copying
/// per `seq` request, perf).
struct ConnectionKey: Hashable, Sendable, CustomStringConvertible {
    let scheme: String
    let host: String
    let port: Int
    /// The proxy the connection goes through, credentials included: requests through different proxies,
    /// or as different proxy users, never share a connection.
    var proxy: ProxyConfiguration? {
        get { route?.proxy }
        set { setRoute(proxy: newValue, endpoint: endpoint, target: target) }
    }
    /// Where the first hop is dialled when it is not the host (or proxy) and port through DNS: a Unix socket,
    /// or what a `--resolve` or `--connect-to` override says. Part of the key, so an overridden request never
    /// gets a connection to the ordinary address, nor the other way round.
    var endpoint: Endpoint? {
        get { route?.endpoint }
        set { setRoute(proxy: proxy, endpoint: newValue, target: target) }
    }
    /// Through a proxy, what the proxy is asked to reach instead of ``host``:``port``: where a `connectTo` rule
    /// moved it, or the addresses a `resolve` entry gives through a `socks5` proxy
    /// (``ConnectionTargets/proxyTarget(host:port:through:)``). nil without a proxy.
    var target: Endpoint? { route?.target }

    /// The proxy, endpoint and target; nil when there are none.
    private var route: Route?
    /// Every part hashed once, fed whole to each hasher.
    private var hash: Int

    init(scheme: String, host: String, port: Int, proxy: ProxyConfiguration? = nil, endpoint: Endpoint? = nil,
         target: Endpoint? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port
        route = Route.make(proxy: proxy, endpoint: endpoint, target: proxy == nil ? nil : target)
        hash = Self.hash(scheme: scheme, host: host, port: port, route: route)
    }

    private mutating func setRoute(proxy: ProxyConfiguration?, endpoint: Endpoint?, target: Endpoint?) {
        self = ConnectionKey(scheme: scheme, host: host, port: port, proxy: proxy, endpoint: endpoint, target: target)
    }

    private static func hash(scheme: String, host: String, port: Int, route: Route?) -> Int {
        var hasher = Hasher()
        hasher.combine(scheme)
        hasher.combine(host)
        hasher.combine(port)
        if let route {
            hasher.combine(route.proxy)
            hasher.combine(route.endpoint)
            hasher.combine(route.target)
        }
        return hasher.finalize()
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }

    static func == (a: ConnectionKey, b: ConnectionKey) -> Bool {
        guard a.hash == b.hash, a.port == b.port, a.host == b.host, a.scheme == b.scheme else { return false }
        switch (a.route, b.route) {
        case (nil, nil): return true
        case (let x?, let y?): return x === y || (x.proxy == y.proxy && x.endpoint == y.endpoint && x.target == y.target)
        default: return false
        }
    }

    /// The parts of a key most keys do not have.
    private final class Route: Sendable {
        let proxy: ProxyConfiguration?
        let endpoint: Endpoint?
        let target: Endpoint?
        private init(proxy: ProxyConfiguration?, endpoint: Endpoint?, target: Endpoint?) {
            self.proxy = proxy
            self.endpoint = endpoint
            self.target = target
        }

        /// nil when there are none.
        static func make(proxy: ProxyConfiguration?, endpoint: Endpoint?, target: Endpoint?) -> Route? {
            proxy == nil && endpoint == nil ? nil : Route(proxy: proxy, endpoint: endpoint, target: target)
        }
    }

    /// Where a connection is dialled instead of resolving the key's host (or its proxy's) and port.
    enum Endpoint: Hashable, Sendable, CustomStringConvertible {
        /// These numeric addresses, raced in this order (``ResolveOverride``).
        case addresses([String], port: Int)
        /// Another host and port, resolved in turn (``ConnectToOverride``).
        case host(String, port: Int)
        /// A Unix domain socket; no proxy.
        case unixSocket(UnixSocketAddress)

        var description: String {
            switch self {
            case .addresses(let addresses, let port): "at " + addresses.map { $0.contains(":") ? "[\($0)]:\(port)" : "\($0):\(port)" }.joined(separator: ",")
            case .host(let host, let port): "at \(host.contains(":") ? "[\(host)]" : host):\(port)"
            case .unixSocket(let socket): "at unix:\(socket)"
            }
        }
    }

    var isTLS: Bool { scheme == "https" }

    /// Whether a connection through an HTTP proxy is a `CONNECT` tunnel rather than absolute-form requests:
    /// for https, for a ``target`` (curl tunnels a `--connect-to` through an HTTP proxy), and when the proxy
    /// says so (``ProxyConfiguration/alwaysTunnel``).
    var tunnelsThroughProxy: Bool { isTLS || target != nil || proxy?.alwaysTunnel == true }

    /// What the proxy is asked to connect to: ``target`` when there is one, else ``host``:``port``; with the
    /// addresses to send a `socks5` proxy when a `resolve` entry gave them.
    var proxyTarget: (host: String, port: Int, addresses: [String]?) {
        switch target {
        case .host(let host, let port)?: (host, port, nil)
        case .addresses(let addresses, let port)?: (host, port, addresses)
        case .unixSocket?, nil: (host, port, nil)
        }
    }

    var description: String {
        "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)" + (proxy.map { " via \($0)" } ?? "")
            + (endpoint.map { " \($0)" } ?? "") + (target.map { " to \($0.description.dropFirst(3))" } ?? "")
    }
}
