// TEMPORARY stand-in until the real HTTPURL lands (the protocol helper is writing it).
public struct HTTPURL: Sendable, Hashable, CustomStringConvertible {
    public var scheme: String
    public var user: String?
    public var password: String?
    public var host: String
    public var port: Int
    public var path: String
    public var query: String?
    public var fragment: String?
    public init(_ string: String) throws(HTTPClientError) {
        let parts = string.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 3 else { throw .invalidURL("no scheme") }
        scheme = String(parts[0].dropLast()).lowercased()
        var rest = String(string.dropFirst(parts[0].count + 2))
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = String(rest[..<slash]); rest = String(rest[slash...])
        if let c = authority.lastIndex(of: ":") { host = String(authority[..<c]); port = Int(authority[authority.index(after: c)...]) ?? 0 } else { host = authority; port = scheme == "https" ? 443 : 80 }
        path = rest.isEmpty ? "/" : rest
    }
    public var requestTarget: String { path + (query.map { "?" + $0 } ?? "") }
    public var hostHeader: String { host + ":\(port)" }
    public var isSecure: Bool { scheme == "https" }
    public var description: String { "\(scheme)://\(hostHeader)\(requestTarget)" }
}
