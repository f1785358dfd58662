import AsyncHTTP
import AsyncHTTPS3
import Foundation
import XCTest

/// `AWSSigningMiddleware` in a client's chain: what reaches the server (httpbin's /anything echoes it) is signed as
/// botocore signs the same request at the same instant.
final class AWSSigningMiddlewareTests: XCTestCase {
    func testClientMiddlewareSignsAFileUploadWithASessionTokenAsBotocoreDoes() async throws {
        let credentials = AWSCredentials(accessKeyID: "AKIAMIDDLE", secretAccessKey: "middle/ware+secret",
                                         sessionToken: "FwoGZXIvYXdzEXAMPLE/token+=")
        let signer = AWSSigV4Signer(credentials: credentials, region: "eu-central-1", service: "s3")
        let date = Date(timeIntervalSince1970: 1_764_000_000)
        var configuration = HTTPClient.Configuration()
        configuration.middleware = [AWSSigningMiddleware(signer: signer, now: { date })]
        let client = HTTPClient(configuration: configuration)

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mw-\(UUID().uuidString).bin").path
        let bytes = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }

        let url = try Peers.httpbin() + "/anything/bucket/dir/file%2B1.bin?x-id=PutObject"
        var request = HTTPClientRequest(url: url)
        request.method = .put
        request.body = try .file(path)
        request.setHeader("Content-Type", "application/octet-stream")
        request.setHeader("x-amz-meta-note", "  spaced   out  ")
        let response = try await client.send(request)
        let echoed = try await response.body.collect(upTo: 1 << 20)
        let echo = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(echoed)) as? [String: Any])
        await client.shutdown()
        let headers = try XCTUnwrap(echo["headers"] as? [String: String])
        XCTAssertEqual(headers["X-Amz-Security-Token"], credentials.sessionToken)
        XCTAssertEqual(headers["X-Amz-Date"], "20251124T160000Z")

        // The client's compression step (outer) added Accept-Encoding before the signing step saw the request, so it
        // went out signed.
        let acceptEncoding = try XCTUnwrap(headers["Accept-Encoding"])
        XCTAssertTrue(headers["Authorization"]?.contains("SignedHeaders=accept-encoding;") ?? false)
        let expected = try botocoreSign([[
            "method": "PUT", "url": url,
            "headers": [["Content-Type", "application/octet-stream"], ["x-amz-meta-note", "  spaced   out  "],
                        ["Accept-Encoding", acceptEncoding]],
            "body_hex": bytes.map { String(format: "%02x", $0) }.joined(), "region": "eu-central-1", "service": "s3",
            "access_key": credentials.accessKeyID, "secret_key": credentials.secretAccessKey,
            "token": credentials.sessionToken!, "timestamp": "20251124T160000Z",
        ]])[0]
        XCTAssertEqual(headers["Authorization"], expected["authorization"] as? String)
        XCTAssertEqual(headers["X-Amz-Content-Sha256"], (expected["headers"] as? [String: String])?["x-amz-content-sha256"])
    }

    /// A server that answers a signed request with a redirect to another origin does not get it signed there:
    /// the hop goes out unsigned, as curl sends --aws-sigv4 only to the first host. A redirect on the same origin
    /// is signed afresh.
    func testARedirectToAnotherOriginGoesOutUnsigned() async throws {
        let signer = AWSSigV4Signer(credentials: AWSCredentials(accessKeyID: "AKIAREDIRECT", secretAccessKey: "redirect/secret"),
                                    region: "us-east-1", service: "execute-api")
        var configuration = HTTPClient.Configuration()
        configuration.middleware = [AWSSigningMiddleware(signer: signer)]
        let client = HTTPClient(configuration: configuration)
        let base = try Peers.httpbin()
        let other = base.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        XCTAssertNotEqual(other, base, "the test needs httpbin on 127.0.0.1, reachable as localhost too")
        func echoedHeaders(_ url: String) async throws -> [String: String] {
            var request = HTTPClientRequest(url: url)
            request.method = .delete
            let response = try await client.send(request)
            let body = try await response.body.collect(upTo: 1 << 20)
            let echo = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
            return try XCTUnwrap(echo["headers"] as? [String: String])
        }
        let target = (other + "/anything/admin").addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let elsewhere = try await echoedHeaders(base + "/redirect-to?status_code=307&url=" + target)
        XCTAssertNil(elsewhere["Authorization"], "the hop to another origin was signed")
        XCTAssertNil(elsewhere["X-Amz-Date"])
        let same = try await echoedHeaders(base + "/redirect-to?status_code=307&url=%2Fanything%2Fsame")
        XCTAssertTrue(same["Authorization"]?.hasPrefix("AWS4-HMAC-SHA256 Credential=AKIAREDIRECT/") ?? false, "\(same)")
        await client.shutdown()
    }
}
