import HTTPTypes

// Secrets never appear in text: log lines, error descriptions, printed URLs and headers. URLs are redacted
// by `HTTPURL.redactedDescription` (a parsed URL) and `HTTPURL.redacting(_:)` (text that may hold one);
// header fields by `HTTPFields.redactingSecrets(also:)` below. `HTTPCredentials.description` never shows
// the password.

extension HTTPFields {
    /// The fields whose values are secrets: `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, and
    /// `X-Amz-Security-Token` (an AWS session token, which `ahttp --aws-sigv4` users pass with `-H`).
    public static let secretFieldNames: Set<HTTPField.Name> = [
        .authorization, .proxyAuthorization, .cookie, .setCookie, HTTPField.Name("X-Amz-Security-Token")!,
    ]

    /// These fields with every secret value replaced, for logs and `-v` output: `Authorization` and
    /// `Proxy-Authorization` keep their scheme (`Basic <redacted>`), `Cookie`, `Set-Cookie` and the fields
    /// in `also` (API keys, ``HTTPClientRequest/sensitiveHeaders``) become `<redacted>`.
    ///
    /// ```swift
    /// for field in request.headers.redactingSecrets(also: request.sensitiveHeaders) {
    ///     logger.debug("> \(field.name): \(field.value)")
    /// }
    /// ```
    public func redactingSecrets(also extra: Set<HTTPField.Name> = []) -> HTTPFields {
        var redacted = HTTPFields()
        redacted.reserveCapacity(count)
        for field in self {
            guard Self.secretFieldNames.contains(field.name) || extra.contains(field.name) else {
                redacted.append(field)
                continue
            }
            var value = "<redacted>"
            if field.name == .authorization || field.name == .proxyAuthorization,
               let space = field.value.firstIndex(of: " ") {
                value = field.value[..<space] + " <redacted>"
            }
            redacted.append(HTTPField(name: field.name, value: value))
        }
        return redacted
    }
}
