import AsyncHTTP
@testable import AsyncHTTPS3
import Foundation
import XCTest

/// AsyncHTTPS3's operations against moto's S3 in server mode (PyPI `moto[server]`, started by scripts/test.sh).
final class S3IntegrationTests: XCTestCase {
    let credentials = AWSCredentials(accessKeyID: "AKIAMOTOTEST", secretAccessKey: "moto/secret+key")

    func makeS3(client: HTTPClient = .shared, style: S3AddressingStyle = .path, endpoint: String? = nil) throws -> S3Client {
        var configuration = S3Configuration(region: "us-east-1", credentials: credentials,
                                            endpoint: try endpoint ?? Peers.moto(), addressingStyle: style)
        configuration.multipart = S3MultipartOptions(threshold: 5 << 20, partSize: 5 << 20, maxConcurrentParts: 3)
        return S3Client(configuration: configuration, client: client)
    }

    /// A fresh bucket per test, so tests never see each other's objects.
    func makeBucket(_ s3: S3Client) async throws -> String {
        let bucket = "t-" + UUID().uuidString.lowercased().prefix(18)
        try await s3.createBucket(bucket)
        return bucket
    }

    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("s3-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        return directory
    }

    /// `count` bytes: a 65 537-byte block (prime, so it never lines up with a part or a chunk) repeated. Built by
    /// block so that an 11 MiB file takes milliseconds in a debug build.
    func pattern(_ count: Int, seed: Int = 7) -> [UInt8] {
        let block = (0..<65_537).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761 &+ seed) >> 13) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count { bytes.append(contentsOf: block.prefix(count - bytes.count)) }
        return bytes
    }

    func testPutGetHeadDeleteKeepMetadataTypeAndStorageClass() async throws {
        let s3 = try makeS3()
        let bucket = try await makeBucket(s3)
        let key = "dir/sub dir/ünïcode+plus&amp$.txt"
        let body = Array("hello from AsyncHTTPS3".utf8)
        let options = S3PutOptions(contentType: "text/plain; charset=utf-8", metadata: ["colour": "blue", "Owner": "ann"],
                                   accessPolicy: .publicRead, storageClass: .reducedRedundancy)
        let put = try await s3.putObject(bucket: bucket, key: key, body: .bytes(body), options: options)
        XCTAssertNotNil(put.eTag)

        let head = try await s3.headObject(bucket: bucket, key: key)
        XCTAssertEqual(head.contentLength, body.count)
        XCTAssertEqual(head.contentType, "text/plain; charset=utf-8")
        XCTAssertEqual(head.metadata["colour"], "blue")
        XCTAssertEqual(head.metadata["owner"], "ann")
        XCTAssertEqual(head.storageClass, .reducedRedundancy)
        XCTAssertEqual(head.eTag, put.eTag)

        let object = try await s3.getObject(bucket: bucket, key: key)
        let awaited1 = try await object.body.collect(upTo: 1 << 20)
        XCTAssertEqual(awaited1, body)
        let part = try await s3.getObject(bucket: bucket, key: key, range: 6...9)
        let awaited2 = try await part.body.collect(upTo: 1 << 20)
        XCTAssertEqual(awaited2, Array("from".utf8))

        try await s3.deleteObject(bucket: bucket, key: key)
        do {
            _ = try await s3.headObject(bucket: bucket, key: key)
            XCTFail("the object is still there")
        } catch let error as S3Error {
            XCTAssertEqual(error.status, 404)
            XCTAssertEqual(error.code, "NotFound")
        }
    }

    func testMissingKeyAndBucketAreTypedErrorsWithoutSecrets() async throws {
        let s3 = try makeS3()
        let bucket = try await makeBucket(s3)
        do {
            _ = try await s3.getObject(bucket: bucket, key: "nope.txt")
            XCTFail("got a missing key")
        } catch let error as S3Error {
            XCTAssertEqual(error.status, 404)
            XCTAssertEqual(error.code, "NoSuchKey")
            XCTAssertFalse(error.message.isEmpty)
            XCTAssertNotNil(error.requestID)
            XCTAssertFalse(error.description.contains(credentials.secretAccessKey))
            XCTAssertFalse(error.description.contains("Signature="))
        }
        do {
            _ = try await s3.putObject(bucket: "no-such-bucket-\(UUID().uuidString.lowercased().prefix(8))", key: "k", body: .bytes([1]))
            XCTFail("wrote to a missing bucket")
        } catch let error as S3Error {
            XCTAssertEqual(error.code, "NoSuchBucket")
        }
    }

    func testListObjectsPagesThroughPrefixesAndDelimiters() async throws {
        let s3 = try makeS3()
        let bucket = try await makeBucket(s3)
        let keys = ["a/1.txt", "a/2.txt", "a/3.txt", "a/deep/4.txt", "b/5.txt", "top.txt"]
        for key in keys { _ = try await s3.putObject(bucket: bucket, key: key, body: .bytes(Array(key.utf8))) }

        var pages: [S3ListPage] = []
        for try await page in s3.listObjects(bucket: bucket, maxKeys: 2) {
            pages.append(page)
            XCTAssertLessThanOrEqual(pages.count, 10, "the listing does not end")
            if pages.count > 10 { break }
        }
        XCTAssertEqual(pages.count, 3)
        XCTAssertEqual(pages.flatMap { $0.objects.map(\.key) }, keys)
        XCTAssertEqual(pages.flatMap { $0.objects.map(\.size) }, keys.map { $0.utf8.count })
        XCTAssertEqual(pages.map(\.isTruncated), [true, true, false])

        var prefixed: [String] = []
        var rolledUp: [String] = []
        for try await page in s3.listObjects(bucket: bucket, prefix: "a/", delimiter: "/") {
            prefixed += page.objects.map(\.key)
            rolledUp += page.commonPrefixes
        }
        XCTAssertEqual(prefixed, ["a/1.txt", "a/2.txt", "a/3.txt"])
        XCTAssertEqual(rolledUp, ["a/deep/"])
    }

    /// Keys that XML cannot carry as they are (a control character) or that look encoded (`%`, `+`) are listed as
    /// stored: the listing asks for `encoding-type=url` and decodes. The old code failed to parse the listing.
    func testListedKeysComeBackAsStoredWhateverTheyHold() async throws {
        let s3 = try makeS3()
        let bucket = try await makeBucket(s3)
        let keys = ["ctl\u{1}key.txt", "d i r/s p+a%20ce.txt", "plus+sign.txt", "ünïcode/ō.txt"]
        for key in keys { _ = try await s3.putObject(bucket: bucket, key: key, body: .bytes([1])) }
        var listed: [String] = []
        for try await page in s3.listObjects(bucket: bucket) { listed += page.objects.map(\.key) }
        XCTAssertEqual(listed, keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        var rolledUp: [String] = []
        for try await page in s3.listObjects(bucket: bucket, delimiter: "/") { rolledUp += page.commonPrefixes }
        XCTAssertEqual(rolledUp, ["d i r/", "ünïcode/"])
    }

    func testFileUploadAndDownloadToFile() async throws {
        let s3 = try makeS3()
        let bucket = try await makeBucket(s3)
        let directory = try temporaryDirectory()
        let source = directory.appendingPathComponent("source.bin")
        let bytes = pattern(300_000)
        try Data(bytes).write(to: source)
        _ = try await s3.putObject(bucket: bucket, key: "files/source.bin", body: try .file(source.path))
        let destination = directory.appendingPathComponent("copy.bin")
        let info = try await s3.downloadObject(bucket: bucket, key: "files/source.bin", to: destination.path)
        XCTAssertEqual(info.contentLength, bytes.count)
        XCTAssertEqual(Array(try Data(contentsOf: destination)), bytes)

        // A missing object leaves an existing file alone and says why.
        try Data("keep".utf8).write(to: destination)
        do {
            _ = try await s3.downloadObject(bucket: bucket, key: "files/missing.bin", to: destination.path)
            XCTFail("downloaded a missing object")
        } catch let error as S3Error {
            XCTAssertEqual(error.status, 404)
        }
        XCTAssertEqual(String(decoding: try Data(contentsOf: destination), as: UTF8.self), "keep")
    }

    func testOneShotStreamIsUploadedChunkSigned() async throws {
        let s3 = try makeS3()
        let bucket = try await makeBucket(s3)
        let bytes = pattern(200_000, seed: 3)
        let stream = AsyncStream<[UInt8]> { continuation in
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + 7_777, bytes.count)
                continuation.yield(Array(bytes[offset..<end]))
                offset = end
            }
            continuation.finish()
        }
        _ = try await s3.putObject(bucket: bucket, key: "streamed.bin", body: .stream(stream, length: .known(bytes.count)))
        let object = try await s3.getObject(bucket: bucket, key: "streamed.bin")
        let awaited3 = try await object.body.collect(upTo: 1 << 20)
        XCTAssertEqual(awaited3, bytes, "moto decoded the aws-chunked body")
        XCTAssertEqual(object.info.contentLength, bytes.count)
    }

    func testUnsignedPayloadUpload() async throws {
        var configuration = try makeS3().configuration
        configuration.payloadSigning = .unsigned
        let s3 = S3Client(configuration: configuration)
        let bucket = try await makeBucket(s3)
        _ = try await s3.putObject(bucket: bucket, key: "u.txt", body: .bytes(Array("unsigned".utf8)))
        let awaited4 = try await s3.getObject(bucket: bucket, key: "u.txt").body.collect(upTo: 100)
        XCTAssertEqual(awaited4, Array("unsigned".utf8))
    }

    func testMultipartUploadSendsPartsInParallelAndCompletes() async throws {
        let parts = PartsInFlight()
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.observers = [parts]
        let client = HTTPClient(configuration: clientConfiguration)
        let s3 = try makeS3(client: client)
        let bucket = try await makeBucket(s3)
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("large.bin")
        let bytes = pattern((11 << 20) + 12_345, seed: 11)
        try Data(bytes).write(to: file)
        let result = try await s3.uploadFile(bucket: bucket, key: "large.bin", path: file.path,
                                             options: S3PutOptions(contentType: "application/x-test"))
        XCTAssertTrue(result.eTag?.hasSuffix("-3\"") ?? false, "three parts: \(result.eTag ?? "nil")")
        XCTAssertEqual(parts.started, 3)
        XCTAssertGreaterThanOrEqual(parts.mostAtOnce, 2, "the parts went up one after another")
        XCTAssertLessThanOrEqual(parts.mostAtOnce, 3, "more parts at once than maxConcurrentParts")
        let head = try await s3.headObject(bucket: bucket, key: "large.bin")
        XCTAssertEqual(head.contentLength, bytes.count)
        XCTAssertEqual(head.contentType, "application/x-test")
        let object = try await s3.getObject(bucket: bucket, key: "large.bin")
        let awaited5 = try await object.body.collect(upTo: 32 << 20)
        XCTAssertEqual(awaited5, bytes)
        await client.shutdown()
    }

    /// An earlier attempt that stored part 1 of `bytes` (written to a new file) and stopped: the file and the upload.
    private func uploadStoppedAfterPartOne(_ s3: S3Client, bucket: String, key: String, bytes: [UInt8]) async throws
        -> (file: URL, uploadID: String) {
        let file = try temporaryDirectory().appendingPathComponent(key)
        try Data(bytes).write(to: file)
        let uploadID = try await s3.createMultipartUpload(bucket: bucket, key: key)
        var part = HTTPClientRequest(url: try s3.url(bucket: bucket, key: key, query: [("partNumber", "1"), ("uploadId", uploadID)]))
        part.method = .put
        part.body = try .file(file.path, offset: 0, length: 5 << 20)
        try await s3.check(try await s3.send(part))
        return (file, uploadID)
    }

    /// Resumes `uploadID` from `file` through a client that counts the parts sent.
    private func resume(_ s3: S3Client, bucket: String, key: String, file: URL, uploadID: String) async throws
        -> (result: S3PutResult, partsSent: Int) {
        let parts = PartsInFlight()
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.observers = [parts]
        let client = HTTPClient(configuration: clientConfiguration)
        let resuming = S3Client(configuration: s3.configuration, client: client)
        let result = try await resuming.uploadFile(bucket: bucket, key: key, path: file.path, resumingUploadID: uploadID)
        await client.shutdown()
        return (result, parts.started)
    }

    func testMultipartUploadResumesAndSkipsStoredParts() async throws {
        let s3 = try makeS3()
        let bucket = try await makeBucket(s3)
        let bytes = pattern((10 << 20) + 1, seed: 5)
        let (file, uploadID) = try await uploadStoppedAfterPartOne(s3, bucket: bucket, key: "resume.bin", bytes: bytes)
        let awaited6 = try await s3.listParts(bucket: bucket, key: "resume.bin", uploadID: uploadID).keys.sorted()
        XCTAssertEqual(awaited6, [1])

        let (result, partsSent) = try await resume(s3, bucket: bucket, key: "resume.bin", file: file, uploadID: uploadID)
        XCTAssertEqual(partsSent, 2, "part 1 was sent again")
        XCTAssertTrue(result.eTag?.hasSuffix("-3\"") ?? false)
        let awaited7 = try await s3.getObject(bucket: bucket, key: "resume.bin").body.collect(upTo: 32 << 20)
        XCTAssertEqual(awaited7, bytes)
    }

    /// A file that changed between the attempts, keeping its size: the stored part holds the old bytes, so it
    /// goes up again, and the object is the new file (reusing parts by size alone completed a mix of the two).
    func testAResumedUploadSendsAgainAPartWhoseBytesChanged() async throws {
        let s3 = try makeS3()
        let bucket = try await makeBucket(s3)
        let original = pattern((10 << 20) + 1, seed: 7)
        let (file, uploadID) = try await uploadStoppedAfterPartOne(s3, bucket: bucket, key: "changed.bin", bytes: original)
        // The file is rewritten with other bytes of the same size before the upload is resumed.
        let changed = original.map { $0 ^ 0xA5 }
        try Data(changed).write(to: file)
        let (_, partsSent) = try await resume(s3, bucket: bucket, key: "changed.bin", file: file, uploadID: uploadID)
        XCTAssertEqual(partsSent, 3, "the changed part 1 was not sent again")
        let stored = try await s3.getObject(bucket: bucket, key: "changed.bin").body.collect(upTo: 32 << 20)
        XCTAssertEqual(stored, changed, "the object mixes the old file's part with the new file's")
    }

    func testFailedMultipartUploadIsAbortedAndReportsS3sError() async throws {
        let s3 = try makeS3()
        let bucket = try await makeBucket(s3)
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("fail.bin")
        try Data(pattern(6 << 20)).write(to: file)
        do {
            _ = try await s3.uploadFile(bucket: bucket, key: "fail.bin", path: file.path, resumingUploadID: "no-such-upload")
            XCTFail("uploaded parts to an upload that does not exist")
        } catch let error as S3Error {
            XCTAssertEqual(error.code, "NoSuchUpload")
        }
        var keeping = s3.configuration
        keeping.multipart.abortsOnFailure = false
        do {
            _ = try await S3Client(configuration: keeping).uploadFile(
                bucket: bucket, key: "fail.bin", path: file.path, resumingUploadID: "no-such-upload")
            XCTFail("uploaded parts to an upload that does not exist")
        } catch let error as S3MultipartUploadError {
            XCTAssertEqual(error.uploadID, "no-such-upload")
            XCTAssertEqual((error.underlying as? S3Error)?.code, "NoSuchUpload")
        }
        var pages = 0
        for try await page in s3.listObjects(bucket: bucket) {
            XCTAssertTrue(page.objects.isEmpty)
            pages += 1
        }
        XCTAssertEqual(pages, 1)
    }

    func testCopyObjectAndPresignedURL() async throws {
        let s3 = try makeS3()
        let bucket = try await makeBucket(s3)
        _ = try await s3.putObject(bucket: bucket, key: "orig inal.txt", body: .bytes(Array("copy me".utf8)),
                                   options: S3PutOptions(metadata: ["a": "1"]))
        let copy = try await s3.copyObject(sourceBucket: bucket, sourceKey: "orig inal.txt", bucket: bucket, key: "copy.txt")
        XCTAssertNotNil(copy.eTag)
        let awaited8 = try await s3.headObject(bucket: bucket, key: "copy.txt").metadata["a"]
        XCTAssertEqual(awaited8, "1")
        _ = try await s3.copyObject(sourceBucket: bucket, sourceKey: "orig inal.txt", bucket: bucket, key: "replaced.txt",
                                    options: S3PutOptions(metadata: ["b": "2"]))
        let replaced = try await s3.headObject(bucket: bucket, key: "replaced.txt")
        XCTAssertEqual(replaced.metadata, ["b": "2"])

        // A presigned URL works with a client that knows no keys.
        let url = try s3.presignedURL(bucket: bucket, key: "copy.txt", expires: .seconds(300))
        XCTAssertTrue(url.contains("X-Amz-Signature="))
        let response = try await HTTPClient.shared.send(HTTPClientRequest(url: url))
        XCTAssertEqual(response.status.code, 200)
        let awaited9 = try await response.body.collect(upTo: 100)
        XCTAssertEqual(awaited9, Array("copy me".utf8))
    }

    func testVirtualHostedStyleReachesTheBucketThroughItsHostName() async throws {
        let port = try XCTUnwrap(URL(string: try Peers.moto())?.port)
        let bucket = "vhost-" + UUID().uuidString.lowercased().prefix(8)
        var configuration = HTTPClient.Configuration()
        configuration.resolve = [try ResolveOverride("\(bucket).s3.test:\(port):127.0.0.1")]
        let client = HTTPClient(configuration: configuration)
        let pathStyle = try makeS3()
        try await pathStyle.createBucket(bucket)
        let s3 = try makeS3(client: client, style: .virtualHosted, endpoint: "http://s3.test:\(port)")
        XCTAssertEqual(try s3.url(bucket: bucket, key: "k.txt"), "http://\(bucket).s3.test:\(port)/k.txt")
        _ = try await s3.putObject(bucket: bucket, key: "k.txt", body: .bytes(Array("virtual".utf8)))
        let awaited10 = try await pathStyle.getObject(bucket: bucket, key: "k.txt").body.collect(upTo: 100)
        XCTAssertEqual(awaited10, Array("virtual".utf8))
        await client.shutdown()
    }
}

/// Counts multipart part requests (`?partNumber=`) between being queued and their response head arriving.
final class PartsInFlight: HTTPClientObserver, @unchecked Sendable {
    // @unchecked: every stored property is read and written only under `lock`.
    private let lock = NSLock()
    private var inFlight: Set<UInt64> = []
    private var _started = 0
    private var _mostAtOnce = 0

    var started: Int { lock.withLock { _started } }
    var mostAtOnce: Int { lock.withLock { _mostAtOnce } }

    func observe(_ event: HTTPClientEvent) {
        lock.withLock {
            switch event.kind {
            case .queued(_, let url) where url.contains("partNumber="):
                _started += 1
                inFlight.insert(event.requestID)
                _mostAtOnce = max(_mostAtOnce, inFlight.count)
            case .headReceived, .failed:
                inFlight.remove(event.requestID)
            default:
                break
            }
        }
    }
}
