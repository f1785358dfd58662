import Foundation
import XCTest

/// The `ahttp` executable, run as a user would, against the in-process server.
final class CommandLineToolTests: XCTestCase {
    var server: NIOTestServer!

    override func setUp() async throws {
        server = try await NIOTestServer()
    }

    override func tearDown() async throws {
        try await server?.shutdown()
    }

    func ahttp(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runAhttp(arguments)
    }

    func testSeveralURLsShareTheConnectionAndWriteOutReports() throws {
        // As curl: the n-th -o is for the n-th URL.
        let result = try ahttp(["-s", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null",
                                "-w", "%{http_code} %{size_download} %{num_connects}\\n",
                                server.url("/hello"), server.url("/bytes?n=5000"), server.url("/status/404")])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "200 5 1\n200 5000 0\n404 0 0\n")
        XCTAssertEqual(server.connectionsAccepted, 1)
    }

    func testHeadRequestPrintsTheHead() throws {
        let result = try ahttp(["-I", server.url("/bytes?n=10")])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix("HTTP/1.1 200 OK\r\n"), result.stdout)
        XCTAssertTrue(result.stdout.lowercased().contains("content-length: 10"), result.stdout)
    }

    func testPostDataAndCustomHeader() throws {
        let result = try ahttp(["-d", "a=1", "-H", "X-Test: yes", "-X", "PUT", server.url("/echo")])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "a=1")
    }

    func testTransportFailuresUseCurlsExitCodes() throws {
        let refused = try ahttp(["http://127.0.0.1:\(try unusedPort())/"])
        XCTAssertEqual(refused.status, 7, "curl: couldn't connect")
        XCTAssertTrue(refused.stderr.contains("connectFailed"), refused.stderr)
        XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1, "one line")
        XCTAssertEqual(try ahttp(["ftp://127.0.0.1/"]).status, 1, "curl: unsupported protocol (a scheme ahttp does not speak)")
        XCTAssertEqual(try ahttp(["http://exa mple/"]).status, 3, "curl: malformed URL")
        XCTAssertEqual(try ahttp(["-m", "0.2", server.url("/slow-head?ms=3000")]).status, 28, "curl: timeout")
        XCTAssertEqual(try ahttp(["-H", "X-A: b\rc", server.url("/hello")]).status, 43)
    }

    func testUsageErrorsExitWithTwo() throws {
        let result = try ahttp(["--no-such-option", server.url("/hello")])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("unknown option"), result.stderr)
    }

    /// curl: -I, -d, -F and -T each choose the request; two of them are a usage error (exit 2) before anything is
    /// sent. ahttp sent a POST for `-I -d` and exited 26 for `-F` with `-d`.
    func testTwoRequestMethodsAreAUsageError() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-\(UUID().uuidString).txt").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        for arguments in [["-I", "-d", "x"], ["-F", "a=b", "-d", "x"], ["-T", file, "-d", "x"], ["-I", "-T", file],
                          ["-I", "-F", "a=b"], ["--json", "{}", "-F", "a=b"]] {
            let result = try ahttp(arguments + [server.url("/headers")])
            XCTAssertEqual(result.status, 2, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("You can only select one HTTP request method!"), "\(arguments): \(result.stderr)")
            XCTAssertEqual(result.stdout, "", "\(arguments): nothing sent")
        }
        XCTAssertEqual(server.requestsServed, 0)
        // -G makes the data a GET's (or with -I a HEAD's) query: one method, no conflict.
        let head = try ahttp(["-s", "-G", "-I", "-d", "q=1", "-w", "%{method}", "-o", "/dev/null", server.url("/headers")])
        XCTAssertEqual(head.status, 0, head.stderr)
        XCTAssertEqual(head.stdout, "HEAD")
    }

    /// curl: `--fail-with-body -o FILE` writes the error page to FILE and exits 22; `-I -o FILE` writes a 404's head
    /// and exits 0 (22 with -f, the head written still); -Z the same. ahttp left the file alone and exited 22 for
    /// both. A plain `-o` still leaves the file alone (docs/cli.md). `-f` with `--fail-with-body` is curl's usage
    /// error, exit 2, where ahttp took the pair.
    func testFailWithBodyWritesTheErrorPageToTheFileAndHeadOnlyWritesTheHead() throws {
        let fault = try FaultServer(script: FaultScript { _, _ in [.response("no such page", status: "404 Not Found")] })
        defer { fault.stop() }
        let page = "http://127.0.0.1:\(fault.port)/missing"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("o.txt").path
        func contents() throws -> String { try String(contentsOfFile: file, encoding: .utf8) }
        for extra in [[], ["-Z"]] {
            try Data("old".utf8).write(to: URL(fileURLWithPath: file))
            let withBody = try ahttp(["-sS", "--fail-with-body"] + extra + ["-o", file, page])
            XCTAssertEqual(withBody.status, 22, "\(extra): \(withBody.stderr)")
            XCTAssertTrue(withBody.stderr.contains("returned error: 404"), withBody.stderr)
            XCTAssertEqual(try contents(), "no such page", "\(extra)")

            try Data("old".utf8).write(to: URL(fileURLWithPath: file))
            let head = try ahttp(["-s", "-I"] + extra + ["-o", file, server.url("/status/404")])
            XCTAssertEqual(head.status, 0, "\(extra): \(head.stderr)")
            XCTAssertTrue(try contents().hasPrefix("HTTP/1.1 404 Not Found\r\n"), "\(extra): \((try? contents()) ?? "")")

            try Data("old".utf8).write(to: URL(fileURLWithPath: file))
            let failed = try ahttp(["-s", "-f", "-I"] + extra + ["-o", file, server.url("/status/404")])
            XCTAssertEqual(failed.status, 22, "\(extra): \(failed.stderr)")
            XCTAssertTrue(try contents().hasPrefix("HTTP/1.1 404 Not Found\r\n"), "\(extra): \((try? contents()) ?? "")")

            try Data("old".utf8).write(to: URL(fileURLWithPath: file))
            let plain = try ahttp(["-s"] + extra + ["-o", file, page])
            XCTAssertEqual(plain.status, 22, "\(extra): \(plain.stderr)")
            XCTAssertEqual(try contents(), "old", "\(extra): a plain -o leaves the file alone")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["o.txt"])

        let served = fault.requestsReceived
        for (arguments, named) in [(["-f", "--fail-with-body"], "--fail-with-body"), (["--fail-with-body", "-f"], "-f")] {
            let both = try ahttp(arguments + [page])
            XCTAssertEqual(both.status, 2, "\(arguments): \(both.stderr)")
            XCTAssertTrue(both.stderr.contains("You must select either --fail or --fail-with-body, not both."), both.stderr)
            XCTAssertTrue(both.stderr.contains("option \(named): is badly used here"), both.stderr)
        }
        XCTAssertEqual(fault.requestsReceived, served, "nothing sent")
    }

    /// curl's -w after a failure or redirect: the last head's status and the last hop's URL when --max-redirs stops
    /// the chain (ahttp: `000` and the first URL), the status and the bytes that came when -m cuts the body (ahttp:
    /// `000 0`), the method the last hop was sent with (a POST a 302 made a GET; ahttp: POST), and the body's bytes
    /// as they crossed the wire under --compressed (ahttp counted the decoded ones).
    func testWriteOutReportsTheLastHopAfterAFailureOrRedirect() throws {
        let httpbin = try Peers.httpbin()
        let limited = try ahttp(["-sS", "-L", "--max-redirs", "1", "-w", "%{http_code}:%{num_redirects}:%{url_effective}",
                                 httpbin + "/redirect/3"])
        XCTAssertEqual(limited.status, 47, limited.stderr)
        XCTAssertTrue(limited.stdout.hasPrefix("302:1:\(httpbin)/") && limited.stdout.hasSuffix("redirect/2"), limited.stdout)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let cut = try ahttp(["-sS", "-m", "1", "-o", file, "-w", "%{http_code} %{size_download}", server.url("/slow-body?ms=5000")])
        XCTAssertEqual(cut.status, 28, cut.stderr)
        XCTAssertEqual(cut.stdout, "200 6")

        let redirecting = try FaultServer(script: FaultScript { connection, request in
            [connection + request == 0 ? .response("", status: "302 Found", headers: ["Location: /next"]) : .response("done")]
        })
        defer { redirecting.stop() }
        let posted = try ahttp(["-s", "-L", "-d", "a=1", "-o", "/dev/null", "-w", "%{method}", "http://127.0.0.1:\(redirecting.port)/form"])
        XCTAssertEqual(posted.status, 0, posted.stderr)
        XCTAssertEqual(posted.stdout, "GET")
        XCTAssertTrue(redirecting.requestHeads.last?.hasPrefix("GET /next ") == true, "\(redirecting.requestHeads)")

        let coded = try gzipped(Array("hello world".utf8))
        let fault = try FaultServer(script: FaultScript { _, _ in
            [.send(Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(coded.count)\r\n\r\n".utf8) + coded)]
        })
        defer { fault.stop() }
        let compressed = try ahttp(["-s", "--compressed", "-o", "/dev/null", "-w", "%{size_download}", "http://127.0.0.1:\(fault.port)/"])
        XCTAssertEqual(compressed.status, 0, compressed.stderr)
        XCTAssertEqual(compressed.stdout, String(coded.count))
    }

    /// -A with a line break is a header ahttp refuses to send (43, nothing sent), as before the client's
    /// configuration refused such a userAgent; a -H User-Agent, which is sent instead, makes it harmless.
    func testAUserAgentWithALineBreakIs43UnlessAHeaderReplacesIt() throws {
        let refused = try ahttp(["-A", "agent\r\nX-Injected: 1", server.url("/hello")])
        XCTAssertEqual(refused.status, 43, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("header 'User-Agent' value contains a carriage return"), refused.stderr)
        XCTAssertFalse(refused.stderr.contains("X-Injected"), refused.stderr)
        XCTAssertEqual(server.connectionsAccepted, 0)
        let replaced = try ahttp(["-s", "-A", "agent\nX: 1", "-H", "User-Agent: mine/1", server.url("/headers")])
        XCTAssertEqual(replaced.status, 0, replaced.stderr)
        XCTAssertTrue(replaced.stdout.contains("User-Agent: mine/1\n"), replaced.stdout)
        XCTAssertFalse(replaced.stdout.contains("agent"), replaced.stdout)
    }

    func testVersionFlagPrintsTheVersion() throws {
        for flag in ["-V", "--version"] {
            let result = try ahttp([flag])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertTrue(result.stdout.hasPrefix("ahttp "), result.stdout)
        }
    }
}
