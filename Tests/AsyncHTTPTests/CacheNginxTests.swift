@testable import AsyncHTTP
import HTTPTypes
import XCTest

/// The cache against nginx (started by scripts/test.sh) as it really sends freshness and validators:
/// `expires`, `etag`, `add_header Cache-Control …` and `if_modified_since`, with gzip and `Vary:
/// Accept-Encoding` on. Each location serves a copy of the 1 KiB `small.txt`.
final class CacheNginxTests: XCTestCase {
    private let smallText = Array((String(repeating: "AsyncHTTP nginx peer test line.\n", count: 32)).utf8.prefix(1024))

    private func fetch(_ client: HTTPClient, _ path: String, compressed: Bool = true) async throws -> HTTPClientResponse {
        let nginx = try Peers.nginx()
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)\(path)")
        request.acceptsCompressedResponse = compressed
        var response = try await client.send(request)
        let body = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body, smallText, path)
        response.body = .init()
        return response
    }

    private func client(_ directory: String = makeCacheDirectory()) throws -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.cache = try HTTPCache(directory: directory)
        return HTTPClient(configuration: configuration)
    }

    func testExpiresGivesFreshHitsOfTheGzippedBody() async throws {
        let client = try client()
        let first = try await fetch(client, "/cache/expires/small.txt")
        XCTAssertEqual(first.cacheStatus, .miss)
        XCTAssertTrue(first.isCompressed, "nginx gzips text/plain")
        let hit = try await fetch(client, "/cache/expires/small.txt")
        XCTAssertEqual(hit.cacheStatus, .hit)
        XCTAssertTrue(hit.isCompressed, "stored as sent, decoded by the compression step")
        XCTAssertNotNil(hit.headers[.age])
        // Vary: Accept-Encoding: the identity request is another variant.
        let identity = try await fetch(client, "/cache/expires/small.txt", compressed: false)
        XCTAssertEqual(identity.cacheStatus, .miss)
        XCTAssertFalse(identity.isCompressed)
        await client.shutdown()
    }

    func testExpiresMinusOneIsRevalidatedWithTheETagAndNginxAnswers304() async throws {
        let client = try client()
        let first = try await fetch(client, "/cache/etag/small.txt", compressed: false)
        XCTAssertEqual(first.cacheStatus, .miss)
        XCTAssertEqual(first.headers[.cacheControl], "no-cache")
        XCTAssertNotNil(first.headers[.eTag])
        for _ in 0..<3 {
            let again = try await fetch(client, "/cache/etag/small.txt", compressed: false)
            XCTAssertEqual(again.cacheStatus, .revalidated)
            XCTAssertEqual(again.status.code, 200)
        }
        let gzipped = try await fetch(client, "/cache/etag/small.txt")
        XCTAssertEqual(gzipped.cacheStatus, .miss)
        let gzippedAgain = try await fetch(client, "/cache/etag/small.txt")
        XCTAssertEqual(gzippedAgain.cacheStatus, .revalidated, "nginx's weak ETag of a gzipped body validates too")
        await client.shutdown()
    }

    func testAddHeaderCacheControlIsHonoured() async throws {
        let client = try client()
        _ = try await fetch(client, "/cache/headers/small.txt")
        let hit = try await fetch(client, "/cache/headers/small.txt")
        XCTAssertEqual(hit.cacheStatus, .hit)
        _ = try await fetch(client, "/cache/nostore/small.txt")
        let again = try await fetch(client, "/cache/nostore/small.txt")
        XCTAssertEqual(again.cacheStatus, .miss, "no-store")
        await client.shutdown()
    }

    func testIfModifiedSinceAloneRevalidates() async throws {
        let client = try client()
        let first = try await fetch(client, "/cache/ims/small.txt", compressed: false)
        XCTAssertNil(first.headers[.eTag])
        XCTAssertNotNil(first.headers[.lastModified])
        let again = try await fetch(client, "/cache/ims/small.txt", compressed: false)
        XCTAssertEqual(again.cacheStatus, .revalidated, "If-Modified-Since with the stored Last-Modified: 304")
        await client.shutdown()
    }
}
