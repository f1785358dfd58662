/// What a pooled connection is keyed by: connections are shared only between requests that agree on all of it.
struct ConnectionKey: Hashable, Sendable, CustomStringConvertible {
    var scheme: String
    var host: String
    var port: Int
    /// The proxy the connection goes through, credentials included: requests through different proxies,
    /// or as different proxy users, never share a connection.
    var proxy: ProxyConfiguration? = nil

    var isTLS: Bool { scheme == "https" }
    var description: String {
        "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)" + (proxy.map { " via \($0)" } ?? "")
    }
}
