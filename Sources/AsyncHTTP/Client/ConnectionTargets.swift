// Where connections really go: curl's --resolve, --connect-to and --unix-socket, as values for a client's
// configuration and for one request. The transport turns them into a `ConnectionKey.Endpoint`
// (Transport/Endpoint.swift); the connector dials it.

/// Addresses to use for a host and port instead of asking DNS: curl's `--resolve HOST:PORT:ADDR[,ADDR]…`.
///
/// The URL is unchanged: the `Host` header, cookies and TLS verification still use the URL's host name, so
/// a certificate must still be valid for it. Several addresses are raced as any resolved name's are
/// (Happy Eyeballs, ``HTTPClient/Configuration/connectionAttemptDelay``).
///
/// ```swift
/// configuration.resolve = [try ResolveOverride("api.example.com:443:127.0.0.1")]
/// ```
public struct ResolveOverride: Sendable, Hashable {
    /// The host name it applies to, lowercased; `*` applies to every host.
    public var host: String
    /// The port it applies to.
    public var port: Int
    /// Numeric IPv4 or IPv6 addresses (IPv6 without brackets), tried in this order with Happy Eyeballs.
    public var addresses: [String]

    /// Throws `HTTPClientError.Code.invalidConfiguration` when an address is not a numeric IPv4 or IPv6
    /// address, the list is empty, or the port is out of range.
    public init(host: String, port: Int, addresses: [String]) throws(HTTPClientError) {
        guard !host.isEmpty else { throw HTTPClientError(.invalidConfiguration, "resolve override: empty host name") }
        guard (1...65535).contains(port) else {
            throw HTTPClientError(.invalidConfiguration, "resolve override for \(host): port \(port) out of range (1...65535)")
        }
        guard !addresses.isEmpty else {
            throw HTTPClientError(.invalidConfiguration, "resolve override for \(host):\(port) has no address")
        }
        for address in addresses where NumericAddress.bytes(address) == nil {
            throw HTTPClientError(
                .invalidConfiguration, "resolve override for \(host):\(port): '\(address)' is not an IPv4 or IPv6 address")
        }
        self.host = host.lowercased()
        self.port = port
        self.addresses = addresses
    }

    /// Parses curl's syntax, `HOST:PORT:ADDRESS[,ADDRESS]…`, with IPv6 addresses in brackets
    /// (`example.com:443:[::1],127.0.0.1`) and `*` for any host.
    public init(_ text: String) throws(HTTPClientError) {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let port = Int(parts[1]) else {
            throw HTTPClientError(.invalidConfiguration, "resolve override '\(text)': expected HOST:PORT:ADDRESS[,ADDRESS]")
        }
        let addresses = parts[2].split(separator: ",").map { part -> String in
            var address = part.trimmingSpaces
            if address.hasPrefix("[") && address.hasSuffix("]") { address = String(address.dropFirst().dropLast()) }
            return address
        }
        try self.init(host: String(parts[0]), port: port, addresses: addresses)
    }

    func matches(host: String, port: Int) -> Bool {
        port == self.port && (self.host == "*" || self.host == host)
    }
}

/// Connect to another host and port instead of the URL's: curl's `--connect-to HOST1:PORT1:HOST2:PORT2`.
///
/// As with ``ResolveOverride`` the URL is unchanged: the `Host` header and TLS verification use the URL's
/// host, so a request for `https://api.example.com/` sent to a canary server still checks that the canary's
/// certificate is valid for `api.example.com`.
///
/// Rules are matched against the URL's host and port, also through a proxy, as curl: the proxy is then asked
/// for the rule's target, and through an HTTP proxy that makes even an `http` URL a `CONNECT` tunnel (curl's
/// test 2050). A proxy itself is never moved by a rule; a ``ResolveOverride`` for its name gives its address.
///
/// ```swift
/// configuration.connectTo = [try ConnectToOverride("api.example.com:443:canary.internal:8443")]
/// ```
public struct ConnectToOverride: Sendable, Hashable {
    /// The URL host it applies to, lowercased; nil applies to every host.
    public var host: String?
    /// The URL port it applies to; nil applies to every port.
    public var port: Int?
    /// Where to connect instead; nil keeps the URL's host.
    public var targetHost: String?
    /// The port to connect to instead; nil keeps the URL's port.
    public var targetPort: Int?

    /// Creates an override from its parts.
    ///
    /// - Throws: `HTTPClientError.Code.invalidConfiguration` for a port outside 1...65535.
    public init(host: String?, port: Int?, targetHost: String?, targetPort: Int?) throws(HTTPClientError) {
        for value in [port, targetPort].compactMap({ $0 }) where !(1...65535).contains(value) {
            throw HTTPClientError(.invalidConfiguration, "connect-to: port \(value) out of range (1...65535)")
        }
        self.host = host.map { $0.lowercased() }
        self.port = port
        self.targetHost = targetHost.map { $0.lowercased() }
        self.targetPort = targetPort
    }

    /// Parses curl's syntax, `HOST1:PORT1:HOST2:PORT2`, where an empty part means "any" on the left and
    /// "unchanged" on the right (`::backend:8080` sends every request to backend:8080), and IPv6 addresses
    /// are written in brackets.
    public init(_ text: String) throws(HTTPClientError) {
        var parts: [String] = []
        var current = ""
        var inBrackets = false
        for character in text {
            switch character {
            case "[": inBrackets = true
            case "]": inBrackets = false
            case ":" where !inBrackets:
                parts.append(current)
                current = ""
            default: current.append(character)
            }
        }
        parts.append(current)
        guard parts.count == 4 else {
            throw HTTPClientError(.invalidConfiguration, "connect-to '\(text)': expected HOST1:PORT1:HOST2:PORT2")
        }
        func port(_ part: String) throws(HTTPClientError) -> Int? {
            if part.isEmpty { return nil }
            guard let value = Int(part) else {
                throw HTTPClientError(.invalidConfiguration, "connect-to '\(text)': '\(part)' is not a port number")
            }
            return value
        }
        try self.init(host: parts[0].isEmpty ? nil : parts[0], port: try port(parts[1]),
                      targetHost: parts[2].isEmpty ? nil : parts[2], targetPort: try port(parts[3]))
    }

    func matches(host: String, port: Int) -> Bool {
        (self.host == nil || self.host == host) && (self.port == nil || self.port == port)
    }
}

/// A Unix domain socket to send requests through instead of TCP: curl's `--unix-socket PATH` and
/// `--abstract-unix-socket NAME`.
///
/// The URL still names the host (sent as `Host`) and the scheme: `https` runs TLS over the socket and
/// verifies the server's certificate for the URL's host. Connections are pooled per socket.
///
/// ```swift
/// var request = HTTPClientRequest(url: "http://localhost/v1.45/containers/json")
/// request.unixSocket = .path("/var/run/docker.sock")
/// ```
public struct UnixSocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The file system path, or for an abstract socket its name (without the leading NUL).
    public var path: String
    /// A Linux abstract socket: a name in the abstract namespace, not a file.
    public var isAbstract: Bool

    /// A socket file.
    public static func path(_ path: String) -> Self { Self(path: path, isAbstract: false) }
    /// A Linux abstract socket (curl's `--abstract-unix-socket`).
    public static func abstract(_ name: String) -> Self { Self(path: name, isAbstract: true) }

    /// The path, or `@name` for an abstract socket.
    public var description: String { isAbstract ? "@" + path : path }
}

/// The connection target settings of one request, each overriding the client's when set.
struct ConnectionTargetOptions: HTTPRequestOption, Sendable {
    var resolve: [ResolveOverride]?
    var connectTo: [ConnectToOverride]?
    var unixSocket: UnixSocketAddress?
    static var defaultValue: Self { Self() }
    var isUnset: Bool { resolve == nil && connectTo == nil && unixSocket == nil }
}

extension HTTPClientRequest {
    /// Addresses to connect to instead of resolving the host (curl's `--resolve`), replacing the client's
    /// ``HTTPClient/Configuration/resolve`` for this request.
    public var resolve: [ResolveOverride]? {
        get { option(ConnectionTargetOptions.self) { $0.resolve } }
        set { self[ConnectionTargetOptions.self].resolve = newValue }
    }
    /// Another host and port to connect to (curl's `--connect-to`), replacing the client's
    /// ``HTTPClient/Configuration/connectTo`` for this request.
    public var connectTo: [ConnectToOverride]? {
        get { option(ConnectionTargetOptions.self) { $0.connectTo } }
        set { self[ConnectionTargetOptions.self].connectTo = newValue }
    }
    /// A Unix domain socket to send this request through (curl's `--unix-socket`), overriding the client's
    /// ``HTTPClient/Configuration/unixSocket``. Proxies are not used for it.
    public var unixSocket: UnixSocketAddress? {
        get { option(ConnectionTargetOptions.self) { $0.unixSocket } }
        set { self[ConnectionTargetOptions.self].unixSocket = newValue }
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
