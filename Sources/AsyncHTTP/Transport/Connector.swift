import Logging
import Synchronization

/// Opens connections: resolves the name (or takes the addresses an override gives, or a Unix socket), connects
/// (racing the addresses with Happy Eyeballs), runs SOCKS5 or `CONNECT` through a proxy, and starts TLS. The
/// only code that dials.
///
/// The leasing task calls it itself, so cancellation and deadlines stay with the request.
final class Connector: Sendable {
    struct Settings: Sendable {
        var tls: TLSConfiguration
        var connectTimeout: Duration
        var userAgent: String?
        var limits: HTTP1ResponseParser.Limits
        /// Bomb limits for gzip/deflate transfer codings: the client's compression limits.
        var transferDecodingLimits = DecompressionLimits()
        var logger: Logger
        /// RFC 8305's connection attempt delay (``HTTPClient/Configuration/connectionAttemptDelay``).
        var connectionAttemptDelay: Duration = .milliseconds(250)
        /// How long a name's addresses are reused (``HTTPClient/Configuration/dnsCacheTimeout``); nil: never.
        var dnsCacheTimeout: Duration? = nil
        /// Only addresses of this family (``HTTPClient/Configuration/ipAddressFamily``); nil: both.
        var ipAddressFamily: IPAddressFamily? = nil
        /// How long a connection may poll for a response head (``HTTPClient/Configuration/busyPollLimit``).
        var busyPollLimit: Duration = .zero
    }

    private let settings: Settings
    /// Answers a proxy's `407` to `CONNECT` (the client's authenticator); nil answers none.
    private let tunnelAuthenticator: (any ProxyTunnelAuthenticator)?
    /// Made by the first https connection (``tlsContext()``), so a client that only speaks plain http never
    /// initialises OpenSSL or parses a trust store.
    private let lazyTLSContext = Locked<Result<TLSContext, HTTPClientError>?>(nil)
    /// HTTPS proxies' TLS contexts, by their configuration (``ProxyConfiguration/tls``), made on first use.
    private let proxyTLSContexts = Locked<[TLSConfiguration: Result<TLSContext, HTTPClientError>]>([:])
    private let connectionIDs = Atomic<Int>(0)
    private let resumedSessions = Atomic<Int>(0)
    /// Every connection's polls for a response head, and the heads that came during one.
    let busyPollCounters = BusyPollCounters()

    init(settings: Settings, tunnelAuthenticator: (any ProxyTunnelAuthenticator)?) {
        self.settings = settings
        self.tunnelAuthenticator = tunnelAuthenticator
    }

    /// How many connections have been opened so far.
    var connectionsOpened: Int { connectionIDs.load(ordering: .relaxed) }
    /// How many TLS handshakes resumed a cached session.
    var tlsSessionsResumed: Int { resumedSessions.load(ordering: .relaxed) }

    /// The client's TLS context, created on first use. A bad CA file or client key is reported by every https
    /// request, as a typed error. Creation holds the lock (one parse of the trust store, about 10 ms for the
    /// system bundle), so concurrent first requests wait for it instead of each parsing the store.
    private func tlsContext() throws(HTTPClientError) -> TLSContext {
        try lazyTLSContext.withLock { context in
            if let context { return context }
            let made = Result { () throws(HTTPClientError) in try TLSContext(configuration: settings.tls) }
            context = made
            return made
        }.get()
    }

    /// A new connection for `key`, ready for its first request.
    func connect(_ key: ConnectionKey, deadlines: Deadlines) async throws(HTTPClientError) -> HTTP1Connection {
        let started = MonotonicTime.now
        let connectDeadline = earliest(started + settings.connectTimeout, deadlines.total)
        var socket: Socket
        var tunnelRounds: [TunnelRound] = []
        // The TLS connection to an HTTPS proxy: the connection's own stream for a plain-http request in absolute
        // form or through a tunnel, and the one an https origin's TLS runs inside.
        var proxyTLS: TLSStream?
        // The HTTPS proxy's handshake, left out of the busy-poll seed below as the origin's is.
        var proxyHandshake: UInt64 = 0
        if case .unixSocket(let path)? = key.endpoint {
            let address = try SocketAddress(unix: path)
            socket = try await Socket.connect(to: address, deadline: connectDeadline, notifier: IOBackend.notifier)
        } else if let proxy = key.proxy {
            (socket, proxyTLS, proxyHandshake) = try await connectProxy(proxy, endpoint: key.endpoint, deadline: connectDeadline)
            do {
                let target = key.proxyTarget
                switch proxy.kind {
                case .socks5, .socks5h:
                    try await SOCKS5.connect(socket, through: proxy, to: target.host, port: target.port, addresses: target.addresses,
                                             family: settings.ipAddressFamily, deadline: connectDeadline)
                case .socks4, .socks4a:
                    try await SOCKS4.connect(socket, through: proxy, to: target.host, port: target.port, addresses: target.addresses,
                                             deadline: connectDeadline)
                case .http, .https:
                    // Plain http goes to the proxy in absolute form, unless it is tunnelled too.
                    guard key.tunnelsThroughProxy else { break }
                    (socket, proxyTLS, tunnelRounds) = try await tunnel(
                        on: socket, tls: proxyTLS, through: proxy, to: target.host, port: target.port, key: key,
                        deadline: connectDeadline)
                }
            } catch {
                proxyTLS?.shutdown()
                socket.close()
                throw error
            }
        } else {
            socket = try await connectSocket(host: key.host, port: key.port, endpoint: key.endpoint,
                                             deadline: connectDeadline, what: key.description)
        }
        // The busy-poll estimate's seed: the network's round trip, without the handshake's computing (which the
        // requests do not repeat; see BusyPollPolicy).
        let connected = MonotonicTime.now
        var tls: TLSStream?
        var resumed = false
        if key.isTLS {
            do {
                // The proxy's user too: two users of one proxy are two routes (their descriptions leave credentials out).
                let route = (key.proxy.map { " via \($0)" + ($0.credentials.map { " as \($0.username)" } ?? "") } ?? "")
                    + (key.endpoint.map { " \($0)" } ?? "") + (key.target.map { " to \($0)" } ?? "")
                let stream = try TLSStream(socket: socket, context: try tlsContext(), host: key.host, port: key.port,
                                           hostIsIPAddress: SocketAddress(numericHost: key.host, port: key.port) != nil,
                                           route: route, over: proxyTLS)
                try await stream.handshake(deadline: earliest(.now + settings.connectTimeout, deadlines.total))
                resumed = stream.sessionWasReused
                tls = stream
            } catch {
                proxyTLS?.shutdown()
                socket.close()
                throw error
            }
            if resumed {
                resumedSessions.add(1, ordering: .relaxed)
                settings.logger.trace("TLS session resumed", metadata: ["key": "\(key)"])
            }
        } else {
            tls = proxyTLS
        }
        let id = connectionIDs.add(1, ordering: .relaxed).newValue
        let connection = HTTP1Connection(id: id, key: key, socket: socket, tls: tls, limits: settings.limits)
        connection.transferDecodingLimits = settings.transferDecodingLimits
        connection.tunnelRounds = tunnelRounds
        connection.busyPoll = BusyPollPolicy(limit: settings.busyPollLimit, opening: started.nanoseconds(to: connected) &- min(proxyHandshake, started.nanoseconds(to: connected)))
        connection.busyPollCounters = busyPollCounters
        settings.logger.debug("connection \(id) opened", metadata: ["key": "\(key)", "remote": "\(socket.remote)"])
        return connection
    }

    /// A `CONNECT` tunnel to `host:port` (the key's, or its ``ConnectionKey/target``) through `proxy`, over `tls`
    /// for an HTTPS proxy.
    private func tunnel(
        on socket: Socket, tls: TLSStream?, through proxy: ProxyConfiguration, to host: String, port: Int, key: ConnectionKey,
        deadline: MonotonicTime
    ) async throws(HTTPClientError) -> (socket: Socket, tls: TLSStream?, rounds: [TunnelRound]) {
        let reconnect = { () async throws(HTTPClientError) -> (Socket, TLSStream?) in
            let (socket, tls, _) = try await self.connectProxy(proxy, endpoint: key.endpoint, deadline: deadline)
            return (socket, tls)
        }
        guard let tunnelAuthenticator else {
            return try await ProxyTunnel.open(
                on: socket, tls: tls, through: proxy, to: host, port: port, authenticator: NoTunnelAuthentication(),
                userAgent: settings.userAgent, limits: settings.limits, deadline: deadline, reconnect: reconnect)
        }
        return try await ProxyTunnel.open(
            on: socket, tls: tls, through: proxy, to: host, port: port, authenticator: tunnelAuthenticator,
            userAgent: settings.userAgent, limits: settings.limits, deadline: deadline, reconnect: reconnect)
    }

    /// A connection to `proxy`: TCP, then for an HTTPS proxy the TLS handshake with it, its certificate checked
    /// against the proxy's name as ``ProxyConfiguration/tls`` says; with how long that handshake took (ns).
    private func connectProxy(
        _ proxy: ProxyConfiguration, endpoint: ConnectionKey.Endpoint?, deadline: MonotonicTime
    ) async throws(HTTPClientError) -> (Socket, TLSStream?, handshake: UInt64) {
        let socket = try await connectSocket(host: proxy.host, port: proxy.port, endpoint: endpoint, deadline: deadline,
                                             what: "proxy \(proxy)")
        guard proxy.kind == .https else { return (socket, nil, 0) }
        let connected = MonotonicTime.now
        do {
            // The session cache keeps the proxy's sessions apart from a direct connection to the same host and port,
            // and, as for origins, apart per proxy user and endpoint (a ticket would let the proxy link them).
            let route = " (HTTPS proxy)" + (proxy.credentials.map { " as \($0.username)" } ?? "") + (endpoint.map { " \($0)" } ?? "")
            let stream = try TLSStream(socket: socket, context: try proxyTLSContext(proxy.tls), host: proxy.host, port: proxy.port,
                                       hostIsIPAddress: SocketAddress(numericHost: proxy.host, port: proxy.port) != nil,
                                       route: route, peer: "proxy \(proxy)")
            try await stream.handshake(deadline: deadline)
            return (socket, stream, connected.nanoseconds(to: .now))
        } catch {
            socket.close()
            throw error.aboutProxy(proxy)
        }
    }

    /// The TLS context for HTTPS proxies configured as `configuration`: the client's own when they match, else one
    /// made on first use and kept.
    private func proxyTLSContext(_ configuration: TLSConfiguration) throws(HTTPClientError) -> TLSContext {
        if configuration == settings.tls { return try tlsContext() }
        return try proxyTLSContexts.withLock { contexts in
            if let context = contexts[configuration] { return context }
            let made = Result { () throws(HTTPClientError) in try TLSContext(configuration: configuration) }
            contexts[configuration] = made
            return made
        }.get()
    }

    /// A TCP connection to `host:port` (or where `endpoint` says instead), its addresses raced with Happy
    /// Eyeballs (RFC 8305; see ``HappyEyeballs``).
    private func connectSocket(
        host: String, port: Int, endpoint: ConnectionKey.Endpoint?, deadline: MonotonicTime, what: String
    ) async throws(HTTPClientError) -> Socket {
        var addresses: [SocketAddress]
        switch endpoint {
        case .addresses(let literals, let port)?:
            addresses = literals.compactMap { SocketAddress(numericHost: $0, port: port) }
        case .host(let host, let port)?:
            addresses = try await Resolver.resolve(host: host, port: port, deadline: deadline, cacheFor: settings.dnsCacheTimeout)
        case .unixSocket?, nil:
            addresses = try await Resolver.resolve(host: host, port: port, deadline: deadline, cacheFor: settings.dnsCacheTimeout)
        }
        if let family = settings.ipAddressFamily {
            addresses = addresses.filter { family == .ipv4 ? $0.isIPv4 : $0.isIPv6 }
            guard !addresses.isEmpty else {
                // As curl: an address literal of the other family cannot be connected to (exit 7); a name, looked
                // up or given by a `resolve` entry, has no address of this family (exit 6).
                let dialled: String? = switch endpoint {
                case .addresses?: nil
                case .host(let host, _)?: host
                case .unixSocket?, nil: host
                }
                let literal = dialled.map { SocketAddress(numericHost: $0, port: port) != nil } ?? false
                throw HTTPClientError(literal ? .connectFailed : .dnsFailure,
                                      "\(what) has no \(family) address, and only \(family) is allowed (ipAddressFamily)")
            }
        }
        return try await HappyEyeballs.race(
            HappyEyeballs.interleave(addresses, family: \.family), attemptDelay: settings.connectionAttemptDelay, what: what,
            attempt: { address throws(HTTPClientError) in
                try await Socket.connect(to: address, deadline: deadline, notifier: IOBackend.notifier)
            },
            discard: { $0.close() })
    }
}

/// For a transport without an authenticator: a `407` to `CONNECT` is a failure.
private struct NoTunnelAuthentication: ProxyTunnelAuthenticator {
    func beginTunnel(through proxy: ProxyConfiguration, authority: String) -> Void {}
    func authorization(before exchange: inout Void, authority: String, basicRequested: Bool) async -> String? { nil }
    func answer(_ challenges: [String], exchange: inout Void, authority: String) async -> String? { nil }
    func accepted(_ exchange: Void) async {}
    func needsSameConnection(_ exchange: Void) -> Bool { false }
    func wasRefused(_ exchange: Void) -> Bool { false }
}

private extension HTTPClientError {
    /// This error (of the TLS connection to `proxy`) with the proxy named first: its own message names only a host
    /// and port, which could as well be an origin's.
    func aboutProxy(_ proxy: ProxyConfiguration) -> HTTPClientError {
        var error = self
        error.message = "TLS to proxy \(proxy): " + message
        return error
    }
}
