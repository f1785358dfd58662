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
                <audio src="sound.ogg"></audio></body></html>
                """
            return .init(status: 200, headers: [("Content-Type", "text/html")], body: Array(html.utf8))
        }
        let client = HTTPClient()
        let path = try scratchDirectory() + "/page.html"
        _ = try await WebArchiver(client: client).archive(page.url("/"), to: .singleFile(path))
        let written = try String(contentsOfFile: path, encoding: .utf8)
        for name in ["font.woff2", "intro.mp4", "intro.webm", "captions.vtt", "sound.ogg"] {
            XCTAssertTrue(written.contains("\"\(page.url("/media/" + name))\""), "\(name) is not absolute in: \(written)")
        }
        XCTAssertFalse(written.contains("href=\"/media/\""), "the <base href> stays")
        await client.shutdown()
        try await page.shutdown()
    }
}
