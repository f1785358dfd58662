import HTTPTypes

/// Answers a proxy's `407` to `CONNECT`. The transport defines what it needs and the client's authenticator
/// provides it (`Authenticator+ProxyTunnel.swift`), so the transport never reaches up into Auth.
protocol ProxyTunnelAuthenticator: Sendable {
    /// What one tunnel's authentication has done so far (which credentials were tried, Digest and NTLM state).
    associatedtype Exchange: Sendable

    /// A fresh exchange for a tunnel through `proxy` to `authority` (`host:port`).
    func beginTunnel(through proxy: ProxyConfiguration, authority: String) throws(HTTPClientError) -> Exchange
    /// `Proxy-Authorization` for the first `CONNECT`: from an earlier success with this proxy, or the proxy's own
    /// credentials as Basic when `basicRequested` (``ProxyConfiguration/sendsCredentialsPreemptively``); nil for none.
    func authorization(before exchange: inout Exchange, authority: String, basicRequested: Bool) async throws(HTTPClientError) -> String?
    /// `Proxy-Authorization` answering the `Proxy-Authenticate` values of a `407`; nil when no credentials are left.
    func answer(_ challenges: [String], exchange: inout Exchange, authority: String) async throws(HTTPClientError) -> String?
    /// The proxy accepted the tunnel: remember what worked.
    func accepted(_ exchange: Exchange) async
    /// Whether the next `CONNECT` must go out on the same connection (NTLM mid-handshake).
    func needsSameConnection(_ exchange: Exchange) -> Bool
    /// Whether credentials were offered and refused.
    func wasRefused(_ exchange: Exchange) -> Bool
}

/// One `CONNECT` of a tunnel's opening and the proxy's answer to it.
struct TunnelRound: Sendable {
    /// The request head as written, `Proxy-Authorization` included.
    var request: [UInt8]
    var response: HTTP1ResponseHead

    /// This round as an error may carry it: the `Proxy-Authorization` line (which ``ProxyTunnel`` writes in this
    /// spelling) keeps its scheme and loses its credentials. Made only for a refused tunnel.
    var withoutCredentials: ProxyRound {
        let field = "Proxy-Authorization: "
        let lines = String(decoding: request, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix(field) ? field + line.dropFirst(field.count).prefix { $0 != " " } + " <redacted>" : String(line)
        }
        return ProxyRound(request: lines.joined(separator: "\r\n"), status: response.status, version: response.version,
                          headers: response.headers)
    }
}

/// An HTTP `CONNECT` tunnel (RFC 9110 §9.3.6) through a proxy, for `https` URLs (and `http` ones a `connectTo`
/// rule or ``ProxyConfiguration/alwaysTunnel`` sends through one): once the proxy answers 2xx, the socket carries
/// bytes to the origin, and TLS to the origin runs inside it. The proxy's answers come back with the socket.
///
/// A `407` is answered here, through a ``ProxyTunnelAuthenticator`` (Basic, Digest, or NTLM on the same
/// connection), since no middleware sees the tunnel's requests. A refusal is a
/// `HTTPClientError.Code.proxyFailed` error that names the status: there is no response to return.
enum ProxyTunnel {
    static func open<Authenticator: ProxyTunnelAuthenticator>(
        on socket: Socket, tls: TLSStream?, through proxy: ProxyConfiguration, to host: String, port: Int,
        authenticator: Authenticator, userAgent: String?, limits: HTTP1ResponseParser.Limits, deadline: MonotonicTime,
        reconnect: () async throws(HTTPClientError) -> (Socket, TLSStream?)
    ) async throws(HTTPClientError) -> (socket: Socket, tls: TLSStream?, rounds: [TunnelRound]) {
        let authority = (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        var exchange = try authenticator.beginTunnel(through: proxy, authority: authority)
        var authorization = try await authenticator.authorization(before: &exchange, authority: authority,
                                                                  basicRequested: proxy.sendsCredentialsPreemptively)
        var socket = socket
        var tls = tls
        let deadlines = Deadlines(inactivity: nil, total: deadline)
        // Every CONNECT and its answer, for observers (curl's -i prints the answers before the origin's head, -v
        // both).
        var rounds: [TunnelRound] = []
        // Bounded: the authenticator caps its rounds; each round either returns, throws or answers one 407.
        for _ in 0..<16 {
            let connection = HTTP1Connection(id: 0, key: ConnectionKey(scheme: "http", host: proxy.host, port: proxy.port),
                                             socket: socket, tls: tls, limits: limits)
            connection.answersAsProxy = true
            try connection.startRequest(method: .connect)
            var head = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
            if let userAgent { head += "User-Agent: \(userAgent)\r\n" }
            // HTTP/1.0 proxies need to be asked to keep the connection for the next round of a 407.
            head += "Proxy-Connection: Keep-Alive\r\n"
            if let authorization { head += "Proxy-Authorization: \(authorization)\r\n" }
            head += "\r\n"
            let request = Array(head.utf8)
            try await connection.write(request, deadlines: deadlines)
            connection.requestWritten()
            let response: HTTP1ResponseHead
            do {
                response = try await connection.readHead(deadlines: deadlines)
            } catch where error.code == .connectionClosed {
                throw HTTPClientError(.proxyFailed, "proxy \(proxy) closed the connection without answering CONNECT to \(authority)")
            }
            rounds.append(TunnelRound(request: request, response: response))
            let code = response.status.code
            if (200..<300).contains(code) {
                // Over TLS, OpenSSL is asked (a session ticket the proxy sent is not the origin's bytes); the
                // socket's peek would see every record.
                let pending = connection.hasBufferedInput ? .bytes
                    : tls.map { $0.pendingInput() } ?? socket.pendingInput()
                switch pending {
                case .nothing:
                    break
                case .bytes:
                    throw HTTPClientError(.proxyFailed, "proxy \(proxy) sent bytes after accepting CONNECT to \(authority), before TLS began")
                case .closed:
                    throw HTTPClientError(.proxyFailed, "proxy \(proxy) closed the tunnel to \(authority) right after accepting CONNECT")
                }
                await authenticator.accepted(exchange)
                return (socket, tls, rounds)
            }
            guard code == 407 else {
                var refused = HTTPClientError(.proxyFailed, "proxy \(proxy) refused CONNECT to \(authority): \(code) \(response.status.reasonPhrase)")
                refused.proxyStatus = code
                refused.proxyRounds = rounds.map(\.withoutCredentials)
                throw refused
            }
            // Read the 407's body so the connection can carry the next CONNECT; a long one costs a new connection.
            let reusable = response.proxyKeepsAlive ? await connection.drainResponse(limit: 64 * 1024, deadline: deadline) : false
            // Asked before `answer` advances the handshake: the message that must share this connection is the one
            // answering this 407's challenge message. A proxy that closes after its first, bare `407 NTLM` is
            // answered with a negotiate message on a new connection, as curl does.
            // Unless the proxy now offers no NTLM at all: the answer then drops NTLM for another scheme, which any
            // connection can carry.
            let midHandshake = authenticator.needsSameConnection(exchange)
                && AuthChallenge.parse(response.headers[values: .proxyAuthenticate]).contains { $0.scheme == "ntlm" }
            if !reusable, midHandshake {
                throw HTTPClientError(.authenticationFailed,
                    "proxy \(proxy) closed the connection in the middle of the NTLM handshake; NTLM needs a keep-alive connection")
            }
            guard let answer = try await authenticator.answer(
                response.headers[values: .proxyAuthenticate], exchange: &exchange, authority: authority) else {
                var refused = HTTPClientError(.proxyFailed,
                    "proxy \(proxy) requires authentication for CONNECT to \(authority) (407)"
                        + (authenticator.wasRefused(exchange) ? " and refused the credentials given" : " and no credentials were available"))
                refused.proxyStatus = 407
                refused.proxyRounds = rounds.map(\.withoutCredentials)
                throw refused
            }
            authorization = answer
            if !reusable {
                tls?.shutdown()
                socket.close()
                (socket, tls) = try await reconnect()
            }
        }
        throw HTTPClientError(.proxyFailed, "proxy authentication for CONNECT to \(authority) did not settle")
    }
}

/// The client side of SOCKS5 (RFC 1928) with username/password authentication (RFC 1929), run on a socket
/// connected to the proxy; afterwards the socket reaches the target.
enum SOCKS5 {
    /// Asks `proxy` on `socket` to connect to `host:port`: by address when `host` is one, else by name
    /// (`socks5h`) or by the first of `addresses` (a `resolve` entry's) or of the addresses resolved here (`socks5`).
    static func connect(
        _ socket: Socket, through proxy: ProxyConfiguration, to host: String, port: Int, addresses given: [String]? = nil,
        family: IPAddressFamily? = nil, deadline: MonotonicTime
    ) async throws(HTTPClientError) {
        try SOCKSPort.check(port, host: host)
        let stream = SocketByteStream(socket: socket, deadline: deadline)
        let credentials = proxy.credentials
        // RFC 1928 §3: version 5, the methods we offer: 0x00 no authentication, 0x02 username/password.
        try await stream.write(credentials == nil ? [5, 1, 0x00] : [5, 2, 0x00, 0x02])
        let choice = try await stream.read(2)
        guard choice[0] == 5 else { throw failure(proxy, "the proxy does not speak SOCKS5 (version byte \(choice[0]))") }
        switch choice[1] {
        case 0x00:
            break
        case 0x02:
            guard let credentials else { throw failure(proxy, "the proxy asked for a username and password, and none was given") }
            let user = Array(credentials.username.utf8)
            let password = Array(credentials.password.utf8)
            guard (1...255).contains(user.count), password.count <= 255 else {
                throw HTTPClientError(.invalidRequest, "SOCKS5 user names and passwords are 1 to 255 bytes (RFC 1929)")
            }
            // RFC 1929 §2: version 1, ULEN, UNAME, PLEN, PASSWD.
            try await stream.write([1, UInt8(user.count)] + user + [UInt8(password.count)] + password)
            let status = try await stream.read(2)
            guard status[1] == 0 else {
                throw HTTPClientError(.authenticationFailed, "SOCKS5 proxy \(proxy) refused the username and password")
            }
        case 0xFF:
            throw failure(proxy, credentials == nil
                ? "the proxy accepts none of our methods (it may want a username and password)"
                : "the proxy accepts neither no authentication nor username/password")
        default:
            throw failure(proxy, "the proxy chose method \(choice[1]), which we did not offer")
        }

        // RFC 1928 §4: CONNECT, with the address as IPv4, IPv6 or a domain name.
        var request: [UInt8] = [5, 1, 0]
        if let address = NoProxyList.address(host) {
            request += [address.count == 4 ? 1 : 4] + address
        } else if proxy.resolvesTargetLocally, let given, !given.isEmpty {
            let address = try SOCKSPort.first(of: given.compactMap(NumericAddress.bytes), family: family, host: host)
            request += [address.count == 4 ? 1 : 4] + address
        } else if proxy.kind == .socks5h {
            let name = Array(host.utf8)
            guard name.count <= 255 else { throw HTTPClientError(.invalidURL, "host name too long for SOCKS5: \(host)") }
            request += [3, UInt8(name.count)] + name
        } else {
            // socks5:// resolves locally, as curl.
            let addresses = try await Resolver.resolve(host: host, port: port, deadline: deadline)
            let bytes = try SOCKSPort.first(of: addresses.compactMap(\.addressBytes), family: family, host: host)
            request += [bytes.count == 4 ? 1 : 4] + bytes
        }
        request += [UInt8(port >> 8), UInt8(port & 0xFF)]
        try await stream.write(request)
        let reply = try await stream.read(4)
        guard reply[0] == 5 else { throw failure(proxy, "malformed CONNECT reply (version byte \(reply[0]))") }
        guard reply[1] == 0 else {
            throw failure(proxy, "CONNECT to \(host):\(port) failed: \(replyText(reply[1]))")
        }
        // The bound address, which we do not need: IPv4, a domain name or IPv6, then the port.
        switch reply[3] {
        case 1: _ = try await stream.read(4 + 2)
        case 4: _ = try await stream.read(16 + 2)
        case 3:
            let length = try await stream.read(1)[0]
            _ = try await stream.read(Int(length) + 2)
        default:
            throw failure(proxy, "malformed CONNECT reply (address type \(reply[3]))")
        }
    }

    private static func failure(_ proxy: ProxyConfiguration, _ message: String) -> HTTPClientError {
        HTTPClientError(.proxyFailed, "SOCKS5 proxy \(proxy): \(message)")
    }

    /// RFC 1928 §6's reply field.
    static func replyText(_ code: UInt8) -> String {
        switch code {
        case 1: "general SOCKS server failure"
        case 2: "connection not allowed by ruleset"
        case 3: "network unreachable"
        case 4: "host unreachable"
        case 5: "connection refused"
        case 6: "TTL expired"
        case 7: "command not supported"
        case 8: "address type not supported"
        default: "reply code \(code)"
        }
    }
}

/// What SOCKS4 and SOCKS5 check before they write a target.
enum SOCKSPort {
    /// Both carry the port in two bytes: a larger one (a `ConnectToOverride.targetPort` set after its init) is refused.
    static func check(_ port: Int, host: String) throws(HTTPClientError) {
        guard (1...65535).contains(port) else {
            throw HTTPClientError(.invalidRequest, "port \(port) of \(host) is out of range for SOCKS (1 to 65535)")
        }
    }

    /// The first of `candidates` (4 or 16 address bytes) of `family` (``HTTPClient/Configuration/ipAddressFamily``),
    /// as a direct connection filters its addresses.
    static func first(of candidates: [[UInt8]], family: IPAddressFamily?, host: String) throws(HTTPClientError) -> [UInt8] {
        guard let first = candidates.first else { throw HTTPClientError(.dnsFailure, "no address for \(host)") }
        guard let family else { return first }
        guard let address = candidates.first(where: { $0.count == (family == .ipv4 ? 4 : 16) }) else {
            throw HTTPClientError(.dnsFailure, "\(host) has no \(family) address, and only \(family) is allowed (ipAddressFamily)")
        }
        return address
    }
}

/// The client side of SOCKS4 and SOCKS4a, run on a socket connected to the proxy; afterwards the socket reaches the
/// target. SOCKS4 (the 1992 protocol of NEC's `socks4.protocol`) names the target by IPv4 address; SOCKS4a (its
/// `socks4a.protocol` extension) may name it by host name instead, for the proxy to resolve. Neither has
/// authentication beyond a user ID, which the proxy may check against identd.
enum SOCKS4 {
    /// Asks `proxy` on `socket` to connect to `host:port`: by address when `host` is an IPv4 one, else by name
    /// (`socks4a`) or by the first IPv4 address of `addresses` (a `resolve` entry's) or of those resolved here
    /// (`socks4`).
    static func connect(
        _ socket: Socket, through proxy: ProxyConfiguration, to host: String, port: Int, addresses given: [String]? = nil,
        deadline: MonotonicTime
    ) async throws(HTTPClientError) {
        try SOCKSPort.check(port, host: host)
        // The user ID is the user name alone: SOCKS4 has no field for a password, and sends the ID in clear.
        let user = Array((proxy.credentials?.username ?? "").utf8)
        guard user.count <= 255, !user.contains(0) else {
            throw HTTPClientError(.invalidRequest, "a SOCKS4 user ID is at most 255 bytes, without NUL")
        }
        // VN 4, CD 1 (CONNECT), DSTPORT, DSTIP, USERID, NUL [, the host name, NUL for SOCKS4a].
        var request: [UInt8] = [4, 1, UInt8(port >> 8), UInt8(port & 0xFF)]
        let literal = NoProxyList.address(host)
        if let literal, literal.count == 4 {
            request += literal + user + [0]
        } else if proxy.kind == .socks4a {
            let name = Array(host.utf8)
            guard (1...255).contains(name.count), !name.contains(0) else {
                throw HTTPClientError(.invalidURL, "host name too long for SOCKS4a (at most 255 bytes): \(host)")
            }
            // DSTIP 0.0.0.x with x nonzero says that the name follows the user ID.
            request += [0, 0, 0, 1] + user + [0] + name + [0]
        } else {
            guard literal == nil else {
                throw failure(proxy, "cannot reach \(host): SOCKS4 reaches IPv4 addresses only (use socks5:// or socks5h://)")
            }
            let candidates: [[UInt8]]
            if let given {
                candidates = given.compactMap(NumericAddress.bytes)
            } else {
                candidates = try await Resolver.resolve(host: host, port: port, deadline: deadline).compactMap(\.addressBytes)
            }
            guard !candidates.isEmpty else { throw HTTPClientError(.dnsFailure, "no address for \(host)") }
            guard let address = candidates.first(where: { $0.count == 4 }) else {
                throw failure(proxy, "cannot reach \(host): it has no IPv4 address, and SOCKS4 reaches IPv4 addresses only"
                                  + " (use socks4a://, socks5:// or socks5h://)")
            }
            request += address + user + [0]
        }
        let stream = SocketByteStream(socket: socket, deadline: deadline)
        try await stream.write(request)
        // VN 0, CD, then DSTPORT and DSTIP, which a CONNECT reply does not use.
        let reply = try await stream.read(8)
        guard reply[0] == 0 else {
            throw failure(proxy, "the proxy does not speak SOCKS4 (reply version byte \(reply[0]))")
        }
        guard reply[1] == 90 else {
            throw failure(proxy, "CONNECT to \(host):\(port) failed: \(replyText(reply[1]))")
        }
    }

    private static func failure(_ proxy: ProxyConfiguration, _ message: String) -> HTTPClientError {
        HTTPClientError(.proxyFailed, "\(proxy.kind == .socks4a ? "SOCKS4a" : "SOCKS4") proxy \(proxy): \(message)")
    }

    /// The protocol's CD field in a reply.
    static func replyText(_ code: UInt8) -> String {
        switch code {
        case 91: "request rejected or failed (code 91)"
        case 92: "request rejected: the proxy could not reach the client's identd (code 92)"
        case 93: "request rejected: the user ID differs from the one identd reports (code 93)"
        default: "reply code \(code)"
        }
    }
}

extension HTTP1ResponseHead {
    private static let proxyConnection = HTTPField.Name("Proxy-Connection")!

    /// Whether a proxy's answer leaves the connection open: as ``keepAlive``, with `Proxy-Connection` counted as
    /// `Connection` is (curl keeps a proxy's connection unless either says `close`). An HTTP/1.0 proxy says
    /// `Proxy-Connection: keep-alive` to the `Proxy-Connection: Keep-Alive` of a `CONNECT`; an HTTP/1.1 one may say
    /// `Proxy-Connection: close` alone. An answer read until the close is never kept.
    var proxyKeepsAlive: Bool {
        let values = headers[values: Self.proxyConnection]
        if values.isEmpty { return keepAlive }
        if Self.hasToken("close", in: values) { return false }
        if keepAlive { return true }
        return version == .http1_0 && announcedBodyLength != nil && Self.hasToken("keep-alive", in: values)
            && !Self.hasToken("close", in: headers[values: .connection])
    }

    private static func hasToken(_ token: String, in values: [String]) -> Bool {
        values.contains { value in
            value.split(separator: ",").contains { $0.lowercased().filter { $0 != " " && $0 != "\t" } == token }
        }
    }
}
