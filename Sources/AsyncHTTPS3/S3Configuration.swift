import AsyncHTTP

/// How a bucket appears in the URL.
public enum S3AddressingStyle: Sendable, Hashable {
    /// `https://s3.REGION.amazonaws.com/BUCKET/KEY`: what MinIO, LocalStack and moto serve without DNS set-up.
    case path
    /// `https://BUCKET.s3.REGION.amazonaws.com/KEY`: AWS's preferred form. A bucket name with a `.` is sent
    /// path-style over HTTPS instead (its name would not match the wildcard certificate), as the AWS SDKs do.
    case virtualHosted
}

/// A canned ACL (`x-amz-acl`): ASIHTTPRequest's `accessPolicy`.
public struct S3AccessPolicy: RawRepresentable, Sendable, Hashable {
    /// The header value.
    public var rawValue: String
    /// Any canned ACL by its name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Only the owner can read and write (S3's default).
    public static let `private` = S3AccessPolicy(rawValue: "private")
    /// Anyone can read.
    public static let publicRead = S3AccessPolicy(rawValue: "public-read")
    /// Anyone can read and write.
    public static let publicReadWrite = S3AccessPolicy(rawValue: "public-read-write")
    /// Any authenticated AWS user can read.
    public static let authenticatedRead = S3AccessPolicy(rawValue: "authenticated-read")
    /// The bucket's owner can read.
    public static let bucketOwnerRead = S3AccessPolicy(rawValue: "bucket-owner-read")
    /// The bucket's owner has full control.
    public static let bucketOwnerFullControl = S3AccessPolicy(rawValue: "bucket-owner-full-control")
}

/// A storage class (`x-amz-storage-class`): ASIHTTPRequest's `storageClass`.
public struct S3StorageClass: RawRepresentable, Sendable, Hashable {
    /// The header value.
    public var rawValue: String
    /// Any storage class by its name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `STANDARD`, the default.
    public static let standard = S3StorageClass(rawValue: "STANDARD")
    /// `REDUCED_REDUNDANCY` (ASI's `ASIS3StorageClassReducedRedundancy`).
    public static let reducedRedundancy = S3StorageClass(rawValue: "REDUCED_REDUNDANCY")
    /// `STANDARD_IA`.
    public static let standardInfrequentAccess = S3StorageClass(rawValue: "STANDARD_IA")
    /// `ONEZONE_IA`.
    public static let oneZoneInfrequentAccess = S3StorageClass(rawValue: "ONEZONE_IA")
    /// `INTELLIGENT_TIERING`.
    public static let intelligentTiering = S3StorageClass(rawValue: "INTELLIGENT_TIERING")
    /// `GLACIER_IR`.
    public static let glacierInstantRetrieval = S3StorageClass(rawValue: "GLACIER_IR")
    /// `GLACIER`.
    public static let glacier = S3StorageClass(rawValue: "GLACIER")
    /// `DEEP_ARCHIVE`.
    public static let deepArchive = S3StorageClass(rawValue: "DEEP_ARCHIVE")
}

/// Multipart upload settings for ``S3Client/uploadFile(bucket:key:path:options:resumingUploadID:)``.
public struct S3MultipartOptions: Sendable, Hashable {
    /// Files larger than this go up in parts. 8 MiB: the AWS CLI's `multipart_threshold`.
    public var threshold: Int
    /// The size of each part but the last. 8 MiB: the AWS CLI's `multipart_chunksize`; S3 wants at least
    /// 5 MiB and at most 10 000 parts (a bigger file gets bigger parts).
    public var partSize: Int
    /// Parts sent at once, through the client's batch API. 4: ASINetworkQueue's default (the AWS CLI uses 10).
    public var maxConcurrentParts: Int
    /// Whether a failed upload is aborted (S3 deletes its parts). With false, the error is an
    /// ``S3MultipartUploadError`` carrying the upload ID to resume with.
    public var abortsOnFailure: Bool

    /// Multipart settings; see each property for its default.
    public init(threshold: Int = 8 << 20, partSize: Int = 8 << 20, maxConcurrentParts: Int = 4,
                abortsOnFailure: Bool = true) {
        self.threshold = threshold
        self.partSize = partSize
        self.maxConcurrentParts = maxConcurrentParts
        self.abortsOnFailure = abortsOnFailure
    }
}

/// Where an ``S3Client`` sends requests and how it signs them.
///
/// ```swift
/// // AWS:
/// let aws = S3Configuration(region: "eu-west-1", credentials: credentials)
/// // MinIO, LocalStack, moto or another S3-compatible store:
/// let local = S3Configuration(region: "us-east-1", credentials: credentials, endpoint: "http://127.0.0.1:9000")
/// ```
public struct S3Configuration: Sendable {
    /// The region requests are signed for.
    public var region: String
    /// The keys.
    public var credentials: AWSCredentials
    /// The service's base URL: `https://s3.REGION.amazonaws.com` unless a custom endpoint is given.
    public var endpoint: String
    /// Path-style or virtual-hosted-style bucket addressing (path-style by default for a custom endpoint).
    public var addressingStyle: S3AddressingStyle
    /// How bodies are signed: their SHA-256 (``AWSPayloadSigning/automatic``, the default), or
    /// ``AWSPayloadSigning/unsigned`` to skip hashing (over HTTPS).
    public var payloadSigning: AWSPayloadSigning
    /// Multipart upload settings.
    public var multipart: S3MultipartOptions

    /// A configuration for `region`; `endpoint` nil means AWS itself.
    public init(region: String, credentials: AWSCredentials, endpoint: String? = nil,
                addressingStyle: S3AddressingStyle? = nil) {
        self.region = region
        self.credentials = credentials
        self.endpoint = endpoint ?? "https://s3.\(region).amazonaws.com"
        self.addressingStyle = addressingStyle ?? (endpoint == nil ? .virtualHosted : .path)
        payloadSigning = .automatic
        multipart = S3MultipartOptions()
    }
}

/// What an upload sends besides the bytes: type, metadata, ACL, storage class, other headers.
public struct S3PutOptions: Sendable {
    /// `Content-Type`; S3 stores `binary/octet-stream` when none is given.
    public var contentType: String?
    /// User metadata, sent as `x-amz-meta-NAME` (names are stored lowercase).
    public var metadata: [String: String]
    /// A canned ACL.
    public var accessPolicy: S3AccessPolicy?
    /// A storage class.
    public var storageClass: S3StorageClass?
    /// Any other headers (`Cache-Control`, `Content-Disposition`, `x-amz-server-side-encryption`, …).
    public var headers: HTTPFields

    /// Upload options; all empty by default.
    public init(contentType: String? = nil, metadata: [String: String] = [:], accessPolicy: S3AccessPolicy? = nil,
                storageClass: S3StorageClass? = nil, headers: HTTPFields = [:]) {
        self.contentType = contentType
        self.metadata = metadata
        self.accessPolicy = accessPolicy
        self.storageClass = storageClass
        self.headers = headers
    }

    /// Puts the options on `request`. A metadata name or value with a byte outside ASCII is refused before anything is
    /// sent: over REST, S3 takes user metadata as US-ASCII only (its "Working with object metadata"), and botocore
    /// refuses such values up front too, rather than leave the user to decode a failed signature. The value is not
    /// quoted in the error.
    func apply(to request: inout HTTPClientRequest) throws(HTTPClientError) {
        func isASCII(_ text: String) -> Bool { text.utf8.allSatisfy { $0 < 0x80 } }
        for (name, value) in metadata where !isASCII(name) || !isASCII(value) {
            let which = isASCII(name) ? "metadata '\(name)' has a value" : "a metadata name"
            throw HTTPClientError(.invalidRequest, "\(which) with characters outside ASCII: S3 keeps x-amz-meta-* fields as "
                + "ASCII only; encode it first (percent-encoding, or RFC 2047's =?UTF-8?B?…?=, which S3 decodes)")
        }
        for field in headers { request.headers.append(field) }
        if let contentType { request.setHeader("Content-Type", contentType) }
        for (name, value) in metadata.sorted(by: { $0.key < $1.key }) { request.setHeader("x-amz-meta-" + name, value) }
        if let accessPolicy { request.setHeader("x-amz-acl", accessPolicy.rawValue) }
        if let storageClass { request.setHeader("x-amz-storage-class", storageClass.rawValue) }
    }
}

/// What S3 said about a stored object (`HEAD`, or the head of a `GET`).
public struct S3ObjectInfo: Sendable {
    /// `Content-Length`.
    public var contentLength: Int?
    /// `Content-Type`.
    public var contentType: String?
    /// The entity tag, with its quotes (`"9b2cf535f27731c974343645a3985328"`).
    public var eTag: String?
    /// `Last-Modified`, as S3 wrote it (an HTTP date).
    public var lastModified: String?
    /// User metadata (`x-amz-meta-*`), names lowercase without the prefix.
    public var metadata: [String: String]
    /// `x-amz-storage-class` (S3 omits it for STANDARD).
    public var storageClass: S3StorageClass?
    /// `x-amz-version-id`, in a versioned bucket.
    public var versionID: String?
    /// Every response header.
    public var headers: HTTPFields

    init(headers: HTTPFields) {
        self.headers = headers
        contentLength = headers[.contentLength].flatMap { Int($0) }
        contentType = headers[.contentType]
        eTag = headers[HTTPField.Name("ETag")!]
        lastModified = headers[HTTPField.Name("Last-Modified")!]
        storageClass = headers[HTTPField.Name("x-amz-storage-class")!].map { S3StorageClass(rawValue: $0) }
        versionID = headers[HTTPField.Name("x-amz-version-id")!]
        var metadata: [String: String] = [:]
        for field in headers where field.name.canonicalName.hasPrefix("x-amz-meta-") {
            metadata[String(field.name.canonicalName.dropFirst("x-amz-meta-".count))] = field.value
        }
        self.metadata = metadata
    }
}

/// An object being read: its head, and its body as it streams in.
public struct S3Object: Sendable {
    /// What S3 said about the object.
    public var info: S3ObjectInfo
    /// The bytes, streamed (read them with `for try await` or `collect(upTo:)`).
    public var body: HTTPClientResponse.Body
}

/// The result of an upload or a copy.
public struct S3PutResult: Sendable, Hashable {
    /// The new object's entity tag (for a multipart upload, S3's `"…-N"` form).
    public var eTag: String?
    /// `x-amz-version-id`, in a versioned bucket.
    public var versionID: String?
}

/// One entry of a listing.
public struct S3ObjectSummary: Sendable, Hashable {
    /// The key.
    public var key: String
    /// The size in bytes.
    public var size: Int
    /// The entity tag, with its quotes.
    public var eTag: String?
    /// `LastModified`, as S3 wrote it (ISO 8601).
    public var lastModified: String?
    /// The storage class.
    public var storageClass: S3StorageClass?
}

/// One page of a ListObjectsV2 listing.
public struct S3ListPage: Sendable, Hashable {
    /// The objects on this page, in key order.
    public var objects: [S3ObjectSummary]
    /// With a delimiter: the key prefixes rolled up into "directories" (`photos/2026/`).
    public var commonPrefixes: [String]
    /// Whether more pages follow.
    public var isTruncated: Bool
}

/// A multipart upload that failed and whose parts stay on S3: with ``S3MultipartOptions/abortsOnFailure`` off, or
/// when the abort itself failed (``abortFailure``). It can be resumed with
/// ``S3Client/uploadFile(bucket:key:path:options:resumingUploadID:)`` or aborted with
/// ``S3Client/abortMultipartUpload(bucket:key:uploadID:)``.
public struct S3MultipartUploadError: Error, Sendable, CustomStringConvertible {
    /// The upload to resume (or abort with ``S3Client/abortMultipartUpload(bucket:key:uploadID:)``).
    public var uploadID: String
    /// The parts that were stored before the failure.
    public var partsCompleted: Int
    /// What failed.
    public var underlying: any Error
    /// Why the abort that ``S3MultipartOptions/abortsOnFailure`` asked for failed; nil when none was tried.
    public var abortFailure: (any Error)?

    /// Describes a failed upload whose parts stay on S3.
    public init(uploadID: String, partsCompleted: Int, underlying: any Error, abortFailure: (any Error)? = nil) {
        self.uploadID = uploadID
        self.partsCompleted = partsCompleted
        self.underlying = underlying
        self.abortFailure = abortFailure
    }

    /// The upload ID, the parts done and the failure.
    public var description: String {
        let abort = abortFailure.map { "; aborting it failed too: \($0)" } ?? ""
        return "multipart upload \(uploadID) stopped after \(partsCompleted) parts: \(underlying)\(abort)"
    }
}
