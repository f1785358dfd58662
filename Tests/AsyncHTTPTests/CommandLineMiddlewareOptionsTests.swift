import Foundation
import XCTest

/// `ahttp`'s redirect, cookie, compression and verbose options, run as a user would, against httpbin.
final class CommandLineMiddlewareOptionsTests: XCTestCase {
    func ahttp(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runAhttp(arguments)
    }

    func temporaryFile(_ name: String) -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-\(UUID().uuidString)-\(name)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testLocationFollowsRedirectsAndWriteOutReportsThem() throws {
        let base = try Peers.httpbin()
        let followed = try ahttp(["-s", "-L", "-o", "/dev/null", "-w", "%{http_code} %{num_redirects} %{url_effective}",
                                  base + "/redirect/3"])
        XCTAssertEqual(followed.status, 0, followed.stderr)
        XCTAssertEqual(followed.stdout, "200 3 \(base)/get")

        let notFollowed = try ahttp(["-s", "-o", "/dev/null", "-w", "%{http_code} %{num_redirects}", base + "/redirect/3"])
        XCTAssertEqual(notFollowed.stdout, "302 0", "as curl, no -L, no following")
    }

    func testMaxRedirsStopsWithCurlsExitCode() throws {
        let result = try ahttp(["-L", "--max-redirs", "1", try Peers.httpbin() + "/redirect/2"])
        XCTAssertEqual(result.status, 47, "curl: CURLE_TOO_MANY_REDIRECTS")
        XCTAssertTrue(result.stderr.contains("tooManyRedirects"), result.stderr)
    }

    func testCookieJarFileWrittenWithSessionCookiesAndReadBack() throws {
        let base = try Peers.httpbin()
        let jar = temporaryFile("cookies.txt")
        let set = try ahttp(["-s", "-L", "-c", jar, base + "/cookies/set?session=abc"])
        XCTAssertEqual(set.status, 0, set.stderr)
        XCTAssertTrue(set.stdout.contains("\"session\": \"abc\""), set.stdout)
        let file = try String(contentsOfFile: jar, encoding: .utf8)
        XCTAssertTrue(file.hasPrefix("# Netscape HTTP Cookie File"), file)
        XCTAssertTrue(file.contains("\t0\tsession\tabc"), "a session cookie, kept as curl -c does: \(file)")

        let read = try ahttp(["-s", "-b", jar, base + "/cookies"])
        XCTAssertTrue(read.stdout.contains("\"session\": \"abc\""), read.stdout)
    }

    func testCookieDataIsSentAsItIs() throws {
        let result = try ahttp(["-s", "-b", "x=1; y=2", try Peers.httpbin() + "/cookies"])
        XCTAssertTrue(result.stdout.contains("\"x\": \"1\"") && result.stdout.contains("\"y\": \"2\""), result.stdout)
    }

    func testCompressedAsksForAndDecodesGzip() throws {
        let decoded = try ahttp(["-s", "--compressed", try Peers.httpbin() + "/gzip"])
        XCTAssertEqual(decoded.status, 0, decoded.stderr)
        XCTAssertTrue(decoded.stdout.contains("\"gzipped\": true"), decoded.stdout)
        XCTAssertTrue(decoded.stdout.contains("\"Accept-Encoding\": \"gzip, deflate\""), decoded.stdout)

        let headers = try ahttp(["-s", try Peers.httpbin() + "/headers"])
        XCTAssertFalse(headers.stdout.contains("Accept-Encoding"), "as curl, none without --compressed: \(headers.stdout)")
    }

    func testVerbosePrintsEachHopsRequestAndResponseHeads() throws {
        let base = try Peers.httpbin()
        let result = try ahttp(["-s", "-v", "-L", "-o", "/dev/null", base + "/redirect/1"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let port = base.split(separator: ":").last.map(String.init) ?? ""
        XCTAssertEqual(lines.filter { $0.hasPrefix("> GET ") || $0.hasPrefix("< HTTP/") }, [
            "> GET /redirect/1 HTTP/1.1", "< HTTP/1.1 302 FOUND", "> GET /get HTTP/1.1", "< HTTP/1.1 200 OK",
        ])
        XCTAssertTrue(lines.contains("> Host: 127.0.0.1:\(port)"), result.stderr)
        XCTAssertTrue(lines.contains { $0.hasPrefix("> User-Agent: AsyncHTTP/") }, result.stderr)
        XCTAssertTrue(lines.contains("< Location: /get"), result.stderr)
    }

    func testVerboseShowsTheEncodersBytesWithSecretsRedacted() throws {
        let base = try Peers.httpbin()
        let result = try ahttp(["-s", "-v", "-o", "/dev/null", "-u", "vic:hunter2", "-b", "session=s3cr3t",
                                base + "/basic-auth/vic/hunter2"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains("> Authorization: Basic <redacted>"), result.stderr)
        XCTAssertTrue(lines.contains("> Cookie: <redacted>"), result.stderr)
        XCTAssertTrue(lines.contains("< HTTP/1.1 200 OK"), result.stderr)
        // The framing header the encoder adds is shown as it went out (nothing reconstructs it).
        XCTAssertTrue(lines.contains("> GET /basic-auth/vic/hunter2 HTTP/1.1"), result.stderr)
        for secret in ["hunter2\n", "s3cr3t", "dmljOmh1bnRlcjI="] {  // base64("vic:hunter2")
            XCTAssertFalse(result.stderr.contains(secret), "\(secret) leaked: \(result.stderr)")
        }
    }
}
