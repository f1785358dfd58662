import AsyncHTTP
import Foundation
import XCTest

@testable import AsyncHTTPWebArchive

/// The web archive's origin policy across a resource's redirects, and the references it does not fetch, against
/// two scripted origins (``CacheOriginServer`` on two ports: two origins).
final class WebArchiveRedirectTests: XCTestCase {
    private static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]

    private func scratchDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-archive-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A resource that redirects to another origin is skipped as cross-origin without that origin being asked,
    /// under the default same-origin policy; a redirect within the origin is followed and archived.
    func testARedirectToAnotherOriginIsNotFollowedAndIsReportedCrossOrigin() async throws {
        let other = try await CacheOriginServer { _ in .init(status: 200, headers: [("Content-Type", "image/png")], body: Self.png) }
        let otherURL = other.url("/tracker.png")
        let page = try await CacheOriginServer { request in
            switch request.target {
            case "/":
                let html = "<html><body><img src=\"/away\"><img src=\"/moved\"></body></html>"
                return .init(status: 200, headers: [("Content-Type", "text/html")], body: Array(html.utf8))
            case "/away": return .init(status: 302, headers: [("Location", otherURL)])
            case "/moved": return .init(status: 301, headers: [("Location", "/img/here.png")])
            case "/img/here.png": return .init(status: 200, headers: [("Content-Type", "image/png")], body: Self.png)
            default: return .init(status: 404)
            }
        }
        let client = HTTPClient()
        let directory = try scratchDirectory()
        let result = try await WebArchiver(client: client).archive(page.url("/"), to: .directory(directory))

        let away = try XCTUnwrap(result.resource(page.url("/away")))
        guard case .skipped(.crossOrigin) = away.outcome else {
            return XCTFail("a redirect to another origin was archived: \(away.outcome)")
        }
        XCTAssertEqual(other.count("/tracker.png"), 0, "the other origin was asked")
        let moved = try XCTUnwrap(result.resource(page.url("/moved")))
        guard case .archived(let count, _, _) = moved.outcome else { return XCTFail("\(moved.outcome)") }
        XCTAssertEqual(count, Self.png.count)
        XCTAssertEqual(page.count("/img/here.png"), 1)

        // With every origin allowed, the client follows the redirect itself and the image is archived.
        var options = WebArchiveOptions()
        options.origins = .any
        let open = try await WebArchiver(client: client, options: options).archive(page.url("/"), to: .directory(try scratchDirectory()))
        guard case .archived = try XCTUnwrap(open.resource(page.url("/away"))).outcome else {
            return XCTFail("with .any the redirect is followed")
        }
        XCTAssertEqual(other.count("/tracker.png"), 1)
        await client.shutdown()
        try await page.shutdown()
        try await other.shutdown()
    }

    /// `<base href>` is removed from the archived page, so a reference the archive does not fetch (media, a
    /// preload `<link>`) must become absolute, or it would resolve against the archive's own location.
    func testReferencesNotFetchedStillLeadToTheSite() async throws {
        let page = try await CacheOriginServer { request in
            guard request.target == "/" else { return .init(status: 404) }
            let html = """
                <html><head><base href="/media/"><link rel="preload" href="font.woff2" as="font"></head><body>
                <video src="intro.mp4"><source src="intro.webm"><track src="captions.vtt"></video>
                <audio src="sound.ogg"></audio><form><button formaction="send">go</button></form>
                <blockquote cite="source.html">q</blockquote><svg><use href="sprite.svg#icon"></use></svg></body></html>
                """
            return .init(status: 200, headers: [("Content-Type", "text/html")], body: Array(html.utf8))
        }
        let client = HTTPClient()
        let path = try scratchDirectory() + "/page.html"
        _ = try await WebArchiver(client: client).archive(page.url("/"), to: .singleFile(path))
        let written = try String(contentsOfFile: path, encoding: .utf8)
        for name in ["font.woff2", "intro.mp4", "intro.webm", "captions.vtt", "sound.ogg", "send", "source.html", "sprite.svg#icon"] {
            XCTAssertTrue(written.contains("\"\(page.url("/media/" + name))\""), "\(name) is not absolute in: \(written)")
        }
        XCTAssertFalse(written.contains("href=\"/media/\""), "the <base href> stays")
        await client.shutdown()
        try await page.shutdown()
    }

    /// The archiver follows a resource's redirects under the client's redirect policy, as the client would: none
    /// when it follows none, and no more than its `maxRedirects`.
    func testResourceRedirectsFollowTheClientsRedirectPolicy() async throws {
        let page = try await CacheOriginServer { request in
            switch request.target {
            case "/":
                return .init(status: 200, headers: [("Content-Type", "text/html")], body: Array("<img src=\"/a\">".utf8))
            case "/a": return .init(status: 302, headers: [("Location", "/b")])
            case "/b": return .init(status: 302, headers: [("Location", "/c.png")])
            default: return .init(status: 200, headers: [("Content-Type", "image/png")], body: Self.png)
            }
        }
        for (policy, expected) in [(RedirectPolicy.disabled, "302"), (RedirectPolicy(maxRedirects: 1), "tooManyRedirects"),
                                   (RedirectPolicy(), "archived")] {
            var configuration = HTTPClient.Configuration()
            configuration.redirectPolicy = policy
            let client = HTTPClient(configuration: configuration)
            let result = try await WebArchiver(client: client).archive(page.url("/"), to: .directory(try scratchDirectory()))
            let outcome = try XCTUnwrap(result.resource(page.url("/a"))).outcome
            switch outcome {
            case .httpStatus(let status): XCTAssertEqual("\(status)", expected)
            case .failed(let error): XCTAssertEqual("\(error.code)", expected)
            case .archived: XCTAssertEqual("archived", expected)
            default: XCTFail("\(outcome)")
            }
            await client.shutdown()
        }
        try await page.shutdown()
    }
}
