import Logging

extension HTTPClient {
    /// Everything a client is set up with. Each default names where it comes from.
    public struct Configuration: Sendable {
        /// TLS settings for `https` URLs.
        public var tls = TLSConfiguration()
        /// The longest time to resolve, connect and (separately) complete a TLS handshake.
        /// 10 s: as async-http-client; curl allows 300 s.
        public var connectTimeout: Duration = .seconds(10)
        /// The longest wait for the next byte while sending or receiving (ASIHTTPRequest's `timeOutSeconds`).
        /// 60 s: URLSession's `timeoutIntervalForRequest`. `nil` waits forever.
        public var inactivityTimeout: Duration? = .seconds(60)
        /// A deadline for each whole request, from `send` until its last body byte. None by default,
        /// since downloads can legitimately take hours; set it per request with ``HTTPClientRequest/timeout``.
        public var totalTimeout: Duration?
        /// The slowest a transfer may move its bytes before it fails with a timeout in phase
        /// `HTTPClientError.TimeoutPhase.lowSpeed` (curl's `--speed-limit` and `--speed-time`; see
        /// ``LowSpeedLimit``). nil, the default, sets none, as curl and URLSession: a trickle is ended only by
        /// ``totalTimeout``. A request's own ``HTTPClientRequest/lowSpeedLimit`` replaces it.
        public var lowSpeedLimit: LowSpeedLimit?
        /// How often an idempotent request with a replayable body is retried after a timeout
        /// (ASIHTTPRequest's `numberOfTimesToRetryOnTimeout`, default 0 there too). Never once the total deadline
        /// (``totalTimeout``, `HTTPClientRequest.timeout`) has passed, whichever wait it cut short.
        public var retriesOnTimeout = 0
        /// Connections per host (scheme, host, port). 8: async-http-client's default; browsers use 6.
        /// `Int.max` is no limit.
        public var maxConnectionsPerHost = 8
        /// How long an unused keep-alive connection is kept. 60 s: ASIHTTPRequest's default; Go uses 90 s.
        /// A server's `Keep-Alive: timeout=N` shortens it.
        public var idleTimeout: Duration = .seconds(60)
        /// The largest response head accepted. 64 KiB: nginx's `large_client_header_buffers` is 4 × 8 KiB and
        /// Go's default 1 MiB is generous; 64 KiB fits every real response head.
        public var maxResponseHeadBytes = 64 * 1024
        /// The most header fields in a response head. 100: as Go's `net/textproto` and h2's default.
        public var maxResponseHeaderCount = 100
        /// Sent when a request has no `User-Agent`; nil sends none.
        public var userAgent: String? = "AsyncHTTP/\(AsyncHTTPVersion.string)"
        /// Request lifecycle and connection reuse at `debug` and `trace` (ASIHTTPRequest's
        /// `DEBUG_REQUEST_STATUS` and `DEBUG_PERSISTENT_CONNECTIONS`).
        public var logger = Logger(label: "AsyncHTTP")
        /// The topics whose `debug` and `trace` lines are written when the ``logger``'s level lets them through:
        /// all by default. Every line of a request carries its number (`ahttp.request`) and its topic
        /// (`ahttp.topic`); see ``HTTPClient/LogTopic`` for ASIHTTPRequest's `DEBUG_*` switches.
        public var logTopics: Set<HTTPClient.LogTopic> = HTTPClient.LogTopic.all
        /// Middleware run in front of the pool, outermost first, after the built-in chain
        /// (the built-in members are listed where the chain is built: `HTTPClient+Middleware.swift`).
        public var middleware: [any HTTPClientMiddleware] = []
        /// How redirects are followed: up to 10, a POST answered 301/302 and anything but HEAD answered 303 as GET, no https → http (see ``RedirectPolicy``).
        /// ``HTTPClientRequest/redirectPolicy`` overrides it per request.
        public var redirectPolicy = RedirectPolicy()
        /// Where cookies are kept between requests; nil turns cookie handling off for the client.
        /// A fresh in-memory jar for each configuration made, so cookies live as long as the client (ASIHTTPRequest
        /// shared one store per process; `HTTPClient.shared` has one jar for the process too). A jar is an actor,
        /// a reference: clients made from copies of one configuration value share its jar, and with it their
        /// sessions. For clients that act for different users, give each its own `CookieJar()`. Give it a
        /// ``NetscapeCookieFile`` to keep cookies across runs.
        public var cookieJar: CookieJar? = CookieJar()
        /// `Accept-Encoding: gzip, deflate` with streaming decoding, and the decompression-bomb limits
        /// (see ``CompressionPolicy``).
        public var compression = CompressionPolicy()
        /// The encoding ``HTTPClientResponse/text(upTo:)`` falls back to when the response declares no charset,
        /// has no byte order mark and is not valid UTF-8: ISO-8859-1 (ASIHTTPRequest's `defaultResponseEncoding`).
        public var textDecodingFallback = TextDecodingFallback()

        /// Where credentials for `401` and `407` challenges come from, and what may be sent (see
        /// ``AuthenticationConfiguration``): an in-memory session store, no persistent store, no callback,
        /// and no Basic over plain `http`.
        public var authentication = AuthenticationConfiguration()
        /// Which proxy requests go through. `.environment` by default: `http_proxy`, `https_proxy`,
        /// `all_proxy` and `no_proxy` as curl reads them (Go's `ProxyFromEnvironment` is the default there too),
        /// with loopback hosts always direct. ``HTTPClientRequest/proxy`` overrides it per request.
        public var proxy: ProxySetting = .environment
        /// The settings of each proxy ``ProxySetting/environment`` finds in `http_proxy`, `https_proxy` or `all_proxy`
        /// that a variable cannot hold: the TLS to an `https://` proxy (its trust roots, certificate check and client
        /// certificate), tunnelling plain `http`, and when and how its credentials are sent. By default those of a
        /// ``ProxyConfiguration`` made from the URL. A proxy given with ``ProxySetting/proxy(_:bypass:)`` carries its
        /// own settings instead.
        public var environmentProxy = EnvironmentProxyOptions()
        /// Addresses to connect to instead of resolving some host and port (curl's `--resolve`); see
        /// ``ResolveOverride``. ``HTTPClientRequest/resolve`` replaces them per request.
        public var resolve: [ResolveOverride] = []
        /// Other hosts and ports to connect to instead of the URL's (curl's `--connect-to`); see
        /// ``ConnectToOverride``. ``HTTPClientRequest/connectTo`` replaces them per request.
        public var connectTo: [ConnectToOverride] = []
        /// A Unix domain socket every request goes through instead of TCP (curl's `--unix-socket`); proxies are
        /// then not used. ``HTTPClientRequest/unixSocket`` sets one per request.
        public var unixSocket: UnixSocketAddress?
        /// When a name has several addresses, how long one connection attempt runs before the next address is
        /// tried alongside it (Happy Eyeballs, RFC 8305 §5; an attempt that fails starts the next at once).
        /// 250 ms: the RFC's recommended value, also Chrome's and curl's (`--happy-eyeballs-timeout-ms`).
        public var connectionAttemptDelay: Duration = .milliseconds(250)
        /// Connect only to addresses of this family (curl's `-4`/`--ipv4` and `-6`/`--ipv6`,
        /// `CURLOPT_IPRESOLVE`): to origins and proxies alike, whether the addresses come from DNS, a
        /// ``resolve`` entry or the URL itself. As curl, an address literal of the other family fails with
        /// `connectFailed`, and a name with no address of this family with `dnsFailure`. nil, the default: either family, raced as ``connectionAttemptDelay`` describes.
        public var ipAddressFamily: IPAddressFamily?
        /// How long a name's addresses are reused before it is looked up again. 60 s: curl's
        /// `--dns-cache-timeout`. `getaddrinfo` reports no TTL, so this is a fixed time; nil turns the cache
        /// off. The cache is shared by every client in the process (the system resolver's answers are too),
        /// and concurrent lookups of one name are always made once.
        public var dnsCacheTimeout: Duration? = .seconds(60)
        /// Watchers of every request (``HTTPClientObserver``): the exact request heads, connection reuse, body
        /// bytes, retries and timings. They see traffic and cannot change it. None by default, and with none
        /// nothing is recorded.
        public var observers: [any HTTPClientObserver] = []
        /// Which request bodies wait for `100 Continue` before they are sent (``ExpectContinuePolicy``): by default
        /// bodies of 1 MiB or more, for up to 1 s, as curl does. ``HTTPClientRequest/expectContinue`` overrides it.
        public var expectContinue = ExpectContinuePolicy.default
        /// The download cache for GET requests (see ``HTTPCache``); nil, the default, caches nothing (as
        /// ASIHTTPRequest without a `downloadCache`). One cache can be given to several clients.
        ///
        /// ```swift
        /// configuration.cache = try HTTPCache(directory: cachesDirectory + "/http")
        /// ```
        public var cache: HTTPCache?
        /// The most bytes per second all of this client's requests may move together, both directions
        /// (ASIHTTPRequest's `+setMaxBandwidthPerSecond:`); nil, the default, sets no limit, and so does 0 or less
        /// (curl's `--limit-rate 0`, ASIHTTPRequest's 0). Change it while the client runs with
        /// ``HTTPClient/maxBandwidthPerSecond``.
        public var maxBandwidthPerSecond: Int?
        /// How long a request may poll its socket for the response head before it parks on the event loop; 100 µs
        /// by default, `.zero` never polls. At most 1 ms.
        ///
        /// A parked request costs two thread wake-ups when its answer comes (the event loop's, then the task's),
        /// and on a loopback or LAN server that answers within tens of microseconds those wake-ups are most of
        /// the request's latency. So a request polls first (`recv` with `MSG_PEEK`) when it is the only transfer
        /// in flight in the process, the process may use at least two processors, and its connection's recent
        /// heads came within this limit; otherwise it parks at once, as every request to a distant server soon
        /// does. Polling holds one cooperative thread for at most this long. Sequential keep-alive requests to a
        /// local nginx ran about twice as fast with it, and used less CPU per request (docs/performance.md,
        /// session 18). It plays the part of Linux's `SO_BUSY_POLL` for one socket at a time.
        public var busyPollLimit: Duration = .microseconds(100)
        /// Tests only: a poll limit past the 1 ms that ``validate()`` allows, so a test under a sanitizer, where
        /// a loopback answer takes milliseconds, still sees its requests poll. Not validated; nil uses
        /// ``busyPollLimit``.
        var busyPollLimitForTesting: Duration?

        /// The defaults described on each property.
        public init() {}

        /// The defaults, with `tls` as the TLS settings.
        public init(tls: TLSConfiguration) {
            self.tls = tls
        }

        /// Checks every value against its range. ``HTTPClient`` runs this when it is created, and a client made
        /// with a bad value refuses every request with the same `HTTPClientError.Code.invalidConfiguration`
        /// error instead of trapping or guessing.
        public func validate() throws(HTTPClientError) {
            func refuse(_ what: String) -> HTTPClientError { HTTPClientError(.invalidConfiguration, what) }
            guard maxConnectionsPerHost >= 1 else {
                throw refuse("maxConnectionsPerHost is \(maxConnectionsPerHost); it must be at least 1")
            }
            guard retriesOnTimeout >= 0 else { throw refuse("retriesOnTimeout is \(retriesOnTimeout); it must not be negative") }
            guard maxResponseHeadBytes >= 64 else {
                throw refuse("maxResponseHeadBytes is \(maxResponseHeadBytes); it must be at least 64")
            }
            guard maxResponseHeaderCount >= 1 else {
                throw refuse("maxResponseHeaderCount is \(maxResponseHeaderCount); it must be at least 1")
            }
            guard connectTimeout > .zero else { throw refuse("connectTimeout is \(connectTimeout); it must be positive") }
            if let inactivityTimeout, inactivityTimeout <= .zero {
                throw refuse("inactivityTimeout is \(inactivityTimeout); it must be positive (nil waits forever)")
            }
            if let totalTimeout, totalTimeout <= .zero {
                throw refuse("totalTimeout is \(totalTimeout); it must be positive (nil sets no deadline)")
            }
            guard idleTimeout >= .zero else { throw refuse("idleTimeout is \(idleTimeout); it must not be negative") }
            guard connectionAttemptDelay >= .milliseconds(10) else {
                throw refuse("connectionAttemptDelay is \(connectionAttemptDelay); RFC 8305 §8 sets its minimum at 10 ms")
            }
            if let dnsCacheTimeout, dnsCacheTimeout <= .zero {
                throw refuse("dnsCacheTimeout is \(dnsCacheTimeout); it must be positive (nil turns the cache off)")
            }
            guard busyPollLimit >= .zero, busyPollLimit <= .milliseconds(1) else {
                throw refuse("busyPollLimit is \(busyPollLimit); it must be between zero (no polling) and 1 ms")
            }
            guard expectContinue.timeout >= .zero else {
                throw refuse("expectContinue.timeout is \(expectContinue.timeout); it must not be negative")
            }
            // Written into every head (also a proxy's CONNECT): a CR, LF or NUL would end the field there and
            // start another line the caller did not mean (a header injection). The value is not repeated.
            if let userAgent, let what = Self.lineBreakOrNUL(in: userAgent) {
                throw refuse("userAgent contains \(what); a header value cannot")
            }
        }

        /// What in `value` would end a header field's line early, the first one found: "a carriage return", "a line
        /// feed" or "a NUL byte"; nil when there is none.
        package static func lineBreakOrNUL(in value: String) -> String? {
            switch value.utf8.first(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
            case 0x0D?: "a carriage return"
            case 0x0A?: "a line feed"
            case 0?: "a NUL byte"
            default: nil
            }
        }
    }
}

/// The library's version, sent in the default `User-Agent`.
public enum AsyncHTTPVersion {
    /// The version, as `major.minor.patch`.
    public static let string = "0.1.0"
}

/// An IP address family, for ``HTTPClient/Configuration/ipAddressFamily``.
public enum IPAddressFamily: String, Sendable, Hashable, CustomStringConvertible {
    /// IPv4 only (curl's `-4`).
    case ipv4 = "IPv4"
    /// IPv6 only (curl's `-6`).
    case ipv6 = "IPv6"

    /// `IPv4` or `IPv6`.
    public var description: String { rawValue }
}
