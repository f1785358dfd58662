import AsyncHTTP
import Foundation
import XCTest

@testable import AsyncHTTPWebArchive

/// The web archive against nginx serving a small site (Resources/webarchive-site): nested `@import`s, relative,
/// absolute and protocol-relative URLs, a `<base href>`, a frame, a missing image and a resource on a second origin.
/// Each archive is opened offline and checked: every reference resolves locally, and what it holds is the bytes
/// nginx served.
final class WebArchiveNginxTests: XCTestCase {
    var client: HTTPClient!
    var site: WebArchiveSite!
    var scratch: (path: String, remove: () -> Void)!

    override func setUp() async throws {
        site = try WebArchiveSite.fromEnvironment()
        client = HTTPClient()
        scratch = try makeTemporaryDirectory("webarchive")
    }

    override func tearDown() async throws {
        await client?.shutdown()
        scratch?.remove()
    }

    /// The images and the script of the site, as nginx serves them.
    private func originalLeaves() throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for name in ["red", "red2x", "hero", "green", "stripe", "deep", "icon", "blue"] {
            files["/img/\(name).png"] = try site.file("/img/\(name).png")
        }
        files["/js/app.js"] = try site.file("/js/app.js")
        return files
    }

    func testEveryResourceIsFoundOnceWithItsKindDepthAndOutcome() async throws {
        let result = try await WebArchiver(client: client).archive(site.url + "/", to: .singleFile(scratch.path + "/page.html"))
        let u = site.url
        var byURL: [String: WebArchiveResource] = [:]
        for resource in result.resources {
            XCTAssertNil(byURL[resource.url.description], "\(resource.url) listed twice")
            byURL[resource.url.description] = resource
        }
        func expect(_ url: String, _ kind: WebArchiveResource.Kind, depth: Int, file line: UInt = #line) {
            guard let resource = byURL[url] else { return XCTFail("\(url) not found in \(byURL.keys.sorted())", line: line) }
            XCTAssertEqual(resource.kind, kind, url, line: line)
            XCTAssertEqual(resource.depth, depth, url, line: line)
        }
        expect(u + "/css/main.css", .stylesheet, depth: 1)              // relative to <base href="/pages/">: ../css/
        expect(u + "/img/icon.png", .icon, depth: 1)                   // absolute
        expect(u + "/img/hero.png", .styleResource, depth: 1)          // <style>
        expect(u + "/js/app.js", .script, depth: 1)                    // protocol-relative
        expect(u + "/img/red.png", .image, depth: 1)
        expect(u + "/img/red2x.png", .image, depth: 1)                 // srcset
        expect(u + "/img/green.png", .styleResource, depth: 1)         // style attribute, before the frame's <img>
        expect(u + "/pages/frame.html", .frame, depth: 1)              // frame.html against the base
        expect(u + "/css/nested/level1.css", .styleImport, depth: 2)
        expect(u + "/img/stripe.png", .styleResource, depth: 2)        // url() in main.css, relative to it
        expect(u + "/css/nested/level2.css", .styleImport, depth: 3)
        expect(u + "/img/deep.png", .styleResource, depth: 4)
        expect(u + "/css/frame.css", .stylesheet, depth: 2)            // the frame's own stylesheet
        expect(u + "/img/missing.png", .image, depth: 1)
        expect(site.otherURL + "/img/blue.png", .styleResource, depth: 1)
        XCTAssertEqual(result.resources.count, 15, "\(result.resources.map(\.description))")
        // Comments are not references.
        XCTAssertFalse(result.resources.contains { $0.url.path.contains("not-imported") || $0.url.path.contains("commented") })

        guard case .httpStatus(404) = byURL[u + "/img/missing.png"]?.outcome else {
            return XCTFail("missing.png: \(String(describing: byURL[u + "/img/missing.png"]))")
        }
        guard case .skipped(.crossOrigin) = byURL[site.otherURL + "/img/blue.png"]?.outcome else {
            return XCTFail("blue.png: \(String(describing: byURL[site.otherURL + "/img/blue.png"]))")
        }
        XCTAssertEqual(result.archived.count, 13)
        XCTAssertEqual(Set(result.missing.map(\.url.path)), ["/img/missing.png", "/img/blue.png"])
        let expectedBytes = try result.archived.reduce(try site.file("/index.html").count) { sum, resource in
            sum + (try site.file(resource.url.path)).count
        }
        XCTAssertEqual(result.totalBytes, expectedBytes)
    }

    func testSingleFileHasOnlyDataURIsThatDecodeToTheOriginalBytes() async throws {
        let path = scratch.path + "/page.html"
        let result = try await WebArchiver(client: client).archive(site.url + "/", to: .singleFile(path))
        let written = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertEqual(written, result.document)

        // Open it offline: walk every reference, into stylesheets and frames, decoding data: URIs.
        let allowedRemote: Set<String> = [site.url + "/img/missing.png", site.otherURL + "/img/blue.png"]
        var leaves: [[UInt8]] = []
        var stylesheets: [String] = []
        var frames = 0
        func walk(_ refs: [(url: String, kind: WebArchiveResource.Kind)], depth: Int) throws {
            XCTAssertLessThan(depth, 8, "inlining nests too deep")
            for (url, kind) in refs {
                guard let (type, bytes) = decodeDataURI(url) else {
                    XCTAssertTrue(allowedRemote.contains(url), "\(kind) reference \(url) is not local")
                    continue
                }
                if type.hasPrefix("text/css") {
                    stylesheets.append(String(decoding: bytes, as: UTF8.self))
                    try walk(references(inCSS: bytes), depth: depth + 1)
                } else if type.hasPrefix("text/html") {
                    frames += 1
                    try walk(try references(inHTML: bytes), depth: depth + 1)
                } else {
                    leaves.append(bytes)
                }
            }
        }
        try walk(try references(inHTML: written), depth: 0)

        let originals = try originalLeaves()
        for (name, bytes) in originals where name != "/img/blue.png" {
            XCTAssertTrue(leaves.contains(bytes), "\(name) is not in the archive with its original bytes")
        }
        for leaf in leaves { XCTAssertTrue(originals.values.contains(leaf), "a data: URI holds bytes nginx never sent") }
        XCTAssertEqual(frames, 1)
        // main.css, its two nested imports (one level each), the frame's stylesheet, and the <style> has none.
        XCTAssertEqual(stylesheets.count, 4)
        XCTAssertTrue(stylesheets.contains { $0.contains("font-family: sans-serif") && $0.contains("@import url(\"data:text/css") })
        XCTAssertTrue(stylesheets.contains { $0.contains("border-bottom: 4px") && $0.contains("@import url(\"data:text/css") })
        XCTAssertTrue(stylesheets.contains { $0.contains(".level2") && $0.contains("url(\"data:image/png;base64,") })
        XCTAssertTrue(stylesheets.contains { $0.contains("rgb(230, 230, 255)") })
        // Links stay links, made absolute; <base href> is gone (the references are data: now).
        let text = String(decoding: written, as: UTF8.self)
        XCTAssertTrue(text.contains("href=\"\(site.url)/pages/frame.html\""), text)
        XCTAssertFalse(text.contains("href=\"/pages/\""), text)
    }

    func testDirectoryHasEveryFileAndEveryReferenceResolvesInIt() async throws {
        var options = WebArchiveOptions()
        options.origins = .sameOriginAnd([site.otherURL])
        let directory = scratch.path + "/site"
        let result = try await WebArchiver(client: client, options: options).archive(site.url + "/", to: .directory(directory))
        XCTAssertEqual(result.archived.count, 14)  // blue.png from the other origin too
        XCTAssertEqual(result.missing.map(\.url.path), ["/img/missing.png"])

        let originals = try originalLeaves()
        for resource in result.archived {
            guard case .archived(let count, _, let file?) = resource.outcome else { return XCTFail("\(resource): no file") }
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file)))
            if let original = originals[resource.url.path] {
                XCTAssertEqual(bytes, original, "\(file) differs from \(resource.url)")
                XCTAssertEqual(count, original.count)
            }
        }
        // Open it offline: every relative reference names a file in the directory; only the 404 stays remote.
        var visited: Set<String> = []
        func walk(_ path: String) throws {
            guard visited.insert(path).inserted else { return }
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let folder = (path as NSString).deletingLastPathComponent
            let refs = path.hasSuffix(".css") ? references(inCSS: bytes) : try references(inHTML: bytes)
            for (url, kind) in refs {
                if url.hasPrefix("http:") {
                    XCTAssertEqual(url, site.url + "/img/missing.png", "\(kind) reference \(url) in \(path) is not local")
                    continue
                }
                XCTAssertFalse(url.hasPrefix("/") || url.hasPrefix("data:"), url)
                let target = (folder as NSString).appendingPathComponent(url)
                XCTAssertTrue(FileManager.default.fileExists(atPath: target), "\(url) in \(path): no file \(target)")
                if target.hasSuffix(".css") || target.hasSuffix(".html") { try walk(target) }
            }
        }
        try walk(directory + "/index.html")
        XCTAssertEqual(visited.count, 6)  // index.html, frame.html, main.css, level1.css, level2.css, frame.css
        let files = try FileManager.default.contentsOfDirectory(atPath: directory + "/resources")
        XCTAssertEqual(files.count, 14, "\(files)")
        XCTAssertFalse(files.contains { $0.hasSuffix(".tmp") })

        // Again into the same directory: files are replaced, not duplicated or appended to.
        _ = try await WebArchiver(client: client, options: options).archive(site.url + "/", to: .directory(directory))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/resources").count, 14)
    }

    func testDownloadCacheOutputKeepsEverythingForReadingWithoutTheNetwork() async throws {
        let cacheDirectory = scratch.path + "/cache"
        var configuration = HTTPClient.Configuration()
        configuration.cache = try HTTPCache(directory: cacheDirectory)
        let caching = HTTPClient(configuration: configuration)
        var options = WebArchiveOptions()
        options.origins = .any
        let result = try await WebArchiver(client: caching, options: options).archive(site.url + "/", to: .downloadCache)
        await caching.shutdown()
        XCTAssertEqual(result.document, try site.file("/index.html"))  // the page as sent: references untouched
        XCTAssertEqual(result.archived.count, 14)

        // A new cache object on the same directory, with the network forbidden (.dontLoad): every archived URL
        // comes from disk with nginx's bytes; the missing image was never stored.
        var offline = HTTPClient.Configuration()
        offline.cache = try HTTPCache(directory: cacheDirectory)
        let reader = HTTPClient(configuration: offline)
        for url in [site.url + "/"] + result.archived.map(\.url.description) {
            var request = HTTPClientRequest(url: url)
            request.cachePolicy = .dontLoad
            let response = try await reader.send(request)
            let body = try await response.body.collect(upTo: 1 << 20)
            XCTAssertEqual(response.status.code, 200, url)
            XCTAssertNotNil(response.cacheStatus, url)
            XCTAssertTrue(response.didUseCachedResponse, url)
            let path = try HTTPURL(url).path
            XCTAssertEqual(body, try site.file(path == "/" ? "/index.html" : path), url)
        }
        // The missing image was stored as the 404 it was (RFC 9110 §15.1: 404 is heuristically cacheable) …
        var missing = HTTPClientRequest(url: site.url + "/img/missing.png")
        missing.cachePolicy = .dontLoad
        let answer = try await reader.send(missing)
        XCTAssertEqual(answer.status.code, 404)
        XCTAssertTrue(answer.didUseCachedResponse)
        // … and a URL the page never named is not there: the cache answers 504 itself, without the network.
        var never = HTTPClientRequest(url: site.url + "/img/never-referenced.png")
        never.cachePolicy = .dontLoad
        let notStored = try await reader.send(never)
        XCTAssertEqual(notStored.status.code, 504)
        await reader.shutdown()
    }

    func testThePageAndItsResourcesGoThroughTheClientsCookieJar() async throws {
        // nginx answers /members/ only with the cookie session=s3cret.
        let page = site.url + "/members/page.html"
        do {
            _ = try await WebArchiver(client: client).archive(page, to: .singleFile(scratch.path + "/m.html"))
            XCTFail("archived without the cookie")
        } catch {
            XCTAssertEqual(error.code, .pageStatus)
            XCTAssertEqual(error.status, 403)
        }
        let jar = try XCTUnwrap(client.configuration.cookieJar)
        await jar.setCookies(fromHeaders: ["session=s3cret; Path=/members"], for: .init(host: "127.0.0.1", path: "/", isSecure: false))
        let result = try await WebArchiver(client: client).archive(page, to: .singleFile(scratch.path + "/m.html"))
        // badge.png is under /members/ too: the batch's requests carried the cookie as well.
        XCTAssertEqual(result.archived.map(\.url.path).sorted(), ["/img/red.png", "/members/badge.png"])
        XCTAssertTrue(result.missing.isEmpty, "\(result.missing)")
    }

    func testACancelledTaskThrowsCancelledAndWritesNothing() async throws {
        let archiver = WebArchiver(client: client)
        let path = scratch.path + "/cancelled.html"
        let url = site.url + "/"
        let outcome = await Task { () -> WebArchiveError? in
            withUnsafeCurrentTask { $0?.cancel() }  // cancelled before it starts: deterministic
            do throws(WebArchiveError) {
                _ = try await archiver.archive(url, to: .singleFile(path))
                return nil
            } catch {
                return error
            }
        }.value
        XCTAssertEqual(outcome?.code, .cancelled, "\(String(describing: outcome))")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
    }

    func testLimitsSkipResourcesAndAreReported() async throws {
        // Depth 1: the page's own stylesheets and frame, not what they import or frame.
        var shallow = WebArchiveOptions()
        shallow.maxDepth = 1
        let depthResult = try await WebArchiver(client: client, options: shallow).archive(site.url + "/", to: .singleFile(scratch.path + "/a.html"))
        guard case .skipped(.depthLimit) = depthResult.resource(site.url + "/css/nested/level1.css")?.outcome,
            case .skipped(.depthLimit) = depthResult.resource(site.url + "/css/frame.css")?.outcome,
            case .archived = depthResult.resource(site.url + "/img/stripe.png")?.outcome  // an image at depth 2 is fine
        else { return XCTFail("\(depthResult.resources.map(\.description))") }

        // Three resources at most.
        var few = WebArchiveOptions()
        few.maxResources = 3
        let countResult = try await WebArchiver(client: client, options: few).archive(site.url + "/", to: .singleFile(scratch.path + "/b.html"))
        XCTAssertEqual(countResult.resources.filter { if case .skipped(.resourceLimit) = $0.outcome { true } else { false } }.count,
                       countResult.resources.count - 3 - 1)  // 3 fetched, blue.png skipped as cross-origin
        XCTAssertEqual(countResult.archived.count, 3)

        // Bytes: the page plus 2000 — hero.png (7858 bytes) cannot fit; the small files can.
        var small = WebArchiveOptions()
        small.maxTotalBytes = try site.file("/index.html").count + 2000
        let byteResult = try await WebArchiver(client: client, options: small).archive(site.url + "/", to: .singleFile(scratch.path + "/c.html"))
        guard case .skipped(.byteLimit) = byteResult.resource(site.url + "/img/hero.png")?.outcome else {
            return XCTFail("\(byteResult.resources.map(\.description))")
        }
        XCTAssertLessThanOrEqual(byteResult.totalBytes, small.maxTotalBytes)
        XCTAssertFalse(byteResult.archived.isEmpty)
        // The skipped resource stays an absolute reference, so the page still shows it online.
        XCTAssertTrue(String(decoding: byteResult.document, as: UTF8.self).contains(site.url + "/img/hero.png"))
    }

    /// Each reference in a single file holds the resource's whole data: URI, so the file is bounded on its own
    /// (a page referencing one image thousands of times grew past any memory): past maxSingleFileBytes the archive
    /// fails with a typed error and writes nothing. A directory archive of the same page is unaffected.
    func testASingleFileLargerThanItsLimitIsATypedErrorAndWritesNothing() async throws {
        var tight = WebArchiveOptions()
        tight.maxSingleFileBytes = 4_000
        let path = scratch.path + "/tight.html"
        var code: WebArchiveError.Code?
        do {
            _ = try await WebArchiver(client: client, options: tight).archive(site.url + "/", to: .singleFile(path))
        } catch {
            code = error.code
        }
        XCTAssertEqual(code, .outputTooLarge, "the single file went past its limit")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        let directory = try await WebArchiver(client: client, options: tight).archive(site.url + "/", to: .directory(scratch.path + "/dir"))
        XCTAssertFalse(directory.archived.isEmpty)
    }

    func testAFailedPageThrowsATypedError() async throws {
        let archiver = WebArchiver(client: client)
        let out = WebArchiveOutput.singleFile(scratch.path + "/x.html")
        func code(_ url: String, _ output: WebArchiveOutput = WebArchiveOutput.singleFile("/dev/null/x.html"),
                  _ archiver: WebArchiver? = nil) async -> WebArchiveError? {
            do {
                _ = try await (archiver ?? WebArchiver(client: client)).archive(url, to: output)
                return nil
            } catch {
                return error
            }
        }
        let notFound = await code(site.url + "/no/such/page.html", out)
        XCTAssertEqual(notFound?.code, .pageStatus)
        XCTAssertEqual(notFound?.status, 404)
        let notHTML = await code(site.url + "/img/red.png", out)
        XCTAssertEqual(notHTML?.code, .notHTML)
        let refused = await code("http://127.0.0.1:1/", out)
        XCTAssertEqual(refused?.code, .pageFailed)
        XCTAssertEqual(refused?.underlying?.code, .connectFailed)
        let invalid = await code("ftp://example.com/", out)
        XCTAssertEqual(invalid?.code, .invalidURL)
        let noCache = await code(site.url + "/", .downloadCache)
        XCTAssertEqual(noCache?.code, .noCache)
        var tiny = WebArchiveOptions()
        tiny.maxTotalBytes = 10
        let tooLarge = await code(site.url + "/", out, WebArchiver(client: client, options: tiny))
        XCTAssertEqual(tooLarge?.code, .pageTooLarge)
        let unwritable = await code(site.url + "/", .singleFile("/dev/null/x.html"), archiver)
        XCTAssertEqual(unwritable?.code, .outputFailed)
        XCTAssertTrue(unwritable?.message.contains("/dev/null/x.html") ?? false, "\(String(describing: unwritable))")
        // A password in the URL is never in the message.
        let secret = await code("http://user:hunter2@127.0.0.1:1/", out)
        XCTAssertFalse(secret?.description.contains("hunter2") ?? true, "\(String(describing: secret))")
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.path + "/x.html"))
    }
}
