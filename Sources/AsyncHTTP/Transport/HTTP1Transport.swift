import HTTPTypes
import Logging

/// The end of the middleware chain: one request in, one response head out (the body streams on).
///
/// `roundTrip` validates and encodes the request once, picks its route (direct or through which proxy),
/// leases a connection from the pool or has the ``Connector`` open one, writes the request, reads the head,
/// and retries where that is safe. It never interprets a status: a 500 or a 401 is a successful round trip
/// here, and redirects, authentication, cookies and decompression are middleware above it (Go's
/// `RoundTripper` contract).
///
/// ```
/// HTTPClient.send → middleware chain → HTTP1Transport.roundTrip → ConnectionPool / Connector
///                                        → HTTP1Connection → Socket / TLSStream → event loop
/// ```
final class HTTP1Transport: Sendable {
    struct Settings: Sendable {
        var inactivityTimeout: Duration?
        var totalTimeout: Duration?
        var retriesOnTimeout: Int
        var maxConnectionsPerHost: Int
        var userAgent: String?
        var logger: Logger
        var observing: Bool
        /// The `persistent-connections` topic's logger (reuse lines); nil logs them with ``logger``.
        var connectionLogger: Logger? = nil
        var expectContinue: ExpectContinuePolicy = .default
        /// The client's low-speed limit; a request's own replaces it.
        var lowSpeedLimit: LowSpeedLimit? = nil
        /// The client has a cache: each response says whether its request carried `Authorization`
        /// (``HTTPClientResponse/requestCarriedAuthorization``, for the cache's RFC 9111 §3.5 rule).
        var marksAuthorization = false
    }

    private let settings: Settings
    let pool: ConnectionPool
    let connector: Connector
    /// The proxy decisions, with the environment read once at creation.
    let proxies: ProxyRouter
    /// The client's bandwidth limit, meter and transfers in flight (see `Flow/`).
    let flow: NetworkFlow

    init(settings: Settings, pool: ConnectionPool, connector: Connector, proxies: ProxyRouter,
         flow: NetworkFlow = NetworkFlow(bytesPerSecond: nil)) {
        self.settings = settings
        self.pool = pool
        self.connector = connector
        self.proxies = proxies
        self.flow = flow
    }

    /// The transport of a client with `configuration`: its pool, and a connector that answers `CONNECT`
    /// challenges through `tunnelAuthenticator`.
    /// `now` is the pool's clock: injected by tests that move time instead of sleeping.
    convenience init(
        configuration: HTTPClient.Configuration, proxies: ProxyRouter, tunnelAuthenticator: (any ProxyTunnelAuthenticator)?,
        now: @escaping @Sendable () -> MonotonicTime = { .now }
    ) {
        // Clamped so that a bad value cannot trap here; `HTTPClient` refuses every request of such a client
        // with the error of `Configuration.validate()`.
        let limit = max(1, configuration.maxConnectionsPerHost)
        self.init(
            settings: .init(
                inactivityTimeout: configuration.inactivityTimeout, totalTimeout: configuration.totalTimeout,
                retriesOnTimeout: configuration.retriesOnTimeout, maxConnectionsPerHost: limit,
                userAgent: configuration.userAgent, logger: configuration.logger(for: .requestStatus),
                observing: !configuration.observers.isEmpty,
                connectionLogger: configuration.logger(for: .persistentConnections),
                expectContinue: configuration.expectContinue, lowSpeedLimit: configuration.lowSpeedLimit,
                marksAuthorization: configuration.cache != nil),
            pool: ConnectionPool(limit: limit, idleTimeout: configuration.idleTimeout,
                                 logger: configuration.logger(for: .persistentConnections), now: now),
            connector: Connector(
                settings: .init(tls: configuration.tls, connectTimeout: configuration.connectTimeout,
                                userAgent: configuration.userAgent, limits: configuration.parserLimits,
                                transferDecodingLimits: configuration.compression.limits,
                                logger: configuration.logger(for: .persistentConnections),
                                connectionAttemptDelay: configuration.connectionAttemptDelay,
                                dnsCacheTimeout: configuration.dnsCacheTimeout,
                                ipAddressFamily: configuration.ipAddressFamily,
                                busyPollLimit: configuration.busyPollLimitForTesting ?? configuration.busyPollLimit),
                tunnelAuthenticator: tunnelAuthenticator),
            proxies: proxies, flow: NetworkFlow(bytesPerSecond: configuration.maxBandwidthPerSecond))
    }

    func shutdown() async {
        await pool.shutdown()
    }

    /// Closes every connection opened so far: the idle ones now, the others when their response ends.
    func logOut() async {
        await pool.logOut(connectionsUpTo: connector.connectionsOpened)
    }

    /// Sends `request` and returns once the response head has arrived. `observation`: the send's, made by
    /// ``HTTPClient/send(_:)`` when the client has observers or the request a progress handler.
    nonisolated(nonsending) func roundTrip(
        _ request: HTTPClientRequest, observation: RequestObservation? = nil
    ) async throws(HTTPClientError) -> HTTPClientResponse {
        guard !Task.isCancelled else { throw .cancelled }
        var trip = try plan(request)
        while true {
            var outcome: (response: HTTPClientResponse, bodyWithheld: Bool)
            do {
                outcome = try await attempt(trip.prepared, key: trip.key, fresh: trip.fresh, pin: trip.pin, deadlines: trip.deadlines,
                                            observation: observation, flow: trip.flow)
            } catch {
                if let final = retries(&trip, after: error, observation: observation) { throw final }
                continue
            }
            if trip.prepared.continueTimeout != nil,
               try retriesWithoutExpectation(&trip, status: outcome.response.status.code, bodyWasWithheld: outcome.bodyWithheld,
                                             observation: observation) {
                continue
            }
            // One check for a client without a cache.
            if settings.marksAuthorization { Self.markAuthorization(of: request, on: &outcome.response) }
            return outcome.response
        }
    }

    /// Whether `request` as sent carried `Authorization`, for the cache step above: a step below it (a user's
    /// middleware) may have added the field after the cache saw the request.
    @inline(never)
    private static func markAuthorization(of request: HTTPClientRequest, on response: inout HTTPClientResponse) {
        if request.headers.contains(.authorization) { response.requestCarriedAuthorization = true }
    }

    // The work between attempts is synchronous and kept out of `roundTrip`: an async function's frame holds
    // every local of all its paths (log lines and errors included), and every request in flight carries it.

    /// What a round trip carries from one attempt to the next.
    private struct RoundTrip {
        let request: HTTPClientRequest
        let url: HTTPURL
        let key: ConnectionKey
        let absoluteForm: Bool
        let deadlines: Deadlines
        /// The throttle step's pacer (the request's own limit) or the client's; counted in flight until the body ends.
        let flow: AttemptFlow
        let pin: ConnectionPin?
        var prepared: PreparedRequest
        var fresh: Bool
        var timeoutRetries: Int
        var retriedWithoutExpectation = false
    }

    /// Validates and encodes `request`, and picks its route and pool key.
    @inline(never)
    private func plan(_ request: HTTPClientRequest) throws(HTTPClientError) -> RoundTrip {
        if let problem = request.headerProblems.first { throw problem }
        let url = try request.httpURL()
        let deadlines = Deadlines(
            inactivity: request.inactivityTimeout ?? settings.inactivityTimeout,
            // The send's deadline (every hop of a send shares it); a timeout a step set on this hop can shorten it.
            total: Self.totalDeadline(request, settings.totalTimeout)
        )
        var targets = proxies.targets(for: request)
        let (scheme, host): (String, String)
        if let socketPath = url.unixSocketPath {
            // http+unix / https+unix: the URL names the socket; TLS checks the name the Host header sends.
            targets.unixSocket = socketPath.hasPrefix("\0") ? .abstract(String(socketPath.dropFirst())) : .path(socketPath)
            (scheme, host) = (url.isSecure ? "https" : "http", url.hostHeader)
        } else {
            (scheme, host) = (url.scheme, url.host)
        }
        // A Unix socket is dialled directly: no proxy (curl's --unix-socket ignores them too).
        let proxy = targets.unixSocket == nil ? try proxies.route(for: request, url: url) : nil
        let key: ConnectionKey
        if targets.isEmpty {
            key = ConnectionKey(scheme: scheme, host: host, port: url.port, proxy: proxy)
        } else if let proxy {
            // curl's rules: `--resolve` for the proxy's name; `--connect-to` (and, through `socks5`, `--resolve`)
            // for what the proxy is asked to reach.
            key = ConnectionKey(scheme: scheme, host: host, port: url.port, proxy: proxy, endpoint: targets.proxyEndpoint(proxy),
                                target: targets.proxyTarget(host: url.host, port: url.port, through: proxy))
        } else {
            key = ConnectionKey(scheme: scheme, host: host, port: url.port, endpoint: targets.endpoint(host: url.host, port: url.port))
        }
        let absoluteForm = proxy?.isHTTP == true && !key.tunnelsThroughProxy
        let prepared = try PreparedRequest(request, url: url, userAgent: settings.userAgent, absoluteForm: absoluteForm,
                                           expectContinue: request.expectContinue ?? settings.expectContinue)
        return RoundTrip(
            request: request, url: url, key: key, absoluteForm: absoluteForm, deadlines: deadlines,
            flow: AttemptFlow(pacer: request[PacerOption.self] ?? flow.sharedPacer, transfer: flow.activity.begin(),
                              lowSpeedLimit: request.lowSpeedLimit ?? settings.lowSpeedLimit),
            pin: request.connectionPin, prepared: prepared, fresh: !request.persistentConnection,
            timeoutRetries: request.retriesOnTimeout ?? settings.retriesOnTimeout)
    }

    /// The earlier of the send's deadline and the request's own timeout from now (a step may have set one).
    private static func totalDeadline(_ request: HTTPClientRequest, _ client: Duration?) -> MonotonicTime? {
        let own = (request.timeout ?? client).map { MonotonicTime.now + $0 }
        guard let send = request[SendDeadlineOption.self] else { return own }
        return own.map { min($0, send) } ?? send
    }

    /// After a failed attempt: nil when the request goes out again (on a new connection after a stale one; after
    /// a timeout the request allows retrying), else the error to throw.
    @inline(never)
    private func retries(_ trip: inout RoundTrip, after failure: AttemptFailure, observation: RequestObservation?) -> HTTPClientError? {
        switch failure {
        case .stale(let error, let connectionID):
            settings.logger.debug("connection \(connectionID) was stale, retrying on a new connection",
                                  metadata: ["url": "\(trip.url.loggableDescription)", "error": "\(error)"])
            observation?.retry(reason: "connection \(connectionID) was closed by the server: \(error)")
            // `stale` is produced only once: the next attempt runs on a fresh connection.
            trip.fresh = true
            return nil
        case .final(let error):
            // A wait bounded by the total deadline too (DNS, connect, the TLS handshake, SOCKS, the pool) names its
            // own phase; once that deadline has passed, no retry can finish in time, so none is made.
            if error.code == .timeout, trip.timeoutRetries > 0, error.timeoutPhase != .total,
               trip.deadlines.total.map({ MonotonicTime.now < $0 }) ?? true,
               trip.request.method.isIdempotent, trip.prepared.isReplayable {
                trip.timeoutRetries -= 1
                settings.logger.debug("timed out, retrying",
                                      metadata: ["url": "\(trip.url.loggableDescription)", "left": "\(trip.timeoutRetries)"])
                observation?.retry(reason: "\(error)")
                return nil
            }
            observation?.failed(error)
            return error
        }
    }

    /// RFC 9110 §10.1.1: a 417 to `Expect: 100-continue` means something on the way does not do expectations;
    /// the request goes out again without one (true), when its body can be sent again. Also after the wait for
    /// `100 Continue` ran out and the body went out (the server acted on neither copy). Once.
    @inline(never)
    private func retriesWithoutExpectation(
        _ trip: inout RoundTrip, status: Int, bodyWasWithheld: Bool, observation: RequestObservation?
    ) throws(HTTPClientError) -> Bool {
        guard status == 417, trip.prepared.isReplayable, !trip.retriedWithoutExpectation else { return false }
        trip.retriedWithoutExpectation = true
        settings.logger.debug("417 to Expect: 100-continue, retrying without it",
                              metadata: ["url": "\(trip.url.loggableDescription)"])
        observation?.retry(reason: "417 Expectation Failed \(bodyWasWithheld ? "before" : "after") the body was sent; retrying without Expect")
        trip.prepared = try PreparedRequest(trip.request, url: trip.url, userAgent: settings.userAgent,
                                            absoluteForm: trip.absoluteForm, expectContinue: nil)
        trip.fresh = true
        return true
    }

    private enum AttemptFailure: Error {
        /// Failed on a reused connection in a way that is safe to send again.
        case stale(HTTPClientError, connectionID: Int)
        case final(HTTPClientError)
    }

    /// One try: lease or open a connection, write the request, read the head. `bodyWithheld`: a final response
    /// came before the body of an `Expect: 100-continue` request, which was therefore not sent.
    nonisolated(nonsending) private func attempt(
        _ request: PreparedRequest, key: ConnectionKey, fresh: Bool, pin: ConnectionPin?, deadlines: Deadlines,
        observation: RequestObservation?, flow: AttemptFlow
    ) async throws(AttemptFailure) -> (response: HTTPClientResponse, bodyWithheld: Bool) {
        let lease: HTTP1Lease
        do {
            lease = try await self.lease(key, fresh: fresh, pin: pin, deadlines: deadlines,
                                         retryable: request.method.isIdempotent && request.isReplayable)
        } catch {
            throw .final(error)
        }
        let connection = lease.connection
        connection.pacer = flow.pacer
        connection.lowSpeed = flow.lowSpeedLimit.map(LowSpeedWatch.init)  // each attempt's window starts afresh
        if let observation { Self.observeAcquired(connection, key: key, observation: observation) }
        // Cancelled while the lease was made (a pool wait, a connect that completed): nothing is sent, and the
        // connection, which carried nothing of this request, goes back to the pool as it came.
        if Task.isCancelled {
            await lease.returnUnused()
            throw .final(.cancelled)
        }
        // A `408` on a reused connection that the request may be resent after (``StaleConnectionRetry``).
        var timedOutWhileIdle = false
        do throws(HTTPClientError) {
            try connection.startRequest(method: request.method, persistent: request.persistentConnection)
            let early: HTTP1ResponseHead?
            do throws(HTTPClientError) {
                early = try await request.write(to: connection, deadlines: deadlines, observation: observation)
            } catch {
                // RFC 9112 §9.5: a server may answer (a 413, a 401) before it has read the body, stop reading and
                // close; its answer is the outcome, not the failed write (which a retry would repeat in full).
                guard let head = connection.takeEarlyResponse(after: error) else { throw error }
                early = head
            }
            let head: HTTP1ResponseHead
            if let early {
                head = early
            } else {
                connection.requestWritten()
                head = try await connection.readHead(deadlines: deadlines)
            }
            if let observation { Self.observeHead(head, observation: observation) }
            if head.status.code == 408, !fresh, StaleConnectionRetry.mayResend(after408: Self.retryAttempt(request, on: connection)) {
                timedOutWhileIdle = true
                throw Self.requestTimeoutOnReuse(connection)
            }
            let response = try await response(for: request, head: head, lease: lease, deadlines: deadlines, observation: observation,
                                              transfer: flow.transfer)
            return (response, early != nil)
        } catch {
            await lease.discard()
            if timedOutWhileIdle { throw .stale(error, connectionID: connection.id) }
            throw Self.failure(error, of: request, on: connection, fresh: fresh)
        }
    }

    // Synchronous parts of `attempt`, kept out of its frame (which every request in flight carries).

    @inline(never)
    private static func observeAcquired(_ connection: HTTP1Connection, key: ConnectionKey, observation: RequestObservation) {
        let reused = connection.wasReused
        observation.connectionAcquired(.init(
            id: connection.id, reused: reused, tlsSessionResumed: connection.tls?.sessionWasReused ?? false,
            route: key.description, remoteAddress: connection.socket.remote.description,
            tunnelResponses: reused ? [] : connection.tunnelRounds.map {
                .init(status: $0.response.status, version: $0.response.version, headers: $0.response.headers, request: $0.request)
            }))
    }

    @inline(never)
    private static func observeHead(_ head: HTTP1ResponseHead, observation: RequestObservation) {
        observation.headReceived(status: head.status, version: head.version, headers: head.headers, bodyLength: head.announcedBodyLength)
    }

    /// A failed attempt: `stale` when the connection was a reused one that the server had closed, and the request
    /// may go out again on a new one.
    @inline(never)
    private static func failure(
        _ error: HTTPClientError, of request: PreparedRequest, on connection: HTTP1Connection, fresh: Bool
    ) -> AttemptFailure {
        if !fresh, StaleConnectionRetry.mayRetry(retryAttempt(request, on: connection), after: error) {
            return .stale(error, connectionID: connection.id)
        }
        return .final(error)
    }

    private static func retryAttempt(_ request: PreparedRequest, on connection: HTTP1Connection) -> StaleConnectionRetry.Attempt {
        StaleConnectionRetry.Attempt(
            connectionWasReused: connection.wasReused,
            requestBytesWritten: connection.requestBytesWritten,
            responseBytesReceived: connection.responseBytesReceived,
            isIdempotent: request.method.isIdempotent,
            bodyIsReplayable: request.isReplayable
        )
    }

    @inline(never)
    private static func requestTimeoutOnReuse(_ connection: HTTP1Connection) -> HTTPClientError {
        HTTPClientError(.connectionClosed, "408 Request Timeout on reused connection \(connection.id): the server had timed it out")
    }

    @inline(never)
    nonisolated(nonsending) private func response(
        for request: PreparedRequest, head: HTTP1ResponseHead, lease: HTTP1Lease, deadlines: Deadlines,
        observation: RequestObservation?, transfer: NetworkActivity.Transfer? = nil
    ) async throws(HTTPClientError) -> HTTPClientResponse {
        let body: HTTPClientResponse.Body
        switch try lease.connection.takeBufferedBody() {
        case .complete(let chunks):
            // The whole body came with the head: hand the connection back before the caller even reads.
            await lease.responseEnded()
            if let first = chunks.first, chunks.more.isEmpty {
                observation?.bodyReceivedWhole([first])
                body = .init(storage: .chunk(first))
            } else {
                observation?.bodyReceivedWhole(chunks.all)
                body = .init(storage: .buffered(chunks.all))
            }
        case .partial(let chunks):
            body = .init(storage: .connection(ResponseBodyStream(
                lease: lease, bufferedChunks: chunks.all, deadlines: deadlines, logger: settings.logger, observation: observation,
                transfer: transfer)))
        }
        return HTTPClientResponse(status: head.status, headers: head.headers, version: head.version, body: body, url: request.url)
    }

    /// A lease on the connection pinned for an NTLM handshake, an idle connection that still looks alive, or a
    /// new one. `retryable`: the request may go out again if a reused connection turns out closed, which lets
    /// the liveness check of an idle connection trust the event loop (``HTTP1Connection/looksReusable(retryable:)``).
    nonisolated(nonsending) private func lease(
        _ key: ConnectionKey, fresh: Bool, pin: ConnectionPin?, deadlines: Deadlines, retryable: Bool
    ) async throws(HTTPClientError) -> HTTP1Lease {
        if let parked = pin?.take() {
            let lease = ConnectionLease(parked.connection, pool: parked.pool, pin: pin)
            if parked.connection.looksReusable() { return lease }
            await lease.discard()
            throw Self.handshakeConnectionLost(key)
        }
        // A pin that no longer holds is the handshake's last message: with nothing parked, the server did not keep
        // the challenge's connection (`Connection: close`, or a body too long to read), and the message would
        // authenticate a new connection that never saw the challenge, to be refused as wrong credentials.
        if let pin, !pin.isHolding { throw Self.handshakeConnectionLost(key) }
        return try await acquire(key, fresh: fresh, pin: pin, deadlines: deadlines, retryable: retryable)
    }

    /// NTLM authenticates a connection (MS-NLMP §3.1.5), and the server let the handshake's go before its last
    /// message: an error, not a refusal, so nothing is removed from the credential stores.
    private static func handshakeConnectionLost(_ key: ConnectionKey) -> HTTPClientError {
        HTTPClientError(.authenticationFailed,
            "the server closed the connection for \(key.host) in the middle of the NTLM handshake; NTLM needs a keep-alive connection")
    }

    /// How many idle connections one lease tries before it opens a fresh one.
    private static let maxReuseRounds = 64

    nonisolated(nonsending) private func acquire(
        _ key: ConnectionKey, fresh: Bool, pin: ConnectionPin?, deadlines: Deadlines, retryable: Bool
    ) async throws(HTTPClientError) -> HTTP1Lease {
        let logger = settings.connectionLogger ?? settings.logger
        var fresh = fresh
        // Bounded: each round either returns or closes one idle connection that looked dead; after as many
        // rounds as the pool can hold idle connections (at most `maxReuseRounds`: a limit of `Int.max` overflowed
        // the range), a fresh lease (which never reuses) ends it.
        let reuseRounds = min(settings.maxConnectionsPerHost, Self.maxReuseRounds)
        for round in 0...(reuseRounds + 1) {
            if round > reuseRounds { fresh = true }
            switch try await pool.lease(key, fresh: fresh, deadline: deadlines.total) {
            case .reuse(let connection):
                let lease = ConnectionLease(connection, pool: pool, pin: pin)
                if connection.looksReusable(retryable: retryable) {
                    logger.debug("connection \(connection.id) reused", metadata: ["key": "\(key)"])
                    return lease
                }
                logger.debug("connection \(connection.id) was closed by the server while idle", metadata: ["key": "\(key)"])
                await lease.discard()
            case .connect:
                do {
                    return ConnectionLease(try await connector.connect(key, deadlines: deadlines), pool: pool, pin: pin)
                } catch {
                    await pool.discard(key) // the reserved slot: no connection was made
                    throw error
                }
            }
        }
        throw HTTPClientError(.connectFailed, "no usable connection to \(key)")
    }
}

extension HTTPClient.Configuration {
    /// The response parser's limits from ``maxResponseHeadBytes`` and ``maxResponseHeaderCount``.
    var parserLimits: HTTP1ResponseParser.Limits {
        HTTP1ResponseParser.Limits(maxHeadBytes: maxResponseHeadBytes, maxHeaderCount: maxResponseHeaderCount)
    }
}

/// What one `roundTrip` hands each attempt for its bytes: the pacer the connection consults, the token
/// that counts the exchange in flight (ended by the response body, or when the round trip fails), and the
/// low-speed limit the connection enforces.
struct AttemptFlow: Sendable {
    let pacer: TransferPacer
    let transfer: NetworkActivity.Transfer
    let lowSpeedLimit: LowSpeedLimit?
}
