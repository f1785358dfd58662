import AsyncHTTP
@testable import AsyncHTTPS3
import Foundation
import XCTest

/// AsyncHTTPS3 against what moto does not do: a scripted S3 (``CacheOriginServer``) that redirects to another
/// origin or stalls its parts, and moto for an object stored gzip-encoded.
final class S3ClientBehaviourTests: XCTestCase {
    private let credentials = AWSCredentials(accessKeyID: "AKIATEST", secretAccessKey: "test/secret+key", sessionToken: "SESSION-TOKEN-1")

    private func s3(endpoint: String, client: HTTPClient) -> S3Client {
        var configuration = S3Configuration(region: "us-east-1", credentials: credentials, endpoint: endpoint, addressingStyle: .path)
        configuration.multipart = S3MultipartOptions(threshold: 5 << 20, partSize: 5 << 20, maxConcurrentParts: 2)
        return S3Client(configuration: configuration, client: client)
    }

    /// The request is signed before it is sent, so the signing step's "unsigned to another origin" does not apply;
    /// on a redirect to another origin the client drops `Authorization`, and must drop the session token too.
    func testARedirectToAnotherOriginDoesNotCarryTheSessionToken() async throws {
        let other = try await CacheOriginServer { _ in .init(status: 200, body: Array("elsewhere".utf8)) }
        let otherURL = other.url("/copy")
        let endpoint = try await CacheOriginServer { _ in .init(status: 307, headers: [("Location", otherURL)]) }
        let client = HTTPClient()
        let object = try await s3(endpoint: endpoint.baseURL, client: client).getObject(bucket: "b", key: "k")
        _ = try await object.body.collect(upTo: 1 << 20)
        let arrived = try XCTUnwrap(other.requests.first)
        XCTAssertNil(arrived.headers["authorization"])
        XCTAssertNil(arrived.headers["x-amz-security-token"], "the session token went to another origin")
        XCTAssertEqual(endpoint.requests.first?.headers["x-amz-security-token"], "SESSION-TOKEN-1", "sent to S3 itself")
        await client.shutdown()
        try await endpoint.shutdown()
        try await other.shutdown()
    }

    /// A cancelled upload is aborted all the same: sent from the cancelled task, the abort was cancelled before it
    /// went out, the parts stayed on S3, and the caller never learnt the upload's ID.
    func testACancelledMultipartUploadIsStillAborted() async throws {
        let endpoint = try await CacheOriginServer { request in
            if request.method == "POST", request.target.hasSuffix("?uploads") {
                let xml = "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>big.bin</Key><UploadId>U-1</UploadId></InitiateMultipartUploadResult>"
                return .init(status: 200, headers: [("Content-Type", "application/xml")], body: Array(xml.utf8))
            }
            if request.method == "PUT" {
                // A part's answer comes slowly: the upload is still running when the test cancels it.
                return .init(status: 200, headers: [("ETag", "\"0\"")], body: Array(repeating: 0x20, count: 16),
                             stallAfter: 1, stallMilliseconds: 10_000)
            }
            return .init(status: 204)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("s3-cancel-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("big.bin")
        try Data(repeating: 0x61, count: 11 << 20).write(to: file)
        let client = HTTPClient()
        let s3 = s3(endpoint: endpoint.baseURL, client: client)
        let upload = Task { try await s3.uploadFile(bucket: "b", key: "big.bin", path: file.path) }
        try await waitUntil("a part is being uploaded") { endpoint.requests.contains { $0.method == "PUT" } }
        upload.cancel()
        do {
            _ = try await upload.value
            XCTFail("a cancelled upload completed")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .cancelled)
        } catch is CancellationError {
        }
        try await waitUntil("the upload is aborted") {
            endpoint.requests.contains { $0.method == "DELETE" && $0.target.contains("uploadId=U-1") }
        }
        await client.shutdown()
        try await endpoint.shutdown()
    }

    /// An object stored with `Content-Encoding: gzip` is read back as stored: not inflated, with its length.
    func testAnObjectStoredGzipEncodedIsReadBackAsStored() async throws {
        var configuration = S3Configuration(region: "us-east-1", credentials: AWSCredentials(accessKeyID: "AKIAMOTOTEST",
                                            secretAccessKey: "moto/secret+key"), endpoint: try Peers.moto(), addressingStyle: .path)
        configuration.multipart = S3MultipartOptions()
        let s3 = S3Client(configuration: configuration, client: .shared)
        let bucket = "t-" + UUID().uuidString.lowercased().prefix(18)
        try await s3.createBucket(bucket)
        // "hello, gzip" compressed (Python's gzip.compress with mtime=0).
        let gzipped: [UInt8] = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0xd7,
                                0x51, 0x48, 0xaf, 0xca, 0x2c, 0x00, 0x00, 0x4a, 0x9b, 0xb1, 0x5c, 0x0b, 0x00, 0x00, 0x00]
        var options = S3PutOptions(contentType: "text/plain")
        options.headers[.contentEncoding] = "gzip"
        _ = try await s3.putObject(bucket: bucket, key: "note.txt", body: .bytes(gzipped), options: options)
        let object = try await s3.getObject(bucket: bucket, key: "note.txt")
        let body = try await object.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body, gzipped, "the object's bytes were changed on the way")
        XCTAssertEqual(object.info.contentLength, gzipped.count)
    }

    /// Metadata outside ASCII is refused before anything is sent, with an error that says so (and does not quote the
    /// value); nothing listens on the endpoint, so a request that went out would fail to connect instead.
    func testMetadataOutsideASCIIIsRefusedBeforeSending() async throws {
        let client = HTTPClient()
        let s3 = s3(endpoint: "http://127.0.0.1:9", client: client)
        for metadata in [["title": "café"], ["naïve": "x"]] {
            do {
                _ = try await s3.putObject(bucket: "b", key: "k", body: .bytes([1]), options: S3PutOptions(metadata: metadata))
                XCTFail("sent metadata outside ASCII")
            } catch let error as HTTPClientError {
                XCTAssertEqual(error.code, .invalidRequest, "\(error)")
                XCTAssertTrue(error.message.contains("ASCII"), error.message)
                XCTAssertFalse(error.message.contains("café"), error.message)
            }
        }
        await client.shutdown()
    }
    /// Resuming an upload whose part listing names parts outside the file's (0, the most negative Int, past the last)
    /// passes them over and sends every part: `(number - 1) * partSize` trapped on the negative one, and part 0's
    /// negative offset threw, which aborted (deleted) the upload being resumed.
    func testResumedUploadPassesOverListedPartNumbersOutsideTheFile() async throws {
        let partSize = 5 << 20
        let endpoint = try await CacheOriginServer { request in
            switch request.method {
            case "GET":
                var xml = "<ListPartsResult><Bucket>b</Bucket><Key>big.bin</Key><UploadId>U-1</UploadId>"
                for number in ["-9223372036854775808", "0", "3"] {
                    xml += "<Part><PartNumber>\(number)</PartNumber><ETag>\"0123456789abcdef0123456789abcdef\"</ETag>"
                        + "<Size>\(partSize)</Size></Part>"
                }
                xml += "<IsTruncated>false</IsTruncated></ListPartsResult>"
                return .init(status: 200, headers: [("Content-Type", "application/xml")], body: Array(xml.utf8))
            case "PUT":
                return .init(status: 200, headers: [("ETag", "\"part\"")])
            case "POST":
                let xml = "<CompleteMultipartUploadResult><ETag>\"whole-2\"</ETag></CompleteMultipartUploadResult>"
                return .init(status: 200, headers: [("Content-Type", "application/xml")], body: Array(xml.utf8))
            default:
                return .init(status: 204)
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("s3-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("big.bin")
        try Data(repeating: 0x61, count: partSize + 1024).write(to: file)   // two parts
        let client = HTTPClient()
        let result = try await s3(endpoint: endpoint.baseURL, client: client)
            .uploadFile(bucket: "b", key: "big.bin", path: file.path, resumingUploadID: "U-1")
        XCTAssertEqual(result.eTag, "\"whole-2\"")
        let puts = endpoint.requests.filter { $0.method == "PUT" }.map(\.target).sorted()
        XCTAssertEqual(puts, ["/b/big.bin?partNumber=1&uploadId=U-1", "/b/big.bin?partNumber=2&uploadId=U-1"])
        XCTAssertFalse(endpoint.requests.contains { $0.method == "DELETE" }, "the resumed upload was aborted")
        await client.shutdown()
        try await endpoint.shutdown()
    }

    /// A listing page marked truncated that gives no continuation token cannot be followed: it fails instead of
    /// ending the listing there, which passed the first page off as the whole bucket.
    func testTruncatedListingWithoutAContinuationTokenFails() async throws {
        let endpoint = try await CacheOriginServer { request in
            let token = request.target.contains("prefix=empty") ? "<NextContinuationToken></NextContinuationToken>" : ""
            let xml = "<ListBucketResult><Name>b</Name><IsTruncated>true</IsTruncated>\(token)"
                + "<Contents><Key>a.txt</Key><Size>1</Size></Contents></ListBucketResult>"
            return .init(status: 200, headers: [("Content-Type", "application/xml")], body: Array(xml.utf8))
        }
        let client = HTTPClient()
        let s3 = s3(endpoint: endpoint.baseURL, client: client)
        for prefix in ["missing", "empty"] {
            var pages = 0
            do {
                for try await _ in s3.listObjects(bucket: "b", prefix: prefix) {
                    pages += 1
                    if pages > 3 { break }
                }
                XCTFail("a truncated listing without a token ended after \(pages) page(s) as if complete")
            } catch let error as HTTPClientError {
                XCTAssertEqual(error.code, .malformedResponse, "\(error)")
                XCTAssertTrue(error.message.contains("continuation token"), error.message)
            }
        }
        XCTAssertEqual(endpoint.requests.count, 2)
        await client.shutdown()
        try await endpoint.shutdown()
    }
}
