import HTTPTypes
import Logging
import Synchronization

/// Where the credentials of an attempt came from, in lookup order.
enum CredentialSource: Int, Sendable, Comparable {
    case url, request, session, persistent, callback

    static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// What one request has done so far to satisfy one side's challenges (the origin's `401`s, or a proxy's
/// `407`s). A value owned by the request; the ``Authenticator`` reads and advances it.
struct AuthExchange: Sendable {
    /// The server being authenticated to: the origin, or the proxy.
    let isProxy: Bool
    let scheme: String
    let host: String
    let port: Int
    /// The URL of the request, for the callback (without its userinfo, see `HTTPURL.redactedDescription`).
    let target: HTTPURL
    /// The request's own credentials: the URL's userinfo, then ``HTTPClientRequest/credentials``
    /// (for a proxy: the proxy's credentials).
    let urlCredentials: HTTPCredentials?
    let requestCredentials: HTTPCredentials?
    /// Schemes the request allows (nil: all).
    let allowedSchemes: Set<HTTPAuthenticationScheme>?

    /// The attempt in flight: what was sent with the last request.
    var current: Attempt?
    /// Sources already tried, so a refused source is not offered again.
    var triedSources: Set<Int> = []
    /// Schemes given up for this request: NTLM, when the server answered its negotiate message with others only.
    var abandonedSchemes: Set<HTTPAuthenticationScheme> = []
    var callbackAsks = 0
    var failures = 0
    /// The user name of the credentials refused last, for ``AuthenticationChallenge/previousUsername``.
    var refusedUsername: String?
    /// The credentials refused in this exchange, with their space: a store that holds the same ones again (the
    /// persistent store, after the session store's copy was refused) is not asked to send them a second time.
    var refused: [Refusal] = []

    struct Refusal: Sendable, Equatable {
        var space: ProtectionSpace
        var credentials: HTTPCredentials
    }
    var rounds = 0
    /// How many callback declines the process had seen when the request began (``declines``): a decline fails
    /// the requests that began before it came back (they were waiting for that question, or would have been
    /// had their challenge been read sooner), and only those. The auth middleware sets it before the request
    /// first goes out; an exchange made elsewhere begins when it is made.
    var began = AuthExchange.declines.load(ordering: .relaxed)
    /// Callback declines so far, in this process. Read by every request as it begins (a load, no write, so the
    /// fast path stays free of contention); written only when a callback declines.
    static let declines = Atomic<Int>(0)

    struct Attempt: Sendable {
        var space: ProtectionSpace
        var credentials: HTTPCredentials
        var source: CredentialSource
        var ntlm: NTLMPhase = .none
        /// The stores' removal count when the attempt began: a success after the session was cleared in the
        /// meantime is not remembered (see ``Authenticator/succeeded(_:status:authenticationInfo:)``).
        var removals: Int
        /// Sent before any challenge of this request: `space` is a guess (an earlier success on the server, or no
        /// realm at all), so a challenge for another space says they did not apply, not that they are wrong.
        var preemptive = false
        /// Digest: the nonce the last answer used. A response's `nextnonce` replaces the space's nonce only while
        /// the space still uses this one (another request may have moved it on since, to a fresher nonce).
        var digestNonce: String?
    }

    /// The request's own credentials, if it brought any: the URL's userinfo first, then the request's.
    var ownCredentials: (HTTPCredentials, CredentialSource)? {
        urlCredentials.map { ($0, .url) } ?? requestCredentials.map { ($0, .request) }
    }

    enum NTLMPhase: Sendable {
        case none
        /// The negotiate message went out; the next challenge carries the server's challenge message.
        case negotiateSent
        /// The authenticate message went out.
        case authenticateSent
    }

    /// Whether the next request must go out on the connection the last one used (NTLM mid-handshake).
    var needsSameConnection: Bool {
        if case .negotiateSent? = current?.ntlm { return true }
        return false
    }
}

/// One header to send with the next request: `Authorization` or `Proxy-Authorization`.
struct AuthorizationValue: Sendable {
    var value: String
    /// True for NTLM's negotiate message: the connection must be kept for the rest of the handshake.
    var startsConnectionHandshake: Bool
    /// True for NTLM's authenticate message: the handshake ends with this request.
    var endsConnectionHandshake: Bool
    /// True when the connection must not be kept after this request: NTLM's authenticate message to an origin
    /// (the connection stays authenticated as that user), or to a proxy when a logout interrupted the handshake.
    var closesConnection = false
}

/// The client's authentication state: credential lookup in order, the callback asked once at a time, Digest
/// nonce counts, and the spaces where credentials succeeded (for sending them before a challenge).
///
/// Shared by the auth middleware (origin `401`s, and `407`s from an HTTP proxy on plain `http` requests) and
/// the transport's CONNECT tunnel (a proxy's `407` to `CONNECT`). It never touches a socket.
///
/// The rules it keeps (docs/authentication.md):
/// - A request's own credentials (URL userinfo, then ``HTTPClientRequest/credentials``; a proxy's configured
///   credentials) always win. What was remembered from earlier successes, and the stores, answer only a
///   request that brought none.
/// - Everything derived from stored credentials (remembered successes, Digest nonces, callback answers) is
///   forgotten when they are removed from the session or persistent store, whoever removes them
///   (``InMemoryCredentialStore/removeAll()``, ``clearSession()``).
/// - Only a response that shows the credentials were accepted (``accepts(status:)``) is remembered or saved.
/// - Basic and Bearer, which put the secret itself on the wire, never go to an origin over plain `http`
///   unless ``AuthenticationConfiguration/allowsBasicOverPlainHTTP``.
actor Authenticator {
    let configuration: AuthenticationConfiguration
    private let logger: Logger
    /// Per space, the Digest challenge in use and its nonce count.
    private var digest: RecentlyStoredMap<ProtectionSpace, DigestState>
    /// Per origin (or proxy), the spaces whose credentials succeeded there, the most recent last.
    private var succeeded: RecentlyStoredMap<Endpoint, [Success]>
    /// Callback answers not yet confirmed by a success, so that requests waiting for the same space use them.
    private var answered: RecentlyStoredMap<ProtectionSpace, HTTPCredentials>
    private var asking: RecentlyStoredMap<ProtectionSpace, Task<HTTPCredentials?, Never>>
    /// Per space, the callback's last decline, numbered in ``AuthExchange/declines`` (see ``AuthExchange/began``).
    private var declined: RecentlyStoredMap<ProtectionSpace, Int>
    /// The bound of each of the five maps above; the entry stored least recently goes first.
    ///
    /// 1,000: each map holds one entry per server, realm or open question this client met, so a client
    /// crawling many hosts (or fed hostile challenges with ever new realms) would grow them forever. A thousand
    /// is far more servers than one client authenticates to at a time (browsers' HTTP auth caches hold a
    /// handful), and at a few hundred bytes an entry keeps each map under a megabyte. An evicted entry costs
    /// one more challenge round, never a wrong answer: a forgotten success just is not presented preemptively,
    /// a forgotten Digest nonce is answered afresh, a forgotten question is asked again.
    static let stateLimit = 1_000
    /// The previous callback, so that the next waits for it: one question at a time, as ASIHTTPRequest.
    private var lastQuestion: Task<Void, Never>?
    /// Set on the first success: until then, a request that asks for nothing preemptive skips the actor
    /// entirely on its way out (one hop saved per request on the fast path).
    /// An atomic, not a lock: every request reads it.
    private let anySuccess = Atomic<Bool>(false)
    /// The removal counts of the session and persistent stores last seen, to notice a cleared session.
    private var seenRemovals: (session: Int, persistent: Int)
    /// How often ``clearSession()`` ran: counted with the stores' removals, for a client without a session store.
    private var clearings = 0
    /// Removes from the session store the credentials of spaces removed from a ``CredentialFile`` used as the persistent
    /// store (a success copies them there), chained after the purges before it; nil once done. The session store is
    /// read, and written, only after it: logging out through the file logs out this client too.
    private var sessionPurge: Task<Void, Never>?
    /// Per space, the last operation queued on a persistent store of the user's own (see
    /// ``persistentStoreOperation(on:_:)``); an entry goes when its operation ends with none queued after it.
    private var persistentQueue: [ProtectionSpace: Task<Void, any Error>] = [:]
    /// How many operations wait for or run on a persistent store of the user's own (for tests).
    private(set) var queuedPersistentOperations = 0

    /// Whether credentials may be sent before a challenge without the request asking: some succeeded already.
    nonisolated var mayPresentBeforeChallenge: Bool {
        configuration.presentsCredentialsAfterSuccess && anySuccess.load(ordering: .acquiring)
    }

    /// Credentials that succeeded in one protection space, and where they may be presented before a challenge.
    private struct Success {
        var space: ProtectionSpace
        var credentials: HTTPCredentials
        /// Basic to an origin: the directories of the URLs they succeeded on; a URL at or below one is taken to be
        /// in the same space (RFC 7617 §2.2, as browsers and URLSession do). Digest to an origin whose challenge
        /// named a `domain`: its URIs on this server (RFC 7616 §3.3). Nil: the whole server (Digest without a
        /// `domain`, whose space is then the whole origin; a proxy).
        var directories: [String]?
    }

    /// Spaces remembered per server: a server rarely has more than a couple of realms, and the bound keeps a
    /// server that sends ever new realms from growing its entry without end (the oldest success goes first).
    static let spacesPerServer = 8
    /// Directories remembered per space: 10, Chromium's `kMaxNumPathsPerRealmEntry` (the oldest goes first).
    static let directoriesPerSpace = 10

    private struct Endpoint: Hashable {
        var scheme: String
        var host: String
        var port: Int
        var isProxy: Bool

        init(scheme: String, host: String, port: Int, isProxy: Bool) {
            self.scheme = scheme
            self.host = host
            self.port = port
            self.isProxy = isProxy
        }

        /// The server a protection space is on.
        init(space: ProtectionSpace) {
            self.init(scheme: space.scheme, host: space.host, port: space.port, isProxy: space.isProxy)
        }
    }

    init(configuration: AuthenticationConfiguration, logger: Logger, stateLimit: Int = Authenticator.stateLimit) {
        self.configuration = configuration
        self.logger = logger
        self.digest = RecentlyStoredMap(limit: stateLimit)
        self.succeeded = RecentlyStoredMap(limit: stateLimit)
        self.answered = RecentlyStoredMap(limit: stateLimit)
        self.asking = RecentlyStoredMap(limit: stateLimit)
        self.declined = RecentlyStoredMap(limit: stateLimit)
        self.seenRemovals = (configuration.sessionStore?.removals.count ?? 0, Self.removals(of: configuration.persistentStore)?.count ?? 0)
    }

    /// How many entries each remembered map holds (for the bound's tests).
    var stateCounts: (digest: Int, succeeded: Int, answered: Int, asking: Int) {
        (digest.count, succeeded.count, answered.count, asking.count)
    }

    // MARK: Forgetting

    /// Logs out: empties the session store and forgets everything derived from credentials (remembered
    /// successes, Digest nonces, callback answers not yet confirmed). The persistent store is left alone.
    func clearSession() async {
        // Counted before the store is awaited: a request that finishes or is answered while the store empties
        // already counts as from before the logout, and is not remembered.
        clearings += 1
        await configuration.sessionStore?.removeAll()
        forget(nil)
        seenRemovals = currentRemovals
    }

    private static func removals(of store: (any CredentialStore)?) -> CredentialRemovals? {
        (store as? CredentialFile)?.removals
    }

    private var currentRemovals: (session: Int, persistent: Int) {
        (configuration.sessionStore?.removals.count ?? 0, Self.removals(of: configuration.persistentStore)?.count ?? 0)
    }

    /// Catches up with removals made in the stores since last time: forgets what was derived from the removed
    /// credentials (everything, for a `removeAll`). Credentials removed from a ``CredentialFile`` go from the session
    /// store too (see ``sessionPurge``): a success from the file put a copy there, and a success from the callback
    /// or the request saved the same credentials in both.
    private func catchUpWithStores() {
        let now = currentRemovals
        guard now != seenRemovals else { return }
        var spaces: [ProtectionSpace] = []
        var all = false
        if let ledger = configuration.sessionStore?.removals {
            if let removed = ledger.removed(since: seenRemovals.session) { spaces += removed } else { all = true }
        }
        if let ledger = Self.removals(of: configuration.persistentStore) {
            let removed = ledger.removed(since: seenRemovals.persistent)
            if let removed { spaces += removed } else { all = true }
            if removed?.isEmpty != true { purgeSessionCopies(of: removed) }
        }
        seenRemovals = now
        forget(all ? nil : spaces)
    }

    /// Starts removing `spaces`' credentials (nil: all) from the session store, after the purges started before.
    /// Not recorded as the session store's removals: this client forgets what it derived from them here, and the
    /// count a success's write is checked against stays the one it read.
    private func purgeSessionCopies(of spaces: [ProtectionSpace]?) {
        guard let store = configuration.sessionStore else { return }
        let previous = sessionPurge
        sessionPurge = Task {
            await previous?.value
            await store.removeUnrecorded(spaces)
        }
    }

    /// Waits for the session store's purge in progress, if any (see ``sessionPurge``).
    private func settleSessionPurge() async {
        guard let purge = sessionPurge else { return }
        await purge.value
        if sessionPurge == purge { sessionPurge = nil }
    }

    /// Forgets what was derived from credentials for `spaces`' servers (nil: for every server).
    private func forget(_ spaces: [ProtectionSpace]?) {
        guard let spaces else {
            succeeded.removeAll()
            digest.removeAll()
            answered.removeAll()
            // A question still open belongs to the old session: a request challenged from now on asks afresh
            // instead of waiting for its answer (the requests already waiting still get it, for themselves).
            asking.removeAll()
            declined.removeAll()
            anySuccess.store(false, ordering: .releasing)
            logger.debug("authentication session cleared")
            return
        }
        let servers = Set(spaces.map(Endpoint.init(space:)))
        succeeded.removeAll { servers.contains($0) }
        digest.removeAll { servers.contains(Endpoint(space: $0)) }
        answered.removeAll { servers.contains(Endpoint(space: $0)) }
        asking.removeAll { servers.contains(Endpoint(space: $0)) }
        declined.removeAll { servers.contains(Endpoint(space: $0)) }
        for space in spaces { logger.debug("credentials removed", metadata: ["space": "\(space)"]) }
    }

    // MARK: Rules

    /// Whether a response shows that the credentials sent with its request were accepted, so that they may
    /// be remembered and saved: a 2xx or 3xx. A `401` or `407` refuses them; any other 4xx or a 5xx says
    /// nothing about them (a proxy's `407` to an origin's credentials, a server error, or a 404 from a
    /// server that hides what needs authentication, as httpbin's `hidden-basic-auth`).
    static func accepts(status: Int) -> Bool {
        (200..<400).contains(status)
    }

    /// The error for credentials of `scheme` that would cross plain `http` to an origin in a form anyone on
    /// the path can read (Basic, Bearer), or nil when they may go. Proxies are exempt: HTTP proxies are plain
    /// by nature. Loopback hosts are not: the rule is the scheme's, not the network's.
    static func plainHTTPRefusal(
        _ scheme: HTTPAuthenticationScheme, urlScheme: String, host: String, isProxy: Bool,
        configuration: AuthenticationConfiguration
    ) -> HTTPClientError? {
        guard scheme == .basic || scheme == .bearer, !isProxy, urlScheme == "http",
              !configuration.allowsBasicOverPlainHTTP else { return nil }
        let what = scheme == .basic ? "Basic credentials, which carry the password" : "a Bearer token"
        return HTTPClientError(.authenticationFailed,
            "refused to send \(what) to \(host) over plain http, where anyone on the path can read them;"
                + " use https, or set AuthenticationConfiguration.allowsBasicOverPlainHTTP to allow it")
    }

    private func plainHTTPRefusal(_ scheme: HTTPAuthenticationScheme, _ exchange: AuthExchange) -> HTTPClientError? {
        Self.plainHTTPRefusal(scheme, urlScheme: exchange.scheme, host: exchange.host, isProxy: exchange.isProxy,
                              configuration: configuration)
    }

    // MARK: Before any challenge

    /// Credentials to send before being challenged: after a success on the same origin (Basic, Digest), or
    /// Basic when the request asks for it with credentials of its own.
    ///
    /// The request's own credentials win: a remembered success is presented only for a request that brought
    /// none (or brought the very same). When the origin is known to take Basic, a request's own credentials
    /// are presented in its place; when it took Digest, they wait for the challenge.
    func preemptiveAuthorization(
        for exchange: inout AuthExchange, method: String, uri: String, body: [UInt8]?, basicRequested: Bool
    ) throws(HTTPClientError) -> String? {
        catchUpWithStores()
        let own = exchange.ownCredentials
        if configuration.presentsCredentialsAfterSuccess, let known = remembered(for: exchange) {
            let (credentials, source) = own ?? (known.credentials, .session)
            switch known.space.authenticationScheme {
            case .basic:
                if let refusal = plainHTTPRefusal(.basic, exchange) {
                    if own != nil { throw refusal }
                    return nil
                }
                exchange.current = .init(space: known.space, credentials: credentials, source: source,
                                         removals: removalCount, preemptive: true)
                return Self.basic(credentials)
            case .digest:
                // Digest state belongs to the credentials that earned it.
                guard credentials == known.credentials, var state = digest[known.space] else { break }
                let value = try state.authorization(
                    username: credentials.username, password: credentials.password, method: method,
                    uri: uri, body: body, cnonce: Self.cnonce())
                digest[known.space] = state
                exchange.current = .init(space: known.space, credentials: credentials, source: source,
                                         removals: removalCount, preemptive: true, digestNonce: state.challenge.nonce)
                return value
            case .ntlm, .bearer:
                break
            }
        }
        if basicRequested, exchange.allowedSchemes?.contains(.basic) ?? true, let (credentials, source) = own {
            if let refusal = plainHTTPRefusal(.basic, exchange) { throw refusal }
            // The realm is not known before the challenge; the space is completed when one arrives.
            let space = ProtectionSpace(scheme: exchange.scheme, host: exchange.host, port: exchange.port, realm: nil,
                                        authenticationScheme: .basic, isProxy: exchange.isProxy)
            // Not marked as tried: if the server wants another scheme, the same credentials answer it.
            exchange.current = .init(space: space, credentials: credentials, source: source, removals: removalCount,
                                     preemptive: true)
            return Self.basic(credentials)
        }
        return nil
    }

    /// The stores' removals so far, as one number that only grows.
    private var removalCount: Int { seenRemovals.session + seenRemovals.persistent + clearings }

    // MARK: Answering a challenge

    /// The header value that answers `challenges`, or nil to give up and return the response as it is.
    /// Throws when giving up must be an error: the callback declined, or credentials the request carried
    /// cannot be sent safely.
    ///
    /// `unsendable`: the request cannot go out again (a one-shot body). Where credentials would be sent, this
    /// error is thrown instead, before the callback is asked or a Digest nonce count is used; with none to send,
    /// the answer is nil as usual.
    func respond(
        to challenges: [AuthChallenge], exchange: inout AuthExchange, method: String, uri: String, body: [UInt8]?,
        unsendable: HTTPClientError? = nil
    ) async throws(HTTPClientError) -> AuthorizationValue? {
        catchUpWithStores()
        // Taken before the first `await` (the stores, the callback): a logout while this request waits there must
        // still count as after the credentials were chosen, or credentials read before it would be remembered.
        let removals = removalCount
        exchange.rounds += 1
        // Bounded: NTLM takes two rounds, a stale nonce one more, and each refused credential one. Clamped, so
        // that `maxCallbackAttempts = .max` ("ask as often as it takes") does not overflow.
        let callbackRounds = min(max(configuration.maxCallbackAttempts, 0), Int.max - 6)
        guard exchange.rounds <= 4 + callbackRounds + 2 else { return nil }

        // The server answered the negotiate message with other schemes only: NTLM is not for this request. Nothing
        // was refused (a negotiate message carries no secret), so the same credentials answer the scheme offered.
        if let attempt = exchange.current, case .negotiateSent = attempt.ntlm,
           !challenges.contains(where: { $0.scheme == "ntlm" }) {
            var without = exchange
            without.abandonedSchemes.insert(.ntlm)
            if choose(challenges, exchange: without) != nil {
                exchange.abandonedSchemes.insert(.ntlm)
                exchange.triedSources.remove(attempt.source.rawValue)
                exchange.current = nil
            }
        }

        // NTLM mid-handshake: the server's challenge message answers our negotiate message.
        if let attempt = exchange.current, case .negotiateSent = attempt.ntlm {
            guard let challenge = challenges.first(where: { $0.scheme == "ntlm" }), let token = challenge.token68 else {
                throw HTTPClientError(.authenticationFailed,
                    "the \(side(exchange)) did not continue the NTLM handshake (no challenge message in its \(exchange.isProxy ? 407 : 401))")
            }
            if let unsendable { throw unsendable }
            let message = try NTLMAuthentication.authenticateValue(challengeToken: token, credentials: attempt.credentials)
            exchange.current?.ntlm = .authenticateSent
            // This message authenticates the connection, not the request: a server keeps treating every later
            // request on it as this user, with or without credentials. The pool cannot tell which user a request
            // stands for before the request is challenged, so a connection authenticated to an origin is not kept
            // (curl keeps one only for requests with the same NTLM credentials). A proxy's connections are keyed
            // by its configuration, credentials included; they are kept, unless a logout interrupted the handshake
            // (the pool's logout closes only the connections that existed then; this one may have been opened since).
            let interrupted = attempt.removals != removals
            if interrupted {
                logger.debug("the authentication session was cleared during an NTLM handshake; its connection closes after it",
                             metadata: ["space": "\(attempt.space)"])
            }
            return AuthorizationValue(value: message, startsConnectionHandshake: false, endsConnectionHandshake: true,
                                      closesConnection: interrupted || !exchange.isProxy)
        }

        guard let (challenge, scheme) = choose(challenges, exchange: exchange) else {
            if exchange.current != nil { await noteFailure(&exchange) }
            return nil
        }
        let space = ProtectionSpace(scheme: exchange.scheme, host: exchange.host, port: exchange.port,
                                    realm: scheme == .ntlm ? nil : challenge.realm, authenticationScheme: scheme,
                                    isProxy: exchange.isProxy)

        // A stale Digest nonce: the credentials were right; answer the new nonce without asking again (RFC 7616 §3.3).
        // Only in the realm they were right for: `stale` from another realm says nothing about them.
        if scheme == .digest, let attempt = exchange.current, attempt.space.authenticationScheme == .digest,
           attempt.space.realm == space.realm, let fresh = DigestChallenge(challenge), fresh.stale {
            if let unsendable { throw unsendable }
            return try digestValue(fresh, space: space, credentials: attempt.credentials, exchange: &exchange,
                                   source: attempt.source, removals: removals, method: method, uri: uri, body: body)
        }
        if let attempt = exchange.current {
            if attempt.preemptive, attempt.space.realm != nil,
               attempt.space.realm != space.realm || attempt.space.authenticationScheme != scheme {
                // Presented before the challenge for a space guessed from an earlier success, and challenged for
                // another: they did not apply here, which says nothing about them. Nothing is removed.
                exchange.current = nil
            } else {
                // Credentials of the request's own, presented as Basic before the challenge and refused by a Basic
                // challenge: they are not sent again (curl sends them once; a lockout policy would count them twice).
                if attempt.space.authenticationScheme == .basic, scheme == .basic, attempt.source <= .request {
                    exchange.triedSources.insert(attempt.source.rawValue)
                }
                await noteFailure(&exchange)
            }
        }

        if scheme == .basic, let refusal = plainHTTPRefusal(.basic, exchange) {
            logger.warning("not sending Basic credentials over plain http; set allowsBasicOverPlainHTTP to allow it",
                           metadata: ["space": "\(space)"])
            if exchange.ownCredentials != nil { throw refusal }
            return nil
        }

        guard let (credentials, source) = try await lookUp(space, exchange: &exchange, unsendable: unsendable) else { return nil }
        if let unsendable { throw unsendable }
        exchange.triedSources.insert(source.rawValue)

        switch scheme {
        case .basic:
            exchange.current = .init(space: space, credentials: credentials, source: source, removals: removals)
            return AuthorizationValue(value: Self.basic(credentials), startsConnectionHandshake: false, endsConnectionHandshake: false)
        case .digest:
            guard let parsed = DigestChallenge(challenge) else { return nil }
            return try digestValue(parsed, space: space, credentials: credentials, exchange: &exchange,
                                   source: source, removals: removals, method: method, uri: uri, body: body)
        case .ntlm:
            exchange.current = .init(space: space, credentials: credentials, source: source, ntlm: .negotiateSent,
                                     removals: removals)
            return AuthorizationValue(value: NTLMAuthentication.negotiateValue(credentials: credentials),
                                      startsConnectionHandshake: true, endsConnectionHandshake: false)
        case .bearer:
            return nil // bearer tokens are the middleware's; see AuthMiddleware
        }
    }

    /// The value to send again for the credentials in flight on `exchange`, when its request goes out once more
    /// for the other side's challenge (a proxy's Digest answer on a retry for the origin's `401`): a Digest answer
    /// with the next nonce count, since a server that checks counts (squid's `check_nonce_count`) takes a repeated
    /// one as a replay (RFC 7616 §3.4). Nil when the value may go again as it was (Basic, NTLM, nothing in flight).
    func renewedAuthorization(
        for exchange: inout AuthExchange, method: String, uri: String, body: [UInt8]?
    ) throws(HTTPClientError) -> String? {
        guard let attempt = exchange.current, attempt.space.authenticationScheme == .digest,
              var state = digest[attempt.space] else { return nil }
        let value = try state.authorization(username: attempt.credentials.username, password: attempt.credentials.password,
                                            method: method, uri: uri, body: body, cnonce: Self.cnonce())
        digest[attempt.space] = state
        exchange.current?.digestNonce = state.challenge.nonce
        return value
    }

    /// A `CONNECT` tunnel was accepted (2xx): the proxy credentials in flight worked. (ProxyTunnel's call;
    /// it could pass its status to ``succeeded(_:status:authenticationInfo:)`` instead.)
    func succeeded(_ exchange: AuthExchange) async {
        await succeeded(exchange, status: 200)
    }

    /// The request's final response arrived with `status`: when it shows the credentials in flight were
    /// accepted (``accepts(status:)``), they are remembered for the server and saved to the stores. Any other
    /// answer leaves everything as it was: nothing is remembered, saved or removed.
    ///
    /// `authenticationInfo`: the values of the response's `Authentication-Info` field (`Proxy-Authentication-Info`
    /// for a proxy's exchange). Its `nextnonce` becomes the Digest nonce of the space, its count starting again at 1
    /// (RFC 7616 §3.5: the client SHOULD use it for the next request): a server that rotates nonces would otherwise
    /// refuse the next request with `stale=true`, a round trip more.
    func succeeded(_ exchange: AuthExchange, status: Int, authenticationInfo: [String] = []) async {
        guard let attempt = exchange.current else { return }
        if !authenticationInfo.isEmpty {
            catchUpWithStores()
            takeNextNonce(authenticationInfo, after: attempt)
        }
        guard Self.accepts(status: status) else { return }
        catchUpWithStores()
        // The session was cleared while this request was out: what it proved belongs to the old session.
        guard attempt.removals == removalCount else { return }
        var space = attempt.space
        if attempt.preemptive, attempt.source <= .request, space.authenticationScheme == .basic {
            // The request's own credentials, accepted without a challenge: the realm they answered was never seen
            // (the one presented was an earlier success's guess, perhaps another user's). They are remembered for
            // this server under no realm, and saved to no store, where they would replace that user's.
            space.realm = nil
        }
        remember(space, attempt.credentials, for: exchange)
        anySuccess.store(true, ordering: .releasing)
        logger.debug("authenticated", metadata: ["space": "\(space)", "user": "\(attempt.credentials.username)"])
        guard attempt.source != .session, space.realm != nil || space.authenticationScheme == .ntlm else {
            answered[space] = nil
            return
        }
        // A purge of the session store started before this attempt (a logout through the credential file) ends
        // first: it would remove these credentials, new since, if it ran after the write.
        if sessionPurge != nil {
            await settleSessionPurge()
            catchUpWithStores()
            guard attempt.removals == removalCount else { return }
        }
        // Stored only if the store saw no removal since the check above: a logout that reaches the store while
        // this write is on its way must not find the old user's credentials put back after it.
        if let store = configuration.sessionStore,
           await !store.store(attempt.credentials, for: space, ifRemovalsAre: seenRemovals.session) {
            return
        }
        // The callback's answer is forgotten only once the session store holds it: a request challenged while
        // the store was being written would otherwise find it in neither place and ask the callback again.
        if answered[space] == attempt.credentials { answered[space] = nil }
        // The session store was awaited: a logout meanwhile (with no session store, or one that came after the
        // write) makes these credentials the old session's.
        catchUpWithStores()
        guard attempt.removals == removalCount, attempt.source != .persistent,
              let store = configuration.persistentStore else { return }
        do {
            if let file = store as? CredentialFile {
                try await file.store(attempt.credentials, for: space, ifRemovalsAre: seenRemovals.persistent)
            } else {
                let saved = space
                try await persistentStoreOperation(on: saved) { try await store.store(attempt.credentials, for: saved) }
            }
        } catch {
            logger.warning("could not save credentials to the persistent store", metadata: ["space": "\(space)", "error": "\(error)"])
        }
    }

    /// Switches `attempt`'s Digest space to the `nextnonce` in `fieldValues` (see ``succeeded(_:status:authenticationInfo:)``).
    /// Not after a logout since the attempt began (its state belongs to the old session, and was forgotten), and
    /// not when the space has moved on from the nonce the attempt used.
    private func takeNextNonce(_ fieldValues: [String], after attempt: AuthExchange.Attempt) {
        guard attempt.space.authenticationScheme == .digest, attempt.removals == removalCount,
              let nonce = DigestState.nextNonce(inAuthenticationInfo: fieldValues),
              var state = digest[attempt.space], state.challenge.nonce == attempt.digestNonce,
              nonce != state.challenge.nonce else { return }
        state.useNextNonce(nonce)
        digest[attempt.space] = state
        logger.trace("Digest: using the server's next nonce", metadata: ["space": "\(attempt.space)"])
    }

    /// Runs `operation` on a persistent store of the user's own after the ones queued for `space` before it.
    /// Such a store has no compare-and-remove: removing refused credentials looks, then removes, and a store
    /// of newer credentials for the same space must not fall between the two.
    private func persistentStoreOperation(
        on space: ProtectionSpace, _ operation: @escaping @Sendable () async throws -> Void
    ) async throws {
        let previous = persistentQueue[space]
        let task = Task {
            _ = await previous?.result
            try await operation()
        }
        persistentQueue[space] = task
        queuedPersistentOperations += 1
        defer {
            queuedPersistentOperations -= 1
            if persistentQueue[space] == task { persistentQueue[space] = nil }
        }
        try await task.value
    }

    // MARK: Pieces

    private func side(_ exchange: AuthExchange) -> String { exchange.isProxy ? "proxy" : "server" }

    /// The directory of `path`: up to its last `/` (RFC 7617 §2.2: "all paths at or deeper than the last
    /// symbolic element in the path field").
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "/" }
        return String(path[...slash])
    }

    /// The success to present before a challenge to `exchange`'s request: of those whose space covers its URL
    /// and whose scheme it allows, the one with the deepest directory; among equals, the most recent.
    private func remembered(for exchange: AuthExchange) -> Success? {
        guard let list = succeeded[endpoint(exchange)] else { return nil }
        let path = exchange.target.path.isEmpty ? "/" : exchange.target.path
        var best: (success: Success, depth: Int)?
        // NTLM authenticates a connection and is never presented first: its successes are not candidates.
        for success in list where success.space.authenticationScheme == .basic || success.space.authenticationScheme == .digest {
            guard exchange.allowedSchemes?.contains(success.space.authenticationScheme) ?? true else { continue }
            let depth: Int
            if let directories = success.directories {
                guard let deepest = directories.filter({ path.hasPrefix($0) }).map(\.utf8.count).max() else { continue }
                depth = deepest
            } else {
                depth = 0
            }
            if depth >= best?.depth ?? 0 { best = (success, depth) }
        }
        return best?.success
    }

    /// Remembers that `credentials` succeeded in `space` for `exchange`'s URL.
    private func remember(_ space: ProtectionSpace, _ credentials: HTTPCredentials, for exchange: AuthExchange) {
        let endpoint = endpoint(exchange)
        let path = exchange.target.path.isEmpty ? "/" : exchange.target.path
        // Basic: the directory of the URL. Digest: the origin's URIs of the challenge's `domain`, the whole origin
        // when it names none; when it names only other servers', the directory of the URL, as for Basic.
        var directory: String?
        var directories: [String]?
        if !exchange.isProxy {
            switch space.authenticationScheme {
            case .basic:
                directory = Self.directory(of: path)
            case .digest:
                if let domain = digest[space]?.challenge.domain, !domain.isEmpty {
                    let own = Self.digestSpace(domain, on: exchange)
                    if own.isEmpty { directory = Self.directory(of: path) } else { directories = Array(own.prefix(Self.directoriesPerSpace)) }
                }
            default:
                break
            }
        }
        var list = succeeded[endpoint] ?? []
        if let directory { directories = [directory] }
        if let index = list.firstIndex(where: { $0.space == space }) {
            let earlier = list.remove(at: index)
            // The same credentials again: the space covers both places (a directory under another is left out).
            if let directory, earlier.credentials == credentials, let known = earlier.directories {
                directories = known.contains(where: { directory.hasPrefix($0) })
                    ? known : Array((known.filter { !$0.hasPrefix(directory) } + [directory]).suffix(Self.directoriesPerSpace))
            }
        }
        list.append(Success(space: space, credentials: credentials, directories: directories))
        if list.count > Self.spacesPerServer { list.removeFirst(list.count - Self.spacesPerServer) }
        succeeded[endpoint] = list
    }

    /// The path prefixes on `exchange`'s server that a Digest challenge's `domain` names (RFC 7616 §3.3: "any URI
    /// that has a URI in this list as a prefix (after both have been made absolute) MAY be assumed to be in the
    /// same protection space"). An absolute path is on this server; an absolute URI counts when it names this
    /// scheme, host and port. Another server's URIs are left out: credentials go to a server only after it asked.
    static func digestSpace(_ domain: [String], on exchange: AuthExchange) -> [String] {
        domain.compactMap { uri -> String? in
            if uri.hasPrefix("/") { return uri }
            guard let url = try? HTTPURL(uri), url.scheme == exchange.scheme, url.host == exchange.host,
                  url.port == exchange.port else { return nil }
            return url.path.isEmpty ? "/" : url.path
        }
    }

    private func endpoint(_ exchange: AuthExchange) -> Endpoint {
        Endpoint(scheme: exchange.scheme, host: exchange.host, port: exchange.port, isProxy: exchange.isProxy)
    }

    /// The challenge to answer: the strongest scheme offered that the request allows and we support.
    private func choose(_ challenges: [AuthChallenge], exchange: AuthExchange) -> (AuthChallenge, HTTPAuthenticationScheme)? {
        for scheme in HTTPAuthenticationScheme.preference where scheme != .bearer {
            guard exchange.allowedSchemes?.contains(scheme) ?? true, !exchange.abandonedSchemes.contains(scheme) else { continue }
            if scheme == .digest {
                // Several Digest challenges (SHA-256 and MD5, say): the strongest we support.
                if let best = DigestChallenge.preferred(in: challenges),
                   let challenge = challenges.first(where: { DigestChallenge($0) == best }) {
                    return (challenge, scheme)
                }
                continue
            }
            if let challenge = challenges.first(where: { $0.scheme == scheme.rawValue.lowercased() }) {
                return (challenge, scheme)
            }
        }
        return nil
    }

    /// The credentials in flight were refused: forget them where they were kept.
    private func noteFailure(_ exchange: inout AuthExchange) async {
        guard let attempt = exchange.current else { return }
        exchange.failures += 1
        exchange.refusedUsername = attempt.credentials.username
        let refusal = AuthExchange.Refusal(space: attempt.space, credentials: attempt.credentials)
        if !exchange.refused.contains(refusal) { exchange.refused.append(refusal) }
        exchange.current = nil
        logger.debug("credentials refused", metadata: ["space": "\(attempt.space)", "user": "\(attempt.credentials.username)"])
        let endpoint = endpoint(exchange)
        if let list = succeeded[endpoint],
           list.contains(where: { $0.space == attempt.space && $0.credentials == attempt.credentials }) {
            let kept = list.filter { !($0.space == attempt.space && $0.credentials == attempt.credentials) }
            succeeded[endpoint] = kept.isEmpty ? nil : kept
        }
        answered[attempt.space] = nil
        await removeRefused(attempt.credentials, for: attempt.space, from: attempt.source)
    }

    /// Removes `refused` from the store they came from (`source`).
    private func removeRefused(_ refused: HTTPCredentials, for space: ProtectionSpace, from source: CredentialSource) async {
        // Removed only while they are still what the store keeps: another request may have stored credentials
        // that worked since this one read these (a password changed meanwhile), and those must stay. Not counted
        // as a removal: this actor already forgot what it derived from them. Awaited, so the store no longer
        // offers them when this exchange, or the next request, looks again.
        switch source {
        case .session:
            await configuration.sessionStore?.removeRefused(refused, for: space)
        case .persistent:
            if let file = configuration.persistentStore as? CredentialFile {
                try? await file.removeRefused(refused, for: space)
            } else if let store = configuration.persistentStore {
                // A store of the user's own: the protocol has no compare-and-remove, so look, then remove, with
                // no other operation of this client on the space in between.
                try? await persistentStoreOperation(on: space) {
                    if try await store.credentials(for: space) == refused { try await store.removeCredentials(for: space) }
                }
            }
        case .url, .request, .callback:
            break
        }
    }

    /// The credentials to answer `space` with, in lookup order; nil when there are none. `unsendable` is thrown
    /// where the callback would be asked (see ``respond(to:exchange:method:uri:body:unsendable:)``).
    private func lookUp(
        _ space: ProtectionSpace, exchange: inout AuthExchange, unsendable: HTTPClientError? = nil
    ) async throws(HTTPClientError) -> (HTTPCredentials, CredentialSource)? {
        func untried(_ source: CredentialSource) -> Bool { !exchange.triedSources.contains(source.rawValue) }
        if untried(.url), let credentials = exchange.urlCredentials { return (credentials, .url) }
        if untried(.request), let credentials = exchange.requestCredentials { return (credentials, .request) }
        // The stores hold what succeeded for other requests, perhaps as another user: a request that brought
        // credentials of its own never goes out with those. Only the callback may still be asked.
        let hasOwn = exchange.ownCredentials != nil
        if !hasOwn, untried(.session) {
            if let credentials = answered[space] { return (credentials, .callback) }
            // Not before a logout through the credential file has reached the session store.
            await settleSessionPurge()
            if let credentials = await configuration.sessionStore?.credentials(for: space) {
                if !exchange.refused.contains(.init(space: space, credentials: credentials)) { return (credentials, .session) }
                await removeRefused(credentials, for: space, from: .session)
            }
        }
        if !hasOwn, untried(.persistent), let store = configuration.persistentStore {
            do {
                if let credentials = try await store.credentials(for: space) {
                    // The same credentials as refused already in this exchange (the session store's copy of them):
                    // not sent again, which would count two failed logins against the account for one request.
                    if !exchange.refused.contains(.init(space: space, credentials: credentials)) { return (credentials, .persistent) }
                    logger.debug("credentials refused already in this exchange; not sent again", metadata: ["space": "\(space)"])
                    await removeRefused(credentials, for: space, from: .persistent)
                }
            } catch {
                logger.warning("the persistent credential store failed", metadata: ["space": "\(space)", "error": "\(error)"])
            }
        }
        // The stores were awaited: a question about this space may have been answered meanwhile. Checked again
        // here, with no await before `ask` looks for a question in flight, so that the callback is asked once.
        if !hasOwn, untried(.session), let credentials = answered[space] { return (credentials, .callback) }
        let handler = exchange.isProxy ? configuration.proxyAuthenticationNeeded : configuration.authenticationNeeded
        guard let handler, exchange.callbackAsks < configuration.maxCallbackAttempts else { return nil }
        // The user declined this question after the request began: the request fails with the ones that were
        // waiting for the answer, instead of asking again because its challenge was read a moment later.
        if let declinedAt = declined[space], exchange.began < declinedAt {
            throw Self.declined(space, exchange: exchange)
        }
        if let unsendable { throw unsendable }
        exchange.callbackAsks += 1
        let question = AuthenticationChallenge(space: space, url: exchange.target.redactedDescription, failureCount: exchange.failures,
                                               previousUsername: exchange.refusedUsername)
        guard let credentials = try await ask(question, handler: handler) else { throw Self.declined(space, exchange: exchange) }
        return (credentials, .callback)
    }

    private static func declined(_ space: ProtectionSpace, exchange: AuthExchange) -> HTTPClientError {
        HTTPClientError(.authenticationFailed,
            "\(exchange.isProxy ? "proxyAuthenticationNeeded" : "authenticationNeeded") gave no credentials for \(space)")
    }

    /// Asks `handler`, once per space at a time: a request needing a space that is being asked about waits for
    /// that answer. Questions about different spaces are asked one after another.
    private func ask(_ question: AuthenticationChallenge, handler: @escaping AuthenticationHandler) async throws(HTTPClientError) -> HTTPCredentials? {
        let space = question.space
        // The answer is kept for other requests only if nothing was removed while it was awaited: an answer that
        // arrives after a logout was given to the old session's question.
        let removalsBefore = removalCount
        let task: Task<HTTPCredentials?, Never>
        let initiated: Bool
        if let pending = asking[space] {
            task = pending
            initiated = false
        } else {
            let previous = lastQuestion
            task = Task {
                await previous?.value
                return await handler(question)
            }
            asking[space] = task
            lastQuestion = Task { _ = await task.value }
            initiated = true
            logger.debug("asking for credentials", metadata: ["space": "\(space)"])
        }
        // Cancelling the request that asked cancels the question; every request waiting for it then fails.
        let answer = await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            if initiated { task.cancel() }
        }
        catchUpWithStores()
        if asking[space] == task {
            asking[space] = nil
            if removalCount == removalsBefore {
                if let answer {
                    answered[space] = answer
                } else if !task.isCancelled {
                    declined[space] = AuthExchange.declines.add(1, ordering: .relaxed).newValue
                }
            }
        }
        if Task.isCancelled { throw .cancelled }
        return answer
    }

    private func digestValue(
        _ challenge: DigestChallenge, space: ProtectionSpace, credentials: HTTPCredentials, exchange: inout AuthExchange,
        source: CredentialSource, removals: Int, method: String, uri: String, body: [UInt8]?
    ) throws(HTTPClientError) -> AuthorizationValue {
        var state = DigestState(challenge: challenge)
        let value = try state.authorization(username: credentials.username, password: credentials.password,
                                            method: method, uri: uri, body: body, cnonce: Self.cnonce())
        digest[space] = state
        exchange.current = .init(space: space, credentials: credentials, source: source, removals: removals,
                                 digestNonce: state.challenge.nonce)
        return AuthorizationValue(value: value, startsConnectionHandshake: false, endsConnectionHandshake: false)
    }

    static func basic(_ credentials: HTTPCredentials) -> String {
        // RFC 7617 §2.1: UTF-8 (the charset="UTF-8" servers ask for, and what curl and browsers send).
        "Basic " + Base64.encode(Array("\(credentials.username):\(credentials.password)".utf8))
    }

    /// 16 random bytes in hex: RFC 7616 §3.4 wants a cnonce no one can predict.
    static func cnonce() -> String {
        hexString(secureRandomBytes(16))
    }
}
