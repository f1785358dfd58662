#if canImport(FoundationEssentials)
import FoundationEssentials
#elseif canImport(Foundation)
import Foundation
#endif
import AsyncHTTP

/// Amazon S3 (and S3-compatible stores) on top of an `HTTPClient`: objects in and out, streamed,
/// from and to files, listings, copies and multipart uploads; every request signed with Signature Version 4.
/// ASIHTTPRequest's `ASIS3ObjectRequest`, `ASIS3BucketRequest` and friends.
///
/// ```swift
/// let s3 = S3Client(configuration: S3Configuration(region: "eu-west-1", credentials: credentials))
/// _ = try await s3.putObject(bucket: "photos", key: "2026/beach.jpg", body: try .file("/tmp/beach.jpg"),
///                            options: S3PutOptions(contentType: "image/jpeg", storageClass: .standardInfrequentAccess))
/// let object = try await s3.getObject(bucket: "photos", key: "2026/beach.jpg")
/// for try await chunk in object.body { … }
/// for try await page in s3.listObjects(bucket: "photos", prefix: "2026/") {
///     for object in page.objects { print(object.key, object.size) }
/// }
/// ```
///
/// Errors S3 answers with become ``S3Error`` (code, message, request ID); transport failures stay
/// `HTTPClientError`.
public final class S3Client: Sendable {
    /// Where requests go and how they are signed.
    public let configuration: S3Configuration
    /// The HTTP client that sends them (its pool, TLS, proxies, throttling and observers apply).
    public let client: HTTPClient
    let signing: AWSSigningMiddleware

    /// Error bodies and small XML answers are read up to this size: S3's are a few hundred bytes.
    static let maxXMLBytes = 1 << 20
    /// A listing page of 1000 keys is about 300 KiB; 16 MiB leaves room for long keys.
    static let maxListingBytes = 16 << 20

    /// A client for `configuration`, sending through `client`. `now` is the signing clock (tests inject one).
    public init(configuration: S3Configuration, client: HTTPClient = .shared,
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.configuration = configuration
        self.client = client
        signing = AWSSigningMiddleware(
            signer: AWSSigV4Signer(credentials: configuration.credentials, region: configuration.region, service: "s3"),
            now: now)
    }

    // MARK: URLs

    /// The URL of a bucket (and a key in it), with `query` pairs (a nil value: the name alone, `?uploads`).
    ///
    /// The key is encoded segment by segment with SigV4's rules (`/` kept), so the path on the wire is the one
    /// the signature covers.
    public func url(bucket: String, key: String? = nil, query: [(String, String?)] = []) throws(HTTPClientError) -> String {
        // Letters, digits, '.', '-' and '_' only (S3's rules, widened to its legacy names): a bucket goes into the
        // host with virtual-hosted addressing, where '#', '@', ':' or '?' would move the request to another host.
        guard (1...255).contains(bucket.utf8.count), bucket.utf8.allSatisfy({ byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }) else {
            throw HTTPClientError(.invalidRequest,
                "'\(bucket)' is not a bucket name (letters, digits, '.', '-' and '_', at most 255 of them)")
        }
        // An empty key would make an object request a bucket request: DELETE / is DeleteBucket, GET / a listing.
        if let key, key.isEmpty {
            throw HTTPClientError(.invalidRequest, "an object key cannot be empty (bucket '\(bucket)')")
        }
        let endpoint = try HTTPURL(configuration.endpoint)
        var base = endpoint.path.hasSuffix("/") ? String(endpoint.path.dropLast()) : endpoint.path
        var host = endpoint.hostHeader
        let virtual = configuration.addressingStyle == .virtualHosted && !(endpoint.isSecure && bucket.contains("."))
            && !endpoint.isIPAddress
        if virtual { host = bucket + "." + host } else { base += "/" + awsURIEncode(bucket.utf8) }
        var text = endpoint.scheme + "://" + host + base + "/"
        if let key { text += awsURIEncode(key.utf8, keepingSlash: true) }
        if !query.isEmpty {
            text += "?" + query.map { pair in
                awsURIEncode(pair.0.utf8) + (pair.1.map { "=" + awsURIEncode($0.utf8) } ?? "")
            }.joined(separator: "&")
        }
        return text
    }

    /// A presigned URL for `method` on an object: anyone holding it can make that request until it expires,
    /// without the keys (a `GET` to share a download, a `PUT` for a browser upload).
    public func presignedURL(method: String = "GET", bucket: String, key: String, expires: Duration,
                             date: Date = Date()) throws(HTTPClientError) -> String {
        try signing.signer.presignedURL(method: method, url: url(bucket: bucket, key: key), expires: expires, date: date)
    }

    // MARK: Sending

    /// Signs and sends `request`.
    func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        try await client.send(try await signed(request))
    }

    /// `request` signed with the configuration's payload signing (unless the request chose its own).
    ///
    /// An object's bytes are what S3 stores: the response is never asked compressed nor inflated, so an object
    /// stored with `Content-Encoding: gzip` comes back as stored, with its `Content-Length`. And the session token
    /// is marked sensitive: the request is signed before it is sent, so on a redirect to another origin (where the
    /// client drops `Authorization`) the token is dropped too instead of going to that host.
    func signed(_ request: HTTPClientRequest) async throws -> HTTPClientRequest {
        var request = request
        if request.awsPayloadSigning == .automatic { request.awsPayloadSigning = configuration.payloadSigning }
        if request.acceptsCompressedResponse == nil { request.acceptsCompressedResponse = false }
        request.sensitiveHeaders.insert(Self.securityToken)
        return try await signing.sign(request)
    }

    /// The STS session token's field.
    static let securityToken = HTTPField.Name("X-Amz-Security-Token")!

    /// Throws the ``S3Error`` in `response` unless its status is 2xx.
    func check(_ response: HTTPClientResponse) async throws {
        guard !(200..<300).contains(response.status.code) else { return }
        throw await Self.error(from: response)
    }

    /// The ``S3Error`` a non-2xx response carries (from its XML body when it has one).
    static func error(from response: HTTPClientResponse) async -> S3Error {
        let status = response.status.code
        if let body = try? await response.body.collect(upTo: maxXMLBytes), !body.isEmpty,
           let root = try? XMLNode.parse(body, what: "an error"),
           let error = S3Error.from(root, status: status, headers: response.headers) {
            return error
        }
        return S3Error.fromStatus(status, headers: response.headers)
    }

    /// Sends `request` and parses its 2xx XML answer (an `<Error>` root, which S3 may send with 200 for a
    /// multipart completion, becomes an ``S3Error``).
    func sendForXML(_ request: HTTPClientRequest, what: String, limit: Int = maxXMLBytes) async throws -> XMLNode {
        let response = try await send(request)
        try await check(response)
        let root = try XMLNode.parse(try await response.body.collect(upTo: limit), what: what)
        if let error = S3Error.from(root, status: response.status.code, headers: response.headers) { throw error }
        return root
    }

    private func makeRequest(_ method: HTTPRequest.Method, bucket: String, key: String? = nil,
                         query: [(String, String?)] = []) throws(HTTPClientError) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: try url(bucket: bucket, key: key, query: query))
        request.method = method
        return request
    }

    // MARK: Buckets

    /// Creates a bucket (in the configuration's region).
    public func createBucket(_ bucket: String) async throws {
        var request = try makeRequest(.put, bucket: bucket)
        if configuration.region != "us-east-1" {
            request.body = .bytes(Array(("<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                + "<LocationConstraint>\(configuration.region)</LocationConstraint></CreateBucketConfiguration>").utf8))
        }
        let response = try await send(request)
        try await check(response)
        _ = try? await response.body.collect(upTo: Self.maxXMLBytes)
    }

    /// Deletes an empty bucket.
    public func deleteBucket(_ bucket: String) async throws {
        let response = try await send(try makeRequest(.delete, bucket: bucket))
        try await check(response)
    }

    // MARK: Objects

    /// Stores `body` as `key` (one `PUT`; see ``uploadFile(bucket:key:path:options:resumingUploadID:)`` for
    /// large files). Bytes and files are hashed for the signature; a one-shot stream of known length goes out
    /// chunk-signed (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`), never read into memory whole.
    public func putObject(bucket: String, key: String, body: HTTPClientRequest.Body,
                          options: S3PutOptions = S3PutOptions()) async throws -> S3PutResult {
        var request = try makeRequest(.put, bucket: bucket, key: key)
        try options.apply(to: &request)
        request.body = body
        let response = try await send(request)
        try await check(response)
        return S3PutResult(eTag: response.headers[HTTPField.Name("ETag")!],
                           versionID: response.headers[HTTPField.Name("x-amz-version-id")!])
    }

    /// Reads an object; its body streams in as you iterate it. `range` asks for those bytes only
    /// (`Range: bytes=first-last`).
    public func getObject(bucket: String, key: String, range: ClosedRange<Int>? = nil) async throws -> S3Object {
        var request = try makeRequest(.get, bucket: bucket, key: key)
        if let range { request.setHeader("Range", "bytes=\(range.lowerBound)-\(range.upperBound)") }
        let response = try await send(request)
        try await check(response)
        return S3Object(info: S3ObjectInfo(headers: response.headers), body: response.body)
    }

    /// Downloads an object to a file: written beside it and renamed into place only when complete (see
    /// `HTTPClient/download(_:to:options:)`; `options.resume` continues a `.part` file).
    ///
    /// - Throws: ``S3Error`` for an error status (the file is left as it was).
    public func downloadObject(bucket: String, key: String, to path: String,
                               options: DownloadOptions = DownloadOptions()) async throws -> S3ObjectInfo {
        let request = try await signed(try makeRequest(.get, bucket: bucket, key: key))
        let result = try await client.download(request, to: path, options: options)
        guard result.written, (200..<300).contains(result.status.code) else {
            throw S3Error.fromStatus(result.status.code, headers: result.headers)
        }
        return S3ObjectInfo(headers: result.headers)
    }

    /// The object's size, type, entity tag, metadata and storage class, without its body.
    public func headObject(bucket: String, key: String) async throws -> S3ObjectInfo {
        let response = try await send(try makeRequest(.head, bucket: bucket, key: key))
        try await check(response)
        return S3ObjectInfo(headers: response.headers)
    }

    /// Deletes an object (S3 answers 204 whether or not it existed).
    public func deleteObject(bucket: String, key: String) async throws {
        let response = try await send(try makeRequest(.delete, bucket: bucket, key: key))
        try await check(response)
    }

    /// Copies an object inside S3 (no bytes pass through this client). With `options` given, its metadata,
    /// type, ACL and storage class replace the source's (`x-amz-metadata-directive: REPLACE`); without, they
    /// are copied.
    public func copyObject(sourceBucket: String, sourceKey: String, bucket: String, key: String,
                           options: S3PutOptions? = nil) async throws -> S3PutResult {
        var request = try makeRequest(.put, bucket: bucket, key: key)
        request.setHeader("x-amz-copy-source", "/" + awsURIEncode(sourceBucket.utf8) + "/"
            + awsURIEncode(sourceKey.utf8, keepingSlash: true))
        if let options {
            try options.apply(to: &request)
            request.setHeader("x-amz-metadata-directive", "REPLACE")
        }
        let root = try await sendForXML(request, what: "a copy result")
        return S3PutResult(eTag: root.value("ETag"), versionID: nil)
    }

    /// The keys in a bucket, one page (up to `maxKeys`, 1000 at most) at a time, following continuation tokens
    /// (ListObjectsV2). With a `delimiter` (`/`), keys below the next delimiter are rolled up into
    /// ``S3ListPage/commonPrefixes``.
    ///
    /// ```swift
    /// for try await page in s3.listObjects(bucket: "photos", prefix: "2026/", delimiter: "/") {
    ///     print(page.commonPrefixes, page.objects.map(\.key))
    /// }
    /// ```
    public func listObjects(bucket: String, prefix: String? = nil, delimiter: String? = nil,
                            maxKeys: Int? = nil) -> S3ListObjects {
        S3ListObjects(client: self, bucket: bucket, prefix: prefix, delimiter: delimiter, maxKeys: maxKeys)
    }

    /// A key of a listing asked for with `encoding-type=url`: S3 writes a space as `+` (and a `+` as `%2B`), as a
    /// form does; botocore decodes it the same way (`unquote_plus`).
    static func urlDecodedKey(_ text: String) -> String {
        percentDecoded(text.replacing("+", with: " "))
    }

    /// One ListObjectsV2 page.
    func listPage(bucket: String, prefix: String?, delimiter: String?, maxKeys: Int?,
                  continuationToken: String?) async throws -> (S3ListPage, String?) {
        // `encoding-type=url`: keys come back percent-encoded, so a key holding a character XML 1.0 cannot carry
        // (a control character) does not break the listing's XML (botocore asks for it on every listing too).
        var query: [(String, String?)] = [("list-type", "2"), ("encoding-type", "url")]
        if let continuationToken { query.append(("continuation-token", continuationToken)) }
        if let delimiter { query.append(("delimiter", delimiter)) }
        if let maxKeys { query.append(("max-keys", String(maxKeys))) }
        if let prefix { query.append(("prefix", prefix)) }
        let root = try await sendForXML(try makeRequest(.get, bucket: bucket, query: query), what: "a listing",
                                        limit: Self.maxListingBytes)
        guard root.name == "ListBucketResult" else {
            throw HTTPClientError(.malformedResponse, "S3 answered a listing with <\(root.name)>, not <ListBucketResult>")
        }
        // Decoded only when the answer says it is encoded: an S3-compatible server that ignores the parameter
        // sends keys as they are, and decoding those would change a key holding `%` or `+`.
        let encoded = root.value("EncodingType") == "url"
        let decode = { (text: String) -> String in encoded ? Self.urlDecodedKey(text) : text }
        let objects = try root.children("Contents").map { entry throws(HTTPClientError) in
            guard let key = entry.value("Key").map(decode), let size = entry.value("Size").flatMap({ Int($0) }) else {
                throw HTTPClientError(.malformedResponse, "S3 listed an object without a key or a size")
            }
            return S3ObjectSummary(key: key, size: size, eTag: entry.value("ETag"), lastModified: entry.value("LastModified"),
                                   storageClass: entry.value("StorageClass").map { S3StorageClass(rawValue: $0) })
        }
        let prefixes = root.children("CommonPrefixes").compactMap { $0.value("Prefix").map(decode) }
        let truncated = root.value("IsTruncated") == "true"
        var next: String?
        if truncated {
            // More keys, but no way to ask for them: ending here would pass a partial listing off as the whole.
            guard let token = root.value("NextContinuationToken"), !token.isEmpty else {
                throw HTTPClientError(.malformedResponse, "S3 sent a truncated listing without a continuation token")
            }
            next = token
        }
        return (S3ListPage(objects: objects, commonPrefixes: prefixes, isTruncated: truncated), next)
    }
}

/// The pages of a ListObjectsV2 listing, fetched one at a time as you iterate
/// (``S3Client/listObjects(bucket:prefix:delimiter:maxKeys:)``).
public struct S3ListObjects: AsyncSequence, Sendable {
    /// One page.
    public typealias Element = S3ListPage
    let client: S3Client
    let bucket: String
    let prefix: String?
    let delimiter: String?
    let maxKeys: Int?

    /// Fetches the next page when asked.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let list: S3ListObjects
        var token: String?
        var done = false
        var seenTokens: Set<String> = []

        /// The next page, or nil after the last.
        public mutating func next() async throws -> S3ListPage? {
            if done { return nil }
            let (page, next) = try await list.client.listPage(
                bucket: list.bucket, prefix: list.prefix, delimiter: list.delimiter, maxKeys: list.maxKeys,
                continuationToken: token)
            if let next {
                // A store that hands back a token it gave before would page forever.
                guard seenTokens.insert(next).inserted else {
                    throw HTTPClientError(.malformedResponse, "S3 repeated a continuation token: the listing does not advance")
                }
                token = next
            } else {
                done = true
            }
            return page
        }
    }

    /// An iterator starting at the first page.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(list: self) }
}
