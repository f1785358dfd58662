import AsyncHTTP
@testable import AsyncHTTPS3
import XCTest

/// S3's XML read through libxml2: errors become `S3Error`, bad documents a typed error, entities stay unexpanded.
final class S3XMLTests: XCTestCase {
    func testErrorDocumentBecomesS3ErrorWithoutEchoedSignatureFields() throws {
        // The shape of S3's SignatureDoesNotMatch answer (docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html).
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided.</Message>
            <AWSAccessKeyId>AKIDEXAMPLE</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256 SECRET-BEARING</StringToSign>
            <SignatureProvided>deadbeef</SignatureProvided><CanonicalRequest>GET /</CanonicalRequest>
            <RequestId>4442587FB7D0A2F9</RequestId><HostId>host-id</HostId></Error>
            """
        let root = try XMLNode.parse(Array(body.utf8), what: "an error")
        let error = try XCTUnwrap(S3Error.from(root, status: 403, headers: [:]))
        XCTAssertEqual(error.code, "SignatureDoesNotMatch")
        XCTAssertEqual(error.requestID, "4442587FB7D0A2F9")
        XCTAssertEqual(error.hostID, "host-id")
        for hidden in ["SECRET-BEARING", "deadbeef", "GET /"] {
            XCTAssertFalse(error.description.contains(hidden), error.description)
            XCTAssertFalse(error.message.contains(hidden))
        }
    }

    func testMalformedXMLIsATypedError() {
        for bad in ["<Error><Code>NoSuchKey</Code>", "not xml at all", ""] {
            XCTAssertThrowsError(try XMLNode.parse(Array(bad.utf8), what: "a listing"), bad) {
                XCTAssertEqual(($0 as? HTTPClientError)?.code, .malformedResponse)
                XCTAssertTrue("\($0)".contains("a listing"))
            }
        }
    }

    func testExternalEntitiesAreNotLoaded() throws {
        let body = """
            <?xml version="1.0"?>
            <!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>
            <ListBucketResult><Name>&x;</Name></ListBucketResult>
            """
        let root = try XMLNode.parse(Array(body.utf8), what: "a listing")
        XCTAssertFalse(root.value("Name")?.contains("root:") ?? false, "an external entity was read")
    }

    func testListingShapeAndTextOfNestedElements() throws {
        let body = """
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><IsTruncated>true</IsTruncated>
            <Contents><Key>a&amp;b.txt</Key><Size>12</Size></Contents><CommonPrefixes><Prefix>dir/</Prefix></CommonPrefixes>
            <NextContinuationToken>tok</NextContinuationToken></ListBucketResult>
            """
        let root = try XMLNode.parse(Array(body.utf8), what: "a listing")
        XCTAssertEqual(root.name, "ListBucketResult")
        XCTAssertEqual(root.children("Contents").first?.value("Key"), "a&b.txt")
        XCTAssertEqual(root.children("CommonPrefixes").compactMap { $0.value("Prefix") }, ["dir/"])
        XCTAssertEqual(escapeXML("\"a\"&<b>"), "&quot;a&quot;&amp;&lt;b&gt;")
    }

    /// A bucket name goes into the host with virtual-hosted addressing: one holding '#', '@', ':' or '?' would send
    /// the request (and its body) to another host. And an empty key would turn an object request into a bucket
    /// request (DELETE / is DeleteBucket). Both are refused before anything is sent.
    func testBucketNamesAndEmptyKeysThatWouldChangeTheRequestAreRefused() throws {
        var configuration = S3Configuration(region: "us-east-1", credentials: AWSCredentials(accessKeyID: "a", secretAccessKey: "b"),
                                            endpoint: "http://s3.test")
        configuration.addressingStyle = .virtualHosted
        let s3 = S3Client(configuration: configuration)
        for bucket in ["evil.example#", "evil.example?", "user@evil.example", "localhost:8080", "[::1]", "a b", ""] {
            XCTAssertThrowsError(try s3.url(bucket: bucket, key: "k"), bucket) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .invalidRequest)
            }
        }
        XCTAssertThrowsError(try s3.url(bucket: "bucket", key: ""))
        XCTAssertThrowsError(try s3.presignedURL(bucket: "bucket", key: "", expires: .seconds(60)))
        XCTAssertEqual(try HTTPURL(try s3.url(bucket: "my.bucket-1", key: "a/b c")).host, "my.bucket-1.s3.test")
        XCTAssertEqual(try s3.url(bucket: "bucket"), "http://bucket.s3.test/", "a bucket request has no key")
    }
}
