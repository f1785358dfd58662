import Foundation

/// An error from test support code (peer missing, tool failed), with a message saying what to do.
struct PeerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A peer without authentication (started by `./scripts/test.sh`).
struct OpenPeer: Sendable {
    /// `http://127.0.0.1:<port>` or `socks5://127.0.0.1:<port>`, without a trailing slash.
    let url: String
    let port: Int
}

/// A peer that requires a user name and password (started by `./scripts/test.sh`).
struct PasswordPeer: Sendable {
    /// `http://127.0.0.1:<port>` or `socks5://127.0.0.1:<port>`, without a trailing slash.
    let url: String
    let port: Int
    let user: String
    let password: String
    /// The realm the peer names in its challenge (`Proxy-Authenticate: <scheme> realm="…"`); nil for SOCKS5.
    let realm: String?
    /// A file the peer appends one line to per request, for tests to check what it was asked; nil if none.
    let logFile: String?
}

/// An NTLM peer (started by `./scripts/test.sh`). It accepts `domain\user` with `password` only: the
/// same user name without the domain is refused.
struct NTLMPeer: Sendable {
    /// `http://127.0.0.1:<port>`, without a trailing slash.
    let url: String
    let port: Int
    let user: String
    let password: String
    let domain: String

    /// `DOMAIN\user`, as the origin reports the authenticated user (`"user"` in its JSON answer).
    var qualifiedUser: String { "\(domain)\\\(user)" }
}

/// External peers started by `./scripts/test.sh` and announced through environment variables.
///
/// A missing peer is an error, never a skip: a test that silently does not run proves nothing.
enum Peers {
    /// nginx serving `.peers/www` (`small.txt` 1 KiB, `big.bin` 8 MiB, `index.html`) over HTTP and,
    /// with a self-signed certificate for localhost/127.0.0.1 (trust `caFile`), over HTTPS.
    /// `keepalive_timeout 2s`, `keepalive_requests 1000`, gzip on for text types.
    static func nginx() throws -> (httpPort: Int, httpsPort: Int, caFile: String) {
        let notRunning = "nginx peer is not running: run ./scripts/test.sh"
        guard let http = Int(try variable("ASYNCHTTP_NGINX_HTTP_PORT", notRunning)),
            let https = Int(try variable("ASYNCHTTP_NGINX_HTTPS_PORT", notRunning))
        else {
            throw PeerError("\(notRunning) (ASYNCHTTP_NGINX_*_PORT is not a number)")
        }
        return (http, https, try variable("ASYNCHTTP_NGINX_CA", notRunning))
    }

    /// httpbin (the PyPI package, run by gunicorn) on 127.0.0.1, as a base URL without a trailing slash:
    /// `http://127.0.0.1:<port>`. Its routes: https://httpbin.org/ (`/redirect/n`, `/cookies/set`, `/gzip`, …).
    static func httpbin() throws -> String {
        try variable("ASYNCHTTP_HTTPBIN_URL", "httpbin peer is not running: run ./scripts/test.sh")
    }

    /// The `.peers` directory `./scripts/test.sh` prepared; nginx's document root is `<dir>/www`,
    /// so tests can compare downloads with the files on disk.
    static func directory() throws -> String {
        try variable("ASYNCHTTP_PEERS_DIR", "peers directory is unknown: run ./scripts/test.sh")
    }

    /// tinyproxy 1.11 as an HTTP proxy without authentication: forwards absolute-form `http://` requests
    /// (adding `Via`) and tunnels CONNECT to any port. Only the hosts 127.0.0.1, localhost and ::1 are
    /// let through (403 otherwise). Answers as HTTP/1.0 and closes the connection after an error.
    static func tinyproxy() throws -> OpenPeer {
        try openPeer("ASYNCHTTP_TINYPROXY_URL", name: "tinyproxy")
    }

    /// stunnel 5 in front of that tinyproxy: an HTTPS proxy (`https://127.0.0.1:PORT`), whose certificate is
    /// nginx's (``nginx()``'s `caFile` verifies it; its names are localhost, 127.0.0.1 and ::1).
    static func httpsProxy() throws -> OpenPeer {
        try openPeer("ASYNCHTTP_HTTPS_PROXY_URL", name: "stunnel (HTTPS proxy)")
    }

    /// The same stunnel's second service, in front of the same tinyproxy, which requires a client certificate: the
    /// one at `certificate` (PEM, its key at `key`) and no other (stunnel's `verify = 2`).
    static func httpsProxyRequiringClientCertificate() throws -> (proxy: OpenPeer, certificate: String, key: String) {
        let notRunning = "stunnel (HTTPS proxy with client certificates) peer is not running: run ./scripts/test.sh"
        return (try openPeer("ASYNCHTTP_HTTPS_PROXY_CLIENT_CERT_URL", name: "stunnel (HTTPS proxy with client certificates)"),
                try variable("ASYNCHTTP_HTTPS_PROXY_CLIENT_CERT", notRunning), try variable("ASYNCHTTP_HTTPS_PROXY_CLIENT_KEY", notRunning))
    }

    /// tinyproxy as above with Basic proxy authentication (`proxyuser`/`proxypass`, realm `Tinyproxy`).
    /// Without `Proxy-Authorization` it answers 407 with `Proxy-Authenticate: Basic realm="Tinyproxy"` and
    /// `Connection: close`. With wrong credentials tinyproxy 1.11 answers 401 with `WWW-Authenticate`
    /// instead of 407 (its quirk, not the client's fault).
    static func tinyproxyAuth() throws -> PasswordPeer {
        let notRunning = "tinyproxy (Basic authentication) peer is not running: run ./scripts/test.sh"
        let url = try variable("ASYNCHTTP_TINYPROXY_AUTH_URL", notRunning)
        return PasswordPeer(
            url: url, port: try port(of: url, "ASYNCHTTP_TINYPROXY_AUTH_URL"),
            user: try variable("ASYNCHTTP_TINYPROXY_USER", notRunning),
            password: try variable("ASYNCHTTP_TINYPROXY_PASSWORD", notRunning),
            realm: "Tinyproxy", logFile: nil
        )
    }

    /// squid 5 as an HTTP proxy with Digest proxy authentication only (`digestuser`/`digestpass`, realm
    /// `asynchttp-squid`, qop `auth`; Basic credentials get 407). Forwards absolute-form `http://` requests
    /// and tunnels CONNECT to any port, with keep-alive; caches nothing. Destinations other than loopback
    /// get 403 before authentication.
    static func squidDigest() throws -> PasswordPeer {
        let notRunning = "squid (Digest authentication) peer is not running: run ./scripts/test.sh"
        let url = try variable("ASYNCHTTP_SQUID_URL", notRunning)
        return PasswordPeer(
            url: url, port: try port(of: url, "ASYNCHTTP_SQUID_URL"),
            user: try variable("ASYNCHTTP_SQUID_USER", notRunning),
            password: try variable("ASYNCHTTP_SQUID_PASSWORD", notRunning),
            realm: try variable("ASYNCHTTP_SQUID_REALM", notRunning), logFile: nil
        )
    }

    /// dante 1.4 as a SOCKS5 proxy without authentication (method 0x00): CONNECT to 127.0.0.0/8, by address
    /// or by name (it resolves names itself).
    static func socks5() throws -> OpenPeer {
        try openPeer("ASYNCHTTP_SOCKS5_URL", name: "SOCKS5 (dante)")
    }

    /// dante as a SOCKS4 proxy (`socks4://`, the same process and port as ``socks5()``): CONNECT to 127.0.0.0/8
    /// by IPv4 address; it refuses others with reply 91. dante has no SOCKS4a.
    static func socks4() throws -> OpenPeer {
        try openPeer("ASYNCHTTP_SOCKS4_URL", name: "SOCKS4 (dante)")
    }

    /// OpenSSH's dynamic forwarding (`ssh -D`) as a SOCKS4a proxy (`socks4a://`), through an sshd on loopback that
    /// opens only `127.0.0.1:*` and `localhost:*`; any other target closes the connection without a reply.
    /// `log` is sshd's log, with one line per target it is asked for:
    /// `server_request_direct_tcpip: originator 127.0.0.1 port 40730, target localhost port 8080`.
    static func socks4a() throws -> (peer: OpenPeer, log: String) {
        (try openPeer("ASYNCHTTP_SOCKS4A_URL", name: "SOCKS4a (ssh -D)"),
         try variable("ASYNCHTTP_SOCKS4A_LOG", "SOCKS4a (ssh -D) peer is not running: run ./scripts/test.sh"))
    }

    /// A SOCKS5 proxy that requires RFC 1929 username/password (`socksuser`/`sockspass`; a client offering
    /// only method 0x00 gets 0xFF), `scripts/peers/socks5_server.py`. CONNECT with IPv4, IPv6 and domain
    /// addresses, loopback destinations only (reply 0x02 otherwise). `logFile` gets one line per request:
    /// `CONNECT client=127.0.0.1:50312 user=socksuser atyp=domain target=localhost:8080 reply=0x00 bound=…`
    /// (other lines start with LISTEN, AUTH-FAILED, CLOSED, ERROR).
    static func socks5Auth() throws -> PasswordPeer {
        let notRunning = "SOCKS5 (username/password) peer is not running: run ./scripts/test.sh"
        let url = try variable("ASYNCHTTP_SOCKS5_AUTH_URL", notRunning)
        return PasswordPeer(
            url: url, port: try port(of: url, "ASYNCHTTP_SOCKS5_AUTH_URL"),
            user: try variable("ASYNCHTTP_SOCKS5_USER", notRunning),
            password: try variable("ASYNCHTTP_SOCKS5_PASSWORD", notRunning),
            realm: nil, logFile: try variable("ASYNCHTTP_SOCKS5_AUTH_LOG", notRunning)
        )
    }

    /// The NTLM origin, `scripts/peers/ntlm_server.py` (pyspnego's acceptor), HTTP/1.1 keep-alive, any method.
    /// `/ntlm/...` needs NTLM: 401 `WWW-Authenticate: NTLM`, then 401 `WWW-Authenticate: NTLM <type 2>` for a
    /// type 1, then 200 for a type 3 on the SAME connection, with a JSON body: `authenticated`, `user`
    /// (`TESTDOM\ntlmuser`), `method`, `path`, `connection` (its number), `requestsOnConnection`,
    /// `handshakesOnConnection`, `authenticatedNow` (false when the connection had authenticated before and
    /// the request carried no Authorization), `ntlmResponse` (`NTLMv2`, `NTLMv1` or `LM`: what the type 3
    /// carried; all three are accepted), `bodyLength`. A type 3 on another connection gets 401.
    /// `/stats` (no authentication) returns JSON counters: connections, requests, challenges, handshakes,
    /// authenticated, failed, orphanType3 (type 3 without a type 1 on its connection). They count every
    /// test's requests, so compare before and after only in tests that do not run in parallel with others.
    static func ntlm() throws -> NTLMPeer {
        try ntlmPeer("ASYNCHTTP_NTLM_URL", name: "NTLM origin")
    }

    /// The NTLM proxy in the same process: the same exchange with 407 and `Proxy-Authorization` /
    /// `Proxy-Authenticate`, then forwards absolute-form `http://` requests (response buffered, with
    /// Content-Length, `Via: 1.1 asynchttp-ntlm-proxy`, `X-Proxy-Connection-Id`, `X-Proxy-User`) and tunnels
    /// CONNECT to any port; loopback destinations only (403). `GET /stats` (origin-form, no authentication)
    /// returns its counters, with `forwarded` and `tunnels` besides the origin's.
    static func ntlmProxy() throws -> NTLMPeer {
        try ntlmPeer("ASYNCHTTP_NTLM_PROXY_URL", name: "NTLM proxy")
    }

    private static func openPeer(_ urlVariable: String, name: String) throws -> OpenPeer {
        let url = try variable(urlVariable, "\(name) peer is not running: run ./scripts/test.sh")
        return OpenPeer(url: url, port: try port(of: url, urlVariable))
    }

    private static func ntlmPeer(_ urlVariable: String, name: String) throws -> NTLMPeer {
        let notRunning = "\(name) peer is not running: run ./scripts/test.sh"
        let url = try variable(urlVariable, notRunning)
        return NTLMPeer(
            url: url, port: try port(of: url, urlVariable),
            user: try variable("ASYNCHTTP_NTLM_USER", notRunning),
            password: try variable("ASYNCHTTP_NTLM_PASSWORD", notRunning),
            domain: try variable("ASYNCHTTP_NTLM_DOMAIN", notRunning)
        )
    }

    private static func port(of url: String, _ name: String) throws -> Int {
        guard let port = URLComponents(string: url)?.port else {
            throw PeerError("\(name) is not a URL with a port: \(url)")
        }
        return port
    }

    /// moto's S3 in server mode (PyPI `moto[server]`) on 127.0.0.1, as a base URL without a trailing slash.
    static func moto() throws -> String {
        try variable("ASYNCHTTP_MOTO_URL", "moto peer is not running: run ./scripts/test.sh")
    }

    /// The Python of moto's virtualenv, which has botocore: the independent SigV4 signer the tests compare with.
    static func motoPython() throws -> String {
        try variable("ASYNCHTTP_MOTO_PYTHON", "moto's virtualenv is unknown: run ./scripts/test.sh")
    }

    private static func variable(_ name: String, _ message: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw PeerError("\(message) (\(name) is not set)")
        }
        return value
    }
}
