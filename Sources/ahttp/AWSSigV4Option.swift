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

/// The signing middleware for `--aws-sigv4 PROVIDER` with `-u USER`.
///
/// `provider` is curl's `provider1[:provider2[:region[:service]]]`: provider1 must be `aws` (the
/// `AWS4-HMAC-SHA256` algorithm) and provider2, when given, `amz` (the `X-Amz-` header prefix); other providers
/// (`goog`, `osc`) sign with other algorithm names and are refused. A region or service left out is read from
/// the host as curl does (`SERVICE.REGION.amazonaws.com`). `user` is `ACCESS_KEY:SECRET_KEY`; a session token
/// goes in a header, `-H 'x-amz-security-token: …'`, and is signed with the rest.
///
/// The secret never appears in an error message.
func awsSigV4Middleware(provider: String, user: HTTPCredentials?, firstURL: String?) throws(AWSSigV4OptionError)
    -> AWSSigningMiddleware
{
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
    var region = parts.count > 2 ? parts[2] : ""
    var service = parts.count > 3 ? parts[3] : ""
    if region.isEmpty || service.isEmpty {
        // curl: the host's first label is the service, the second the region (s3.eu-west-1.amazonaws.com).
        let host = firstURL.flatMap { try? HTTPURL($0) }?.host ?? ""
        let labels = host.split(separator: ".").map(String.init)
        guard labels.count >= 3, !(firstURL.flatMap { try? HTTPURL($0) }?.isIPAddress ?? true) else {
            throw AWSSigV4OptionError(message: "--aws-sigv4: give the region and service ('aws:amz:REGION:SERVICE'): "
                + "they cannot be read from the host '\(host)'")
        }
        if service.isEmpty { service = labels[0] }
        if region.isEmpty { region = labels[1] }
    }
    let credentials = AWSCredentials(accessKeyID: user.username, secretAccessKey: user.password)
    return AWSSigningMiddleware(signer: AWSSigV4Signer(credentials: credentials, region: region, service: service))
}
