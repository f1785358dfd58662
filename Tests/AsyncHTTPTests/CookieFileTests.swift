import Foundation
import XCTest

@testable import AsyncHTTP

final class CookieFileTests: XCTestCase {
    let now = 1_700_000_000.0
    private var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("AsyncHTTPCookieFileTests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try FileManager.default.removeItem(atPath: directory)
    }

    /// A file written by `curl 7.88.1 -c` (captured from a local server that set these cookies; see the
    /// fixture): host-only and domain cookies, `#HttpOnly_` lines, session cookies, an empty value, and
    /// curl's own default paths with a trailing slash.
    private func curlFixture() throws -> String {
        let url = try XCTUnwrap(
            Bundle.module.url(forResource: "curl-7.88.1-cookies", withExtension: "txt", subdirectory: "Resources"))
        return try String(contentsOf: url, encoding: .utf8)
    }

    func testParsesCookiesWrittenByCurl() throws {
        let cookies = NetscapeCookieFile.parse(try curlFixture())
        // Oldest first: curl writes the newest first.
        XCTAssertEqual(cookies.map(\.name), ["sid", "pref", "token", "wide", "narrow", "lang", "empty"])
        let byName = Dictionary(uniqueKeysWithValues: cookies.map { ($0.name, $0) })

        let sid = try XCTUnwrap(byName["sid"])
        XCTAssertEqual(sid.domain, "127.0.0.1")
        XCTAssertTrue(sid.hostOnly)
        XCTAssertTrue(sid.httpOnly)
        XCTAssertEqual(sid.path, "/")
        XCTAssertNil(sid.expirySeconds)
        XCTAssertEqual(sid.value, "abc123")

        let token = try XCTUnwrap(byName["token"])
        XCTAssertTrue(token.secure)
        XCTAssertTrue(token.httpOnly)
        XCTAssertEqual(token.path, "/app/")
        XCTAssertEqual(token.expirySeconds, 1_881_678_192)

        let wide = try XCTUnwrap(byName["wide"])
        XCTAssertEqual(wide.domain, "example.test")
        XCTAssertFalse(wide.hostOnly)
        XCTAssertFalse(wide.httpOnly)
        XCTAssertEqual(wide.expirySeconds, 2_114_380_800)

        let lang = try XCTUnwrap(byName["lang"])
        XCTAssertTrue(lang.httpOnly)
        XCTAssertFalse(lang.hostOnly)
        XCTAssertEqual(lang.value, "en-US")

        let empty = try XCTUnwrap(byName["empty"])
        XCTAssertEqual(empty.value, "")
        XCTAssertEqual(empty.domain, "www.example.test")
        XCTAssertTrue(empty.hostOnly)
        XCTAssertEqual(byName["pref"]?.sameSite, .unspecified)
    }

    func testRewritingCurlsFileReproducesItByteForByte() throws {
        let text = try curlFixture()
        let cookies = NetscapeCookieFile.parse(text)
        XCTAssertEqual(NetscapeCookieFile.serialize(cookies, includeSessionCookies: true), text)
    }

    func testJarLoadsAndSavesCurlsFileUnchanged() async throws {
        let path = directory + "/cookies.txt"
        let text = try curlFixture()
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        let jar = CookieJar(storage: NetscapeCookieFile(path: path, includeSessionCookies: true))
        try await jar.load(now: now)
        let forApp = await jar.cookieHeader(
            for: .init(host: "127.0.0.1", path: "/app/x", isSecure: true), now: now)
        XCTAssertEqual(forApp, "token=s3cr3t; pref=dark; sid=abc123")
        let forB = await jar.cookieHeader(
            for: .init(host: "www.example.test", path: "/b/c", isSecure: false), now: now)
        XCTAssertEqual(forB, "lang=en-US; narrow=2; wide=1; empty=")
        try await jar.save(now: now)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), text)
    }

    func testSaveSkipsSessionCookiesUnlessAsked() throws {
        let cookies = [
            HTTPClient.Cookie(name: "session", value: "1", domain: "example.com", creationSeconds: now),
            HTTPClient.Cookie(name: "kept", value: "2", domain: "example.com", expirySeconds: 2_000_000_000, creationSeconds: now),
        ]
        let persistent = NetscapeCookieFile.serialize(cookies, includeSessionCookies: false)
        XCTAssertEqual(persistent, NetscapeCookieFile.header + "example.com\tFALSE\t/\tFALSE\t2000000000\tkept\t2\n")
        let everything = NetscapeCookieFile.serialize(cookies, includeSessionCookies: true)
        XCTAssertTrue(everything.contains("example.com\tFALSE\t/\tFALSE\t0\tsession\t1\n"))
    }

    func testSerializeWritesFlagsLikeCurl() {
        let cookie = HTTPClient.Cookie(
            name: "id", value: "x y", domain: "example.com", hostOnly: false, path: "/p", expirySeconds: 1_999_999_999.75,
            secure: true, httpOnly: true, sameSite: .strict, creationSeconds: now)
        XCTAssertEqual(
            NetscapeCookieFile.serialize([cookie], includeSessionCookies: false),
            NetscapeCookieFile.header + "#HttpOnly_.example.com\tTRUE\t/p\tTRUE\t1999999999\tid\tx y\n")
    }

    func testSerializeSkipsWhatTheFormatCannotHold() {
        let cookies = [
            HTTPClient.Cookie(name: "tab", value: "a\tb", domain: "example.com", expirySeconds: 2e9, creationSeconds: now),
            HTTPClient.Cookie(name: "ancient", value: "1", domain: "example.com", expirySeconds: 0.5, creationSeconds: now),
            // A Set-Cookie's Path may hold a tab (RFC 6265 §4.1.1 allows it); written, the line would have a field
            // too many and be dropped on the next load.
            HTTPClient.Cookie(name: "path", value: "1", domain: "example.com", path: "/x\ty", expirySeconds: 2e9, creationSeconds: now),
        ]
        XCTAssertEqual(NetscapeCookieFile.serialize(cookies, includeSessionCookies: true), NetscapeCookieFile.header)
    }

    func testParseSkipsCommentsBlankAndMalformedLines() {
        let text = """
            # a comment
            \t
            
            example.com\tFALSE\t/\tFALSE\t0\tgood\tvalue\r
            example.com\tFALSE\t/\tFALSE\t0\tsix
            too\tfew\tfields
            example.com\tFALSE\t/\tFALSE\tnot-a-number\tbad\tvalue
            example.com\tFALSE\t/\tFALSE\t0\t\tnameless
            example.com\tFALSE\t/\tFALSE\t0\ta\tb\textra
            .Sub.Example.com\ttrue\t\ttrue\t2000000000\tcase\tx
            """
        let cookies = NetscapeCookieFile.parse(text)
        XCTAssertEqual(cookies.map(\.name), ["case", "six", "good"])
        XCTAssertEqual(cookies.last?.value, "value")  // the CR of a CRLF line is not part of the value
        XCTAssertEqual(cookies[1].value, "")
        XCTAssertEqual(cookies[0].domain, "sub.example.com")
        XCTAssertFalse(cookies[0].hostOnly)
        XCTAssertTrue(cookies[0].secure)
        XCTAssertEqual(cookies[0].path, "/")
    }

    func testMissingFileLoadsAsEmpty() throws {
        XCTAssertEqual(try NetscapeCookieFile(path: directory + "/absent.txt").load(), [])
    }

    func testUnreadablePathThrowsIOFailure() {
        // A directory cannot be read as a file.
        XCTAssertThrowsError(try NetscapeCookieFile(path: directory).load()) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .ioFailure)
        }
        XCTAssertThrowsError(try NetscapeCookieFile(path: directory + "/no/such/dir/c.txt").save([])) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .ioFailure)
            XCTAssertNotNil((error as? HTTPClientError)?.errno)
        }
    }

    func testSaveReplacesTheFileAtomicallyWithPrivatePermissions() throws {
        let path = directory + "/jar.txt"
        try "old contents".write(toFile: path, atomically: false, encoding: .utf8)
        let file = NetscapeCookieFile(path: path)
        let cookie = HTTPClient.Cookie(name: "a", value: "1", domain: "example.com", expirySeconds: 2e9, creationSeconds: now)
        try file.save([cookie])
        XCTAssertEqual(try file.load().map(\.name), ["a"])
        // No temporary file is left behind, and the file is readable by its owner only.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), ["jar.txt"])
        let permissions = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        XCTAssertEqual(permissions, 0o600)
    }

    func testCookiesSurviveAJarRestartButSessionCookiesDoNot() async throws {
        let path = directory + "/persist.txt"
        let request = CookieJar.RequestContext(host: "www.example.com", path: "/", isSecure: true)
        let first = CookieJar(storage: NetscapeCookieFile(path: path))
        await first.setCookies(
            fromHeaders: [
                "session=1", "long=2; Max-Age=3600; Secure; HttpOnly", "wide=3; Domain=example.com; Max-Age=60",
            ],
            for: request, now: now)
        try await first.save(now: now)

        let second = CookieJar(storage: NetscapeCookieFile(path: path))
        try await second.load(now: now + 30)
        let header = await second.cookieHeader(for: request, now: now + 30)
        XCTAssertEqual(header, "long=2; wide=3")
        let long = await second.allCookies.first { $0.name == "long" }
        XCTAssertEqual(long?.secure, true)
        XCTAssertEqual(long?.httpOnly, true)

        // Expired by the time a third jar starts: not loaded.
        let third = CookieJar(storage: NetscapeCookieFile(path: path))
        try await third.load(now: now + 120)
        let names = await third.allCookies.map(\.name)
        XCTAssertEqual(names, ["long"])
    }
}
