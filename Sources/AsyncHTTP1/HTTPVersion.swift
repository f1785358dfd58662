/// An HTTP/1.x protocol version.
public struct HTTPVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// HTTP/1.0: no persistent connections unless the server offers `Connection: keep-alive`,
    /// no chunked request bodies. ASIHTTPRequest's `useHTTPVersionOne`.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1, the default.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    public static func < (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }

    public var description: String { "HTTP/\(major).\(minor)" }
}
