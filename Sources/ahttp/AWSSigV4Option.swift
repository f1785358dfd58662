// curl's --aws-sigv4 for ahttp: `--aws-sigv4 'aws:amz[:REGION[:SERVICE]]' -u ACCESS_KEY:SECRET_KEY` signs every
// request with AWS Signature Version 4 (AsyncHTTPS3's AWSSigningMiddleware) instead of sending -u as Basic.
// Kept apart from main.swift so the argument-parser rewrite can call it as it is.

import AsyncHTTP
import AsyncHTTPS3

/// A bad `--aws-sigv4` setting, with curl's exit code: 43 (CURLE_BAD_FUNCTION_ARGUMENT), what curl's
/// `http_aws_sigv4.c` returns for a provider string or a host it cannot read.
struct AWSSigV4OptionError: Error, CustomStringConvertible {
    var message: String
    var exitCode: Int32 = 43
    var description: String { message }
}

/// `--aws-sigv4 PROVIDER` with `-u USER`, read once: the keys, and the region and service when the provider names
/// them.
///
/// `provider` is curl's `provider1[:provider2[:region[:service]]]`: provider1 must be `aws` (the
/// `AWS4-HMAC-SHA256` algorithm) and provider2, when given, `amz` (the `X-Amz-` header prefix); other providers
/// (`goog`, `osc`) sign with other algorithm names and are refused. A region or service left out is read from
/// each request's host as curl does (`SERVICE.REGION.amazonaws.com`, ``scope(for:)``). `user` is
/// `ACCESS_KEY:SECRET_KEY`; a session token goes in a header, `-H 'x-amz-security-token: …'`, and is signed with
/// the rest (the signer keeps a token header when the credentials hold none, as botocore does).
///
/// The secret never appears in an error message.
struct AWSSigV4Provider: Sendable {
    var credentials: AWSCredentials
    /// From the provider string; nil (or empty there) when it is read from the host.
    var region: String?
    var service: String?

    init(provider: String, user: HTTPCredentials?) throws(AWSSigV4OptionError) {
        let parts = provider.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 4, let first = parts.first, !first.isEmpty else {
            throw AWSSigV4OptionError(message: "--aws-sigv4: '\(provider)' is not provider1[:provider2[:region[:service]]]")
        }
        guard first.lowercased() == "aws" else {
            throw AWSSigV4OptionError(message: "--aws-sigv4: provider '\(first)' is not supported (only 'aws', AWS4-HMAC-SHA256)")
        }
        if parts.count > 1, parts[1].lowercased() != "amz" {
            throw AWSSigV4OptionError(message: "--aws-sigv4: provider2 '\(parts[1])' is not supported (only 'amz', X-Amz- headers)")
        }
        guard let user, !user.username.isEmpty, !user.password.isEmpty else {
            throw AWSSigV4OptionError(message: "--aws-sigv4 needs the keys as -u ACCESS_KEY:SECRET_KEY")
        }
        credentials = AWSCredentials(accessKeyID: user.username, secretAccessKey: user.password)
        region = parts.count > 2 && !parts[2].isEmpty ? parts[2] : nil
        service = parts.count > 3 && !parts[3].isEmpty ? parts[3] : nil
    }

    /// The region and service a request to `url` (as sent: scheme added, userinfo removed) is signed for: the
    /// provider's, else read from the URL's host, the first label the service and the second the region
    /// (s3.eu-west-1.amazonaws.com), as curl reads the host of each transfer.
    func scope(for url: String) throws(AWSSigV4OptionError) -> (region: String, service: String) {
        if let region, let service { return (region, service) }
        let parsed = try? HTTPURL(url)
        let host = parsed?.host ?? ""
        let labels = host.split(separator: ".").map(String.init)
        guard let parsed, labels.count >= 3, !parsed.isIPAddress else {
            throw AWSSigV4OptionError(message: "--aws-sigv4: give the region and service ('aws:amz:REGION:SERVICE'): "
                + "they cannot be read from the host '\(host)'")
        }
        return (region ?? labels[1], service ?? labels[0])
    }
}

/// Signs each request for the region and service of its own URL (``AWSSigV4Provider/scope(for:)``), so every URL
/// of a command line is signed for its host, not the first URL's. With `origin` (`--archive`: the page's), only
/// requests to that origin are signed: a resource the page names on another host goes out unsigned, as the page's
/// credentials do not go there either.
struct CommandLineAWSSigning: HTTPClientMiddleware {
    let provider: AWSSigV4Provider
    var origin: String? = nil

    /// `scheme://host:port` of `url`, nil when it does not parse.
    static func origin(of url: String) -> String? {
        (try? HTTPURL(url)).map { "\($0.scheme)://\($0.host):\($0.port)" }
    }

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        // A hop to another origin goes out unsigned (AWSSigningMiddleware's rule), whatever its host names.
        guard !request.isRedirectedFromAnotherOrigin else { return try await next(request) }
        if let origin, Self.origin(of: request.url) != origin { return try await next(request) }
        let scope: (region: String, service: String)
        do {
            scope = try provider.scope(for: request.url)
        } catch {
            // main.swift checks each URL before sending it (exit 43); a hop within the origin has the same host.
            throw HTTPClientError(.invalidRequest, error.message)
        }
        let signer = AWSSigV4Signer(credentials: provider.credentials, region: scope.region, service: scope.service)
        return try await AWSSigningMiddleware(signer: signer).intercept(request, next: next)
    }
}
