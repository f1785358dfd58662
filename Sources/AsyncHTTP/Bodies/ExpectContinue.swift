/// When a request body waits for the server's go-ahead: `Expect: 100-continue` (RFC 9110 §10.1.1).
///
/// A large body first sends only the head with `Expect: 100-continue`, then waits up to ``timeout`` for an
/// answer. `100 Continue` (or the timeout: many servers never send 100) lets the body go. A final status that
/// arrives first — `401`, `407`, `413`, `417` … — is the answer: the body is not sent at all, the connection is
/// closed after that response (the server is still owed a body it will never get), and an authentication retry
/// uploads the body once, not twice. A `417 Expectation Failed` before the body is retried once without the
/// expectation, as RFC 9110 §10.1.1 asks, when the body can be sent again.
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// configuration.expectContinue = ExpectContinuePolicy(minimumBodySize: 64 * 1024, timeout: .milliseconds(500))
/// request.expectContinue = .never      // this request: no waiting
/// ```
///
/// Only HTTP/1.1 requests with a body use it. A request whose headers already carry `Expect: 100-continue`
/// follows the same rules whatever the policy says.
public struct ExpectContinuePolicy: Sendable, Hashable {
    /// Bodies of at least this many bytes, and bodies of unknown length, wait for the go-ahead; nil: none do.
    /// 1 MiB: curl's threshold (`EXPECT_100_THRESHOLD`); a smaller body costs less to send in vain than a
    /// round trip costs to ask.
    public var minimumBodySize: Int?
    /// How long to wait for `100 Continue` or a final status before sending the body anyway: 1 s, curl's
    /// default (`--expect100-timeout`, `CURLOPT_EXPECT_100_TIMEOUT_MS`).
    public var timeout: Duration

    /// Creates a policy; nil `minimumBodySize` never sends `Expect: 100-continue`.
    public init(minimumBodySize: Int? = 1 << 20, timeout: Duration = .seconds(1)) {
        self.minimumBodySize = minimumBodySize
        self.timeout = timeout
    }

    /// Bodies of 1 MiB and more wait up to 1 s (curl's behaviour).
    public static let `default` = ExpectContinuePolicy()
    /// No request waits: bodies go out right after the head.
    public static let never = ExpectContinuePolicy(minimumBodySize: nil)

    /// Whether a body of `length` bytes (nil: unknown) waits.
    func applies(toBodyLength length: Int?) -> Bool {
        guard let minimumBodySize else { return false }
        guard let length else { return true }
        return length > 0 && length >= minimumBodySize
    }
}

/// The transport's per-request `Expect: 100-continue` setting.
enum ExpectContinueOption: HTTPRequestOption {
    static let defaultValue: ExpectContinuePolicy? = nil
}

extension HTTPClientRequest {
    /// This request's `Expect: 100-continue` policy, replacing the client's
    /// ``HTTPClient/Configuration/expectContinue``; nil: the client's.
    public var expectContinue: ExpectContinuePolicy? {
        get { self[ExpectContinueOption.self] }
        set { self[ExpectContinueOption.self] = newValue }
    }
}
