import AsyncHTTP1
import HTTPTypes

/// The one error type AsyncHTTP throws.
///
/// Switch on ``code`` to decide what to do; ``description`` fits in one log line and says what
/// went wrong in words a person can act on:
///
/// ```swift
/// do {
///     let response = try await client.send(request)
/// } catch let error as HTTPClientError where error.code == .timeout {
///     print("gave up:", error)   // "timeout (connect): no connection to example.com:443 within 10 s"
/// }
/// ```
public struct HTTPClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. One case per thing that can go wrong.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The URL could not be parsed or has an unsupported scheme.
        case invalidURL
        /// The request itself is unacceptable: a CR, LF or NUL in a header, an invalid method, a bad body.
        case invalidRequest
        /// Name resolution failed (`getaddrinfo`).
        case dnsFailure
        /// No TCP connection could be made; ``HTTPClientError/errno`` holds the reason.
        case connectFailed
        /// The TLS handshake failed for a reason other than the peer's certificate.
        case tlsHandshakeFailed
        /// The peer's certificate was not trusted or did not match the host name.
        case certificateInvalid
        /// A timeout fired; ``HTTPClientError/timeoutPhase`` says which.
        case timeout
        /// The connection closed before the response was complete.
        case connectionClosed
        /// A read or write on the socket failed; ``HTTPClientError/errno`` holds the reason.
        case ioFailure
        /// The server sent bytes that are not a valid HTTP/1.x response.
        case malformedResponse
        /// The response head exceeded the configured size or field-count limit.
        case headerLimitExceeded
        /// The response body exceeded the limit given to `collect(upTo:)` or a decompression limit.
        case bodyLimitExceeded
        /// The task was cancelled.
        case cancelled
        /// The client has been shut down.
        case shutdown
        /// Too many redirects were followed.
        case tooManyRedirects
        /// A redirect led back to a URL already visited.
        case redirectLoop
        /// A redirect was refused for safety (an https → http downgrade, or an unsupported scheme).
        case redirectRefused
        /// The request would have to be sent again (redirect, authentication, retry) but its body is a
        /// one-shot stream.
        case bodyNotReplayable
        /// Compressed content was corrupt or truncated.
        case decompressionFailed
        /// Authentication could not be completed (credentials refused, callback cancelled, bad challenge).
        case authenticationFailed
        /// A proxy refused or failed the request.
        case proxyFailed
        /// Another task is already reading this response body: a streamed body has one reader at a time.
        case bodyInUse
        /// A configuration value is out of its range (a negative connection limit, a zero timeout).
        case invalidConfiguration
    }

    /// The phase a ``Code/timeout`` happened in.
    public enum TimeoutPhase: String, Sendable, Hashable {
        /// Opening the TCP connection (`HTTPClient.Configuration.connectTimeout`; with a proxy, to the proxy).
        case connect
        /// The TLS handshake (within the connect timeout).
        case tlsHandshake = "tls handshake"
        /// Waiting for a pooled connection to be free (the host's connection limit was reached).
        case poolWait = "waiting for a connection"
        /// Writing the request: the socket took no bytes for the inactivity timeout.
        case write
        /// Waiting for the response head: no bytes for the inactivity timeout.
        case head = "waiting for the response head"
        /// Reading the body: no bytes for the inactivity timeout.
        case body = "reading the body"
        /// The request's total deadline (`HTTPClientRequest.timeout`) passed, whatever it was doing.
        case total = "total deadline"
        /// The transfer moved too few bytes: fewer than a `LowSpeedLimit`'s `bytesPerSecond` on average over its
        /// `duration` (curl's `--speed-limit` and `--speed-time`). Unlike the inactivity timeout, a trickle of
        /// bytes does not keep the request alive.
        case lowSpeed = "low speed"
    }

    /// What kind of failure this is.
    public var code: Code
    /// A human-readable detail: what was wrong, and where.
    public var message: String
    /// The `errno` behind a socket failure, when there was one.
    public var errno: Int32?
    /// The phase a timeout happened in.
    public var timeoutPhase: TimeoutPhase?
    /// For ``Code/connectionClosed``: how many bytes of the response had arrived.
    public var bytesReceived: Int?
    /// For TLS failures: OpenSSL's reason string, and for certificates the verification result.
    public var tlsReason: String?
    /// For ``Code/proxyFailed``: the HTTP proxy's status to `CONNECT` when it refused the tunnel (a `407` that
    /// could not be answered, a `403`); nil for the other proxy failures (SOCKS, a connection closed unanswered).
    public var proxyStatus: Int?
    /// For ``Code/proxyFailed`` when an HTTP proxy refused `CONNECT`: each `CONNECT` of the attempt and the proxy's
    /// answer, oldest first, the refusal last (a `407` answered on the way comes before it). curl's `-i` and `-D` show
    /// these answers, and `-v` the requests too. Empty for the other failures.
    public var proxyRounds: [ProxyRound] = []

    /// Creates an error. The library makes these; middleware and tests may too.
    public init(
        _ code: Code, _ message: String, errno: Int32? = nil, timeoutPhase: TimeoutPhase? = nil,
        bytesReceived: Int? = nil, tlsReason: String? = nil
    ) {
        self.code = code
        self.message = message
        self.errno = errno
        self.timeoutPhase = timeoutPhase
        self.bytesReceived = bytesReceived
        self.tlsReason = tlsReason
    }

    /// One line: the code, the timeout phase, the message, the errno and the TLS reason. Never a secret.
    public var description: String {
        var text = code.rawValue
        if let timeoutPhase { text += " (\(timeoutPhase.rawValue))" }
        text += ": " + message
        if let errno { text += " [errno \(errno)]" }
        if let tlsReason { text += " [\(tlsReason)]" }
        return text
    }
}

extension HTTPClientError {
    package static func invalidURL(_ message: String) -> Self { .init(.invalidURL, message) }
    package static func invalidRequest(_ message: String) -> Self { .init(.invalidRequest, message) }
    package static func malformedResponse(_ message: String) -> Self { .init(.malformedResponse, message) }
    package static func headerLimitExceeded(_ message: String) -> Self { .init(.headerLimitExceeded, message) }
    package static func timeout(_ phase: TimeoutPhase, _ message: String) -> Self {
        .init(.timeout, message, timeoutPhase: phase)
    }
    package static func connectionClosed(_ message: String, bytesReceived: Int) -> Self {
        .init(.connectionClosed, message, bytesReceived: bytesReceived)
    }
    package static let cancelled = HTTPClientError(.cancelled, "the task was cancelled")
    package static let shutdown = HTTPClientError(.shutdown, "the client has been shut down")
}

extension HTTPClientError {
    /// The client's error for a failure of the sans-IO HTTP/1 layer: same code, same words.
    package init(_ error: HTTP1Error) {
        let code: Code = switch error.code {
        case .malformedResponse: .malformedResponse
        case .headerLimitExceeded: .headerLimitExceeded
        case .connectionClosed: .connectionClosed
        case .invalidRequest: .invalidRequest
        }
        self.init(code, error.message, bytesReceived: error.bytesReceived)
    }

    /// Runs a step of the HTTP/1 layer, turning its error into the client's.
    package static func mapping<T>(_ body: () throws(HTTP1Error) -> T) throws(HTTPClientError) -> T {
        do { return try body() } catch { throw HTTPClientError(error) }
    }
}

/// One `CONNECT` a proxy answered while a tunnel was being opened, and its answer: what
/// ``HTTPClientError/proxyRounds`` holds when the proxy refused the tunnel.
public struct ProxyRound: Sendable, Hashable {
    /// The `CONNECT` request head as it was written, blank line included, except that the credentials in a
    /// `Proxy-Authorization` field are replaced by `<redacted>` (its scheme is kept): an error carries no secret.
    public var request: String
    /// The proxy's status and reason phrase.
    public var status: HTTPResponse.Status
    /// The proxy's HTTP version.
    public var version: HTTPVersion
    /// The answer's fields.
    public var headers: HTTPFields

    /// Creates a round from its parts.
    public init(request: String, status: HTTPResponse.Status, version: HTTPVersion, headers: HTTPFields) {
        self.request = request
        self.status = status
        self.version = version
        self.headers = headers
    }
}
