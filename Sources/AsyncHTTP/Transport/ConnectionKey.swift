/// What a pooled connection is keyed by: connections are shared only between requests that agree on all of it.
struct ConnectionKey: Hashable, Sendable, CustomStringConvertible {
    var scheme: String
    var host: String
    var port: Int
    /// The proxy the connection goes through, credentials included: requests through different proxies,
    /// or as different proxy users, never share a connection.
    var proxy: ProxyConfiguration? = nil
    /// Where the first hop is dialled when it is not the host (or proxy) and port through DNS: a Unix socket,
    /// or what a `--resolve` or `--connect-to` override says. Part of the key, so an overridden request never
    /// gets a connection to the ordinary address, nor the other way round.
    var endpoint: Endpoint? = nil

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
    var description: String {
        "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)" + (proxy.map { " via \($0)" } ?? "")
            + (endpoint.map { " \($0)" } ?? "")
    }
}
