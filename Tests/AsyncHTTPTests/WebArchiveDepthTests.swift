import AsyncHTTP
import Foundation
import XCTest

@testable import AsyncHTTPWebArchive

/// ``WebArchiveOptions/maxDepth`` against stylesheets that name further stylesheets, served by a scripted origin
/// (``CacheOriginServer``).
final class WebArchiveDepthTests: XCTestCase {
    /// A page linking `/1.css`, and ten stylesheets, `/N.css` holding `css(N)`; archived into one file with
    /// `maxDepth` 2. The origin is shut down before this returns (its request log and URLs still answer), so a
    /// failed assertion leaves nothing running.
    private func archiveChain(
        _ name: String, css: @escaping @Sendable (Int) -> String
    ) async throws -> (page: CacheOriginServer, result: WebArchiveResult) {
        let page = try await CacheOriginServer { request in
            if request.target == "/" {
                let html = "<html><head><link rel=\"stylesheet\" href=\"/1.css\"></head><body>chain</body></html>"
                return .init(status: 200, headers: [("Content-Type", "text/html")], body: Array(html.utf8))
            }
            for level in 1...10 where request.target == "/\(level).css" {
                return .init(status: 200, headers: [("Content-Type", "text/css")], body: Array(css(level).utf8))
            }
            return .init(status: 404)
        }
        let client = HTTPClient()
        var options = WebArchiveOptions()
        options.maxDepth = 2
        let scratch = try makeTemporaryDirectory(name)
        defer { scratch.remove() }
        let result: WebArchiveResult
        do {
            result = try await WebArchiver(client: client, options: options)
                .archive(page.url("/"), to: .singleFile(scratch.path + "/page.html"))
        } catch {
            await client.shutdown()
            try await page.shutdown()
            throw error
        }
        await client.shutdown()
        try await page.shutdown()
        return (page, result)
    }

    /// A chain of ten stylesheets, each naming the next in a `url(…)`: a browser applies only the linked one (a
    /// `url(…)` is no stylesheet), so the archive takes the linked sheet and the file it names, as bytes, and goes no
    /// further. Every `text/css` answer was read as a stylesheet, and `url(…)`s skip the depth check, so the whole
    /// chain was fetched (up to `maxResources`), each level inlined into the last and a third larger in base64.
    func testStylesheetsNamedByURLAreNotFollowedPastTheDepthLimit() async throws {
        let (page, result) = try await archiveChain("archive-depth") { level in
            ".level\(level) { color: red; background: url(/\(level + 1).css); }"
        }

        let linked = try XCTUnwrap(result.resource(page.url("/1.css")))
        guard case .archived = linked.outcome else { return XCTFail("the linked stylesheet: \(linked.outcome)") }
        let named = try XCTUnwrap(result.resource(page.url("/2.css")), "the file the stylesheet names is archived")
        XCTAssertEqual(named.kind, .styleResource)
        guard case .archived = named.outcome else { return XCTFail("the named file: \(named.outcome)") }
        for level in 3...11 {
            XCTAssertEqual(page.count("/\(level).css"), 0, "/\(level).css was fetched: the chain was followed")
            XCTAssertNil(result.resource(page.url("/\(level).css")))
        }
        XCTAssertEqual(result.resources.count, 2)
    }

    /// `@import` is a stylesheet, so its chain is followed, and cut at `maxDepth`.
    func testImportChainStopsAtTheDepthLimit() async throws {
        let (page, result) = try await archiveChain("archive-import-depth") { level in
            "@import url(/\(level + 1).css);\n.level\(level) { color: red; }"
        }
        XCTAssertEqual(page.count("/1.css"), 1)
        XCTAssertEqual(page.count("/2.css"), 1)
        XCTAssertEqual(page.count("/3.css"), 0)
        guard case .skipped(.depthLimit) = try XCTUnwrap(result.resource(page.url("/3.css"))).outcome else {
            return XCTFail("the third @import is past maxDepth 2")
        }
    }
}
