
/// A URL for logs and telemetry (`url.full` as OpenTelemetry's HTTP conventions ask): no userinfo
/// (``HTTPURL/redactedDescription`` drops it, and the fragment), and the value of each query parameter whose name
/// looks like a secret replaced by `REDACTED` (presigned URLs carry a signature and a session token there).
enum URLRedaction {
    /// Names compared case-insensitively. The conventions' list (`AWSAccessKeyId`, `Signature`, `sig`,
    /// `X-Goog-Signature`), S3's presigned-URL parameters, and the usual names of tokens and keys.
    static let secretNames: Set<String> = [
        "awsaccesskeyid", "signature", "sig", "x-goog-signature", "x-goog-credential",
        "x-amz-signature", "x-amz-credential", "x-amz-security-token",
        "token", "access_token", "refresh_token", "id_token", "auth", "authorization",
        "key", "api_key", "apikey", "api-key", "password", "passwd", "pwd", "secret", "client_secret", "code",
    ]

    static func loggable(_ url: HTTPURL) -> String {
        let text = url.redactedDescription
        guard url.query != nil, let mark = text.firstIndex(of: "?") else { return text }
        let query = text[text.index(after: mark)...]
        return text[...mark] + redactQuery(query)
    }

    static func redactQuery(_ query: Substring) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let name = pair[..<equals]
            guard secretNames.contains(percentDecoded(name).lowercased()) else { return String(pair) }
            return name + "=REDACTED"
        }.joined(separator: "&")
    }
}

extension HTTPURL {
    /// The URL as log lines and telemetry show it: ``redactedDescription`` (no userinfo, no fragment) with the
    /// value of each query parameter whose name looks like a secret (`X-Amz-Signature`, `X-Amz-Security-Token`,
    /// `sig`, `token`, `api_key`, `password`, …) replaced by `REDACTED`.
    ///
    /// ```swift
    /// try HTTPURL("https://b.example/k?X-Amz-Signature=abc&part=2").loggableDescription
    /// // "https://b.example/k?X-Amz-Signature=REDACTED&part=2"
    /// ```
    public var loggableDescription: String { URLRedaction.loggable(self) }
}

/// `%41` → `A`; an invalid escape is kept as it is (a query parameter's name for ``URLRedaction``, a URL's
/// percent-encoded userinfo for the CLI, RFC 3986 §3.2.1).
package func percentDecoded(_ text: some StringProtocol) -> String {
    guard text.contains("%") else { return String(text) }
    var bytes: [UInt8] = []
    var utf8 = Array(text.utf8)[...]
    while let byte = utf8.popFirst() {
        if byte == UInt8(ascii: "%"), utf8.count >= 2,
           let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
            bytes.append(value)
            utf8 = utf8.dropFirst(2)
        } else {
            bytes.append(byte)
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}
