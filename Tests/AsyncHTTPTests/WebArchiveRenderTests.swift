import AsyncHTTP
import AsyncHTTPWebArchive
import Foundation
import XCTest

/// The archive rendered by a browser: Debian's Chromium (installed by `./scripts/test.sh`) takes a headless
/// screenshot of the live site and of the archive opened from `file:` with the network cut off, at the same window
/// size, and the pixels must be the same. A third run, the live site with the network cut off, must fail to load:
/// it shows that the flags really keep Chromium off the network, so the archive's screenshots were drawn from the
/// archive alone.
///
/// The comparison decodes both PNGs and requires identical RGB pixels (not identical files, which would also
/// depend on how the encoder compressed them).
final class WebArchiveRenderTests: XCTestCase {
    func testChromiumRendersTheOfflineArchiveExactlyAsTheLiveSite() async throws {
        let site = try WebArchiveSite.fromEnvironment()
        guard let chromium = ProcessInfo.processInfo.environment["ASYNCHTTP_CHROMIUM"], !chromium.isEmpty else {
            throw PeerError("chromium is unknown (ASYNCHTTP_CHROMIUM): run ./scripts/test.sh")
        }
        let scratch = try makeTemporaryDirectory("webarchive-render")
        defer { scratch.remove() }
        let client = HTTPClient()
        var options = WebArchiveOptions()
        options.origins = .sameOriginAnd([site.otherURL])  // what the live page shows from its second origin
        let archiver = WebArchiver(client: client, options: options)
        let single = scratch.path + "/page.html"
        let directory = scratch.path + "/page"
        _ = try await archiver.archive(site.url + "/", to: .singleFile(single))
        _ = try await archiver.archive(site.url + "/", to: .directory(directory))
        await client.shutdown()

        var shots = 0
        /// The screenshot's path, or nil when Chromium could not load the page; and what Chromium printed.
        func screenshot(_ url: String, offline: Bool) throws -> (png: String?, output: String) {
            shots += 1
            let png = scratch.path + "/shot\(shots).png"
            var arguments = [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--force-device-scale-factor=1", "--window-size=800,600",
                "--user-data-dir=\(scratch.path)/profile\(shots)", "--screenshot=\(png)",
            ]
            if offline {
                // Every request through a proxy that refuses connections (loopback included: "<-loopback>" drops
                // Chromium's implicit bypass), and no name resolves.
                arguments += ["--proxy-server=127.0.0.1:1", "--proxy-bypass-list=<-loopback>", "--host-resolver-rules=MAP * ~NOTFOUND"]
            }
            let run = try runBounded(chromium, arguments + [url], seconds: 120)
            XCTAssertNotEqual(run.status, 124, "chromium timed out on \(url)")
            return (FileManager.default.fileExists(atPath: png) ? png : nil, run.output)
        }
        func rendered(_ url: String, offline: Bool) throws -> String {
            let shot = try screenshot(url, offline: offline)
            guard let png = shot.png else { throw PeerError("chromium made no screenshot of \(url): \(shot.output.suffix(2000))") }
            return png
        }
        let live = try rendered(site.url + "/", offline: false)
        let singleShot = try rendered("file://" + single, offline: true)
        let directoryShot = try rendered("file://" + directory + "/index.html", offline: true)

        for (shot, what) in [(singleShot, "single-file"), (directoryShot, "directory")] {
            let differing = try differingPixels(live, shot)
            if differing != 0 {
                // Keep the evidence: the scratch directory is removed when the test ends.
                let kept = NSTemporaryDirectory() + "asynchttp-render-failure-\(getpid())-\(what)"
                try? FileManager.default.removeItem(atPath: kept)
                try? FileManager.default.createDirectory(atPath: kept, withIntermediateDirectories: true)
                try? FileManager.default.copyItem(atPath: live, toPath: kept + "/live.png")
                try? FileManager.default.copyItem(atPath: shot, toPath: kept + "/archive.png")
                try? FileManager.default.copyItem(atPath: what == "directory" ? directory : single, toPath: kept + "/archive")
                XCTFail("the \(what) archive renders differently: \(differing) pixels (screenshots kept in \(kept))")
            }
        }
        // The control: with the same flags the live site cannot load at all, so the archives' screenshots were
        // drawn from the archives alone.
        let cutOff = try screenshot(site.url + "/", offline: true)
        XCTAssertNil(cutOff.png, "the offline flags did not keep Chromium off the network")
        XCTAssertTrue(cutOff.output.contains("ERR_PROXY_CONNECTION_FAILED"), cutOff.output)
    }
}
