import Foundation
import XCTest

/// `ahttp --archive OUT URL`, the built executable run as a user would, against the web archive's nginx site.
final class CommandLineArchiveTests: XCTestCase {
    func testArchiveWritesASingleFileForHTMLAndADirectoryOtherwise() throws {
        let site = try WebArchiveSite.fromEnvironment()
        let scratch = try makeTemporaryDirectory("ahttp-archive")
        defer { scratch.remove() }

        let single = try runAhttp(["--archive", scratch.path + "/page.html", site.url + "/"])
        XCTAssertEqual(single.status, 0, single.stderr)
        // The CLI takes every origin; only the 404 is missing, and it is named on stderr.
        XCTAssertEqual(single.stderr, "ahttp: not archived: image \(site.url)/img/missing.png: HTTP 404\n")
        XCTAssertEqual(single.stdout, "")
        let html = try String(contentsOfFile: scratch.path + "/page.html", encoding: .utf8)
        let blue = try site.file("/img/blue.png")
        XCTAssertTrue(html.contains("data:image/png;base64," + Data(blue).base64EncodedString()), "the other origin's image is inlined")
        XCTAssertFalse(html.contains("src=\"../img/red.png\""))

        let directory = try runAhttp(["-s", "--archive", scratch.path + "/page", site.url + "/"])
        XCTAssertEqual(directory.status, 0, directory.stderr)
        XCTAssertEqual(directory.stderr, "")
        let files = try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/page/resources")
        XCTAssertEqual(files.count, 14, "\(files)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: scratch.path + "/page/index.html"))

        // A page that is not there: curl -f's 22, nothing written.
        let missing = try runAhttp(["--archive", scratch.path + "/none.html", site.url + "/nope.html"])
        XCTAssertEqual(missing.status, 22, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("HTTP 404"), missing.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.path + "/none.html"))
        // Refused connection: curl's 7.
        XCTAssertEqual(try runAhttp(["--archive", scratch.path + "/x.html", "http://127.0.0.1:1/"]).status, 7)
    }
    /// A page behind Basic authentication: answers 401 to a request without `Authorization: Basic vic:hunter2`, as does
    /// its image on the same origin; an image on another origin is open.
    private func protectedSite() async throws -> (page: CacheOriginServer, other: CacheOriginServer) {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]
        let other = try await CacheOriginServer { _ in .init(status: 200, headers: [("Content-Type", "image/png")], body: png) }
        let otherImage = other.url("/open.png")
        let page = try await CacheOriginServer { request in
            guard request.headers["authorization"] == "Basic dmljOmh1bnRlcjI=" else {
                return .init(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"archive\"")], body: Array("no".utf8))
            }
            switch request.target {
            case "/":
                let html = "<html><body><img src=\"/secret.png\"><img src=\"\(otherImage)\"></body></html>"
                return .init(status: 200, headers: [("Content-Type", "text/html")], body: Array(html.utf8))
            case "/secret.png": return .init(status: 200, headers: [("Content-Type", "image/png")], body: png)
            default: return .init(status: 404)
            }
        }
        return (page, other)
    }

    /// `-u` and the URL's userinfo reach the archive, as they reach a normal transfer: the page and the resources on
    /// its origin are sent with them (they never were: the page's 401 was exit 22), and another origin never sees
    /// them.
    func testArchiveSendsTheCredentialsToThePageAndItsOrigin() async throws {
        let (page, other) = try await protectedSite()
        let scratch = try makeTemporaryDirectory("ahttp-archive-auth")
        defer { scratch.remove() }

        let withUser = try runAhttp(["--archive", scratch.path + "/a.html", "-u", "vic:hunter2", page.url("/")])
        XCTAssertEqual(withUser.status, 0, withUser.stderr)
        XCTAssertEqual(withUser.stderr, "", "a resource was not archived")
        XCTAssertEqual(page.count("/secret.png"), 1)
        let userinfo = page.url("/").replacing("http://", with: "http://vic:hunter2@")
        let withUserinfo = try runAhttp(["--archive", scratch.path + "/b.html", userinfo])
        XCTAssertEqual(withUserinfo.status, 0, withUserinfo.stderr)
        XCTAssertEqual(withUserinfo.stderr, "", "a resource was not archived")
        XCTAssertEqual(page.count("/secret.png"), 2)
        XCTAssertEqual(other.requests.count, 2)
        XCTAssertTrue(other.requests.allSatisfy { $0.headers["authorization"] == nil }, "the credentials went to another origin")

        let without = try runAhttp(["--archive", scratch.path + "/c.html", page.url("/")])
        XCTAssertEqual(without.status, 22, without.stderr)
        try await page.shutdown()
        try await other.shutdown()
    }

    /// `--aws-sigv4` with `--archive` signs the page and the resources on its origin only: an image on another host
    /// goes out unsigned, as the page's credentials do not go there either (it was signed with the user's key).
    func testArchiveSignsOnlyThePagesOriginWithAWSSigV4() async throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]
        let other = try await CacheOriginServer { _ in .init(status: 200, headers: [("Content-Type", "image/png")], body: png) }
        let otherImage = other.url("/open.png")
        let page = try await CacheOriginServer { request in
            guard request.headers["authorization"]?.hasPrefix("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") == true else {
                return .init(status: 403, body: Array("unsigned".utf8))
            }
            switch request.target {
            case "/":
                let html = "<html><body><img src=\"/own.png\"><img src=\"\(otherImage)\"></body></html>"
                return .init(status: 200, headers: [("Content-Type", "text/html")], body: Array(html.utf8))
            case "/own.png": return .init(status: 200, headers: [("Content-Type", "image/png")], body: png)
            default: return .init(status: 404)
            }
        }
        let scratch = try makeTemporaryDirectory("ahttp-archive-sigv4")
        defer { scratch.remove() }
        let result = try runAhttp(["--archive", scratch.path + "/a.html", "--aws-sigv4", "aws:amz:us-east-1:s3",
                                   "-u", "AKIDEXAMPLE:wJalrXUtnFEMI", page.url("/")])
        try await page.shutdown()
        try await other.shutdown()
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "", "a resource was not archived")
        XCTAssertEqual(page.count("/own.png"), 1)
        XCTAssertEqual(other.requests.count, 1)
        XCTAssertTrue(other.requests.allSatisfy { $0.headers["authorization"] == nil }, "another origin was signed for")
    }

    /// The page's failure is an error message: hidden by `-s`, shown by `-sS`, as curl's.
    func testArchiveFailureIsSilentUnderSAndShownUnderSS() async throws {
        let (page, other) = try await protectedSite()
        let scratch = try makeTemporaryDirectory("ahttp-archive-silent")
        defer { scratch.remove() }
        let silent = try runAhttp(["-s", "--archive", scratch.path + "/a.html", page.url("/")])
        XCTAssertEqual(silent.status, 22)
        XCTAssertEqual(silent.stderr, "")
        let shown = try runAhttp(["-sS", "--archive", scratch.path + "/a.html", page.url("/")])
        XCTAssertEqual(shown.status, 22)
        XCTAssertTrue(shown.stderr.contains("HTTP 401"), shown.stderr)
        try await page.shutdown()
        try await other.shutdown()
    }
}
