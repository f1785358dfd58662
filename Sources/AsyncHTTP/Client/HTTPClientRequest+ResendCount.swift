/// How many times a request was sent before within one ``HTTPClient/send(_:)``: set by the redirect and
/// authentication steps on the request they send next.
struct ResendCountOption: HTTPRequestOption, Sendable {
    static var defaultValue: Int { 0 }
}

extension HTTPClientRequest {
    /// How many times this request was already sent within the current ``HTTPClient/send(_:)``: 0 for the
    /// request as the caller made it, one more for each redirect hop and each authentication round before
    /// it (OpenTelemetry's `http.request.resend_count`). A middleware sees it on the request it is given;
    /// a retry on a fresh connection below the middleware (a stale keep-alive connection, a timeout) is
    /// reported to observers as ``HTTPClientEvent/Kind/retry(reason:)`` instead.
    public internal(set) var resendCount: Int {
        get { self[ResendCountOption.self] }
        set { self[ResendCountOption.self] = newValue }
    }
}
