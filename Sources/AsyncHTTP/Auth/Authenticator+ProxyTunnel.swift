/// The client's authenticator answers the transport's `CONNECT` challenges: the dependency points from Auth
/// down to the transport's protocol, never from the transport up into Auth.
extension Authenticator: ProxyTunnelAuthenticator {
    nonisolated func beginTunnel(through proxy: ProxyConfiguration, authority: String) throws(HTTPClientError) -> AuthExchange {
        // An HTTPS proxy's space is its own: what succeeded over TLS to it is never sent to an http:// proxy on the
        // same host and port.
        AuthExchange(
            isProxy: true, scheme: proxy.kind == .https ? "https" : "http", host: proxy.host, port: proxy.port, target: try HTTPURL("https://\(authority)/"),
            urlCredentials: nil, requestCredentials: proxy.credentials, allowedSchemes: proxy.authenticationSchemes)
    }

    // `body: []`: CONNECT has no content (RFC 9110 §9.3.6), so a proxy that offers only `qop=auth-int` is
    // answered with the hash of the empty body, as for any request without one.
    func authorization(before exchange: inout AuthExchange, authority: String, basicRequested: Bool) async throws(HTTPClientError) -> String? {
        try preemptiveAuthorization(for: &exchange, method: "CONNECT", uri: authority, body: [], basicRequested: basicRequested)
    }

    func answer(_ challenges: [String], exchange: inout AuthExchange, authority: String) async throws(HTTPClientError) -> String? {
        try await respond(to: AuthChallenge.parse(challenges), exchange: &exchange, method: "CONNECT", uri: authority, body: [])?.value
    }

    func accepted(_ exchange: AuthExchange) async {
        if exchange.current != nil { await succeeded(exchange) }
    }

    nonisolated func needsSameConnection(_ exchange: AuthExchange) -> Bool { exchange.needsSameConnection }

    nonisolated func wasRefused(_ exchange: AuthExchange) -> Bool { exchange.failures > 0 }
}
