/// The proxy choice made for one URL, from a ``ProxySetting`` and the environment it was read in.
struct ProxyResolver: Sendable {
    private let http: ProxyConfiguration?
    private let https: ProxyConfiguration?
    private let bypass: NoProxyList
    private let bypassesLoopback: Bool
    /// Problems with the environment's proxy variables, for http and https URLs: each is reported by the requests
    /// that would use that variable's proxy (``problem(for:)``), not by a request bypassing it or of the other
    /// scheme.
    private let httpProblem: HTTPClientError?
    private let httpsProblem: HTTPClientError?
    /// The first of them, if any (for tests and diagnostics).
    var problem: HTTPClientError? { httpProblem ?? httpsProblem }
    /// No proxy for any URL, and no problem to throw. Stored: every request of a client asks, twice, and working
    /// it out compares three optionals of large values (about 0.4 µs a request in `seq`, perf).
    let isDirect: Bool

    static let direct = ProxyResolver(http: nil, https: nil, bypass: NoProxyList(""), bypassesLoopback: false)

    private init(http: ProxyConfiguration?, https: ProxyConfiguration?, bypass: NoProxyList, bypassesLoopback: Bool,
                 httpProblem: HTTPClientError? = nil, httpsProblem: HTTPClientError? = nil) {
        self.http = http
        self.https = https
        self.bypass = bypass
        self.bypassesLoopback = bypassesLoopback
        self.httpProblem = httpProblem
        self.httpsProblem = httpsProblem
        isDirect = http == nil && https == nil && httpProblem == nil && httpsProblem == nil
    }

    /// `environmentProxy` is applied to each proxy read from the environment
    /// (``HTTPClient/Configuration/environmentProxy``).
    init(_ setting: ProxySetting, environmentProxy: EnvironmentProxyOptions = EnvironmentProxyOptions(),
         environment: [String: String] = ProcessEnvironment.current()) {
        switch setting {
        case .none:
            self = .direct
        case .proxy(let proxy, let bypass):
            self.init(http: proxy, https: proxy, bypass: NoProxyList(bypass), bypassesLoopback: false)
        case .environment:
            // curl reads only the lower-case `http_proxy` (httpoxy: a CGI program gets the request's `Proxy:` header
            // as HTTP_PROXY). Go's rule is taken here: the upper-case form too, unless running as a CGI program.
            func value(_ name: String, upperCase: Bool = true) -> String? {
                let found = environment[name] ?? (upperCase ? environment[name.uppercased()] : nil)
                return found.flatMap { $0.isEmpty ? nil : $0 }
            }
            let isCGI = environment["REQUEST_METHOD"] != nil
            /// A variable's proxy, or the problem with its value (nil, nil when it is not set).
            func parse(_ text: String?, _ name: String) -> (ProxyConfiguration?, HTTPClientError?) {
                guard let text else { return (nil, nil) }
                do throws(HTTPClientError) {
                    return (environmentProxy.applied(to: try ProxyConfiguration(url: text)), nil)
                } catch {
                    return (nil, HTTPClientError(.invalidURL, "the \(name) environment variable is not a valid proxy URL: \(error.message)"))
                }
            }
            let all = parse(value("all_proxy"), "all_proxy")
            let httpText = value("http_proxy", upperCase: !isCGI)
            let httpsText = value("https_proxy")
            // A scheme's own variable, when set, decides for it (its proxy or its problem); else all_proxy does.
            let http = httpText == nil ? all : parse(httpText, "http_proxy")
            let https = httpsText == nil ? all : parse(httpsText, "https_proxy")
            self.init(http: http.0, https: https.0, bypass: NoProxyList(value("no_proxy") ?? ""), bypassesLoopback: true,
                      httpProblem: http.1, httpsProblem: https.1)
        }
    }

    /// The proxy for `url`, or nil to connect directly.
    func proxy(for url: HTTPURL) -> ProxyConfiguration? {
        guard let proxy = url.isSecure ? https : http else { return nil }
        return bypasses(url) ? nil : proxy
    }

    /// The problem with the proxy variable `url` would go through, unless `url` bypasses proxies (loopback,
    /// `no_proxy`): a bad `https_proxy` fails https requests, not plain-http ones or those to bypassed hosts.
    func problem(for url: HTTPURL) -> HTTPClientError? {
        guard let problem = url.isSecure ? httpsProblem : httpProblem else { return nil }
        return bypasses(url) ? nil : problem
    }

    private func bypasses(_ url: HTTPURL) -> Bool {
        let host = hostWithoutTrailingDot(url.host)
        if bypassesLoopback, host == "localhost" || host.hasSuffix(".localhost") || NoProxyList.isLoopback(host) {
            return true
        }
        return bypass.matches(host: host, port: url.port)
    }
}

/// `host` without one trailing dot: `intranet.corp.` is the fully qualified `intranet.corp`. Used where a host is
/// matched against names (no_proxy, the loopback bypass, cookie domains), so that the dot takes it past none of
/// them, as curl strips it. A host that is only "." stays.
func hostWithoutTrailingDot(_ host: String) -> String {
    host.utf8.count > 1 && host.utf8.last == UInt8(ascii: ".") ? String(host.dropLast()) : host
}

/// A `no_proxy` list: comma- or space-separated entries, each `*` (everything), a domain (`example.com`
/// matches it and its subdomains; a leading dot is ignored, as curl 7.86 and later), an IP address, or a CIDR
/// block (`10.0.0.0/8`, `fd00::/8`), optionally with `:port` (as Go).
struct NoProxyList: Sendable, Hashable {
    private enum Entry: Sendable, Hashable {
        case everything
        case domain(String, port: Int?)
        case network([UInt8], prefixLength: Int, port: Int?)
    }

    private let entries: [Entry]

    init(_ text: String) {
        var entries: [Entry] = []
        for raw in text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) {
            var item = String(raw).lowercased()
            if item == "*" { entries.append(.everything); continue }
            var port: Int?
            // host:port, [v6]:port; a bare IPv6 address has several colons and no port.
            if item.hasPrefix("["), let close = item.firstIndex(of: "]") {
                let rest = item[item.index(after: close)...]
                if rest.hasPrefix(":") { port = Int(rest.dropFirst()) }
                item = String(item[item.index(after: item.startIndex)..<close])
            } else if item.filter({ $0 == ":" }).count == 1, let colon = item.firstIndex(of: ":") {
                port = Int(item[item.index(after: colon)...])
                item = String(item[..<colon])
            }
            var prefixLength: Int?
            var addressText = item
            if let slash = item.firstIndex(of: "/") {
                prefixLength = Int(item[item.index(after: slash)...])
                addressText = String(item[..<slash])
            }
            if let address = Self.address(addressText) {
                let bits = address.count * 8
                entries.append(.network(address, prefixLength: min(prefixLength ?? bits, bits), port: port))
            } else {
                while item.hasPrefix(".") { item.removeFirst() }
                if item.hasPrefix("*.") { item.removeFirst(2) }
                item = hostWithoutTrailingDot(item)
                if !item.isEmpty { entries.append(.domain(item, port: port)) }
            }
        }
        self.entries = entries
    }

    func matches(host: String, port: Int) -> Bool {
        let host = hostWithoutTrailingDot(host.lowercased())
        let address = Self.address(host)
        for entry in entries {
            switch entry {
            case .everything:
                return true
            case .domain(let domain, let entryPort):
                if let entryPort, entryPort != port { continue }
                if host == domain || host.hasSuffix("." + domain) { return true }
            case .network(let network, let prefixLength, let entryPort):
                if let entryPort, entryPort != port { continue }
                guard let address, address.count == network.count else { continue }
                if Self.prefix(address, equals: network, bits: prefixLength) { return true }
            }
        }
        return false
    }

    static func isLoopback(_ host: String) -> Bool {
        guard let address = address(host) else { return false }
        if address.count == 4 { return address[0] == 127 }
        return address == [UInt8](repeating: 0, count: 15) + [1]
    }

    /// The bytes of a numeric IPv4 or IPv6 address.
    static func address(_ text: String) -> [UInt8]? { NumericAddress.bytes(text) }

    private static func prefix(_ a: [UInt8], equals b: [UInt8], bits: Int) -> Bool {
        var remaining = bits
        for index in a.indices where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if a[index] & mask != b[index] & mask { return false }
            remaining -= 8
        }
        return true
    }
}

/// Decides which proxy a request goes through, once per hop: the request's own ``HTTPClientRequest/proxy``,
/// else the client's setting. The environment is read once, when the client is made, also for requests that
/// ask for `.environment` themselves.
///
/// The first step that needs the decision (the auth middleware, which must know whether a plain `http`
/// request goes through an HTTP proxy) makes it and, when a proxy applies, records it on the request
/// (``ProxyRouteOption``); the transport then takes it from there instead of deciding again. A direct route
/// is not recorded: it costs one comparison to find again, and recording it would copy every request's box.
struct ProxyRouter: Sendable {
    /// The client's own setting.
    let client: ProxyResolver
    /// For requests that ask for `.environment` while the client has another setting.
    private let environment: ProxyResolver
    /// The client's `resolve`, `connectTo` and Unix socket settings, which decide with the proxy whether a
    /// plain-http request goes to an HTTP proxy in absolute form or through a tunnel.
    let targets: ConnectionTargets

    init(_ setting: ProxySetting, environmentProxy: EnvironmentProxyOptions = EnvironmentProxyOptions(),
         targets: ConnectionTargets = ConnectionTargets(), environment: [String: String] = ProcessEnvironment.current()) {
        client = ProxyResolver(setting, environmentProxy: environmentProxy, environment: environment)
        self.environment = setting == .environment ? client
            : ProxyResolver(.environment, environmentProxy: environmentProxy, environment: environment)
        self.targets = targets
    }

    /// The client's connection targets with `request`'s own laid over them.
    func targets(for request: HTTPClientRequest) -> ConnectionTargets {
        request.option(ConnectionTargetOptions.self) { $0.isUnset } ? targets : targets.applying(request[ConnectionTargetOptions.self])
    }

    /// Whether `request` (at `url`) goes to `proxy` as an absolute-form request that the proxy forwards, which it
    /// may answer with a `407`: a plain-http URL through an HTTP proxy, unless the proxy always tunnels or a
    /// `connectTo` rule moves the URL's host or port (then a `CONNECT` tunnel carries it, as curl).
    /// A Unix socket (the client's, the request's, or an `http+unix` URL's) is dialled directly, as the transport
    /// does: no proxy then.
    func sendsAbsoluteForm(_ request: HTTPClientRequest, url: HTTPURL, to proxy: ProxyConfiguration?) -> Bool {
        guard let proxy, proxy.isHTTP, !url.isSecure, !proxy.alwaysTunnel, url.unixSocketPath == nil else { return false }
        let targets = targets(for: request)
        return targets.unixSocket == nil && targets.connectTarget(host: url.host, port: url.port) == nil
    }

    private func resolver(for setting: ProxySetting?) -> ProxyResolver {
        switch setting {
        case nil: client
        case .environment?: environment
        case .none?: .direct
        case let explicit?: ProxyResolver(explicit)
        }
    }

    /// The proxy for `request` (at `url`, its parsed URL), or nil to connect directly: the recorded decision
    /// when it was made for this URL and setting, else decided now.
    func route(for request: HTTPClientRequest, url: HTTPURL) throws(HTTPClientError) -> ProxyConfiguration? {
        // Every request of a client without proxies, twice each (the auth step and the transport): no copy of a
        // resolver, no recorded decision to look up (one is recorded only for a proxy).
        if client.isDirect, !request.hasProxySetting { return nil }
        if let decided = request[ProxyRouteOption.self], decided.url == request.url, decided.setting == request.proxy {
            return decided.proxy
        }
        let resolver = resolver(for: request.proxy)
        if let problem = resolver.problem(for: url) { throw problem }
        return resolver.proxy(for: url)
    }

    /// ``route(for:url:)``, recording a proxied decision on the request for the steps below.
    func route(recordingOn request: inout HTTPClientRequest, url: HTTPURL) throws(HTTPClientError) -> ProxyConfiguration? {
        let proxy = try route(for: request, url: url)
        if let proxy, request[ProxyRouteOption.self]?.url != request.url {
            request[ProxyRouteOption.self] = ProxyRoute(url: request.url, setting: request.proxy, proxy: proxy)
        }
        return proxy
    }
}

/// A proxy decision made for a request's URL and proxy setting.
struct ProxyRoute: Sendable {
    var url: String
    var setting: ProxySetting?
    var proxy: ProxyConfiguration
}

/// The transport's own request option: the proxy decision made up the chain (see ``ProxyRouter``).
enum ProxyRouteOption: HTTPRequestOption {
    static let defaultValue: ProxyRoute? = nil
}
