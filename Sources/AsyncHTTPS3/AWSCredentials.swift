/// The keys that sign a request with AWS Signature Version 4: an access key ID, its secret, and for temporary
/// credentials (STS, an instance role) a session token.
///
/// The secret and the token never appear in `description`, `debugDescription` or a mirror, so printing or
/// logging credentials (or an error holding them) shows only the access key ID.
///
/// ```swift
/// let credentials = AWSCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: secret)
/// print(credentials)   // AWSCredentials(accessKeyID: AKIDEXAMPLE, secretAccessKey: <redacted>)
/// ```
public struct AWSCredentials: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The access key ID (`AKIA…`, `ASIA…` for temporary keys). Not a secret: it is sent with every request.
    public var accessKeyID: String
    /// The secret access key. Only ever used as HMAC key material; never sent, printed or logged.
    public var secretAccessKey: String
    /// The session token of temporary credentials, sent as `X-Amz-Security-Token` (and signed).
    public var sessionToken: String?

    /// Credentials from their parts.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// The access key ID, with the secret and the token redacted.
    public var description: String {
        "AWSCredentials(accessKeyID: \(accessKeyID), secretAccessKey: <redacted>"
            + (sessionToken == nil ? ")" : ", sessionToken: <redacted>)")
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror with the secret and the token redacted, so `dump(credentials)` is safe too.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "accessKeyID": accessKeyID, "secretAccessKey": "<redacted>",
                "sessionToken": sessionToken == nil ? "nil" : "<redacted>",
            ])
    }
}
