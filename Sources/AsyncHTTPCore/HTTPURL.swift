import AsyncHTTP1
/// An absolute `http` or `https` URL, parsed by RFC 3986 rules. `http+unix` and `https+unix` URLs (async-http-client's
/// spelling) name a Unix domain socket as their host, percent-encoded: `http+unix://%2Fvar%2Frun%2Fdocker.sock/info`.
///
/// AsyncHTTP keeps Foundation's `URL` out of its core: `URL` percent-encodes or repairs some input on some
/// platforms and not others. `HTTPURL` never encodes silently: a space, a control character, a non-ASCII
/// character or any other character RFC 3986 does not allow is an error that names the character and its
/// position; percent-escapes are kept as given. The scheme and host are lowercased, and the port defaults
/// to 80 or 443.
///
/// ```swift
/// let url = try HTTPURL("https://api.example.com/v1/items?page=2")
/// url.host            // "api.example.com"
/// url.port            // 443
/// url.requestTarget   // "/v1/items?page=2"
/// let next = try url.resolving("../v2/items")   // https://api.example.com/v2/items
/// ```
///
/// Properties can only be set from inside the library, so a value always holds a URL that was validated.
public struct HTTPURL: Sendable, Hashable, CustomStringConvertible {
    /// The parts, in one box: a request's URL is copied several times on its way (the request, its plan, the
    /// response's `url` and `originalURL`), and a copy then retains one object instead of eight strings, and
    /// moves eight bytes instead of 120.
    ///
    /// `@unchecked Sendable`: written only through ``writableParts()``, which copies a box that is shared
    /// (copy-on-write), so a box another value can see is never written.
    package final class Parts: @unchecked Sendable {
        var scheme: String
        var user: String?
        var password: String?
        var host: String
        var port: Int
        var path: String
        var query: String?
        var fragment: String?

        init(scheme: String, user: String? = nil, password: String? = nil, host: String, port: Int, path: String,
             query: String? = nil, fragment: String? = nil) {
            self.scheme = scheme
            self.user = user
            self.password = password
            self.host = host
            self.port = port
            self.path = path
            self.query = query
            self.fragment = fragment
        }

        func copy() -> Parts {
            Parts(scheme: scheme, user: user, password: password, host: host, port: port, path: path, query: query, fragment: fragment)
        }
    }

    private var parts: Parts

    /// The box, for a cache that keeps this URL by one reference (`HTTPClientRequest`'s parsed URL, held in an
    /// atomic). The box must not be written through it.
    package var sharedParts: Parts { parts }

    /// The URL whose box is `parts` (from ``sharedParts``).
    package init(sharing parts: Parts) { self.parts = parts }

    /// The box, first copied if another value shares it.
    private mutating func writableParts() -> Parts {
        if !isKnownUniquelyReferenced(&parts) { parts = parts.copy() }
        return parts
    }

    /// `http` or `https` (or `http+unix` / `https+unix`), lowercased.
    public package(set) var scheme: String {
        get { parts.scheme }
        set { writableParts().scheme = newValue }
    }
    /// The user name from the userinfo, percent-decoded.
    public package(set) var user: String? {
        get { parts.user }
        set { writableParts().user = newValue }
    }
    /// The password from the userinfo, percent-decoded.
    public package(set) var password: String? {
        get { parts.password }
        set { writableParts().password = newValue }
    }
    /// The host, lowercased: a registered name, an IPv4 address, or an IPv6 address without its brackets.
    /// For `http+unix` and `https+unix`, the socket's path, percent-decoded and case kept.
    public package(set) var host: String {
        get { parts.host }
        set { writableParts().host = newValue }
    }
    /// The explicit port, or the scheme's default (80 for http, 443 for https).
    public package(set) var port: Int {
        get { parts.port }
        set { writableParts().port = newValue }
    }
    /// The path as given (percent-escapes kept), `/` when the URL has none.
    public package(set) var path: String {
        get { parts.path }
        set { writableParts().path = newValue }
    }
    /// The query without its `?`.
    public package(set) var query: String? {
        get { parts.query }
        set { writableParts().query = newValue }
    }
    /// The fragment without its `#`; never sent to a server.
    public package(set) var fragment: String? {
        get { parts.fragment }
        set { writableParts().fragment = newValue }
    }

    /// Equal parts (two copies of one URL share their box, and compare at once).
    public static func == (lhs: HTTPURL, rhs: HTTPURL) -> Bool {
        if lhs.parts === rhs.parts { return true }
        let a = lhs.parts, b = rhs.parts
        return a.scheme == b.scheme && a.user == b.user && a.password == b.password && a.host == b.host
            && a.port == b.port && a.path == b.path && a.query == b.query && a.fragment == b.fragment
    }

    /// Hashes every part, as ``==(_:_:)`` compares them.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(scheme)
        hasher.combine(user)
        hasher.combine(password)
        hasher.combine(host)
        hasher.combine(port)
        hasher.combine(path)
        hasher.combine(query)
        hasher.combine(fragment)
    }

    /// Parses an absolute `http` or `https` URL.
    ///
    /// Throws `.invalidURL` with the reason: `unsupported scheme 'ftp'`, `port 70000 out of range`,
    /// `space at offset 18 in URL (percent-encode it as %20)`, `missing host`, …
    public init(_ string: String) throws(HTTPClientError) {
        if let common = Self.parseCommon(string) {
            self = common
            return
        }
        self = try Self.parseGeneral(string)
    }

    /// The general parser: every URL ``init(_:)`` accepts, and every error it throws.
    package static func parseGeneral(_ string: String) throws(HTTPClientError) -> HTTPURL {
        let reference = try URIReference(string)
        guard let scheme = reference.scheme else {
            throw .invalidURL("missing scheme (an absolute http or https URL is required)")
        }
        return try HTTPURL(scheme: scheme, reference: reference, path: reference.path)
    }

    /// The URL most requests name, parsed in one pass: `http://` or `https://` in lower case, a lower-case host of
    /// letters, digits, `-` and `.` (a name, or an IPv4 address in its canonical form), an optional port
    /// without leading zeros, and a path and query of characters RFC 3986 allows there, without
    /// percent-escapes. Anything else (userinfo, IPv6, upper case, escapes, a fragment, an error) is nil, and
    /// the general parser decides; for what this accepts, both give the same URL (`HTTPURLTests` compares
    /// them). Every request's URL is parsed once, and this is several times faster than the general path.
    package static func parseCommon(_ string: String) -> HTTPURL? {
        var copy = string
        return copy.withUTF8 { bytes -> HTTPURL? in
            let count = bytes.count
            // "http://" or "https://"
            guard count > 7, bytes[0] == UInt8(ascii: "h"), bytes[1] == UInt8(ascii: "t"), bytes[2] == UInt8(ascii: "t"),
                  bytes[3] == UInt8(ascii: "p") else { return nil }
            let secure = bytes[4] == UInt8(ascii: "s")
            var index = secure ? 5 : 4
            guard index + 3 <= count, bytes[index] == UInt8(ascii: ":"), bytes[index + 1] == UInt8(ascii: "/"),
                  bytes[index + 2] == UInt8(ascii: "/") else { return nil }
            index += 3
            // The host: [a-z0-9.-]+, ending at ":", "/", "?" or the end.
            let hostStart = index
            var lastDot = -1
            while index < count {
                let byte = bytes[index]
                if byte &- UInt8(ascii: "a") < 26 || URIReference.isDigit(byte) || byte == UInt8(ascii: "-") {
                    index += 1
                } else if byte == UInt8(ascii: ".") {
                    lastDot = index
                    index += 1
                } else {
                    break
                }
            }
            let hostEnd = index
            guard hostEnd > hostStart else { return nil }
            // A last label that is a number (or a hex number) must be a canonical IPv4 address; the general
            // parser says what is wrong otherwise. A trailing dot goes there too.
            let lastLabel = UnsafeBufferPointer(rebasing: bytes[(lastDot + 1 > hostStart ? lastDot + 1 : hostStart)..<hostEnd])
            if lastLabel.isEmpty { return nil }
            if URIReference.isDigit(lastLabel[0]) {
                guard URIReference.isIPv4Address(UnsafeBufferPointer(rebasing: bytes[hostStart..<hostEnd])) else { return nil }
            }
            var port = secure ? 443 : 80
            if index < count && bytes[index] == UInt8(ascii: ":") {
                index += 1
                let digitsStart = index
                var value = 0
                while index < count, URIReference.isDigit(bytes[index]), index - digitsStart < 5 {
                    value = value * 10 + Int(bytes[index] &- UInt8(ascii: "0"))
                    index += 1
                }
                // "host:" (the default port), a leading zero or a sixth digit: the general parser.
                guard index > digitsStart, bytes[digitsStart] != UInt8(ascii: "0"), value <= 65535 else { return nil }
                port = value
            }
            // The path and query: characters RFC 3986 allows there, no "%", "[", "]" or "#".
            let pathStart = index
            var queryStart = -1
            guard index == count || bytes[index] == UInt8(ascii: "/") || bytes[index] == UInt8(ascii: "?") else { return nil }
            while index < count {
                let byte = bytes[index]
                guard URIReference.isPathOrQueryCharacter(byte) else { return nil }
                if byte == UInt8(ascii: "?") && queryStart < 0 { queryStart = index }
                index += 1
            }
            let pathEnd = queryStart < 0 ? count : queryStart
            var url = HTTPURL(
                scheme: secure ? "https" : "http",
                host: String(decoding: UnsafeBufferPointer(rebasing: bytes[hostStart..<hostEnd]), as: UTF8.self),
                port: port,
                path: pathEnd > pathStart ? String(decoding: UnsafeBufferPointer(rebasing: bytes[pathStart..<pathEnd]), as: UTF8.self) : "/")
            if queryStart >= 0 {
                url.query = String(decoding: UnsafeBufferPointer(rebasing: bytes[(queryStart + 1)..<count]), as: UTF8.self)
            }
            return url
        }
    }

    /// A URL of these parts, nothing else set; for ``parseCommon(_:)``, which has checked them.
    private init(scheme: String, host: String, port: Int, path: String) {
        parts = Parts(scheme: scheme, host: host, port: port, path: path)
    }

    /// Builds a URL from a reference's authority, query and fragment with the given scheme and path.
    private init(scheme: String, reference: URIReference, path: String) throws(HTTPClientError) {
        guard URIReference.isSupportedScheme(scheme) else {
            throw .invalidURL("unsupported scheme '\(scheme)'")
        }
        guard let authority = reference.authority else {
            throw .invalidURL("missing host (expected '\(scheme)://host')")
        }
        parts = Parts(
            scheme: scheme, user: authority.user, password: authority.password, host: authority.host,
            port: authority.port ?? (scheme.hasPrefix("https") ? 443 : 80), path: path.isEmpty ? "/" : path,
            query: reference.query, fragment: reference.fragment)
    }

    /// The origin-form request target (RFC 9112 §3.2.1): the path and the query.
    public var requestTarget: String {
        if let query { return path + "?" + query }
        return path
    }

    /// The absolute-form request target (RFC 9112 §3.2.2), sent to an HTTP proxy: no userinfo, no fragment.
    public var absoluteFormTarget: String {
        if isUnixSocket { return scheme + "://" + URIReference.percentEncodeSocketPath(host) + requestTarget }
        return scheme + "://" + hostHeader + requestTarget
    }

    /// The URL without its userinfo (and fragment), for logs, errors and callbacks: a password never leaves
    /// in it. Every message and log line that shows a URL uses this, or ``redacting(_:)`` for text that may
    /// not parse; ``description`` is the full URL, password included, and is never logged.
    public var redactedDescription: String { absoluteFormTarget }

    /// This URL without its password; the user name stays. What `HTTPClientResponse.url`,
    /// `HTTPClientResponse.originalURL` and `HTTPClientResponse.history` hold, as browsers show a URL:
    /// who it was for, never the secret.
    public var removingPassword: HTTPURL {
        guard password != nil else { return self }
        var copy = self
        copy.password = nil
        return copy
    }

    /// `text` with the userinfo removed from every `scheme://user:password@host` in it: for messages that
    /// quote a URL which may not parse (a server's `Location`, a command-line argument). A parsed URL's
    /// ``redactedDescription`` gives the same result.
    ///
    /// ```swift
    /// HTTPURL.redacting("ftp://bob:hunter2@files.example/x")   // "ftp://files.example/x"
    /// ```
    public static func redacting(_ text: String) -> String {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "@")) else { return text }
        // RFC 3986 §3.2: the authority runs to the first "/", "?" or "#"; it holds unreserved characters,
        // sub-delims, ":", "@", "[", "]" and percent-escapes. Anything else ends it too (a space, a quote).
        func inAuthority(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return Array("-._~!$&'()*+,;=:@[]%".utf8).contains(byte)
            }
        }
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if index + 2 < bytes.count, bytes[index] == UInt8(ascii: ":"), bytes[index + 1] == UInt8(ascii: "/"),
               bytes[index + 2] == UInt8(ascii: "/") {
                result += bytes[index...(index + 2)]
                index += 3
                var end = index
                while end < bytes.count, inAuthority(bytes[end]) { end += 1 }
                if let at = bytes[index..<end].lastIndex(of: UInt8(ascii: "@")) {
                    index = at + 1
                } else if let at = userinfoPastAuthority(bytes, from: index, authorityEnd: end) {
                    index = at + 1
                }
                continue
            }
            result.append(bytes[index])
            index += 1
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// The `@` that ends a password holding a character a URL does not allow there unencoded (a space, a
    /// quote, a non-ASCII letter, or a `/`, `?` or `#`, which end the authority early): such a URL does not
    /// parse, and it is exactly the one ``redacting(_:)`` is asked to show. The sign is a `:` in what was
    /// read as the authority with something after it that cannot be a port; the password then runs to the
    /// next `@` before the line, the text or the next `scheme://` ends. `nil` when there is no such sign,
    /// so `https://example.com/@user` and `https://h:8080/@me` keep their paths (and so does a password of
    /// digits followed by one of those characters, which cannot be told from a port).
    private static func userinfoPastAuthority(_ bytes: [UInt8], from start: Int, authorityEnd: Int) -> Int? {
        let authority = bytes[start..<authorityEnd]
        guard authorityEnd < bytes.count, !authority.contains(UInt8(ascii: "[")),
              let colon = authority.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let afterColon = bytes[(colon + 1)..<authorityEnd]
        guard afterColon.contains(where: { $0 &- UInt8(ascii: "0") >= 10 }) else { return nil }
        var index = authorityEnd
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "@"):
                return index
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                return nil
            case UInt8(ascii: ":") where index + 2 < bytes.count && bytes[index + 1] == UInt8(ascii: "/")
                    && bytes[index + 2] == UInt8(ascii: "/"):
                return nil
            default:
                index += 1
            }
        }
        return nil
    }

    /// The `Host` header value (RFC 9110 §7.2): the host, in brackets if IPv6, with `:port` only when the
    /// port is not the scheme's default.
    ///
    /// For a Unix socket URL, `localhost`: the socket path is not a host name a server knows itself by.
    public var hostHeader: String {
        let (name, port) = hostHeaderParts
        guard let port else { return name }
        return name + ":" + String(port)
    }

    /// ``hostHeader`` before it is joined: the host (in brackets if IPv6; `localhost` for a Unix socket) and the
    /// port to write after a colon, nil for the scheme's default. The request encoder writes the two into the
    /// head, so no string is built for them.
    package var hostHeaderParts: (name: String, port: Int?) {
        if isUnixSocket { return ("localhost", nil) }
        return (isIPv6Literal ? "[" + host + "]" : host, port != defaultPort ? port : nil)
    }

    /// The host is an IPv6 address (written in brackets in the URL).
    public var isIPv6Literal: Bool { !isUnixSocket && host.utf8.contains(UInt8(ascii: ":")) }

    /// The host is an IPv4 or IPv6 address rather than a name to resolve.
    public var isIPAddress: Bool { !isUnixSocket && (isIPv6Literal || URIReference.isIPv4Address(Substring(host))) }

    /// The scheme is https (or https+unix).
    public var isSecure: Bool { scheme == "https" || scheme == "https+unix" }

    /// The scheme is `http+unix` or `https+unix`: ``host`` is a Unix socket's path.
    public var isUnixSocket: Bool { scheme.hasSuffix("+unix") }

    /// The Unix socket a `http+unix` or `https+unix` URL names (its ``host``); nil for other URLs.
    public var unixSocketPath: String? { isUnixSocket ? host : nil }

    /// The URL as normalised: lowercase scheme and host, no default port, userinfo only if present, and no
    /// fragment. It includes the password when the URL has one: show ``redactedDescription`` instead.
    public var description: String {
        var text = scheme + "://"
        if let user {
            text += URIReference.percentEncode(user, allowingColon: false)
            if let password { text += ":" + URIReference.percentEncode(password, allowingColon: true) }
            text += "@"
        }
        if isUnixSocket { return text + URIReference.percentEncodeSocketPath(host) + requestTarget }
        return text + hostHeader + requestTarget
    }

    /// Resolves a reference (a `Location` header, a link) against this URL by RFC 3986 §5.2, including
    /// `remove_dot_segments`. The result's fragment is the reference's: a reference without one gives a URL
    /// without one.
    ///
    /// RFC 3986 §5.2.2 lets a parser treat a reference with this URL's own scheme and no authority
    /// (`http:g`) as relative, for backward compatibility; we do, as browsers do, since the strict reading
    /// (`http:g`, a URL without a host) is not a URL a client can fetch.
    public func resolving(_ reference: String) throws(HTTPClientError) -> HTTPURL {
        if isUnixSocket && reference.utf8.starts(with: "//".utf8) {
            // A network-path reference ("//other/x") against a socket URL names another socket: its authority
            // is read by the socket rules (a percent-encoded path, no port), as with the scheme written out.
            let socket = try URIReference(scheme + ":" + reference)
            return try HTTPURL(scheme: scheme, reference: socket, path: URIReference.removeDotSegments(socket.path))
        }
        let r = try URIReference(reference)
        var referenceScheme = r.scheme
        if referenceScheme == scheme && r.authority == nil {
            referenceScheme = nil
        }
        if let referenceScheme {
            return try HTTPURL(scheme: referenceScheme, reference: r, path: URIReference.removeDotSegments(r.path))
        }
        var target = self
        target.fragment = r.fragment
        if let authority = r.authority {
            target.user = authority.user
            target.password = authority.password
            target.host = authority.host
            target.port = authority.port ?? defaultPort
            target.path = URIReference.removeDotSegments(r.path)
            target.query = r.query
        } else if r.path.isEmpty {
            if let query = r.query { target.query = query }
        } else if r.path.utf8.first == UInt8(ascii: "/") {
            target.path = URIReference.removeDotSegments(r.path)
            target.query = r.query
        } else {
            // §5.2.3 merge: the base path up to its last "/", then the reference's path.
            let base = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { path[...$0] } ?? "/"
            target.path = URIReference.removeDotSegments(String(base) + r.path)
            target.query = r.query
        }
        if target.path.isEmpty { target.path = "/" }
        return target
    }

    private var defaultPort: Int { isSecure ? 443 : 80 }
}

/// A URI reference (RFC 3986 §4.1) split into validated components; the shared front end of
/// `HTTPURL.init` and `HTTPURL.resolving`.
package struct URIReference {
    package struct Authority {
        package var user: String?
        package var password: String?
        package var host: String
        package var port: Int?
    }

    package var scheme: String?
    package var authority: Authority?
    package var path: String
    package var query: String?
    package var fragment: String?

    package init(_ string: String) throws(HTTPClientError) {
        let bytes = Array(string.utf8)
        try Self.checkCharacters(bytes)
        // The split of RFC 3986 Appendix B: ^(([^:/?#]+):)?(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?
        var position = 0
        let count = bytes.count
        func isDelimiter(_ byte: UInt8, _ set: StaticString) -> Bool {
            (0..<set.utf8CodeUnitCount).contains { set.utf8Start[$0] == byte }
        }
        if let colon = bytes.firstIndex(where: { isDelimiter($0, ":/?#") }), bytes[colon] == UInt8(ascii: ":") {
            let name = bytes[0..<colon]
            guard let first = name.first else {
                throw .invalidURL("missing scheme before ':'")
            }
            guard Self.isAlpha(first), name.allSatisfy({ Self.isAlpha($0) || Self.isDigit($0) || isDelimiter($0, "+-.") }) else {
                throw .invalidURL("invalid scheme '\(String(decoding: name, as: UTF8.self))'")
            }
            let lowercased = Self.asciiLowercased(name)
            // Checked before the authority, so "file:///x" says what is wrong with it first.
            guard Self.isSupportedScheme(lowercased) else {
                throw .invalidURL("unsupported scheme '\(lowercased)'")
            }
            scheme = lowercased
            position = colon + 1
        }
        if position + 1 < count && bytes[position] == UInt8(ascii: "/") && bytes[position + 1] == UInt8(ascii: "/") {
            let start = position + 2
            let end = bytes[start...].firstIndex(where: { isDelimiter($0, "/?#") }) ?? count
            authority = scheme?.hasSuffix("+unix") == true
                ? try Self.parseSocketAuthority(bytes, start..<end) : try Self.parseAuthority(bytes, start..<end)
            position = end
        }
        let pathEnd = bytes[position...].firstIndex(where: { isDelimiter($0, "?#") }) ?? count
        try Self.reject("[]", in: bytes, position..<pathEnd, component: "path")
        path = String(decoding: bytes[position..<pathEnd], as: UTF8.self)
        position = pathEnd
        if position < count && bytes[position] == UInt8(ascii: "?") {
            let queryEnd = bytes[(position + 1)...].firstIndex(of: UInt8(ascii: "#")) ?? count
            try Self.reject("[]", in: bytes, position + 1..<queryEnd, component: "query")
            query = String(decoding: bytes[(position + 1)..<queryEnd], as: UTF8.self)
            position = queryEnd
        }
        if position < count && bytes[position] == UInt8(ascii: "#") {
            try Self.reject("[]#", in: bytes, position + 1..<count, component: "fragment")
            fragment = String(decoding: bytes[(position + 1)...], as: UTF8.self)
        }
    }

    // MARK: Characters

    /// Every byte must be one RFC 3986 allows somewhere (unreserved, gen-delims, sub-delims, or "%" followed
    /// by two hex digits); which component may hold which delimiter is checked per component.
    private static func checkCharacters(_ bytes: [UInt8]) throws(HTTPClientError) {
        let (low, high) = uriCharacterMasks
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            // The common case by table: a URI character other than "%".
            if byte < 64 ? low >> byte & 1 == 1 : byte < 128 && high >> (byte &- 64) & 1 == 1 {
                index += 1
                continue
            }
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, Self.hexValue(bytes[index + 1]) != nil, Self.hexValue(bytes[index + 2]) != nil else {
                    let escape = String(decoding: bytes[index..<min(index + 3, bytes.count)], as: UTF8.self)
                    throw .invalidURL("invalid percent-escape '\(escape)' at offset \(characterOffset(bytes, index)) in URL")
                }
                index += 3
                continue
            }
            if !isURICharacter(byte) {
                throw invalidCharacter(bytes, at: index, component: nil)
            }
            index += 1
        }
    }

    /// ``isURICharacter(_:)`` for bytes 0–63 and 64–127, one bit each; "%" is not in it (checked apart).
    private static let uriCharacterMasks: (UInt64, UInt64) = {
        var masks: (UInt64, UInt64) = (0, 0)
        for byte in UInt8(0)..<128 where isURICharacter(byte) {
            if byte < 64 { masks.0 |= 1 << byte } else { masks.1 |= 1 << (byte - 64) }
        }
        return masks
    }()

    /// The error for a character that may not appear (here), naming it and its position in characters.
    private static func invalidCharacter(_ bytes: [UInt8], at index: Int, component: String?) -> HTTPClientError {
        let byte = bytes[index]
        let place = "at offset \(characterOffset(bytes, index)) in " + (component.map { "URL \($0)" } ?? "URL")
        if component == "userinfo" {
            // Not named: it is a character of the user's password.
            return .invalidURL("a character \(place) must be percent-encoded")
        }
        if byte == ByteScanner.sp {
            return .invalidURL("space \(place) (percent-encode it as %20)")
        }
        if byte < 0x20 || byte == 0x7F {
            return .invalidURL("control character \(ByteScanner.describe(byte)) \(place)")
        }
        if byte >= 0x80 {
            var end = index + 1
            while end < bytes.count && bytes[end] & 0xC0 == 0x80 { end += 1 }
            let character = String(decoding: bytes[index..<end], as: UTF8.self)
            return .invalidURL("non-ASCII character '\(character)' \(place) (percent-encode it)")
        }
        return .invalidURL("invalid character '\(Character(Unicode.Scalar(byte)))' \(place)")
    }

    /// The position of `index` counted in Unicode scalars, which is what a person counting sees.
    private static func characterOffset(_ bytes: [UInt8], _ index: Int) -> Int {
        bytes[..<index].reduce(0) { $1 & 0xC0 == 0x80 ? $0 : $0 + 1 }
    }

    private static func reject(_ characters: StaticString, in bytes: [UInt8], _ range: Range<Int>, component: String) throws(HTTPClientError) {
        for index in range {
            for member in 0..<characters.utf8CodeUnitCount where bytes[index] == characters.utf8Start[member] {
                throw invalidCharacter(bytes, at: index, component: component)
            }
        }
    }

    package static func isAlpha(_ byte: UInt8) -> Bool { (byte | 0x20) &- UInt8(ascii: "a") < 26 }

    // AsyncHTTP1's `ByteScanner` has these too, but a `package` function is not inlined across modules
    // (docs/performance.md, session 10), and the URL of every request is checked byte by byte with them.
    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    @inline(__always)
    static func hexValue(_ byte: UInt8) -> Int? {
        if Self.isDigit(byte) { return Int(byte &- UInt8(ascii: "0")) }
        let lower = byte | 0x20
        return lower &- UInt8(ascii: "a") < 6 ? Int(lower &- UInt8(ascii: "a")) + 10 : nil
    }

    /// unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~"
    package static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlpha(byte) || Self.isDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    /// sub-delims: "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="
    package static func isSubDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }

    /// What ``HTTPURL/parseCommon(_:)`` takes in a path or query: a URI character other than "#", "[", "]" and
    /// "%" (by ``uriCharacterMasks``).
    @inline(__always)
    static func isPathOrQueryCharacter(_ byte: UInt8) -> Bool {
        let (low, high) = pathOrQueryMasks
        return byte < 64 ? low >> byte & 1 == 1 : byte < 128 && high >> (byte &- 64) & 1 == 1
    }

    private static let pathOrQueryMasks: (UInt64, UInt64) = {
        var masks = uriCharacterMasks
        for byte in [UInt8(ascii: "#"), UInt8(ascii: "%")] { masks.0 &= ~(1 << byte) }
        for byte in [UInt8(ascii: "["), UInt8(ascii: "]")] { masks.1 &= ~(1 << (byte - 64)) }
        return masks
    }()

    /// Unreserved, sub-delims or gen-delims (":" / "/" / "?" / "#" / "[" / "]" / "@"); "%" is checked apart.
    private static func isURICharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: ":"), UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: "["),
            UInt8(ascii: "]"), UInt8(ascii: "@"):
            return true
        default:
            return isUnreserved(byte) || isSubDelimiter(byte)
        }
    }

    // MARK: Authority

    /// Whether ``HTTPURL`` supports `scheme` (lowercase): http, https, http+unix, https+unix. A `switch`, not a
    /// set: it runs for every request.
    @inline(__always)
    static func isSupportedScheme(_ scheme: String) -> Bool {
        switch scheme {
        case "http", "https", "http+unix", "https+unix": return true
        default: return false
        }
    }

    /// `bytes` as a string with A–Z lowered. Only for bytes already checked to be ASCII (a scheme, a host
    /// of unreserved and sub-delimiter characters), where it equals `String.lowercased()` without its
    /// Unicode machinery.
    static func asciiLowercased(_ bytes: ArraySlice<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { buffer in
            var count = 0
            for byte in bytes {
                buffer[count] = byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
                count += 1
            }
            return count
        }
    }

    /// The authority of a `http+unix` / `https+unix` URL: `[ userinfo "@" ]` and a percent-encoded socket path,
    /// no port (a socket has none; a ':' in the path is written `%3A`).
    private static func parseSocketAuthority(_ bytes: [UInt8], _ range: Range<Int>) throws(HTTPClientError) -> Authority {
        var hostStart = range.lowerBound
        var authority = Authority(user: nil, password: nil, host: "", port: nil)
        if let at = bytes[range].lastIndex(of: UInt8(ascii: "@")) {
            for index in range.lowerBound..<at where !(isUnreserved(bytes[index]) || isSubDelimiter(bytes[index]) || bytes[index] == UInt8(ascii: ":") || bytes[index] == UInt8(ascii: "%")) {
                throw invalidCharacter(bytes, at: index, component: "userinfo")
            }
            let userinfo = bytes[range.lowerBound..<at]
            if let colon = userinfo.firstIndex(of: UInt8(ascii: ":")) {
                authority.user = try percentDecode(userinfo[..<colon], what: "user name")
                authority.password = try percentDecode(userinfo[(colon + 1)...], what: "password")
            } else {
                authority.user = try percentDecode(userinfo, what: "user name")
            }
            hostStart = at + 1
        }
        for index in hostStart..<range.upperBound where !(isUnreserved(bytes[index]) || isSubDelimiter(bytes[index]) || bytes[index] == UInt8(ascii: "%")) {
            if bytes[index] == UInt8(ascii: ":") {
                throw .invalidURL("a Unix socket URL has no port (write ':' in the socket path as %3A)")
            }
            throw invalidCharacter(bytes, at: index, component: "socket path")
        }
        authority.host = try percentDecode(bytes[hostStart..<range.upperBound], what: "socket path")
        guard !authority.host.isEmpty else { throw .invalidURL("missing socket path (expected 'http+unix://%2Fpath%2Fto.sock/')") }
        return authority
    }

    /// A socket path as a `http+unix` authority: everything but unreserved characters percent-encoded.
    package static func percentEncodeSocketPath(_ path: String) -> String {
        var text = ""
        for byte in path.utf8 {
            if isUnreserved(byte) {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = Array("0123456789ABCDEF".utf8)
                text += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]], as: UTF8.self)
            }
        }
        return text
    }

    /// authority = [ userinfo "@" ] host [ ":" port ] (RFC 3986 §3.2).
    private static func parseAuthority(_ bytes: [UInt8], _ range: Range<Int>) throws(HTTPClientError) -> Authority {
        var hostStart = range.lowerBound
        var user: String?
        var password: String?
        if let at = bytes[range].lastIndex(of: UInt8(ascii: "@")) {
            for index in range.lowerBound..<at where !(isUnreserved(bytes[index]) || isSubDelimiter(bytes[index]) || bytes[index] == UInt8(ascii: ":") || bytes[index] == UInt8(ascii: "%")) {
                throw invalidCharacter(bytes, at: index, component: "userinfo")
            }
            let userinfo = bytes[range.lowerBound..<at]
            if let colon = userinfo.firstIndex(of: UInt8(ascii: ":")) {
                user = try percentDecode(userinfo[..<colon], what: "user name")
                password = try percentDecode(userinfo[(colon + 1)...], what: "password")
            } else {
                user = try percentDecode(userinfo, what: "user name")
            }
            hostStart = at + 1
        }
        var host: String
        var portStart: Int?
        if hostStart < range.upperBound && bytes[hostStart] == UInt8(ascii: "[") {
            guard let close = bytes[hostStart..<range.upperBound].firstIndex(of: UInt8(ascii: "]")) else {
                throw .invalidURL("IPv6 address without its closing ']'")
            }
            host = try parseIPv6(bytes[(hostStart + 1)..<close])
            if close + 1 < range.upperBound {
                guard bytes[close + 1] == UInt8(ascii: ":") else {
                    throw invalidCharacter(bytes, at: close + 1, component: "authority")
                }
                portStart = close + 2
            }
        } else {
            let hostEnd = bytes[hostStart..<range.upperBound].firstIndex(of: UInt8(ascii: ":")) ?? range.upperBound
            for index in hostStart..<hostEnd where !(isUnreserved(bytes[index]) || isSubDelimiter(bytes[index])) {
                if bytes[index] == UInt8(ascii: "%") {
                    // RFC 3986 allows percent-encoded names, but no resolver does; IDNs go on the wire as punycode.
                    throw .invalidURL("percent-encoded host names are not supported (write the name, or its punycode form)")
                }
                throw invalidCharacter(bytes, at: index, component: "host")
            }
            try checkNumericHost(bytes[hostStart..<hostEnd])
            host = Self.asciiLowercased(bytes[hostStart..<hostEnd])
            if hostEnd < range.upperBound { portStart = hostEnd + 1 }
        }
        guard !host.isEmpty else { throw .invalidURL("missing host") }
        var port: Int?
        if let portStart, portStart < range.upperBound {
            let digits = bytes[portStart..<range.upperBound]
            if let bad = digits.firstIndex(where: { !Self.isDigit($0) }) {
                if bytes[range.upperBound...].contains(UInt8(ascii: "@")) {
                    // What looks like a port is likely a password holding a '#', '/' or '?' that ended the
                    // authority early (the userinfo's '@' comes after it), so it is not quoted.
                    throw .invalidURL("invalid port (invalid character at offset \(characterOffset(bytes, bad))); "
                        + "percent-encode any '@', ':', '/', '?' or '#' in a user name or password")
                }
                throw .invalidURL("invalid port '\(String(decoding: digits, as: UTF8.self))' (invalid character at offset \(characterOffset(bytes, bad)))")
            }
            let significant = digits.drop(while: { $0 == UInt8(ascii: "0") })
            let value = significant.count > 5 ? Int.max : significant.reduce(0) { $0 * 10 + Int($1 &- 0x30) }
            guard value >= 1 && value <= 65535 else {
                throw .invalidURL("port \(String(decoding: digits, as: UTF8.self)) out of range (1...65535)")
            }
            port = value
        }
        // An empty port ("http://host:/") means the default (RFC 3986 §3.2.3).
        return Authority(user: user, password: password, host: host, port: port)
    }

    /// A host whose last label is a number must be an IPv4 address in the canonical dotted-quad form.
    /// `inet_aton` (behind getaddrinfo) reads `127.1`, `0x7f.1` or `017.0.0.1` as addresses, so such a name
    /// would connect somewhere a check of ``HTTPURL/isIPAddress`` did not expect. WHATWG URL rejects or
    /// rewrites these for the same reason ("ends in a number").
    private static func checkNumericHost(_ host: ArraySlice<UInt8>) throws(HTTPClientError) {
        // One pass over the bytes, no allocation: this runs for every request (it showed in profiles).
        var bytes = host
        if bytes.count > 1, bytes.last == UInt8(ascii: ".") { bytes = bytes.dropLast() }
        let last = bytes.lastIndex(of: UInt8(ascii: ".")).map { bytes[($0 + 1)...] } ?? bytes
        guard let first = last.first else { return }
        let isNumber: Bool
        if last.count > 2, first == UInt8(ascii: "0"), last[last.startIndex + 1] | 0x20 == UInt8(ascii: "x") {
            isNumber = last.dropFirst(2).allSatisfy { Self.hexValue($0) != nil }
        } else {
            isNumber = last.allSatisfy(Self.isDigit)
        }
        if isNumber && !isIPv4Address(host) {
            throw .invalidURL("ambiguous numeric host '\(asciiLowercased(host))' (write an IPv4 address as four decimal numbers 0...255 without leading zeros)")
        }
    }

    /// IPv4address = dec-octet "." dec-octet "." dec-octet "." dec-octet (RFC 3986 §3.2.2), no leading zeros.
    package static func isIPv4Address(_ text: Substring) -> Bool {
        // A native string's bytes are contiguous; the walk over them is the one below, without `UTF8View`'s
        // index arithmetic.
        text.utf8.withContiguousStorageIfAvailable { isIPv4Address($0) } ?? isIPv4Address(Array(text.utf8)[...])
    }

    /// The same test over bytes.
    static func isIPv4Address<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        var octets = 0
        var value = 0
        var digits = 0
        var leadingZero = false
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, octets < 3 else { return false }
                octets += 1
                value = 0
                digits = 0
                continue
            }
            guard Self.isDigit(byte) else { return false }
            if digits == 0 { leadingZero = byte == UInt8(ascii: "0") } else if leadingZero { return false }
            digits += 1
            value = value * 10 + Int(byte &- 0x30)
            guard digits <= 3, value <= 255 else { return false }
        }
        return octets == 3 && digits > 0
    }

    /// IPv6address (RFC 3986 §3.2.2): eight 16-bit hex groups, one "::" standing for one or more zero
    /// groups, optionally ending in an IPv4 address. Returns it lowercased.
    private static func parseIPv6(_ bytes: ArraySlice<UInt8>) throws(HTTPClientError) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        if bytes.first == UInt8(ascii: "v") || bytes.first == UInt8(ascii: "V") {
            throw .invalidURL("IPvFuture address '[\(text)]' is not supported")
        }
        if bytes.contains(UInt8(ascii: "%")) {
            throw .invalidURL("IPv6 zone identifiers are not supported ('[\(text)]')")
        }
        let invalid = HTTPClientError.invalidURL("invalid IPv6 address '[\(text)]'")
        let halves = text.split(separator: "::", maxSplits: 2, omittingEmptySubsequences: false)
        guard halves.count <= 2 else { throw invalid }
        var groups = 0
        for (halfIndex, half) in halves.enumerated() where !half.isEmpty {
            let parts = half.split(separator: ":", omittingEmptySubsequences: false)
            for (index, part) in parts.enumerated() {
                let isLast = halfIndex == halves.count - 1 && index == parts.count - 1
                if isLast && part.contains(".") {
                    guard isIPv4Address(part) else { throw invalid }
                    groups += 2
                } else {
                    guard (1...4).contains(part.utf8.count), part.utf8.allSatisfy({ Self.hexValue($0) != nil }) else {
                        throw invalid
                    }
                    groups += 1
                }
            }
        }
        guard halves.count == 2 ? groups <= 7 : groups == 8 else { throw invalid }
        return text.lowercased()
    }

    // MARK: Percent-encoding

    private static func percentDecode(_ bytes: ArraySlice<UInt8>, what: String) throws(HTTPClientError) -> String {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
                let high = Self.hexValue(bytes[index + 1]), let low = Self.hexValue(bytes[index + 2])
            {
                decoded.append(UInt8(high << 4 | low))
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        guard let string = String(validating: decoded, as: UTF8.self) else {
            throw .invalidURL("the \(what) is not valid UTF-8 once percent-decoded")
        }
        return string
    }

    /// Percent-encodes everything but unreserved and sub-delims (and ":" if allowed): the userinfo rule.
    package static func percentEncode(_ string: String, allowingColon: Bool) -> String {
        var text = ""
        for byte in string.utf8 {
            if isUnreserved(byte) || isSubDelimiter(byte) || (allowingColon && byte == UInt8(ascii: ":")) {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                text += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return text
    }

    // MARK: Dot segments

    /// remove_dot_segments (RFC 3986 §5.2.4).
    package static func removeDotSegments(_ path: String) -> String {
        var input = Array(path.utf8)[...]
        var output: [UInt8] = []
        func starts(with prefix: StaticString) -> Bool {
            guard input.count >= prefix.utf8CodeUnitCount else { return false }
            return (0..<prefix.utf8CodeUnitCount).allSatisfy { input[input.startIndex + $0] == prefix.utf8Start[$0] }
        }
        func equals(_ text: StaticString) -> Bool { input.count == text.utf8CodeUnitCount && starts(with: text) }
        func removeLastOutputSegment() {
            if let slash = output.lastIndex(of: UInt8(ascii: "/")) {
                output.removeSubrange(slash...)
            } else {
                output.removeAll()
            }
        }
        while !input.isEmpty {
            if starts(with: "../") {  // A
                input = input.dropFirst(3)
            } else if starts(with: "./") {  // A
                input = input.dropFirst(2)
            } else if starts(with: "/./") {  // B
                input = input.dropFirst(2)
            } else if equals("/.") {  // B
                input = [UInt8(ascii: "/")][...]
            } else if starts(with: "/../") {  // C
                input = input.dropFirst(3)
                removeLastOutputSegment()
            } else if equals("/..") {  // C
                input = [UInt8(ascii: "/")][...]
                removeLastOutputSegment()
            } else if equals(".") || equals("..") {  // D
                input = []
            } else {  // E: move the first segment, with its leading "/", to the output
                let searchStart = input.first == UInt8(ascii: "/") ? input.startIndex + 1 : input.startIndex
                let end = input[searchStart...].firstIndex(of: UInt8(ascii: "/")) ?? input.endIndex
                output.append(contentsOf: input[..<end])
                input = input[end...]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
