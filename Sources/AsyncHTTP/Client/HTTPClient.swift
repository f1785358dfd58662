import HTTPTypes
import Logging
import Synchronization

/// An HTTP/1.x client: connection pooling, TLS, timeouts and streaming bodies over
/// non-blocking sockets.
///
/// ```swift
/// let client = HTTPClient()
/// let response = try await client.send(HTTPClientRequest(url: "https://example.com/"))
/// let page = try await response.body.collect(upTo: 1 << 20)
/// try await client.shutdown()
/// ```
///
/// Batches run concurrently through a task group; the pool shares connections between them
/// (up to ``Configuration/maxConnectionsPerHost`` per host):
///
/// ```swift
/// try await withThrowingTaskGroup(of: Int.self) { group in
///     for url in urls { group.addTask { try await client.send(.init(url: url)).status.code } }
///     for try await code in group { print(code) }
/// }
/// ```
public final class HTTPClient: Sendable {
    /// A client for general use that lives as long as the process; ``shutdown()`` does nothing on it.
    public static let shared = HTTPClient(isShared: true)

    public let configuration: Configuration
    /// The whole chain, outermost first: built-in members, then the configuration's own.
    let middleware: [any HTTPClientMiddleware]
    let pool: ConnectionPool
    /// Credentials, callbacks and Digest state, shared by the auth middleware and CONNECT tunnels.
    let authenticator: Authenticator
    /// The client's proxy choice, with the environment read once at creation.
    let proxies: ProxyResolver
    /// Made by the first https connection (``tlsContext()``), so a client that only speaks plain http never
    /// initialises OpenSSL or parses a trust store.
    private let lazyTLSContext = Locked<Result<TLSContext, HTTPClientError>?>(nil)
    private let isShared: Bool
    private let connectionIDs = Atomic<Int>(0)
    private let resumedSessions = Atomic<Int>(0)
    private let isShutDown = Atomic<Bool>(false)

    public convenience init(configuration: Configuration = .init()) {
        self.init(configuration: configuration, isShared: false)
    }

    private init(configuration: Configuration = .init(), isShared: Bool) {
        self.configuration = configuration
        self.isShared = isShared
        self.authenticator = Authenticator(configuration: configuration.authentication, logger: configuration.logger)
        self.proxies = ProxyResolver(configuration.proxy)
        self.middleware = Self.builtInMiddleware(configuration, authenticator: authenticator, proxies: proxies)
            + configuration.middleware
        self.pool = ConnectionPool(limit: max(1, configuration.maxConnectionsPerHost),
                                   idleTimeout: configuration.idleTimeout, logger: configuration.logger)
    }

    /// The client's TLS context, created on first use. A bad CA file or client key is reported by every https
    /// request, as a typed error. Creation holds the lock (one parse of the trust store, about 10 ms for the
    /// system bundle), so concurrent first requests wait for it instead of each parsing the store.
    private func tlsContext() throws(HTTPClientError) -> TLSContext {
        try lazyTLSContext.withLock { context in
            if let context { return context }
            let made = Result { () throws(HTTPClientError) in try TLSContext(configuration: configuration.tls) }
            context = made
            return made
        }.get()
    }

    /// Sends `request` and returns once the response head has arrived; the body streams on.
    ///
    /// Throws ``HTTPClientError`` for every failure: an invalid URL or header, DNS, connect, TLS, timeouts,
    /// a malformed or truncated response, cancellation. A response with any status (404, 500) is a
    /// successful round trip, not an error.
    public func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        if middleware.isEmpty { return try await execute(request) }
        return try await runChain(middleware[...], request) { request in try await self.execute(request) }
    }

    /// Closes idle connections and refuses new requests. Responses still streaming finish, then close.
    public func shutdown() async throws {
        guard !isShared else {
            configuration.logger.warning("HTTPClient.shared cannot be shut down; ignored")
            return
        }
        isShutDown.store(true, ordering: .relaxed)
        await pool.shutdown()
    }

    /// How many connections this client has opened so far (curl's `%{num_connects}`, summed).
    public var connectionsOpened: Int { connectionIDs.load(ordering: .relaxed) }

    /// How many TLS handshakes resumed a cached session instead of a full handshake.
    public var tlsSessionsResumed: Int { resumedSessions.load(ordering: .relaxed) }

    // MARK: Sending

    func execute(_ request: HTTPClientRequest) async throws(HTTPClientError) -> HTTPClientResponse {
        guard !isShutDown.load(ordering: .relaxed) else { throw .shutdown }
        guard !Task.isCancelled else { throw .cancelled }
        if let problem = request.headerProblems.first { throw problem }
        let url = try request.httpURL()
        let deadlines = Deadlines(
            inactivity: request.inactivityTimeout ?? configuration.inactivityTimeout,
            total: (request.timeout ?? configuration.totalTimeout).map { .now + $0 }
        )
        let resolver = request.proxy.map { ProxyResolver($0) } ?? proxies
        if let problem = resolver.problem { throw problem }
        let proxy = resolver.proxy(for: url)
        let key = ConnectionKey(scheme: url.scheme, host: url.host, port: url.port, proxy: proxy)
        let prepared = try PreparedRequest(request, url: url, userAgent: configuration.userAgent,
                                           absoluteForm: proxy?.kind == .http && !url.isSecure)
        let pin = request.connectionPin
        var timeoutRetries = request.retriesOnTimeout ?? configuration.retriesOnTimeout
        var fresh = !request.persistentConnection
        while true {
            do {
                return try await attempt(prepared, key: key, fresh: fresh, pin: pin, deadlines: deadlines)
            } catch {
                switch error {
                case .stale(let error, let connectionID):
                    configuration.logger.debug("connection \(connectionID) was stale, retrying on a new connection",
                                               metadata: ["url": "\(url)", "error": "\(error)"])
                    fresh = true
                    // `stale` is produced only once: the next attempt runs on a fresh connection.
                case .final(let error):
                    if error.code == .timeout, timeoutRetries > 0, error.timeoutPhase != .total,
                       request.method.isIdempotent, prepared.isReplayable {
                        timeoutRetries -= 1
                        configuration.logger.debug("timed out, retrying", metadata: ["url": "\(url)", "left": "\(timeoutRetries)"])
                        continue
                    }
                    throw error
                }
            }
        }
    }

    private enum AttemptFailure: Error {
        /// Failed on a reused connection in a way that is safe to send again.
        case stale(HTTPClientError, connectionID: Int)
        case final(HTTPClientError)
    }

    /// One try: lease or open a connection, write the request, read the head.
    private func attempt(
        _ request: PreparedRequest, key: ConnectionKey, fresh: Bool, pin: ConnectionPin?, deadlines: Deadlines
    ) async throws(AttemptFailure) -> HTTPClientResponse {
        let connection: HTTP1Connection
        do {
            if let pinned = pin?.take() {
                if pinned.looksReusable() {
                    connection = pinned
                } else {
                    // The server closed the handshake's connection; the handshake will fail and say so.
                    pinned.close()
                    await pool.discard(pinned.key)
                    connection = try await connectionFor(key, fresh: true, deadlines: deadlines)
                }
            } else {
                connection = try await connectionFor(key, fresh: fresh, deadlines: deadlines)
            }
        } catch {
            throw .final(error)
        }
        do {
            connection.startRequest(method: request.method)
            try await request.write(to: connection, deadlines: deadlines)
            let head = try await connection.readHead(deadlines: deadlines)
            return try await response(for: request, head: head, connection: connection, pin: pin, deadlines: deadlines)
        } catch {
            connection.close()
            await pool.discard(key)
            let attempt = StaleConnectionRetry.Attempt(
                connectionWasReused: connection.wasReused,
                requestBytesWritten: connection.requestBytesWritten,
                responseBytesReceived: connection.responseBytesReceived,
                isIdempotent: request.method.isIdempotent,
                bodyIsReplayable: request.isReplayable
            )
            if !fresh, StaleConnectionRetry.mayRetry(attempt, after: error) {
                throw .stale(error, connectionID: connection.id)
            }
            throw .final(error)
        }
    }

    private func response(
        for request: PreparedRequest, head: HTTP1ResponseHead, connection: HTTP1Connection, pin: ConnectionPin?,
        deadlines: Deadlines
    ) async throws(HTTPClientError) -> HTTPClientResponse {
        let keepAlive = request.persistentConnection
        let body: HTTPClientResponse.Body
        if let chunks = try connection.takeBufferedBodyIfComplete() {
            // The whole body came with the head: hand the connection back before the caller even reads.
            await ResponseBodyStream.release(connection, reusable: keepAlive && connection.isReusable, pool: pool, pin: pin)
            body = .init(storage: .buffered(chunks))
        } else {
            body = .init(storage: .connection(ResponseBodyStream(
                connection: connection, pool: pool, pin: pin, deadlines: deadlines, keepAlive: keepAlive,
                logger: configuration.logger)))
        }
        return HTTPClientResponse(status: head.status, headers: head.headers, version: head.version, body: body, url: request.url)
    }

    /// An idle connection that still looks alive, or a new one.
    private func connectionFor(_ key: ConnectionKey, fresh: Bool, deadlines: Deadlines) async throws(HTTPClientError) -> HTTP1Connection {
        let logger = configuration.logger
        // Bounded: each round either returns or closes one idle connection that looked dead.
        for _ in 0...configuration.maxConnectionsPerHost {
            let poolDeadline = deadlines.total
            switch try await pool.lease(key, fresh: fresh, deadline: poolDeadline) {
            case .reuse(let connection):
                if connection.looksReusable() {
                    logger.debug("connection \(connection.id) reused", metadata: ["key": "\(key)"])
                    return connection
                }
                logger.debug("connection \(connection.id) was closed by the server while idle", metadata: ["key": "\(key)"])
                connection.close()
                await pool.discard(key)
            case .connect:
                do {
                    let connection = try await openConnection(key, deadlines: deadlines)
                    logger.debug("connection \(connection.id) opened", metadata: ["key": "\(key)", "remote": "\(connection.socket.remote)"])
                    return connection
                } catch {
                    await pool.discard(key)
                    throw error
                }
            }
        }
        // Every idle connection was dead; a fresh lease cannot get one.
        return try await connectionFor(key, fresh: true, deadlines: deadlines)
    }

    private func openConnection(_ key: ConnectionKey, deadlines: Deadlines) async throws(HTTPClientError) -> HTTP1Connection {
        let connectDeadline = earliest(.now + configuration.connectTimeout, deadlines.total)
        var socket: Socket
        if let proxy = key.proxy {
            socket = try await connectSocket(host: proxy.host, port: proxy.port, deadline: connectDeadline, what: "proxy \(proxy)")
            switch proxy.kind {
            case .socks5, .socks5h:
                try await SOCKS5.connect(socket, through: proxy, to: key.host, port: key.port, deadline: connectDeadline)
            case .http where key.isTLS:
                socket = try await ProxyTunnel.open(
                    on: socket, through: proxy, to: key.host, port: key.port, authenticator: authenticator,
                    userAgent: configuration.userAgent, limits: configuration.parserLimits, deadline: connectDeadline,
                    reconnect: { () async throws(HTTPClientError) -> Socket in
                        try await self.connectSocket(host: proxy.host, port: proxy.port, deadline: connectDeadline, what: "proxy \(proxy)")
                    })
            case .http:
                break // plain http goes to the proxy in absolute form
            }
        } else {
            socket = try await connectSocket(host: key.host, port: key.port, deadline: connectDeadline, what: key.description)
        }
        var tls: TLSStream?
        if key.isTLS {
            let context = try tlsContext()
            let stream = try TLSStream(socket: socket, context: context, host: key.host, port: key.port,
                                       hostIsIPAddress: SocketAddress(numericHost: key.host, port: key.port) != nil)
            try await stream.handshake(deadline: earliest(.now + configuration.connectTimeout, deadlines.total))
            if stream.sessionWasReused {
                resumedSessions.add(1, ordering: .relaxed)
                configuration.logger.trace("TLS session resumed", metadata: ["key": "\(key)"])
            }
            tls = stream
        }
        let id = connectionIDs.add(1, ordering: .relaxed).newValue
        return HTTP1Connection(id: id, key: key, socket: socket, tls: tls, limits: configuration.parserLimits)
    }

    /// A TCP connection to `host`, trying each resolved address in turn.
    private func connectSocket(host: String, port: Int, deadline: ContinuousClock.Instant, what: String) async throws(HTTPClientError) -> Socket {
        let addresses = try await Resolver.resolve(host: host, port: port, deadline: deadline)
        var failures: [HTTPClientError] = []
        for address in addresses {
            do {
                return try await Socket.connect(to: address, deadline: deadline, notifier: EpollEventLoop.shared)
            } catch where error.code == .connectFailed {
                failures.append(error) // try the next address (IPv6 and IPv4 in the resolver's order)
            }
        }
        var error = failures.last ?? HTTPClientError(.connectFailed, "no address to connect to")
        if failures.count > 1 {
            error.message = "could not connect to \(what): " + failures.map(\.message).joined(separator: "; ")
        }
        throw error
    }
}
