/// An HTTP/1.x protocol version.
public struct HTTPVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The major version: 1.
    public var major: Int
    /// The minor version: 0 or 1.
    public var minor: Int

    /// A version from its two numbers; use ``http1_0`` or ``http1_1``.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// HTTP/1.0: no persistent connections unless the server offers `Connection: keep-alive`,
    /// no chunked request bodies. ASIHTTPRequest's `useHTTPVersionOne`.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1, the default.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// Orders versions by major, then minor number.
    public static func < (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }

    /// `HTTP/1.1`, as on the wire.
    public var description: String { "HTTP/\(major).\(minor)" }
}
