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

    // MARK: Against in-process servers

    /// A server whose every answer is a redirect with `status` to `location`.
    func redirector(_ status: String, to location: String) throws -> FaultServer {
        let server = try FaultServer(script: FaultScript([[.response("", status: status, headers: ["Location: \(location)"])]]))
        addTeardownBlock { server.stop() }
        return server
    }

    /// curl: `-X METHOD` is sent on every hop, and libcurl turns only a POST into a GET on 301 and 302 (303: any
    /// method but -X's). ahttp turned a DELETE or a -T PUT into a GET on 301.
    func testLocationKeepsTheMethodAsCurl() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let moved = try redirector("301 Moved Permanently", to: server.url("/headers"))
        let deleted = try ahttp(["-s", "-L", "-X", "DELETE", "http://127.0.0.1:\(moved.port)/old"])
        XCTAssertEqual(deleted.status, 0, deleted.stderr)
        XCTAssertTrue(deleted.stdout.hasPrefix("method: DELETE\n"), deleted.stdout)

        let seeOther = try redirector("303 See Other", to: server.url("/headers"))
        let custom = try ahttp(["-s", "-L", "-X", "PATCH", "http://127.0.0.1:\(seeOther.port)/old"])
        XCTAssertTrue(custom.stdout.hasPrefix("method: PATCH\n"), "-X is used on every hop, 303 too: \(custom.stdout)")

        let posted = try ahttp(["-s", "-L", "-d", "a=1", "http://127.0.0.1:\(moved.port)/old"])
        XCTAssertTrue(posted.stdout.hasPrefix("method: GET\n"), "a POST becomes a GET on 301, as libcurl: \(posted.stdout)")

        let file = temporaryFile("upload.txt")
        try Data("uploaded bytes".utf8).write(to: URL(fileURLWithPath: file))
        let movedToEcho = try redirector("302 Found", to: server.url("/echo"))
        let put = try ahttp(["-s", "-L", "-T", file, "http://127.0.0.1:\(movedToEcho.port)/up"])
        XCTAssertEqual(put.status, 0, put.stderr)
        XCTAssertEqual(put.stdout, "uploaded bytes", "-T's PUT is sent again with its body")
    }

    /// curl's -L has no loop check: a redirect to itself is followed until --max-redirs (exit 47). ahttp stopped at
    /// the first repeat.
    func testARedirectLoopIsFollowedUpToMaxRedirs() throws {
        let server = try FaultServer(script: FaultScript([[.response("", status: "302 Found", headers: ["Location: /same"])]]))
        defer { server.stop() }
        let result = try ahttp(["-s", "-S", "-L", "--max-redirs", "3", "http://127.0.0.1:\(server.port)/same"])
        XCTAssertEqual(result.status, 47, result.stderr)
        XCTAssertTrue(result.stderr.contains("tooManyRedirects"), result.stderr)
        XCTAssertEqual(server.requestsReceived, 4, "the first request and 3 redirects")
    }

    /// With no limit (`--max-redirs -1`) a loop is still caught when it repeats (exit 47): every hop is kept in the
    /// redirect history, so an endless loop would grow without end (it ran until killed).
    func testALoopWithNoRedirectLimitIsStillCaught() throws {
        let server = try FaultServer(script: FaultScript([[.response("", status: "302 Found", headers: ["Location: /same"])]]))
        defer { server.stop() }
        let result = try ahttp(["-s", "-S", "-L", "--max-redirs", "-1", "-m", "20", "http://127.0.0.1:\(server.port)/same"])
        XCTAssertEqual(result.status, 47, result.stderr)
        XCTAssertLessThan(server.requestsReceived, 10)
    }

    /// curl sends every -b NAME=VALUE in one Cookie field, joined with ';' (tool_operate.c).
    func testSeveralCookieDataArgumentsAreOneCookieField() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        let result = try ahttp(["-s", "-b", "a=1", "-b", "b=2", server.url("/headers")])
        XCTAssertEqual(result.status, 0, result.stderr)
        let cookies = result.stdout.split(separator: "\n").filter { $0.lowercased().hasPrefix("cookie:") }
        XCTAssertEqual(cookies, ["Cookie: a=1;b=2"], result.stdout)
    }

    /// curl: `-c -` writes the cookies to standard output at the end, `-b -` reads them from standard input.
    func testCookieFilesDashAreStandardOutputAndInput() async throws {
        let server = try await NIOTestServer()
        defer { Task { try? await server.shutdown() } }
        addTeardownBlock { try? FileManager.default.removeItem(atPath: "-") }  // what the old code wrote
        let line = "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tfrom-stdin\n"
        let read = try runAhttp(["-s", "-b", "-", server.url("/headers")], input: "# Netscape HTTP Cookie File\n" + line)
        XCTAssertEqual(read.status, 0, read.stderr)
        XCTAssertTrue(read.stdout.contains("Cookie: sid=from-stdin"), read.stdout)

        let setter = try FaultServer(script: FaultScript([[.response("body", headers: ["Set-Cookie: token=abc; Path=/"])]]))
        defer { setter.stop() }
        let written = try ahttp(["-s", "-c", "-", "http://127.0.0.1:\(setter.port)/"])
        XCTAssertEqual(written.status, 0, written.stderr)
        XCTAssertTrue(written.stdout.hasPrefix("body# Netscape HTTP Cookie File"), written.stdout)
        XCTAssertTrue(written.stdout.contains("\ttoken\tabc\n"), written.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "-"), "no file named '-'")
    }
}
