/// The two header values the client sends in an NTLM handshake, from ``HTTPCredentials``: the domain is the
/// credentials' own, or the `DOMAIN\` prefix of the user name.
enum NTLMAuthentication {
    static func names(_ credentials: HTTPCredentials) -> (user: String, domain: String) {
        if let domain = credentials.domain { return (credentials.username, domain) }
        return NTLM.splitUsername(credentials.username)
    }

    /// `NTLM <NEGOTIATE_MESSAGE>`.
    static func negotiateValue(credentials: HTTPCredentials) -> String {
        let (_, domain) = names(credentials)
        return NTLM.authorizationValue(NTLM.negotiateMessage(domain: domain.isEmpty ? nil : domain, workstation: credentials.workstation))
    }

    /// `NTLM <AUTHENTICATE_MESSAGE>` answering the server's base64 CHALLENGE_MESSAGE, with a fresh client
    /// challenge and session key.
    static func authenticateValue(challengeToken: String, credentials: HTTPCredentials) throws(HTTPClientError) -> String {
        guard let bytes = Base64.decode(challengeToken) else {
            throw HTTPClientError(.authenticationFailed, "the NTLM challenge message is not valid base64")
        }
        let challenge = try NTLM.Challenge(decoding: bytes)
        let (user, domain) = names(credentials)
        let message = try NTLM.authenticateMessage(
            challenge: challenge, username: user, password: credentials.password, domain: domain,
            workstation: credentials.workstation ?? "", clientChallenge: secureRandomBytes(8),
            timestamp: challenge.timestamp ?? NTLM.fileTime(unixSeconds: SystemClock.secondsSince1970()),
            exportedSessionKey: secureRandomBytes(16))
        return NTLM.authorizationValue(message)
    }
}
