/// Whether a redirect took a request away from the origin the caller sent it to.
struct CrossOriginRedirectOption: HTTPRequestOption, Sendable {
    static var defaultValue: Bool { false }
}

extension HTTPClientRequest {
    /// True when a redirect took this request to an origin (scheme, host, port) other than the one the caller
    /// sent it to, at this hop or an earlier one (also when a later hop came back). Set by the redirect step.
    ///
    /// Credentials the caller gave belong to the first origin: the redirect step drops `Authorization`,
    /// ``credentials`` and ``bearerToken`` on such a hop, and middleware that adds credentials of its own
    /// should leave such a request alone, as `AWSSigningMiddleware` (AsyncHTTPS3) does (curl sends
    /// `--aws-sigv4` and `-u` only to the first host unless `--location-trusted`).
    public internal(set) var isRedirectedFromAnotherOrigin: Bool {
        get { self[CrossOriginRedirectOption.self] }
        set { self[CrossOriginRedirectOption.self] = newValue }
    }
}
