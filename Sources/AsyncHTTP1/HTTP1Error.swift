/// What the sans-IO HTTP/1 layer reports: bytes that are not a valid response, a head over its limits, input
/// that ended early, or a request that cannot be encoded.
///
/// This target knows nothing of the client: the transport turns an `HTTP1Error` into the client's public
/// error (`HTTPClientError(_:)` in AsyncHTTPCore), keeping the code and the words.
package struct HTTP1Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. The names match the client's error codes they become.
    package enum Code: String, Sendable, Hashable {
        /// The bytes are not a valid HTTP/1.x response.
        case malformedResponse
        /// The head (or trailer section) exceeded its size or field-count limit.
        case headerLimitExceeded
        /// The input ended before the response was complete.
        case connectionClosed
        /// The request cannot be encoded: a CR, LF or NUL in a header, an invalid method or target.
        case invalidRequest
    }

    package var code: Code
    package var message: String
    /// For ``Code/connectionClosed``: how many bytes of the response had arrived.
    package var bytesReceived: Int?

    package init(_ code: Code, _ message: String, bytesReceived: Int? = nil) {
        self.code = code
        self.message = message
        self.bytesReceived = bytesReceived
    }

    package var description: String { code.rawValue + ": " + message }

    package static func malformedResponse(_ message: String) -> Self { .init(.malformedResponse, message) }
    package static func headerLimitExceeded(_ message: String) -> Self { .init(.headerLimitExceeded, message) }
    package static func invalidRequest(_ message: String) -> Self { .init(.invalidRequest, message) }
    package static func connectionClosed(_ message: String, bytesReceived: Int) -> Self {
        .init(.connectionClosed, message, bytesReceived: bytesReceived)
    }
}
