import AsyncHTTPCore
import HTTPTypes

// A request printed, interpolated into a log line or dumped shows no secret: the URL as log lines show it
// (`HTTPURL.loggableDescription`: no userinfo, no fragment, secret-looking query values such as a presigned
// URL's `X-Amz-Signature` redacted), `Authorization`, `Proxy-Authorization`, `Cookie`, `X-Amz-Security-Token`
// and the request's `sensitiveHeaders` as `<redacted>` (their scheme kept for the first two), and neither the
// bearer token nor the credentials. Swift's default description of the struct would print the headers' values, and `dump` would walk
// its storage into the token.

extension HTTPClientRequest: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The method and the URL as log lines show it (`HTTPURL.loggableDescription`: no userinfo or fragment,
    /// secret-looking query values as `REDACTED`): `GET https://example.com/a?b=c`.
    public var description: String {
        "\(method.rawValue) \(loggableURL)"
    }

    /// ``url`` without its secrets; a URL that does not parse loses at least its userinfo.
    private var loggableURL: String {
        (try? HTTPURL(url))?.loggableDescription ?? HTTPURL.redacting(url)
    }

    /// ``description`` and the header fields, every secret value redacted
    /// (`HTTPFields.redactingSecrets(also:)` with ``sensitiveHeaders``); the body only as its length.
    public var debugDescription: String {
        var text = description
        for field in headers.redactingSecrets(also: sensitiveHeaders) {
            text += "\n\(field.name): \(field.value)"
        }
        if let body { text += "\n(body: \(body.length.map { "\($0) bytes" } ?? "streamed"))" }
        return text
    }

    /// The method, the redacted URL and the redacted header fields: `dump(request)` and debuggers' views show
    /// neither the bearer token, the credentials nor a secret header's value.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "method": method.rawValue, "url": loggableURL,
                "headers": headers.redactingSecrets(also: sensitiveHeaders).map { "\($0.name): \($0.value)" },
                "hasCredentials": credentials != nil, "hasBearerToken": bearerToken != nil,
            ],
            displayStyle: .struct)
    }
}
