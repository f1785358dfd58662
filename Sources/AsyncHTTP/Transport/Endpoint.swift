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

    /// Where a connection whose first hop is `host:port` is dialled, or nil for `host:port` through DNS.
    ///
    /// As curl: a Unix socket replaces everything; otherwise the first `--connect-to` rule that matches
    /// changes the host and port, and then a `--resolve` entry for the (new) host and port, an exact host
    /// before `*`, gives the addresses.
    func endpoint(host: String, port: Int) -> ConnectionKey.Endpoint? {
        if let unixSocket { return .unixSocket(unixSocket) }
        var target = (host: host, port: port)
        var moved = false
        if let rule = connectTo.first(where: { $0.matches(host: host, port: port) }) {
            target = (rule.targetHost ?? host, rule.targetPort ?? port)
            moved = target != (host, port)
        }
        let exact = resolve.first { $0.host == target.host && $0.port == target.port }
        if let rule = exact ?? resolve.first(where: { $0.matches(host: target.host, port: target.port) }) {
            return .addresses(rule.addresses, port: target.port)
        }
        return moved ? .host(target.host, port: target.port) : nil
    }
}
