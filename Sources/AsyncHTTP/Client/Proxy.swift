
/// One proxy server: an HTTP proxy, or a SOCKS5 or SOCKS4 proxy, with optional credentials.
///
/// Through an HTTP proxy, `http` URLs are requested in absolute form (`GET http://host/path HTTP/1.1`)
/// and `https` URLs through a `CONNECT` tunnel with TLS to the origin inside it. `http` URLs go through a
/// tunnel too when ``alwaysTunnel`` is set (curl's `--proxytunnel`), or when a
/// ``HTTPClient/Configuration/connectTo`` rule moves their host or port: the proxy is then asked to
/// `CONNECT` to the rule's target, as curl does. Through SOCKS5 (RFC 1928) every URL gets a tunnel;
/// credentials use RFC 1929's username/password method. SOCKS4 and SOCKS4a tunnel too, to IPv4 addresses or
/// (SOCKS4a) names, and carry only a user ID: the credentials' user name, never the password.
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// configuration.proxy = .proxy(try ProxyConfiguration(url: "http://user:secret@proxy.internal:3128"))
/// ```
public struct ProxyConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// The proxy protocol.
    public enum Kind: String, Sendable, Hashable {
        /// An HTTP proxy (`http://` proxy URLs): absolute-form requests and CONNECT tunnels.
        case http
        /// An HTTP proxy reached over TLS (`https://` proxy URLs, curl's HTTPS proxy): the same requests and
        /// tunnels as ``http``, inside a TLS connection to the proxy that ``ProxyConfiguration/tls`` configures.
        /// An `https` URL's own TLS then runs inside that one, end to end with the origin.
        case https
        /// A SOCKS5 proxy. The client resolves the host name itself (`socks5://`, as curl).
        case socks5
        /// A SOCKS5 proxy that is given the host name to resolve (`socks5h://`, as curl).
        case socks5h
        /// A SOCKS4 proxy (`socks4://`, curl's `--socks4`). The client resolves the host name itself, and the
        /// protocol reaches IPv4 addresses only: a host with no IPv4 address cannot be reached through it.
        case socks4
        /// A SOCKS4a proxy (`socks4a://`, curl's `--socks4a`): SOCKS4 with the host name given to the proxy to
        /// resolve, as ``socks5h`` does; an IPv4 address is sent as the address.
        case socks4a
    }

    /// The proxy protocol.
    public var kind: Kind
    /// The proxy's host name or address.
    public var host: String
    /// The proxy's port.
    public var port: Int
    /// Credentials for the proxy (`Proxy-Authorization`, SOCKS5 username/password, or SOCKS4's user ID, which is
    /// the user name alone: SOCKS4 has no password, so none is sent). When nil, a 407
    /// is answered from the session and persistent stores or
    /// ``AuthenticationConfiguration/proxyAuthenticationNeeded``.
    public var credentials: HTTPCredentials?
    /// Through an HTTP proxy, send `http` URLs through a `CONNECT` tunnel too, in origin form, instead of as
    /// absolute-form requests the proxy forwards (curl's `--proxytunnel`, `CURLOPT_HTTPPROXYTUNNEL`). For a
    /// proxy that only tunnels, or to keep it from reading or rewriting plain-http requests. Ignored for SOCKS,
    /// which always tunnels. Off by default.
    public var alwaysTunnel = false
    /// Send ``credentials`` as Basic with the first request or `CONNECT` on each connection, before any `407`
    /// (curl's `-U`, whose default is `--proxy-basic`). Saves a round trip per connection, but sends the password
    /// in a form anyone who can read the connection to the proxy decodes, also to a proxy that would have asked
    /// for Digest or NTLM. Off by default: credentials then go only in answer to a challenge, or after an earlier
    /// success with this proxy.
    public var sendsCredentialsPreemptively = false
    /// The schemes ``credentials`` may answer a `407` with (curl's `--proxy-digest`, `--proxy-ntlm`); nil: any the
    /// client supports, the strongest the proxy offers (`--proxy-anyauth`). A challenge in none of them is not
    /// answered.
    public var authenticationSchemes: Set<HTTPAuthenticationScheme>?
    /// The TLS connection to an ``Kind/https`` proxy: its trust roots, certificate check and client certificate
    /// (curl's `--proxy-cacert`, `--proxy-insecure`, `--proxy-cert`). Separate from the client's
    /// ``HTTPClient/Configuration/tls``, which is for the origins, as curl keeps them: the proxy's certificate is
    /// checked against the system's roots and the proxy's name by default. Ignored for other kinds.
    public var tls = TLSConfiguration()

    /// Creates a proxy configuration from its parts.
    ///
    /// ```swift
    /// let proxy = ProxyConfiguration(kind: .http, host: "proxy.internal", port: 3128)
    /// ```
    public init(kind: Kind, host: String, port: Int, credentials: HTTPCredentials? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.credentials = credentials
    }

    /// Parses a proxy URL as curl and the `*_proxy` variables write it: `[scheme://][user:password@]host[:port]`.
    /// The scheme is `http` (the default), `https`, `socks5`, `socks5h`, `socks4` or `socks4a`; the port defaults to 443 for `https`
    /// and to 1080 for the others (curl's `CURL_DEFAULT_HTTPS_PROXY_PORT` and `CURL_DEFAULT_PROXY_PORT`).
    public init(url: String) throws(HTTPClientError) {
        var text = Substring(url).trimmingWhitespace()
        var kind = Kind.http
        if let range = text.firstRange(of: "://") {
            switch text[..<range.lowerBound].lowercased() {
            case "http": kind = .http
            case "https": kind = .https
            case "socks5": kind = .socks5
            case "socks5h": kind = .socks5h
            case "socks4": kind = .socks4
            case "socks4a": kind = .socks4a
            case let other:
                throw HTTPClientError(.invalidURL,
                    "unsupported proxy scheme '\(other)' in proxy URL (use http, https, socks5, socks5h, socks4 or socks4a)")
            }
            text = text[range.upperBound...]
        }
        let parsed: HTTPURL
        do {
            parsed = try HTTPURL("http://" + text)
        } catch where text.contains("@") {
            // The parser's message quotes what it could not read, and in a proxy URL with userinfo that can be the
            // password: one with a '#', '/' or '?' in it ends the authority early, and the rest is read as a port.
            throw HTTPClientError(.invalidURL,
                "the proxy URL is not valid (not shown: it holds credentials); percent-encode any '@', ':', '/', '?'"
                    + " or '#' in its user name or password")
        }
        guard parsed.path == "/" || parsed.path.isEmpty, parsed.query == nil, parsed.fragment == nil else {
            throw HTTPClientError(.invalidURL,
                "a proxy URL names only a host and port, not a path, query or fragment (percent-encode any '/', '?'"
                    + " or '#' in its user name or password)")
        }
        // A port is given if a ':' follows the host: after the userinfo, and after an IPv6 literal's ']'.
        let authority = text.lastIndex(of: "@").map { text[text.index(after: $0)...] } ?? text[...]
        let afterHost = authority.lastIndex(of: "]").map { authority[authority.index(after: $0)...] } ?? authority
        let hasPort = afterHost.contains(":")
        self.kind = kind
        self.host = parsed.host
        self.port = hasPort ? parsed.port : (kind == .https ? 443 : 1080)
        if let user = parsed.user {
            credentials = HTTPCredentials(username: user, password: parsed.password ?? "")
        }
    }

    /// `kind://host:port`, without the credentials.
    public var description: String {
        "\(kind.rawValue)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    var isSOCKS: Bool { !isHTTP }
    /// Whether the client resolves the target's name and gives the proxy an address (`socks5`, `socks4`), rather
    /// than giving it the name (`socks5h`, `socks4a`, and HTTP proxies).
    var resolvesTargetLocally: Bool { kind == .socks5 || kind == .socks4 }
    /// Whether this is an HTTP proxy, over TLS or not: it reads absolute-form requests and answers `CONNECT`.
    var isHTTP: Bool { kind == .http || kind == .https }
}

/// What the `*_proxy` variables cannot say about the proxies ``ProxySetting/environment`` finds in them: each
/// such proxy gets these settings of ``ProxyConfiguration`` (curl applies `--proxy-cacert`, `--proxy-insecure`,
/// `--proxy-cert`, `-p`, `--proxy-basic` and its other `--proxy-…` flags to the environment's proxy too).
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// configuration.environmentProxy.tls.trustRoots = .file("/etc/corp/proxy-ca.pem")
/// configuration.environmentProxy.alwaysTunnel = true
/// ```
public struct EnvironmentProxyOptions: Sendable, Hashable {
    /// The TLS connection to an `https://` proxy (``ProxyConfiguration/tls``): by default the system's roots and the
    /// proxy's name, as for any origin. Not used for other kinds of proxy.
    public var tls: TLSConfiguration
    /// Tunnel plain `http` through an HTTP proxy too (``ProxyConfiguration/alwaysTunnel``, curl's `-p`).
    public var alwaysTunnel: Bool
    /// Send the credentials in the variable's URL (`http://user:password@proxy:3128`) as Basic before any `407`
    /// (``ProxyConfiguration/sendsCredentialsPreemptively``). Off by default, as for a proxy given in code.
    public var sendsCredentialsPreemptively: Bool
    /// The schemes those credentials may answer a `407` with (``ProxyConfiguration/authenticationSchemes``); nil:
    /// any the client supports.
    public var authenticationSchemes: Set<HTTPAuthenticationScheme>?

    /// Options with the given values; by default those of a ``ProxyConfiguration`` made from a URL.
    public init(tls: TLSConfiguration = TLSConfiguration(), alwaysTunnel: Bool = false,
                sendsCredentialsPreemptively: Bool = false, authenticationSchemes: Set<HTTPAuthenticationScheme>? = nil) {
        self.tls = tls
        self.alwaysTunnel = alwaysTunnel
        self.sendsCredentialsPreemptively = sendsCredentialsPreemptively
        self.authenticationSchemes = authenticationSchemes
    }

    /// `proxy`, read from a variable, with these options.
    func applied(to proxy: ProxyConfiguration) -> ProxyConfiguration {
        var proxy = proxy
        if proxy.kind == .https { proxy.tls = tls }
        proxy.alwaysTunnel = alwaysTunnel
        proxy.sendsCredentialsPreemptively = sendsCredentialsPreemptively
        proxy.authenticationSchemes = authenticationSchemes
        return proxy
    }
}

/// Which proxy, if any, requests go through.
public enum ProxySetting: Sendable, Hashable {
    /// Connect directly.
    case none
    /// Read `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy` (or their upper-case forms) as curl
    /// does, once, when the client is created. Loopback hosts are always reached directly, as Go does.
    /// ``HTTPClient/Configuration/environmentProxy`` sets what the variables cannot (TLS to an `https://` proxy,
    /// tunnelling, when credentials are sent).
    case environment
    /// Every request through `proxy`, except hosts that match `bypass` (written like `no_proxy`).
    case proxy(ProxyConfiguration, bypass: String = "")
}
