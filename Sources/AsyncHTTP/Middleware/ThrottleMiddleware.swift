import Logging

/// The throttle step (sixth and innermost of the built-in chain): gives a request with its own
/// ``HTTPClientRequest/maxBandwidthPerSecond`` a bucket of its own for the transport to pace its bytes with.
///
/// The pacing itself happens where bytes cross the socket: the connection asks its ``TransferPacer`` before
/// each read and write. Every request goes through the client's shared limit there
/// (``HTTPClient/maxBandwidthPerSecond``, ASIHTTPRequest's `+setMaxBandwidthPerSecond:`); this step only adds a
/// request's own limit, once per hop (a redirect's next hop starts a fresh allowance). Innermost, so every hop
/// and every authentication round is paced, and nothing above it (the cache) is.
struct ThrottleMiddleware: HTTPClientMiddleware {
    let flow: NetworkFlow
    /// The `throttling` topic's logger (ASIHTTPRequest's `DEBUG_THROTTLING`).
    var logger: Logger? = nil

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        // 0 or less: no limit of its own, as nil (curl's `--limit-rate 0`; it used to fail the request).
        guard let limit = request.maxBandwidthPerSecond, limit > 0 else { return try await next(request) }
        return try await next(paced(request, limit: limit))
    }

    /// `request` with a pacer of its own. Synchronous and not inlined, so its temporaries (the log line) stay on
    /// the thread's stack instead of in every request's async frame.
    @inline(never)
    private func paced(_ request: HTTPClientRequest, limit: Int) -> HTTPClientRequest {
        var request = request
        logger?.debug("request limited to \(limit) bytes/s", metadata: ["url": "\((try? HTTPURL(request.url))?.loggableDescription ?? HTTPURL.redacting(request.url))"])
        request[PacerOption.self] = flow.pacer(requestLimit: limit)
        return request
    }
}

/// The throttle step → transport: the pacer of a request with a limit of its own (internal).
enum PacerOption: HTTPRequestOption {
    static let defaultValue: TransferPacer? = nil
}
