import AsyncHTTP
import AsyncHTTPS3
import Foundation
import XCTest

/// `ahttp --aws-sigv4 'aws:amz:REGION:SERVICE' -u KEY:SECRET` (curl's option) against moto's S3.
final class CommandLineAWSSigV4Tests: XCTestCase {
    let user = "AKIACLITEST:cli/secret+KEY"

    func testSignedPutAndGetThroughTheCommandLine() async throws {
        let moto = try Peers.moto()
        let bucket = "cli-" + UUID().uuidString.lowercased().prefix(8)
        let sign = ["--aws-sigv4", "aws:amz:us-east-1:s3", "-u", user]
        let create = try runAhttp(sign + ["-s", "-X", "PUT", "-w", "%{http_code}", "\(moto)/\(bucket)"])
        XCTAssertEqual(create.status, 0, create.stderr)
        XCTAssertTrue(create.stdout.hasSuffix("200"), create.stdout)
        let put = try runAhttp(sign + ["-s", "-X", "PUT", "-H", "Content-Type: text/plain", "--data-binary", "signed from the CLI", "-w", "%{http_code}",
                                       "\(moto)/\(bucket)/note.txt"])
        XCTAssertEqual(put.status, 0, put.stderr)
        XCTAssertTrue(put.stdout.hasSuffix("200"), put.stdout)
        let get = try runAhttp(sign + ["-s", "\(moto)/\(bucket)/note.txt"])
        XCTAssertEqual(get.status, 0, get.stderr)
        XCTAssertEqual(get.stdout, "signed from the CLI")

        // What the library reads back is what the CLI stored.
        let s3 = S3Client(configuration: S3Configuration(
            region: "us-east-1", credentials: AWSCredentials(accessKeyID: "a", secretAccessKey: "b"), endpoint: moto))
        let awaited1 = try await s3.getObject(bucket: bucket, key: "note.txt").body.collect(upTo: 100)
        XCTAssertEqual(awaited1, Array("signed from the CLI".utf8))
    }

    func testBadProviderAndMissingRegionExitWithCurlsCodeAndNoSecret() throws {
        let moto = try Peers.moto()
        let google = try runAhttp(["--aws-sigv4", "goog:goog:r:s", "-u", user, "\(moto)/x"])
        XCTAssertEqual(google.status, 43)
        XCTAssertTrue(google.stderr.contains("goog"), google.stderr)
        XCTAssertFalse(google.stderr.contains("cli/secret+KEY"), google.stderr)
        // An IP address names no service or region.
        let noRegion = try runAhttp(["--aws-sigv4", "aws:amz", "-u", user, "\(moto)/x"])
        XCTAssertEqual(noRegion.status, 43)
        XCTAssertTrue(noRegion.stderr.contains("region"), noRegion.stderr)
        XCTAssertFalse(noRegion.stderr.contains("cli/secret+KEY"), noRegion.stderr)
        let noKeys = try runAhttp(["--aws-sigv4", "aws:amz:us-east-1:s3", "\(moto)/x"])
        XCTAssertEqual(noKeys.status, 43)
        XCTAssertTrue(noKeys.stderr.contains("-u"), noKeys.stderr)
    }

    /// What the CLI actually sends, echoed back by httpbin's /anything, signs to what botocore computes for the same
    /// request at the same instant (the echoed X-Amz-Date): a non-S3 service, a path botocore encodes twice, a query
    /// to sort, a body to hash.
    func testCommandLineAuthorizationMatchesBotocoreForTheRequestItSent() throws {
        let url = try Peers.httpbin() + "/anything/orders/a%20b?z=1&a=2"
        let body = #"{"id":1}"#
        let result = try runAhttp(["-s", "--aws-sigv4", "aws:amz:eu-west-1:execute-api", "-u", user,
                                   "-H", "Content-Type: application/json", "--data-binary", body, url])
        XCTAssertEqual(result.status, 0, result.stderr)
        let echo = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let headers = try XCTUnwrap(echo["headers"] as? [String: String])
        let sent = try XCTUnwrap(headers["Authorization"])
        let date = try XCTUnwrap(headers["X-Amz-Date"])
        XCTAssertNil(headers["X-Amz-Content-Sha256"], "only S3 gets the payload header")
        let expected = try botocoreSign([[
            // The CLI sends curl's default `Accept: */*`, and the middleware signs every header it sends.
            "method": "POST", "url": url, "headers": [["Accept", "*/*"], ["Content-Type", "application/json"]],
            "body_hex": Array(body.utf8).map { String(format: "%02x", $0) }.joined(), "region": "eu-west-1",
            "service": "execute-api", "access_key": "AKIACLITEST", "secret_key": "cli/secret+KEY", "timestamp": date,
        ]])
        XCTAssertEqual(sent, expected[0]["authorization"] as? String)
        XCTAssertTrue(sent.contains("SignedHeaders=accept;content-type;host;x-amz-date,"), sent)
    }
    /// A session token given with `-H` (curl's way: `-u` holds only the key pair) goes out and is signed, as curl
    /// signs every header; it was dropped, so temporary (STS) keys were always refused. botocore, given the same
    /// token in its credentials, signs the request to the same Authorization.
    func testSessionTokenGivenAsAHeaderIsSentAndSigned() throws {
        let url = try Peers.httpbin() + "/anything/token"
        let result = try runAhttp(["-s", "--aws-sigv4", "aws:amz:us-east-1:s3", "-u", user,
                                   "-H", "X-Amz-Security-Token: TOK", url])
        XCTAssertEqual(result.status, 0, result.stderr)
        let echo = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let headers = try XCTUnwrap(echo["headers"] as? [String: String])
        XCTAssertEqual(headers["X-Amz-Security-Token"], "TOK")
        let sent = try XCTUnwrap(headers["Authorization"])
        XCTAssertTrue(sent.contains("SignedHeaders=accept;host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"), sent)
        let date = try XCTUnwrap(headers["X-Amz-Date"])
        let expected = try botocoreSign([[
            "method": "GET", "url": url, "headers": [["Accept", "*/*"]], "body_hex": "", "region": "us-east-1",
            "service": "s3", "access_key": "AKIACLITEST", "secret_key": "cli/secret+KEY", "token": "TOK", "timestamp": date,
        ]])
        XCTAssertEqual(sent, expected[0]["authorization"] as? String)
    }
    /// The region and service left out of the provider are read from each URL as sent: a URL without a scheme is
    /// http:// (curl), and each URL is signed for its own host. The raw first URL was read instead, so a URL without
    /// a scheme exited 43 and a second URL was signed for the first one's service and region.
    func testRegionAndServiceAreReadFromEachURLAsSent() throws {
        let httpbin = try XCTUnwrap(URL(string: try Peers.httpbin()))
        let port = try XCTUnwrap(httpbin.port)
        let first = "execute-api.eu-west-1.amazonaws.com", second = "sqs.us-west-2.amazonaws.com"
        let scratch = try makeTemporaryDirectory("ahttp-sigv4-scope")
        defer { scratch.remove() }
        let result = try runAhttp(["-s", "--aws-sigv4", "aws:amz", "-u", user,
                                   "--resolve", "\(first):\(port):127.0.0.1", "--resolve", "\(second):\(port):127.0.0.1",
                                   "-o", scratch.path + "/1.json", "\(first):\(port)/anything/one",
                                   "-o", scratch.path + "/2.json", "http://\(second):\(port)/anything/two"])
        XCTAssertEqual(result.status, 0, result.stderr)
        for (file, scope) in [("1.json", "/eu-west-1/execute-api/aws4_request"), ("2.json", "/us-west-2/sqs/aws4_request")] {
            let data = try Data(contentsOf: URL(fileURLWithPath: scratch.path + "/" + file))
            let echo = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let headers = try XCTUnwrap(echo["headers"] as? [String: String])
            let authorization = try XCTUnwrap(headers["Authorization"])
            XCTAssertTrue(authorization.contains(scope + ","), "\(file): \(authorization)")
        }
    }
}
