@testable import AsyncHTTP
import Foundation
import HTTPTypes
import XCTest

/// Writes to one cache entry that overlap: a `304`'s update of a head read before a newer response was stored,
/// and several commits of one URL at once. Each must leave a head whose body is there, and no orphan files.
final class CacheEntryRaceTests: XCTestCase {
    private static let key = "http://a.test/page"
    private var key: String { Self.key }

    private static func head(etag: String, clock: CacheTestClock) -> CachedResponseHead {
        CachedResponseHead(key: key, status: 200, reasonPhrase: "OK", version: .http1_1,
                           headers: fields([("Cache-Control", "max-age=60"), ("ETag", "\"\(etag)\"")]),
                           requestTime: clock.now, responseTime: clock.now)
    }

    private func body(of stored: HTTPCache.Stored) throws -> [UInt8] {
        switch stored.record.body {
        case .inline(let bytes): return bytes
        case .file: throw PeerError("expected an inline body")
        }
    }

    /// A `304` freshens the head it read; a newer `200` for the same URL was stored meanwhile. The newer
    /// response stays: the update used to write the old head (and its body) back over it.
    func testANotModifiedDoesNotWriteAnOldHeadOverANewerResponse() throws {
        let directory = makeCacheDirectory()
        let clock = CacheTestClock()
        let cache = try HTTPCache.forTesting(directory: directory, clock: clock)
        try cache.commit(head: Self.head(etag: "old", clock: clock), body: .inline(Array("old".utf8)), storage: .permanent)
        let stored = try XCTUnwrap(cache.lookup(key: key, requestHeaders: [:]))

        clock.advance(1)
        try cache.commit(head: Self.head(etag: "new", clock: clock), body: .inline(Array("new".utf8)), storage: .permanent)
        var freshened = stored.head
        freshened.responseTime = clock.now
        cache.update(stored, head: freshened, persist: true)

        // Read back by this object and by a new one on the same directory (no memory of its own).
        for reader in [cache, try HTTPCache.forTesting(directory: directory, clock: clock)] {
            let now = try XCTUnwrap(reader.lookup(key: key, requestHeaders: [:]))
            XCTAssertEqual(now.head.headers[.eTag], "\"new\"", "the 304's update overwrote a newer response")
            XCTAssertEqual(try body(of: now), Array("new".utf8))
        }

        // With nothing newer, the update is written.
        let current = try XCTUnwrap(cache.lookup(key: key, requestHeaders: [:]))
        clock.advance(1)
        var again = current.head
        again.responseTime = clock.now
        cache.update(current, head: again, persist: true)
        let reread = try XCTUnwrap(HTTPCache.forTesting(directory: directory, clock: clock).lookup(key: key, requestHeaders: [:]))
        XCTAssertEqual(reread.head.responseTime, clock.now)
    }

    /// Rounds in which four threads commit bodies of different lengths for one URL at once. After each round
    /// the head names a body file that is there with its length, and no other body file is left behind.
    func testConcurrentCommitsOfOneURLLeaveOneWholeEntry() throws {
        let directory = makeCacheDirectory()
        let clock = CacheTestClock()
        let cache = try HTTPCache.forTesting(directory: directory, clock: clock)
        var broken: [String] = []
        for round in 0..<150 {
            let failures = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                do {
                    // Larger than an inline body, so each commit brings a body file of its own.
                    let bytes = [UInt8](repeating: UInt8(thread), count: 20_000 + thread * 100 + round)
                    let file = try cache.temporaryBodyFile(key: Self.key, storage: .permanent)
                    try file.append(bytes[...])
                    try cache.commit(head: Self.head(etag: "\(thread)-\(round)", clock: clock),
                                     body: .file(file, length: bytes.count, crc: CRC32.checksum(bytes[...])),
                                     storage: .permanent)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            XCTAssertEqual(failures.withLock { $0 }, [])
            let bodies = cacheFiles(in: directory).filter { $0.hasSuffix(".body") }
            guard let stored = try HTTPCache.forTesting(directory: directory, clock: clock).lookup(key: key, requestHeaders: [:]),
                  case .file(let name, _, _) = stored.record.body else {
                broken.append("round \(round): the head names a body that is gone (\(bodies.count) body files)")
                continue
            }
            if bodies.map({ ($0 as NSString).lastPathComponent }) != [name] {
                broken.append("round \(round): \(bodies.count) body files beside the head's")
            }
        }
        XCTAssertEqual(broken, [])
    }
}
