@testable import AsyncHTTP
import Foundation
import XCTest

/// The cache's files under crashes and sharing: a writer killed in the middle of an entry (the `ahttp`
/// command line as a child process, SIGKILLed), two cache objects and two processes on one directory, the
/// debris of dead sessions; and the command line's `--cache`, `--cache-policy` and `%{cache_status}`.
final class CacheDurabilityTests: XCTestCase {
    /// Starts `ahttp` without waiting for it (``runAhttp`` waits).
    private func startAhttp(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = ahttpExecutable()
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    func testAWriterKilledMidEntryLeavesNoEntryAndTheNextOpenRemovesItsDebris() async throws {
        let body = (0..<300_000).map { UInt8($0 % 241) }
        let served = Locked(0)
        let origin = try await CacheOriginServer { _ in
            let first = served.withLock { count in
                count += 1
                return count == 1
            }
            // The first answer stalls half way for 20 s: long enough to kill the writer in the middle.
            return .init(status: 200, headers: [("Cache-Control", "max-age=600"), ("ETag", "\"k\"")], body: body,
                         stallAfter: first ? 150_000 : nil, stallMilliseconds: 20_000)
        }
        let directory = makeCacheDirectory()
        let writer = try startAhttp(["-s", "-o", "/dev/null", "--cache", directory, origin.url("/slow")])
        defer { if writer.isRunning { kill(writer.processIdentifier, SIGKILL) } }
        try await waitUntil("the writer has a temporary file", timeout: .seconds(20)) {
            cacheFiles(in: directory).contains { $0.hasSuffix(".tmp") }
        }
        kill(writer.processIdentifier, SIGKILL)
        writer.waitUntilExit()
        XCTAssertEqual(writer.terminationReason, .uncaughtSignal)
        XCTAssertTrue(cacheFiles(in: directory).contains { $0.hasSuffix(".tmp") }, "the killed writer left its temporary file")
        XCTAssertFalse(cacheFiles(in: directory).contains { $0.hasSuffix(".meta") }, "but no entry")

        // Reopen: the dead writer's debris goes; nothing is served; the next fetch stores a whole entry.
        let cache = try HTTPCache.forTesting(directory: directory, clock: CacheTestClock())
        XCTAssertEqual(cacheFiles(in: directory).filter { $0.hasSuffix(".tmp") }, [])
        var configuration = HTTPClient.Configuration()
        configuration.cache = cache
        let client = HTTPClient(configuration: configuration)
        var request = HTTPClientRequest(url: origin.url("/slow"))
        request.setHeader("Cache-Control", "only-if-cached")
        let offline = try await client.send(request)
        XCTAssertEqual(offline.status.code, 504, "nothing of the killed write is served")
        let fetched = try await client.send(HTTPClientRequest(url: origin.url("/slow")))
        XCTAssertEqual(fetched.cacheStatus, .miss)
        let fetchedBody = try await fetched.body.collect(upTo: 1 << 20)
        XCTAssertEqual(fetchedBody, body)
        let hit = try await client.send(HTTPClientRequest(url: origin.url("/slow")))
        XCTAssertEqual(hit.cacheStatus, .hit)
        let hitBody = try await hit.body.collect(upTo: 1 << 20)
        XCTAssertEqual(hitBody, body)
        await client.shutdown()
        try await origin.shutdown()
    }

    func testTwoCacheObjectsOnOneDirectoryWriteAndReadConcurrently() async throws {
        let origin = try await CacheOriginServer { request in
            let size = request.target.hasSuffix("big") ? 100_000 : 500
            let seed = UInt8(request.target.utf8.reduce(0) { ($0 &+ Int($1)) % 200 })
            return .init(status: 200, headers: [("Cache-Control", "max-age=600")],
                         body: (0..<size).map { UInt8((Int(seed) + $0) % 256) })
        }
        let directory = makeCacheDirectory()
        let clock = CacheTestClock()
        let clients = try (0..<2).map { _ in
            var configuration = HTTPClient.Configuration()
            configuration.cache = try HTTPCache.forTesting(directory: directory, clock: clock)
            return HTTPClient(configuration: configuration)
        }
        let paths = ["/a", "/b", "/c-big", "/d-big"]
        func expected(_ path: String) -> [UInt8] {
            let size = path.hasSuffix("big") ? 100_000 : 500
            let seed = UInt8(path.utf8.reduce(0) { ($0 &+ Int($1)) % 200 })
            return (0..<size).map { UInt8((Int(seed) + $0) % 256) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for round in 0..<40 {
                group.addTask {
                    let path = paths[round % paths.count]
                    let response = try await clients[round % 2].send(HTTPClientRequest(url: origin.url(path)))
                    let received = try await response.body.collect(upTo: 1 << 20)
                    XCTAssertEqual(received, expected(path), "round \(round) \(path) \(String(describing: response.cacheStatus))")
                }
            }
            try await group.waitForAll()
        }
        for client in clients {
            for path in paths {
                let response = try await client.send(HTTPClientRequest(url: origin.url(path)))
                XCTAssertEqual(response.cacheStatus, .hit, "each sees the entries either wrote")
                let received = try await response.body.collect(upTo: 1 << 20)
                XCTAssertEqual(received, expected(path))
            }
        }
        XCTAssertEqual(cacheFiles(in: directory).filter { $0.hasSuffix(".tmp") }, [])
        XCTAssertEqual(cacheFiles(in: directory).filter { $0.hasSuffix(".meta") }.count, 4)
        for client in clients { await client.shutdown() }
        try await origin.shutdown()
    }

    func testSessionDirectoriesOfDeadCachesAreRemovedAndLiveOnesKept() throws {
        let directory = makeCacheDirectory()
        let clock = CacheTestClock()
        let live = try HTTPCache.forTesting(directory: directory, clock: clock, defaultStoragePolicy: .session)
        let head = CachedResponseHead(key: "http://a.test/", status: 200, reasonPhrase: "OK", version: .http1_1,
                                      headers: fields([("Cache-Control", "max-age=60")]), requestTime: clock.now, responseTime: clock.now)
        try live.commit(head: head, body: .inline([1, 2, 3]), storage: .session)
        let dead = directory + "/session-99999999-0badc0ffee00"
        try FileManager.default.createDirectory(atPath: dead, withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: dead + "/lock", contents: Data()))
        XCTAssertTrue(FileManager.default.createFile(atPath: dead + "/x.meta", contents: Data([1])))

        _ = try HTTPCache.forTesting(directory: directory, clock: clock)
        let sessions = cacheFiles(in: directory).filter { $0.hasPrefix("session-") }
        XCTAssertFalse(sessions.contains { $0.hasPrefix("session-99999999") }, "the dead session went")
        XCTAssertTrue(sessions.contains { $0.hasSuffix(".meta") }, "the live one stays: \(sessions)")
        XCTAssertNotNil(live.lookup(key: "http://a.test/", requestHeaders: [:]))
    }

    // MARK: The command line

    func testCommandLineCacheStatusIsMissThenHitThenRevalidatedThenStale() async throws {
        let origin = try await CacheOriginServer { request in
            if request.target == "/short" {
                if request.headers["if-none-match"] == "\"s\"" { return .init(status: 304, headers: [("ETag", "\"s\"")]) }
                return .init(status: 200, headers: [("Cache-Control", "max-age=0"), ("ETag", "\"s\"")], body: Array("short".utf8))
            }
            return .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: Array("long".utf8))
        }
        let directory = makeCacheDirectory()
        let format = "%{cache_status} %{http_code}\\n"
        let first = try runAhttp(["-s", "--cache", directory, "-w", format, origin.url("/long")])
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertEqual(first.stdout, "long" + "miss 200\n")
        // A second process on the same directory.
        let second = try runAhttp(["-s", "--cache", directory, "-w", format, origin.url("/long")])
        XCTAssertEqual(second.stdout, "long" + "hit 200\n")
        XCTAssertEqual(origin.count("/long"), 1)
        _ = try runAhttp(["-s", "--cache", directory, origin.url("/short")])
        let revalidated = try runAhttp(["-s", "--cache", directory, "-w", format, origin.url("/short")])
        XCTAssertEqual(revalidated.stdout, "short" + "revalidated 200\n")
        let base = origin.baseURL
        try await origin.shutdown()
        let offline = try runAhttp(["-s", "--cache", directory, "--cache-policy", "dontLoad", "-w", format, base + "/short"])
        XCTAssertEqual(offline.stdout, "short" + "stale 200\n")
        let fallback = try runAhttp(["-s", "--cache", directory, "--cache-policy",
                                     "askServerIfModifiedWhenStale,fallbackToCacheIfLoadFails", "-w", format, base + "/short"])
        XCTAssertEqual(fallback.stdout, "short" + "stale 200\n")
        let none = try runAhttp(["-s", "--cache", directory, "--cache-policy", "dontLoad", "-w", format, base + "/none"])
        XCTAssertEqual(none.stdout, "miss 504\n")
    }

    func testCommandLineShowsTheCachesWarningsAsCurlDoesAndNoneUnderSilent() async throws {
        let origin = try await CacheOriginServer { _ in
            .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: Array("kept".utf8))
        }
        defer { Task { try? await origin.shutdown() } }
        let directory = makeCacheDirectory()
        let stored = try runAhttp(["-s", "--cache", directory, origin.url("/page")])
        XCTAssertEqual(stored.status, 0, stored.stderr)
        let metas = cacheFiles(in: directory).filter { $0.hasSuffix(".meta") }
        XCTAssertEqual(metas.count, 1, "\(cacheFiles(in: directory))")
        func damage() throws {
            for meta in metas { try Data("not an entry".utf8).write(to: URL(fileURLWithPath: directory + "/" + meta)) }
        }
        try damage()
        let shown = try runAhttp(["--cache", directory, "-o", "/dev/null", origin.url("/page")])
        XCTAssertEqual(shown.status, 0, shown.stderr)
        let name = try XCTUnwrap(metas.first.map { String($0.split(separator: "/").last!) })
        // One curl-shaped line (no timestamp, label or log level), beside the progress meter.
        let warnings = shown.stderr.split(separator: "\n").filter { $0.contains("damaged") }
        XCTAssertEqual(warnings, ["Warning: cache: discarding a damaged entry (file: \(name), reason: its head fails its checksum or names another URL)"],
                       shown.stderr)
        XCTAssertEqual(origin.count("/page"), 2, "the damaged entry was not used")
        try damage()
        let silent = try runAhttp(["-s", "--cache", directory, "-o", "/dev/null", origin.url("/page")])
        XCTAssertEqual(silent.status, 0)
        XCTAssertEqual(silent.stderr, "", "-s mutes warnings, as in curl")
        XCTAssertEqual(origin.count("/page"), 3)
    }

    func testCommandLineRefusesAnUnknownCachePolicy() throws {
        let result = try runAhttp(["--cache", makeCacheDirectory(), "--cache-policy", "sometimes", "http://127.0.0.1:9/"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("unknown cache policy 'sometimes'"), result.stderr)
        XCTAssertTrue(result.stderr.contains("dontLoad"), "lists the known names")
    }

    /// A FIFO where an entry's head file belongs (put there by mistake or by whoever can write the directory)
    /// used to hold the lookup in `open` until some process opened it for writing; it is now a miss.
    func testAFIFOInPlaceOfAnEntryIsAMissNotAHang() throws {
        let directory = makeCacheDirectory()
        let cache = try HTTPCache(directory: directory)
        let key = "http://127.0.0.1:1/fifo"
        let headPath = directory + "/entries/" + HTTPCache.hash(key) + ".meta"
        XCTAssertEqual(mkfifo(headPath, 0o600), 0)
        let found = resultOnAThreadOfItsOwn(release: { openOtherEnd(ofFIFO: headPath, forWriting: true) }) {
            cache.lookup(key: key, requestHeaders: [:]) != nil
        }
        XCTAssertEqual(found, false, "nil: a FIFO in place of a head file held the lookup")
    }

    /// A head file (damaged, or planted by whoever can write the directory) whose body file name leads out of the
    /// cache (`../../…`): the lookup served the file it named, and removing the entry unlinked it. The head is now
    /// damaged: a miss, discarded, and the file outside is left alone.
    func testAHeadNamingABodyOutsideTheCacheIsDiscardedAndThatFileLeftAlone() throws {
        let directory = makeCacheDirectory()
        let outsideDirectory = makeCacheDirectory()
        let victim = outsideDirectory + "/victim"
        let bytes = [UInt8](repeating: 0x56, count: 100)
        XCTAssertTrue(FileManager.default.createFile(atPath: victim, contents: Data(bytes)))
        let cache = try HTTPCache.forTesting(directory: directory, clock: CacheTestClock())
        let key = "http://127.0.0.1:1/planted"
        let head = CachedResponseHead(key: key, status: 200, reasonPhrase: "OK", version: .http1_1,
                                      headers: fields([("Cache-Control", "max-age=600")]), requestTime: 0, responseTime: 0,
                                      secondsToCache: nil, ignoresServerDirectives: false)
        // From `directory/entries/` to the victim.
        let name = "../../" + URL(fileURLWithPath: outsideDirectory).lastPathComponent + "/victim"
        let planted = CacheEntryRecord(head: head, body: .file(name: name, length: bytes.count, crc: CRC32.checksum(bytes[...]))).encode()
        let headPath = directory + "/entries/" + HTTPCache.hash(key) + ".meta"
        func plant() throws { try Data(planted).write(to: URL(fileURLWithPath: headPath)) }

        try plant()
        XCTAssertNil(cache.lookup(key: key, requestHeaders: [:]), "a file outside the cache was served")
        XCTAssertFalse(FileManager.default.fileExists(atPath: headPath), "the damaged head is discarded")
        try plant()
        cache.remove(key: key)
        XCTAssertFalse(FileManager.default.fileExists(atPath: headPath))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: victim)), Data(bytes), "a file outside the cache was removed")
    }
}
