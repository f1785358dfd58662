/// How a client answers `401` and `407` challenges: where credentials come from, and what it may send.
///
/// Credentials for a challenge are looked up in this order, as ASIHTTPRequest's flowchart does: the URL's
/// userinfo, ``HTTPClientRequest/credentials`` (or the proxy's own ``ProxyConfiguration/credentials``), the
/// ``sessionStore``, the ``persistentStore``, and finally ``authenticationNeeded`` (or
/// ``proxyAuthenticationNeeded``). A request that brings credentials of its own (URL userinfo or
/// ``HTTPClientRequest/credentials``) never goes out with the stores' or a remembered success's: the stores
/// answer only requests that bring none. Credentials are kept in the session store and, when there is one,
/// the persistent store only after a response shows they were accepted (a 2xx or 3xx); credentials that
/// fail are removed from the store they came from. Removing credentials from either store (such as
/// ``InMemoryCredentialStore/removeAll()``, to log out) makes the client forget everything derived from them.
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// configuration.authentication.authenticationNeeded = { challenge in
///     guard challenge.failureCount < 2 else { return nil }   // give up after two wrong passwords
///     return await askUser(challenge.space)
/// }
/// ```
public struct AuthenticationConfiguration: Sendable {
    /// Credentials that worked, kept in memory for the client's lifetime and shared by its requests
    /// (ASIHTTPRequest's `useSessionPersistence`, on by default there too). nil turns it off.
    public var sessionStore: InMemoryCredentialStore? = InMemoryCredentialStore()
    /// Credentials kept across runs (ASIHTTPRequest's keychain, `useKeychainPersistence`, off by default):
    /// read when nothing earlier in the order has credentials, and written when credentials succeed.
    public var persistentStore: (any CredentialStore)?
    /// Asked for credentials when no other source has them (ASIHTTPRequest's `authenticationNeeded`).
    /// Return nil to give up: the request then fails with `HTTPClientError.Code.authenticationFailed`.
    ///
    /// A client asks one question at a time: requests that need the same protection space while it is
    /// being asked wait for the answer and use it too.
    public var authenticationNeeded: AuthenticationHandler?
    /// The same for proxies (ASIHTTPRequest's `proxyAuthenticationNeeded`).
    public var proxyAuthenticationNeeded: AuthenticationHandler?
    /// After a scheme succeeds on an origin, send its credentials with later requests to that origin before
    /// being challenged, saving a round trip (ASIHTTPRequest's `shouldPresentCredentialsBeforeChallenge`,
    /// on by default there too). Applies to Basic and Digest; NTLM authenticates a connection, not a request.
    /// Only for requests that bring no credentials of their own: those send their own (Basic) or wait for the
    /// challenge (Digest).
    public var presentsCredentialsAfterSuccess = true
    /// Whether Basic credentials and Bearer tokens, which put the secret itself on the wire, may go to an
    /// origin over plain `http`, where anyone on the path can read them (the name predates Bearer). Off by
    /// default: a Basic challenge over `http` is then answered with nothing and a warning is logged, and a
    /// request that carries credentials or a ``HTTPClientRequest/bearerToken`` of its own fails with
    /// `HTTPClientError.Code.authenticationFailed` before anything is sent, whether they would go in answer
    /// to a challenge or before one (``HTTPClientRequest/sendsCredentialsPreemptively``). Loopback hosts are
    /// not exempt. Proxies are: HTTP proxies are plain by nature, and curl and ASIHTTPRequest send Basic to them.
    public var allowsBasicOverPlainHTTP = false
    /// Called once when a request sent with ``HTTPClientRequest/bearerToken`` gets a `401`, with the rejected
    /// token; return a fresh token to retry once with it, or nil to return the `401` as it is.
    public var refreshBearerToken: (@Sendable (_ url: String, _ rejectedToken: String) async throws -> String?)?
    /// How often ``authenticationNeeded`` is asked again for one request after the credentials it gave were
    /// refused. 3: a person gets three tries, as at most login prompts.
    public var maxCallbackAttempts = 3

    /// The defaults: a session store, no persistent store, no callbacks.
    public init() {}
}

/// Answers a challenge with credentials, or nil to give up.
public typealias AuthenticationHandler = @Sendable (AuthenticationChallenge) async -> HTTPCredentials?

/// What ``AuthenticationConfiguration/authenticationNeeded`` is told about a challenge.
public struct AuthenticationChallenge: Sendable, CustomStringConvertible {
    /// Where the credentials would apply.
    public var space: ProtectionSpace
    /// The URL of the request that was challenged.
    public var url: String
    /// How many credentials were already refused in this space for this request
    /// (ASIHTTPRequest's `authenticationRetryCount`).
    public var failureCount: Int
    /// The user name that was refused last, if any (never the password).
    public var previousUsername: String?

    /// The space, URL and failure count; never a password.
    public var description: String {
        "\(space) for \(url), \(failureCount) refused"
    }
}
