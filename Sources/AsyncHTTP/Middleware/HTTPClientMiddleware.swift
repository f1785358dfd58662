/// A step between ``HTTPClient/send(_:)`` and the transport (which leases a connection and speaks HTTP/1).
///
/// A middleware receives the request and `next`, the rest of the chain. It may change the request,
/// answer without calling `next` (a cache hit), call `next` more than once (a redirect or an
/// authentication retry), and wrap the response body (decompression, throttling):
///
/// ```swift
/// struct RequestID: HTTPClientMiddleware {
///     func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
///         var request = request
///         request.headers[HTTPField.Name("X-Request-ID")!] = String(UInt64.random(in: .min ... .max), radix: 16)
///         return try await next(request)
///     }
/// }
/// ```
///
/// A middleware with per-request settings declares an ``HTTPRequestOption`` for them and reads it from
/// the request, so adding one needs no change to ``HTTPClientRequest``:
///
/// ```swift
/// enum RequestIDPrefix: HTTPRequestOption {
///     static let defaultValue = "req"
/// }
///
/// // in intercept:
/// let prefix = request[RequestIDPrefix.self]
/// ```
///
/// Middleware changes requests; watching them (logging, metrics, progress) belongs to observers,
/// which see the traffic without being able to alter it.
///
/// To change a response, change the one `next` returned (`var response = try await next(request)`) rather than
/// building a new ``HTTPClientResponse``: what the client noted on it travels up the chain with it, such as
/// whether the request the transport sent carried `Authorization` (added by a step below the cache, such as
/// yours), which the cache reads before it stores an answer (RFC 9111 §3.5).
public protocol HTTPClientMiddleware: Sendable {
    /// The rest of the chain, ending at the transport.
    typealias Next = (HTTPClientRequest) async throws -> HTTPClientResponse

    /// Handles one request: change it and call `next`, call `next` several times, or answer without it.
    ///
    /// - Parameters:
    ///   - request: the request as the middleware outside this one passed it on.
    ///   - next: the rest of the chain; call it to send a request on.
    /// - Returns: the response for the middleware outside this one (or for ``HTTPClient/send(_:)``).
    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse
}

/// A middleware chain composed in front of its terminal.
typealias MiddlewareChain = @Sendable (HTTPClientRequest) async throws -> HTTPClientResponse

/// `middleware` (outermost first) in front of `terminal`, composed once into one function: each request then
/// runs one closure per step (an async frame of a few hundred bytes), and nothing is made per request.
func composeChain(_ middleware: [any HTTPClientMiddleware], terminal: @escaping MiddlewareChain) -> MiddlewareChain {
    var chain = terminal
    for step in middleware.reversed() {
        chain = link(step, to: chain)
    }
    return chain
}

/// One step in front of `next`. The built-in steps are called by their concrete types: through the protocol, each
/// step of each request runs a witness thunk too, an async frame of its own with its own resumption.
private func link(_ step: any HTTPClientMiddleware, to next: @escaping MiddlewareChain) -> MiddlewareChain {
    switch step {
    case let step as RedirectMiddleware: { request in try await step.intercept(request, next: next) }
    case let step as AuthMiddleware: { request in try await step.intercept(request, next: next) }
    case let step as CookieMiddleware: { request in try await step.intercept(request, next: next) }
    case let step as CompressionMiddleware: { request in try await step.intercept(request, next: next) }
    case let step as ThrottleMiddleware: { request in try await step.intercept(request, next: next) }
    default: { request in try await step.intercept(request, next: next) }
    }
}
