#if canImport(FoundationEssentials)
import FoundationEssentials
#elseif canImport(Foundation)
import Foundation
#endif
import AsyncHTTP

/// What `x-amz-content-sha256` says about the body, and what the canonical request's last line holds.
///
/// ```swift
/// try AWSPayload.bytes(Array("Welcome to Amazon S3.".utf8))   // its SHA-256, in hex
/// AWSPayload.unsigned                                          // UNSIGNED-PAYLOAD (S3, opt-in)
/// AWSPayload.streaming                                         // STREAMING-AWS4-HMAC-SHA256-PAYLOAD
/// ```
public enum AWSPayload: Sendable, Hashable {
    /// The SHA-256 of the body, as 64 lowercase hex digits.
    case sha256(String)
    /// `UNSIGNED-PAYLOAD`: the body is not covered by the signature (S3 accepts it; TLS protects the bytes).
    case unsigned
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: the body goes out as `aws-chunked` chunks, each signed with the
    /// previous chunk's signature (S3 only). See ``AWSChunkSigner``.
    case streaming

    /// The hash of an empty body.
    public static let empty = AWSPayload.sha256("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")

    /// The SHA-256 of `bytes`.
    public static func bytes(_ bytes: some Collection<UInt8>) throws(HTTPClientError) -> AWSPayload {
        .sha256(hex(try sha256Digest(bytes)))
    }

    /// The value of `x-amz-content-sha256` and the canonical request's last line.
    public var value: String {
        switch self {
        case .sha256(let hash): hash
        case .unsigned: "UNSIGNED-PAYLOAD"
        case .streaming: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
        }
    }
}

/// How the canonical request writes the path.
public enum AWSPathEncoding: Sendable, Hashable {
    /// Amazon S3: each segment URI-encoded once, the path not normalised (`a//b` and `.` are part of a key).
    case s3
    /// Every other service: `.`/`..`/empty segments removed, then the (already encoded) path encoded again,
    /// so `%20` becomes `%2520` ("each path segment must be URI-encoded twice").
    case standard
}

/// A request signed with AWS Signature Version 4: the headers to send and the steps that made them.
///
/// `description` leaves out the signature and the `Authorization` value, so printing one is safe.
public struct AWSSignedRequest: Sendable, CustomStringConvertible {
    /// The request's headers with `X-Amz-Date`, `X-Amz-Content-SHA256` (when added),
    /// `X-Amz-Security-Token` (for temporary credentials) and `Authorization` set.
    public var headers: HTTPFields
    /// The `Authorization` header value: `AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`.
    public var authorization: String
    /// The signature, 64 lowercase hex digits (for a chunk-signed upload, the seed signature).
    public var signature: String
    /// The lowercase header names that were signed, `;`-separated and sorted.
    public var signedHeaders: String
    /// The canonical request (task 1 of the algorithm).
    public var canonicalRequest: String
    /// The string to sign (task 2).
    public var stringToSign: String
    /// The request time as `YYYYMMDD'T'HHMMSS'Z'`.
    public var timestamp: String
    /// `YYYYMMDD/region/service/aws4_request`.
    public var credentialScope: String
    /// The derived signing key, kept for chunk signatures; never printed.
    let signingKey: [UInt8]

    /// The signed header names and the scope, without the signature.
    public var description: String {
        "AWSSignedRequest(scope: \(credentialScope), signedHeaders: \(signedHeaders))"
    }
}

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`) for any service and region, as a pure function of the request,
/// the credentials and the time: no clock, no I/O.
///
/// ```swift
/// let signer = AWSSigV4Signer(credentials: credentials, region: "us-east-1", service: "s3")
/// let signed = try signer.sign(method: "GET", url: "https://examplebucket.s3.amazonaws.com/test.txt",
///                              headers: [:], payload: .empty, date: .now)
/// request.headers = signed.headers
/// ```
///
/// The rules, from AWS's "Create a signed AWS API request" and S3's "Authenticating Requests (AWS Signature
/// Version 4)": the canonical request is the method, the canonical URI (``AWSPathEncoding``), the canonical
/// query string (pairs decoded, re-encoded with only `A-Za-z0-9-._~` unescaped, sorted), the canonical headers
/// (lowercase names, values trimmed and inner spaces collapsed, repeated fields joined with `,`, sorted), the
/// signed header names, and the payload hash. Every header of the request is signed except the hop-by-hop and
/// tracing ones botocore also leaves out (`connection`, `expect`, `keep-alive`, `proxy-*`, `te`, `trailer`,
/// `transfer-encoding`, `upgrade`, `user-agent`, `x-amzn-trace-id`, `traceparent`, `tracestate`, `baggage`)
/// and `authorization` itself; `host` is always signed, from the URL when the headers have none.
public struct AWSSigV4Signer: Sendable {
    /// The keys.
    public var credentials: AWSCredentials
    /// The region, `us-east-1` for example.
    public var region: String
    /// The service's signing name: `s3`, `execute-api`, `sqs`, …
    public var service: String
    /// How the path is written in the canonical request: ``AWSPathEncoding/s3`` when `service` is `s3`.
    public var pathEncoding: AWSPathEncoding
    /// Whether ``sign(method:url:headers:payload:date:)`` adds `X-Amz-Content-SHA256`: S3 requires it, other
    /// services do not expect it (AWS's test suite signs without it). Defaults to `service == "s3"`.
    public var addsContentSHA256Header: Bool

    /// A signer for `service` in `region`.
    public init(credentials: AWSCredentials, region: String, service: String) {
        self.credentials = credentials
        self.region = region
        self.service = service
        pathEncoding = service == "s3" ? .s3 : .standard
        addsContentSHA256Header = service == "s3"
    }

    /// Headers never signed: hop-by-hop fields a proxy may change, and tracing fields (botocore's list).
    static let unsignedHeaders: Set<String> = [
        "authorization", "baggage", "connection", "expect", "keep-alive", "proxy-authenticate",
        "proxy-authorization", "te", "traceparent", "tracestate", "trailer", "transfer-encoding", "upgrade",
        "user-agent", "x-amzn-trace-id",
    ]

    /// Signs a request for the `Authorization` header.
    ///
    /// - Parameters:
    ///   - method: the request method, `GET`, `PUT`, …
    ///   - url: the absolute URL the request goes to, percent-encoded as it will be sent.
    ///   - headers: the headers that will be sent (any `Authorization` or `X-Amz-Date` in them is replaced, and
    ///     `X-Amz-Security-Token` when the credentials hold a session token; without one, a token header the caller
    ///     set is kept and signed like any other, as botocore and curl's `--aws-sigv4` do).
    ///   - payload: the body's hash, or how it is sent unhashed.
    ///   - date: the signing time (AWS allows 15 minutes of clock skew).
    /// - Returns: the headers to send, with the signature and the intermediate strings.
    /// - Throws: `HTTPClientError/Code/invalidURL` for a URL that does not parse.
    public func sign(
        method: String, url: String, headers: HTTPFields, payload: AWSPayload, date: Date
    ) throws(HTTPClientError) -> AWSSignedRequest {
        let parsed = try HTTPURL(url)
        let timestamp = amzTimestamp(secondsSince1970: Int64(date.timeIntervalSince1970.rounded(.down)))
        var headers = headers
        headers[.authorization] = nil
        headers[HTTPField.Name("X-Amz-Date")!] = timestamp
        // botocore's add_auth: the token header is replaced only by the credentials' own token. A caller's header
        // (curl's `-H 'x-amz-security-token: …'` with `--aws-sigv4`) is the token when the credentials have none.
        if let token = credentials.sessionToken {
            headers[HTTPField.Name("X-Amz-Security-Token")!] = token
        }
        if addsContentSHA256Header {
            headers[HTTPField.Name("X-Amz-Content-SHA256")!] = payload.value
        }
        let (canonicalHeaders, signedHeaders) = canonicalize(headers: headers, url: parsed)
        let canonicalRequest = [
            method.uppercased(), canonicalURI(parsed.path), canonicalQueryString(parsed.query),
            canonicalHeaders, signedHeaders, payload.value,
        ].joined(separator: "\n")
        let scope = credentialScope(timestamp)
        let stringToSign = try makeStringToSign(timestamp: timestamp, scope: scope, canonicalRequest: canonicalRequest)
        let key = try signingKey(date: String(timestamp.prefix(8)))
        let signature = hex(try hmacSHA256(key: key, Array(stringToSign.utf8)))
        let authorization = "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), "
            + "SignedHeaders=\(signedHeaders), Signature=\(signature)"
        headers[.authorization] = authorization
        return AWSSignedRequest(
            headers: headers, authorization: authorization, signature: signature, signedHeaders: signedHeaders,
            canonicalRequest: canonicalRequest, stringToSign: stringToSign, timestamp: timestamp,
            credentialScope: scope, signingKey: key)
    }

    /// A presigned URL: the signature in the query (`X-Amz-Algorithm`, `X-Amz-Credential`, `X-Amz-Date`,
    /// `X-Amz-Expires`, `X-Amz-SignedHeaders`, `X-Amz-Security-Token`, `X-Amz-Signature`), so anyone holding
    /// the URL can make the request until it expires, without the keys.
    ///
    /// ```swift
    /// let url = try signer.presignedURL(method: "GET", url: "https://bucket.s3.amazonaws.com/report.pdf",
    ///                                   expires: .seconds(3600), date: .now)
    /// ```
    ///
    /// S3 signs the payload as `UNSIGNED-PAYLOAD` (the body is unknown when the URL is made); other services
    /// sign the empty body's hash, as botocore does. `headers` lists any header the eventual request must send
    /// with the same value (`host` is always signed).
    ///
    /// - Throws: `HTTPClientError/Code/invalidRequest` when `expires` is not between 1 second and 7 days (the
    ///   longest S3 accepts), `HTTPClientError/Code/invalidURL` for a URL that does not parse.
    public func presignedURL(
        method: String, url: String, headers: HTTPFields = [:], expires: Duration, date: Date
    ) throws(HTTPClientError) -> String {
        let seconds = expires.components.seconds
        guard seconds >= 1, seconds <= 604_800 else {
            throw HTTPClientError(
                .invalidRequest, "a presigned URL must expire in 1 second to 7 days (604800 s), not \(seconds) s")
        }
        let parsed = try HTTPURL(url)
        let timestamp = amzTimestamp(secondsSince1970: Int64(date.timeIntervalSince1970.rounded(.down)))
        let scope = credentialScope(timestamp)
        let (canonicalHeaders, signedHeaders) = canonicalize(headers: headers, url: parsed)
        var query = parsed.query.map { $0.isEmpty ? [] : [$0] } ?? []
        query.append("X-Amz-Algorithm=AWS4-HMAC-SHA256")
        query.append("X-Amz-Credential=" + awsURIEncode((credentials.accessKeyID + "/" + scope).utf8))
        query.append("X-Amz-Date=" + timestamp)
        query.append("X-Amz-Expires=" + String(seconds))
        if let token = credentials.sessionToken {
            query.append("X-Amz-Security-Token=" + awsURIEncode(token.utf8))
        }
        query.append("X-Amz-SignedHeaders=" + awsURIEncode(signedHeaders.utf8))
        let fullQuery = query.joined(separator: "&")
        let payload = pathEncoding == .s3 ? AWSPayload.unsigned : .empty
        let canonicalRequest = [
            method.uppercased(), canonicalURI(parsed.path), canonicalQueryString(fullQuery),
            canonicalHeaders, signedHeaders, payload.value,
        ].joined(separator: "\n")
        let stringToSign = try makeStringToSign(timestamp: timestamp, scope: scope, canonicalRequest: canonicalRequest)
        let key = try signingKey(date: String(timestamp.prefix(8)))
        let signature = hex(try hmacSHA256(key: key, Array(stringToSign.utf8)))
        var result = parsed.scheme + "://" + parsed.hostHeader + parsed.path + "?" + fullQuery
        result += "&X-Amz-Signature=" + signature
        return result
    }

    /// A chunk signer continuing from `signed`, a request signed with ``AWSPayload/streaming``.
    public func chunkSigner(continuing signed: AWSSignedRequest) -> AWSChunkSigner {
        AWSChunkSigner(
            signingKey: signed.signingKey, timestamp: signed.timestamp, scope: signed.credentialScope,
            seedSignature: signed.signature)
    }

    // MARK: The steps

    /// The path as the canonical request writes it.
    func canonicalURI(_ path: String) -> String {
        switch pathEncoding {
        case .s3:
            // Each segment decoded and encoded once: the wire form S3 itself computes, so `$` and `%24` agree.
            return path.split(separator: "/", omittingEmptySubsequences: false)
                .map { awsURIEncode(percentDecode($0)) }
                .joined(separator: "/")
        case .standard:
            // The wire path normalised, then encoded once more (botocore: quote(normalize(path), safe='/~')).
            return awsURIEncode(removingDotSegments(path).utf8, keepingSlash: true)
        }
    }

    /// The canonical headers block (each `name:value\n`) and the signed header names.
    func canonicalize(headers: HTTPFields, url: HTTPURL) -> (String, String) {
        var values: [String: [String]] = [:]
        for field in headers {
            let name = field.name.canonicalName
            if Self.unsignedHeaders.contains(name) { continue }
            values[name, default: []].append(trimmingAll(field.value))
        }
        if values["host"] == nil { values["host"] = [url.hostHeader] }
        let names = values.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        var block = ""
        for name in names {
            block += name + ":" + values[name]!.joined(separator: ",") + "\n"
        }
        return (block, names.joined(separator: ";"))
    }

    func credentialScope(_ timestamp: String) -> String {
        "\(timestamp.prefix(8))/\(region)/\(service)/aws4_request"
    }

    func makeStringToSign(timestamp: String, scope: String, canonicalRequest: String) throws(HTTPClientError) -> String {
        "AWS4-HMAC-SHA256\n\(timestamp)\n\(scope)\n" + hex(try sha256Digest(Array(canonicalRequest.utf8)))
    }

    /// kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request").
    func signingKey(date: String) throws(HTTPClientError) -> [UInt8] {
        var key = try hmacSHA256(key: Array(("AWS4" + credentials.secretAccessKey).utf8), Array(date.utf8))
        key = try hmacSHA256(key: key, Array(region.utf8))
        key = try hmacSHA256(key: key, Array(service.utf8))
        return try hmacSHA256(key: key, Array("aws4_request".utf8))
    }
}
