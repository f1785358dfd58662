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
}
