import Logging
import Synchronization

/// An HTTP/1.x client: connection pooling, TLS, timeouts and streaming bodies over
/// non-blocking sockets.
///
/// ```swift
/// let client = HTTPClient()
/// let response = try await client.send(HTTPClientRequest(url: "https://example.com/"))
/// let page = try await response.body.collect(upTo: 1 << 20)
/// await client.shutdown()
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

    /// The configuration the client was made with. It is a copy: changing the variable you made it from
    /// afterwards changes nothing.
    public let configuration: Configuration
    /// The middleware, outermost first (the built-in members, then the configuration's own), in front of the
    /// transport, composed once (see `composeChain`).
    private let chain: MiddlewareChain
    /// The end of the chain: pool, connector, connections.
    let transport: HTTP1Transport
    /// Credentials, callbacks and Digest state, shared by the auth middleware and, through the transport's
    /// ``ProxyTunnelAuthenticator``, `CONNECT` tunnels.
    let authenticator: Authenticator
    /// Why the configuration cannot be used, reported by every request (``Configuration/validate()``).
    private let configurationProblem: HTTPClientError?
    private let isShared: Bool
    private let isShutDown = Atomic<Bool>(false)
    private let requestIDs = Atomic<UInt64>(0)
    /// The `form-data` topic's logger (see ``LogTopic``).
    private let formLogger: Logger

    /// Creates a client with its own connection pool.
    ///
    /// The configuration is read once, here: set every option before making the client. An invalid
    /// configuration (see ``Configuration/validate()``) does not stop the client being made; every request it
    /// sends then throws `HTTPClientError.Code.invalidConfiguration`.
    ///
    /// ```swift
    /// var configuration = HTTPClient.Configuration()
    /// configuration.connectTimeout = .seconds(5)
    /// let client = HTTPClient(configuration: configuration)
    /// ```
    public convenience init(configuration: Configuration = .init()) {
        self.init(configuration: configuration, isShared: false)
    }

    private init(configuration: Configuration = .init(), isShared: Bool) {
        // Every component logs through the wrapped handler, which adds the request's number to each line.
        let configuration = configuration.requestScopedLogging
        self.configuration = configuration
        formLogger = configuration.logger(for: .formData)
        self.isShared = isShared
        configurationProblem = Result { () throws(HTTPClientError) in try configuration.validate() }.failure
        authenticator = Authenticator(configuration: configuration.authentication, logger: configuration.logger(for: .authentication))
        let proxies = ProxyRouter(configuration.proxy, environmentProxy: configuration.environmentProxy, targets: ConnectionTargets(
            resolve: configuration.resolve, connectTo: configuration.connectTo, unixSocket: configuration.unixSocket))
        transport = HTTP1Transport(configuration: configuration, proxies: proxies, tunnelAuthenticator: authenticator)
        let middleware = Self.builtInMiddleware(configuration, authenticator: authenticator, proxies: proxies, flow: transport.flow)
            + configuration.middleware
        // The transport reads the send's observation from the task-local `send` binds (one lookup per hop).
        chain = composeChain(middleware) { [transport] request in
            try await transport.roundTrip(request, observation: RequestObservation.current)
        }
        configuration.cache?.clientStarted()
    }

    /// Sends `request` and returns once the response head has arrived; the body streams on.
    ///
    /// Throws `HTTPClientError` for every failure: an invalid URL or header, DNS, connect, TLS, timeouts,
    /// a malformed or truncated response, cancellation. A response with any status (404, 500) is a
    /// successful round trip, not an error.
    public func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        guard !isShutDown.load(ordering: .relaxed) else { throw Self.refused(request, .shutdown) }
        if let configurationProblem { throw Self.refused(request, configurationProblem) }
        let request = (request.timeout ?? configuration.totalTimeout).map { Self.startingDeadline(request, $0) } ?? request
        // One number per send: in every log line of the request (`ahttp.request`) and in its observer events.
        let requestID = requestIDs.add(1, ordering: .relaxed).newValue
        let observation = RequestObservation.make(for: request, requestID: requestID, observers: configuration.observers)
        return try await RequestLogContext.$scope.withValue(.init(requestID: requestID, observation: observation)) {
            logForm(of: request)
            guard let observation else { return try await chain(request) }
            // Here, not in a function of its own: one more async call costs an observed request more than its
            // updates do (`progress` in benchmarks.md).
            Self.queued(request, observation: observation)
            do {
                let response = try await chain(request)
                Self.returned(response, observation: observation)
                return response
            } catch {
                if observation.observesProgress { Self.threw(observation: observation) }
                observation.sendThrew(error)
                throw error
            }
        }
    }

    // Kept out of `send`, whose frame every request in flight carries (an async function's frame holds every
    // local of all its paths).

    @inline(never)
    private func logForm(of request: HTTPClientRequest) {
        // The option first: most requests have none, and a logger's level is read through two handlers.
        if let form = request[FormSummaryOption.self], formLogger.logLevel <= .debug {
            formLogger.debug("\(request.method) body: \(form.description)")
        }
    }

    /// `error`, after giving the request's progress handler the final value it waits for (a
    /// `progressUpdates()` stream would never end): the send fails before it has an observation.
    @inline(never)
    private static func refused(_ request: HTTPClientRequest, _ error: HTTPClientError) -> HTTPClientError {
        request.progressHandler?.report(.failedBeforeSending(request))
        return error
    }

    /// The progress follows the returned response from now on; one the transport did not bring (a cache's) is
    /// final at once, with its body's length when that is known. Observers' events end with its body's.
    @inline(never)
    private static func returned(_ response: HTTPClientResponse, observation: RequestObservation) {
        observation.markReturned()
        guard observation.observesProgress else { return }
        observation.updateProgress(at: .now) { tracker in
            tracker.sendReturned(status: response.status.code, localBodyLength: response.knownBodyLength)
        }
    }

    /// The progress ends, failed (the transport's own failure events leave it open while the chain may recover).
    @inline(never)
    private static func threw(observation: RequestObservation) {
        observation.updateProgress(at: .now) { $0.sendThrew() }
    }

    /// The send's total deadline, `timeout` from now, for every hop of the send (see ``SendDeadlineOption``).
    @inline(never)
    private static func startingDeadline(_ request: HTTPClientRequest, _ timeout: Duration) -> HTTPClientRequest {
        var request = request
        request[SendDeadlineOption.self] = MonotonicTime.now + timeout
        return request
    }

    @inline(never)
    private static func queued(_ request: HTTPClientRequest, observation: RequestObservation) {
        observation.queued(method: request.method, url: (try? request.httpURL().redactedDescription) ?? "(invalid URL)")
    }

    /// Closes idle connections and refuses new requests. Responses still streaming finish, then close.
    ///
    /// Call it when you are done with a client you made, before the process exits or the client is
    /// dropped: it closes pooled connections promptly (a server sees a clean close rather than a reset)
    /// and, with a ``Configuration/cache``, lets the cache drop its session entries. Without it, idle pooled
    /// connections stay open until they expire or the process exits.
    /// On ``shared`` it does nothing. It cannot fail, so it does not throw; calling it twice is harmless.
    ///
    /// ```swift
    /// let client = HTTPClient()
    /// _ = try await client.send(HTTPClientRequest(url: "https://example.com/"))
    /// await client.shutdown()
    /// ```
    public func shutdown() async {
        guard !isShared else {
            configuration.logger.warning("HTTPClient.shared cannot be shut down; ignored")
            return
        }
        let wasShutDown = isShutDown.exchange(true, ordering: .relaxed)
        await transport.shutdown()
        // The cache's session entries go with the last client using it.
        if !wasShutDown { configuration.cache?.clientShutDown() }
    }

    /// Logs out (ASIHTTPRequest's `clearSession`): empties the session credential store and forgets everything
    /// derived from credentials — the origins and proxies where credentials succeeded, Digest nonces, callback
    /// answers — and closes the connections opened so far (idle ones at once, those in use when their response
    /// ends), since one that finished an NTLM handshake stays authenticated at the server. The persistent store is
    /// left alone; requests in flight finish, but their successes are not remembered.
    public func clearAuthenticationSession() async {
        await authenticator.clearSession()
        await transport.logOut()
    }

    /// How many connections this client has opened so far (curl's `%{num_connects}`, summed).
    public var connectionsOpened: Int { transport.connector.connectionsOpened }

    /// How many TLS handshakes resumed a cached session instead of a full handshake.
    public var tlsSessionsResumed: Int { transport.connector.tlsSessionsResumed }

    /// The connection pool's state right now, summed over every host: for gauges (the `AsyncHTTPMetrics`
    /// product reports them) and diagnostics. Reading it takes one hop to the pool's actor and changes nothing.
    public func poolStatistics() async -> PoolStatistics { await transport.pool.statistics }

    /// A snapshot of the connection pool (``HTTPClient/poolStatistics()``).
    public struct PoolStatistics: Sendable, Hashable {
        /// Keep-alive connections parked, waiting for a request.
        public var idleConnections = 0
        /// Connections carrying a request now, counting those still being opened (a reserved slot).
        public var leasedConnections = 0
        /// Requests waiting for a connection because their host is at ``Configuration/maxConnectionsPerHost``.
        public var waitingRequests = 0
        /// Idle plus leased.
        public var openConnections: Int { idleConnections + leasedConnections }

        /// A snapshot with the given counts (for tests of code that reads one).
        public init(idleConnections: Int = 0, leasedConnections: Int = 0, waitingRequests: Int = 0) {
            self.idleConnections = idleConnections
            self.leasedConnections = leasedConnections
            self.waitingRequests = waitingRequests
        }
    }
}

extension Result {
    /// The error, if this is a failure.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
