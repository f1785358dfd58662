import Foundation
import HTTPTypes
import XCTest
@testable import AsyncHTTP

/// `ContentDisposition` (RFC 6266, RFC 8187) and the safe file name a response suggests, as pure logic; then
/// `HTTPClient.download(_:intoDirectory:)` against httpbin (which sets any response header it is asked for) and nginx.
final class ContentDispositionTests: XCTestCase {
    func testTypesAndParameters() throws {
        let plain = try XCTUnwrap(ContentDisposition(#"Attachment; filename="report.txt"; Size=3"#))
        XCTAssertEqual(plain.type, "attachment")
        XCTAssertTrue(plain.isAttachment)
        XCTAssertEqual(plain.filename, "report.txt")
        XCTAssertEqual(plain.parameters["size"], "3")

        XCTAssertEqual(ContentDisposition("inline")?.type, "inline")
        XCTAssertEqual(ContentDisposition("inline")?.filename, nil)
        XCTAssertFalse(try XCTUnwrap(ContentDisposition("inline; filename=a.txt")).isAttachment)
        XCTAssertNil(ContentDisposition(""), "no type")
        XCTAssertNil(ContentDisposition("; filename=a.txt"), "no type")
        XCTAssertNil(ContentDisposition("\"attachment\""), "a quoted string is not a type")
    }

    func testValuesQuotedUnquotedAndMalformed() {
        XCTAssertEqual(ContentDisposition("attachment; filename=report2.txt; size=3")?.filename, "report2.txt")
        XCTAssertEqual(ContentDisposition(#"attachment; filename="a\"b.txt""#)?.filename, #"a"b.txt"#, "a quoted-pair")
        XCTAssertEqual(ContentDisposition(#"attachment; filename="a;b.txt""#)?.filename, "a;b.txt", "';' inside quotes")
        XCTAssertEqual(ContentDisposition(#"attachment; filename="C:\dir\win.txt""#)?.filename, #"C:\dir\win.txt"#,
                       "a backslash before another byte is kept (a Windows path sent unescaped)")
        XCTAssertEqual(ContentDisposition(#"attachment; filename="a\\b.txt""#)?.filename, #"a\b.txt"#, "an escaped backslash")
        XCTAssertEqual(ContentDisposition("attachment; filename=my report.txt ")?.filename, "my report.txt",
                       "an unquoted value with a space, as browsers take it")
        XCTAssertEqual(ContentDisposition(#"attachment; filename="unterminated.txt"#)?.filename, "unterminated.txt")
        XCTAssertEqual(ContentDisposition("attachment; junk; =x; filename = spaced.txt")?.filename, "spaced.txt",
                       "unreadable parameters are skipped")
        XCTAssertEqual(ContentDisposition("attachment; filename=first.txt; filename=second.txt")?.filename, "first.txt")
        XCTAssertEqual(ContentDisposition("attachment; FILENAME=upper.txt")?.filename, "upper.txt", "names are case-insensitive")
    }

    func testExtendedFilenameWinsWhenDecodable() {
        XCTAssertEqual(ContentDisposition("attachment; filename*=UTF-8''%e2%82%ac%20rates.txt")?.filename, "€ rates.txt")
        XCTAssertEqual(ContentDisposition("attachment; filename=\"plain.txt\"; filename*=utf-8'en'star.txt")?.filename, "star.txt",
                       "filename* over filename (RFC 6266 §4.3), whatever the order")
        XCTAssertEqual(ContentDisposition("attachment; filename*=iso-8859-1''caf%E9.txt")?.filename, "café.txt")
        // Undecodable: another charset, invalid UTF-8, a bad escape, a missing part. filename, if any, is used.
        XCTAssertEqual(ContentDisposition("attachment; filename*=KOI8-R''%c1.txt; filename=fallback.txt")?.filename, "fallback.txt")
        XCTAssertEqual(ContentDisposition("attachment; filename*=UTF-8''%ff.txt; filename=fallback.txt")?.filename, "fallback.txt")
        XCTAssertEqual(ContentDisposition("attachment; filename*=UTF-8''%zz.txt")?.filename, nil)
        XCTAssertNil(ContentDisposition.decodeExtendedValue("UTF-8'no-second-quote"))
        XCTAssertEqual(ContentDisposition.decodeExtendedValue("UTF-8''"), "")
    }

    func testSafeFileNames() {
        XCTAssertEqual(ContentDisposition.safeFileName("report.txt"), "report.txt")
        XCTAssertEqual(ContentDisposition.safeFileName("../../etc/passwd"), "passwd")
        XCTAssertEqual(ContentDisposition.safeFileName("/etc/cron.d/job"), "job")
        XCTAssertEqual(ContentDisposition.safeFileName(#"C:\dir\win.txt"#), "win.txt")
        XCTAssertEqual(ContentDisposition.safeFileName(".bashrc"), "bashrc", "never a hidden file")
        XCTAssertEqual(ContentDisposition.safeFileName("  ..hidden . "), "hidden .")
        XCTAssertEqual(ContentDisposition.safeFileName("a\nb\u{7F}\u{0}.txt"), "a_b__.txt")
        // A combining mark after "/" or "." makes one Character of the two: the separator and the dot still count.
        XCTAssertEqual(ContentDisposition.safeFileName("../../\u{301}etc"), "\u{301}etc")
        XCTAssertEqual(ContentDisposition.safeFileName(".\u{301}bashrc"), "\u{301}bashrc")
        XCTAssertFalse(ContentDisposition.safeFileName("a/\u{301}/../b\u{301}")!.unicodeScalars.contains("/"))
        for nothing in ["", ".", "..", "dir/", "../", "   ", "a/.."] {
            XCTAssertNil(ContentDisposition.safeFileName(nothing), "'\(nothing)'")
        }
        let long = String(repeating: "é", count: 200) + ".tar.gz"
        let shortened = try! XCTUnwrap(ContentDisposition.safeFileName(long))
        XCTAssertLessThanOrEqual(shortened.utf8.count, 255)
        XCTAssertGreaterThan(shortened.utf8.count, 240, "cut at a character boundary, no shorter than needed")
        XCTAssertTrue(shortened.hasSuffix("é.gz"), "the extension kept: \(shortened)")
    }

    func testSuggestedFilename() {
        func response(_ url: String, _ disposition: String?) -> HTTPClientResponse {
            var headers = HTTPFields()
            if let disposition { headers[.contentDisposition] = disposition }
            return HTTPClientResponse(status: .ok, headers: headers, url: try! HTTPURL(url))
        }
        XCTAssertEqual(response("https://example.com/files/x.bin", "attachment; filename=\"../r.txt\"").suggestedFilename, "r.txt")
        XCTAssertEqual(response("https://example.com/files/x.bin", "inline; filename=in.txt").suggestedFilename, "in.txt",
                       "whatever the type, as URLSession")
        XCTAssertEqual(response("https://example.com/files/a%20b.txt?x=1", nil).suggestedFilename, "a b.txt", "the URL's, decoded")
        XCTAssertEqual(response("https://example.com/files/x.bin", "attachment; filename=\"\"").suggestedFilename, "x.bin",
                       "an unusable name falls back to the URL's")
        XCTAssertEqual(response("https://example.com/%2e%2e", nil).suggestedFilename, nil)
        XCTAssertEqual(response("https://example.com/", nil).suggestedFilename, nil)
    }

    func testMovingIntoPlaceWithoutReplacingKeepsTheExistingFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("noreplace-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("new").path
        let destination = directory.appendingPathComponent("old").path
        try Data("new".utf8).write(to: URL(fileURLWithPath: source))
        try Data("old".utf8).write(to: URL(fileURLWithPath: destination))
        XCTAssertThrowsError(try LocalFiles.moveIntoPlace(source, destination, replacingExisting: false)) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .ioFailure)
            XCTAssertTrue("\(error)".contains("already exists"), "\(error)")
        }
        XCTAssertEqual(try String(contentsOfFile: destination, encoding: .utf8), "old")
        XCTAssertEqual(try String(contentsOfFile: source, encoding: .utf8), "new")
        let fresh = directory.appendingPathComponent("fresh").path
        try LocalFiles.moveIntoPlace(source, fresh, replacingExisting: false)
        XCTAssertEqual(try String(contentsOfFile: fresh, encoding: .utf8), "new")
        XCTAssertFalse(FileManager.default.fileExists(atPath: source))
    }

    // MARK: Against real servers

    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("named-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        return directory
    }

    /// httpbin's `/response-headers` answers with the fields its query names, and a JSON body that lists them.
    func headerURL(_ disposition: String) throws -> String {
        let query = disposition.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        return try Peers.httpbin() + "/response-headers?Content-Disposition=" + query
    }

    func testADownloadIntoADirectoryTakesTheServersNameSafelyAndNeverReplacesAFile() async throws {
        let directory = try temporaryDirectory()
        let client = HTTPClient()
        let named = try await client.download(HTTPClientRequest(url: try headerURL(#"attachment; filename="../../escape.txt""#)),
                                              intoDirectory: directory.path)
        XCTAssertEqual(named.path, directory.path + "/escape.txt")
        XCTAssertTrue(named.written)
        let written = try String(contentsOfFile: named.path, encoding: .utf8)
        XCTAssertTrue(written.contains("escape.txt"), "httpbin's JSON body lists the field: \(written)")
        XCTAssertEqual(named.fileSize, written.utf8.count)

        // The same name again: refused before the body is read, and the file is as it was.
        try Data("mine".utf8).write(to: URL(fileURLWithPath: named.path))
        do {
            _ = try await client.download(HTTPClientRequest(url: try headerURL(#"attachment; filename="escape.txt""#)),
                                          intoDirectory: directory.path)
            XCTFail("replaced a file")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .ioFailure)
            XCTAssertTrue(error.message.contains("already exists"), error.message)
        }
        XCTAssertEqual(try String(contentsOfFile: named.path, encoding: .utf8), "mine")

        // No Content-Disposition: the URL's last segment (nginx), then a URL ending in "/": index.html.
        let nginx = try Peers.nginx()
        let small = try await client.download(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/small.txt"),
                                              intoDirectory: directory.path + "/")
        XCTAssertEqual(small.path, directory.path + "/small.txt")
        let index = try await client.download(HTTPClientRequest(url: try Peers.httpbin() + "/"), intoDirectory: directory.path)
        XCTAssertEqual(index.path, directory.path + "/index.html")
        XCTAssertTrue(index.written)

        await client.shutdown()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted(),
                       ["escape.txt", "index.html", "small.txt"], "nothing else left behind")
    }

    func testADownloadIntoADirectoryRefusesResumeAndAMissingDirectory() async throws {
        let directory = try temporaryDirectory()
        let client = HTTPClient()
        let request = HTTPClientRequest(url: try headerURL("attachment; filename=a.txt"))
        do {
            _ = try await client.download(request, intoDirectory: directory.path, options: DownloadOptions(resume: true))
            XCTFail("resumed without a name")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest)
        }
        do {
            _ = try await client.download(request, intoDirectory: directory.path + "/missing")
            XCTFail("wrote into a missing directory")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest)
            XCTAssertTrue(error.message.contains("missing"), error.message)
        }
        // An error status writes nothing, as download(_:to:).
        let status = try await client.download(HTTPClientRequest(url: try Peers.httpbin() + "/status/404"), intoDirectory: directory.path)
        await client.shutdown()
        XCTAssertEqual(status.status.code, 404)
        XCTAssertFalse(status.written)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), [])
    }
}
