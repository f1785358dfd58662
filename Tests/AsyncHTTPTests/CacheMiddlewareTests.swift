@testable import AsyncHTTP
import Foundation
import HTTPTypes
import XCTest

/// The cache middleware against a scripted origin (``CacheOriginServer``) that counts requests, varies on
/// a header and changes its ETag, with the cache's clock moved by hand.
final class CacheMiddlewareTests: XCTestCase {
    private func client(_ cache: HTTPCache, configure: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.cache = cache
        configure(&configuration)
        return HTTPClient(configuration: configuration)
    }

    private func get(_ client: HTTPClient, _ url: String, headers: [(String, String)] = [],
                     configure: (inout HTTPClientRequest) -> Void = { _ in })
        async throws -> (response: HTTPClientResponse, body: String) {
        var request = HTTPClientRequest(url: url)
        for (name, value) in headers { request.setHeader(name, value) }
        configure(&request)
        let response = try await client.send(request)
        let body = try await response.body.collect(upTo: 16 << 20)
        return (response, String(decoding: body, as: UTF8.self))
    }

    // MARK: Fresh hits, Age (§4.2, §5.1)

    func testFreshResponseIsServedFromDiskWithAnAgeAndTheOriginIsAskedOnce() async throws {
        let origin = try await CacheOriginServer { _ in .init(status: 200, headers: [("Cache-Control", "max-age=60")], body: Array("hello".utf8)) }
        let clock = CacheTestClock()
        let cache = try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: clock)
        let client = client(cache)

        let first = try await get(client, origin.url("/a"))
        XCTAssertEqual(first.response.cacheStatus, .miss)
        XCTAssertFalse(first.response.didUseCachedResponse)
        XCTAssertEqual(first.body, "hello")

        clock.advance(10)
        let second = try await get(client, origin.url("/a"))
        XCTAssertEqual(second.response.cacheStatus, .hit)
        XCTAssertTrue(second.response.didUseCachedResponse)
        XCTAssertEqual(second.body, "hello")
        XCTAssertEqual(second.response.status.code, 200)
        XCTAssertEqual(second.response.headers[.age], "10", "§5.1: Age on a served response, §4.2.3 arithmetic")
        XCTAssertEqual(origin.count("/a"), 1)

        clock.advance(51)
        let third = try await get(client, origin.url("/a"))
        XCTAssertEqual(third.response.cacheStatus, .miss, "stale without a validator: fetched again")
        XCTAssertEqual(origin.count("/a"), 2)
        await client.shutdown()
        try await origin.shutdown()
    }

    func testAFreshHitsProgressEndsWholeAsSendReturns() async throws {
        let origin = try await CacheOriginServer { _ in .init(status: 200, headers: [("Cache-Control", "max-age=60")], body: Array("hello".utf8)) }
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock()))
        _ = try await get(client, origin.url("/p"))
        let seen = Locked<[HTTPTransferProgress]>([])
        let hit = try await get(client, origin.url("/p")) { request in
            request.progressHandler = HTTPProgressHandler { progress in seen.withLock { $0.append(progress) } }
        }
        XCTAssertEqual(hit.response.cacheStatus, .hit)
        // No head or body event came from the transport: the final value never came, and a progressUpdates()
        // stream never ended.
        XCTAssertEqual(seen.withLock { $0.last }, HTTPTransferProgress(
            bytesExpectedToSend: 0, bytesReceived: 5, bytesExpectedToReceive: 5, isFinal: true))
        XCTAssertEqual(seen.withLock { $0.filter(\.isFinal).count }, 1)
        // The cache's own 504 ends too.
        seen.withLock { $0 = [] }
        let missing = try await get(client, origin.url("/q"), headers: [("Cache-Control", "only-if-cached")]) { request in
            request.progressHandler = HTTPProgressHandler { progress in seen.withLock { $0.append(progress) } }
        }
        XCTAssertEqual(missing.response.status.code, 504)
        XCTAssertEqual(seen.withLock { $0.last?.isFinal }, true)
        await client.shutdown()
        try await origin.shutdown()
    }

    /// The origin is gone and the cache falls back to its stale copy: the connect failure made the progress final
    /// and failed, although `send` returned the copy.
    func testAStaleFallbackAfterANetworkFailureEndsItsProgressWholeNotFailed() async throws {
        let origin = try await CacheOriginServer { _ in .init(status: 200, headers: [("Cache-Control", "max-age=1")], body: Array("saved".utf8)) }
        let clock = CacheTestClock()
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: clock))
        _ = try await get(client, origin.url("/page"))
        let base = origin.baseURL
        try await origin.shutdown()
        clock.advance(100)
        let seen = Locked<[HTTPTransferProgress]>([])
        let fallback = try await get(client, base + "/page") { request in
            request.cachePolicy = [.askServerIfModifiedWhenStale, .fallbackToCacheIfLoadFails]
            request.progressHandler = HTTPProgressHandler { progress in seen.withLock { $0.append(progress) } }
        }
        XCTAssertEqual(fallback.response.cacheStatus, .stale)
        XCTAssertEqual(seen.withLock { $0 }, [HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 5, bytesExpectedToReceive: 5, isFinal: true)])
        await client.shutdown()
    }

    // MARK: Validation (§4.3)

    func testStaleResponseIsRevalidatedAndA304FreshensAndMergesItsHeaders() async throws {
        let origin = try await CacheOriginServer { request in
            if request.headers["if-none-match"] == "\"v1\"" {
                return .init(status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=100"), ("X-Updated", "yes")])
            }
            return .init(status: 200, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=10"), ("X-Updated", "no")],
                         body: Array("version one".utf8))
        }
        let clock = CacheTestClock()
        let directory = makeCacheDirectory()
        let cache = try HTTPCache.forTesting(directory: directory, clock: clock)
        let client = client(cache)
        _ = try await get(client, origin.url("/v"))
        clock.advance(20)
        let revalidated = try await get(client, origin.url("/v"))
        XCTAssertEqual(revalidated.response.cacheStatus, .revalidated)
        XCTAssertTrue(revalidated.response.didUseCachedResponse)
        XCTAssertEqual(revalidated.response.status.code, 200)
        XCTAssertEqual(revalidated.body, "version one")
        XCTAssertEqual(revalidated.response.headers[HTTPField.Name("X-Updated")!], "yes", "§4.3.4: the 304's fields are merged")
        XCTAssertEqual(revalidated.response.headers[.contentLength], "11", "§3.2: Content-Length is not updated from a 304")
        XCTAssertEqual(origin.requests.last?.headers["if-none-match"], "\"v1\"", "§4.3.1: the stored ETag is sent")

        clock.advance(50)
        let hit = try await get(client, origin.url("/v"))
        XCTAssertEqual(hit.response.cacheStatus, .hit, "freshened by the 304's max-age=100, which was stored")
        XCTAssertEqual(origin.count("/v"), 2)
        // Written to disk: another cache object on the directory sees the freshened head.
        let reopened = self.client(try HTTPCache.forTesting(directory: directory, clock: clock))
        let fromDisk = try await get(reopened, origin.url("/v"))
        XCTAssertEqual(fromDisk.response.cacheStatus, .hit)
        XCTAssertEqual(fromDisk.response.headers[HTTPField.Name("X-Updated")!], "yes")
        await reopened.shutdown()
        await client.shutdown()
        try await origin.shutdown()
    }

    func testAChangedETagReplacesTheStoredResponse() async throws {
        let version = Locked(1)
        let origin = try await CacheOriginServer { request in
            let current = version.withLock { $0 }
            if request.headers["if-none-match"] == "\"v\(current)\"" { return .init(status: 304, headers: [("ETag", "\"v\(current)\"")]) }
            return .init(status: 200, headers: [("ETag", "\"v\(current)\""), ("Cache-Control", "max-age=5")],
                         body: Array("body \(current)".utf8))
        }
        let clock = CacheTestClock()
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: clock))
        _ = try await get(client, origin.url("/e"))
        clock.advance(6)
        version.withLock { $0 = 2 }
        let changed = try await get(client, origin.url("/e"))
        XCTAssertEqual(changed.response.cacheStatus, .miss)
        XCTAssertEqual(changed.body, "body 2")
        let hit = try await get(client, origin.url("/e"))
        XCTAssertEqual(hit.response.cacheStatus, .hit)
        XCTAssertEqual(hit.body, "body 2")
        clock.advance(6)
        let revalidated = try await get(client, origin.url("/e"))
        XCTAssertEqual(revalidated.response.cacheStatus, .revalidated)
        XCTAssertEqual(revalidated.body, "body 2")
        XCTAssertEqual(origin.count("/e"), 3)
        await client.shutdown()
        try await origin.shutdown()
    }

    func testLastModifiedIsSentAsIfModifiedSinceAndAForeign304IsNotApplied() async throws {
        let lastModified = httpDate(1_700_000_000)
        let origin = try await CacheOriginServer { request in
            if request.headers["if-modified-since"] == lastModified {
                // A 304 naming another representation (§4.3.4): must not freshen what is stored.
                if request.target == "/foreign" { return .init(status: 304, headers: [("ETag", "\"other\"")]) }
                return .init(status: 304)
            }
            return .init(status: 200, headers: [("Last-Modified", lastModified), ("Cache-Control", "max-age=1")],
                         body: Array("dated".utf8))
        }
        let clock = CacheTestClock()
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: clock))
        _ = try await get(client, origin.url("/lm"))
        _ = try await get(client, origin.url("/foreign"))
        clock.advance(5)
        let revalidated = try await get(client, origin.url("/lm"))
        XCTAssertEqual(revalidated.response.cacheStatus, .revalidated)
        XCTAssertEqual(revalidated.body, "dated")
        let foreign = try await get(client, origin.url("/foreign"))
        XCTAssertEqual(foreign.response.cacheStatus, .miss, "§4.3.4: a 304 for another validator selects nothing")
        XCTAssertEqual(foreign.body, "dated")
        XCTAssertNil(origin.requests.last?.headers["if-modified-since"], "asked again, unconditionally")
        await client.shutdown()
        try await origin.shutdown()
    }

    func testNoCacheResponseIsRevalidatedEveryTime() async throws {
        let origin = try await CacheOriginServer { request in
            if request.headers["if-none-match"] == "\"n\"" { return .init(status: 304, headers: [("ETag", "\"n\"")]) }
            return .init(status: 200, headers: [("ETag", "\"n\""), ("Cache-Control", "no-cache, max-age=600")], body: Array("nc".utf8))
        }
        let directory = makeCacheDirectory()
        let client = client(try HTTPCache.forTesting(directory: directory, clock: CacheTestClock()))
        _ = try await get(client, origin.url("/nc"))
        let meta = directory + "/entries/" + HTTPCache.hash(origin.url("/nc")) + ".meta"
        let before = CacheFiles.identity(meta)
        XCTAssertNotNil(before)
        for _ in 0..<3 {
            let again = try await get(client, origin.url("/nc"))
            XCTAssertEqual(again.response.cacheStatus, .revalidated, "§5.2.2.4: no-cache MUST NOT be reused without validation")
        }
        XCTAssertEqual(origin.count("/nc"), 4)
        XCTAssertEqual(CacheFiles.identity(meta), before, "a 304 that leaves it no-cache is not written to disk each time")
        await client.shutdown()
        try await origin.shutdown()
    }

    // MARK: Vary (§4.1)

    func testVaryKeysOnTheNominatedRequestHeader() async throws {
        let origin = try await CacheOriginServer { request in
            if request.target == "/star" {
                return .init(status: 200, headers: [("Vary", "*"), ("Cache-Control", "max-age=60")], body: Array("star".utf8))
            }
            let language = request.headers["x-lang"] ?? "none"
            return .init(status: 200, headers: [("Vary", "X-Lang"), ("Cache-Control", "max-age=60")], body: Array(language.utf8))
        }
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock()))
        let en = try await get(client, origin.url("/v"), headers: [("X-Lang", "en")])
        XCTAssertEqual(en.body, "en")
        let enAgain = try await get(client, origin.url("/v"), headers: [("X-Lang", "en")])
        XCTAssertEqual(enAgain.response.cacheStatus, .hit)
        let fr = try await get(client, origin.url("/v"), headers: [("X-Lang", "fr")])
        XCTAssertEqual(fr.response.cacheStatus, .miss, "§4.1: a different value of a nominated header does not match")
        XCTAssertEqual(fr.body, "fr")
        let none = try await get(client, origin.url("/v"))
        XCTAssertEqual(none.response.cacheStatus, .miss, "§4.1: absent in one request, present in the other")
        XCTAssertEqual(none.body, "none")
        XCTAssertEqual(origin.count("/v"), 3)
        _ = try await get(client, origin.url("/star"))
        let star = try await get(client, origin.url("/star"))
        XCTAssertEqual(star.response.cacheStatus, .miss, "§4.1: Vary: * never matches")
        await client.shutdown()
        try await origin.shutdown()
    }

    // MARK: What is not stored (§3)

    func testNoStoreAndAuthorizedResponsesAreNotStored() async throws {
        let origin = try await CacheOriginServer { request in
            switch request.target {
            case "/nostore": .init(status: 200, headers: [("Cache-Control", "no-store, max-age=60")], body: Array("x".utf8))
            case "/public": .init(status: 200, headers: [("Cache-Control", "public, max-age=60")], body: Array("p".utf8))
            default: .init(status: 200, headers: [("Cache-Control", "max-age=60")], body: Array("a".utf8))
            }
        }
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock()))
        for _ in 0..<2 { _ = try await get(client, origin.url("/nostore")) }
        XCTAssertEqual(origin.count("/nostore"), 2, "§5.2.2.5")
        for _ in 0..<2 { _ = try await get(client, origin.url("/auth"), headers: [("Authorization", "Bearer secret-token")]) }
        XCTAssertEqual(origin.count("/auth"), 2, "§3.5")
        for _ in 0..<2 { _ = try await get(client, origin.url("/public"), headers: [("Authorization", "Bearer secret-token")]) }
        XCTAssertEqual(origin.count("/public"), 1, "§3.5: public allows it")
        for _ in 0..<2 { _ = try await get(client, origin.url("/req"), headers: [("Cache-Control", "no-store")]) }
        XCTAssertEqual(origin.count("/req"), 2, "§5.2.1.5")
        await client.shutdown()
        try await origin.shutdown()
    }

    /// A step of the client's own that signs or adds a bearer token runs below the cache (it must see the
    /// conditionals the cache adds), so the cache did not see the `Authorization` it added, and stored the response
    /// to serve it later to requests with other credentials or none (§3.5). The transport marks the response now.
    func testAnAuthorizationAddedByMiddlewareBelowTheCacheIsNotStored() async throws {
        struct BearerToken: HTTPClientMiddleware {
            func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
                var request = request
                request.setHeader("Authorization", "Bearer t")
                return try await next(request)
            }
        }
        let clock = CacheTestClock()
        let origin = try await CacheOriginServer { request in
            switch request.target {
            case "/public": .init(status: 200, headers: [("Cache-Control", "public, max-age=60")], body: Array("p".utf8))
            // Heuristically fresh for ten days (§4.2.2), with no directive at all.
            case "/heuristic": .init(status: 200, headers: [("Date", httpDate(clock.now)), ("Last-Modified", httpDate(clock.now - 100 * 86_400))],
                                     body: Array("h".utf8))
            default: .init(status: 200, headers: [("Cache-Control", "max-age=60")], body: Array("a".utf8))
            }
        }
        let cache = try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: clock)
        let client = client(cache) { $0.middleware = [BearerToken()] }
        for target in ["/private", "/heuristic"] {
            let first = try await get(client, origin.url(target))
            let second = try await get(client, origin.url(target))
            XCTAssertEqual(first.response.cacheStatus, .miss, target)
            XCTAssertEqual(second.response.cacheStatus, .miss, target)
            XCTAssertEqual(origin.count(target), 2, "\(target): §3.5, the Authorization a step below the cache added")
        }
        XCTAssertTrue(origin.requests.allSatisfy { $0.headers["authorization"] == "Bearer t" })
        // The control: a response that may be stored for an authorized request is.
        _ = try await get(client, origin.url("/public"))
        let hit = try await get(client, origin.url("/public"))
        XCTAssertEqual(hit.response.cacheStatus, .hit)
        XCTAssertEqual(hit.body, "p")
        XCTAssertEqual(origin.count("/public"), 1, "§3.5: public allows it")
        await client.shutdown()
        try await origin.shutdown()
    }

    func testIgnoringServerDontCacheHeadersStoresNoStoreResponses() async throws {
        let origin = try await CacheOriginServer { _ in
            .init(status: 200, headers: [("Cache-Control", "no-store, no-cache, must-revalidate")], body: Array("kept".utf8))
        }
        let cache = try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock(), ignoresServerDontCacheHeaders: true)
        let client = client(cache)
        _ = try await get(client, origin.url("/x"))
        let offline = try await get(client, origin.url("/x")) { $0.cachePolicy = .onlyLoadIfNotCached }
        XCTAssertTrue(offline.response.didUseCachedResponse)
        XCTAssertEqual(offline.body, "kept")
        XCTAssertEqual(origin.count("/x"), 1)
        await client.shutdown()
        try await origin.shutdown()
    }

    func testSecondsToCacheKeepsAResponseFresh() async throws {
        let origin = try await CacheOriginServer { _ in .init(status: 200, headers: [("Cache-Control", "max-age=0")], body: Array("s".utf8)) }
        let clock = CacheTestClock()
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: clock))
        _ = try await get(client, origin.url("/s")) { $0.secondsToCache = 3600 }
        clock.advance(3000)
        let hit = try await get(client, origin.url("/s"))
        XCTAssertEqual(hit.response.cacheStatus, .hit)
        XCTAssertEqual(origin.count("/s"), 1)
        await client.shutdown()
        try await origin.shutdown()
    }

    // MARK: Invalidation (§4.4)

    func testUnsafeMethodInvalidatesTheTargetAndItsLocation() async throws {
        let origin = try await CacheOriginServer { request in
            if request.method == "POST" { return .init(status: 201, headers: [("Location", "/items/2")]) }
            return .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: Array(request.target.utf8))
        }
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock()))
        _ = try await get(client, origin.url("/items/1"))
        _ = try await get(client, origin.url("/items/2"))
        do { let status = try await get(client, origin.url("/items/1")).response.cacheStatus; XCTAssertEqual(status, .hit) }
        var post = HTTPClientRequest(url: origin.url("/items/1"))
        post.method = .post
        post.body = .bytes(Array("new".utf8))
        let posted = try await client.send(post)
        XCTAssertNil(posted.cacheStatus)
        _ = try await posted.body.collect(upTo: 1024)
        do { let status = try await get(client, origin.url("/items/1")).response.cacheStatus; XCTAssertEqual(status, .miss, "§4.4: the target URI") }
        do { let status = try await get(client, origin.url("/items/2")).response.cacheStatus; XCTAssertEqual(status, .miss, "§4.4: Location, same origin") }
        await client.shutdown()
        try await origin.shutdown()
    }

    // MARK: Request directives and policies

    func testOnlyIfCachedAnswers504WithoutTheNetwork() async throws {
        let origin = try await CacheOriginServer { _ in .init(status: 200, headers: [("Cache-Control", "max-age=60")], body: Array("o".utf8)) }
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock()))
        let missing = try await get(client, origin.url("/o"), headers: [("Cache-Control", "only-if-cached")])
        XCTAssertEqual(missing.response.status.code, 504, "§5.2.1.7")
        XCTAssertEqual(origin.count("/o"), 0)
        _ = try await get(client, origin.url("/o"))
        let present = try await get(client, origin.url("/o"), headers: [("Cache-Control", "only-if-cached")])
        XCTAssertEqual(present.response.cacheStatus, .hit)
        XCTAssertEqual(origin.count("/o"), 1)
        await client.shutdown()
        try await origin.shutdown()
    }

    func testDontLoadServesStaleOfflineAndFallbackServesStaleWhenTheOriginIsGone() async throws {
        let origin = try await CacheOriginServer { request in
            let control = request.target == "/strict" ? "max-age=1, must-revalidate" : "max-age=1"
            return .init(status: 200, headers: [("Cache-Control", control), ("ETag", "\"1\"")], body: Array("saved".utf8))
        }
        let clock = CacheTestClock()
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: clock))
        _ = try await get(client, origin.url("/page"))
        _ = try await get(client, origin.url("/strict"))
        let base = origin.baseURL
        try await origin.shutdown()
        clock.advance(100)

        let offline = try await get(client, base + "/page") { $0.cachePolicy = .dontLoad }
        XCTAssertEqual(offline.response.cacheStatus, .stale)
        XCTAssertEqual(offline.body, "saved")
        let nothing = try await get(client, base + "/never") { $0.cachePolicy = .dontLoad }
        XCTAssertEqual(nothing.response.status.code, 504)
        XCTAssertEqual(nothing.response.cacheStatus, .miss)

        let fallback = try await get(client, base + "/page") {
            $0.cachePolicy = [.askServerIfModifiedWhenStale, .fallbackToCacheIfLoadFails]
        }
        XCTAssertEqual(fallback.response.cacheStatus, .stale)
        XCTAssertEqual(fallback.body, "saved")
        do {
            _ = try await get(client, base + "/page")
            XCTFail("without the fallback policy the failure is reported")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .connectFailed)
        }
        do {
            _ = try await get(client, base + "/strict") { $0.cachePolicy = [.fallbackToCacheIfLoadFails] }
            XCTFail("§4.2.4: must-revalidate forbids serving it stale")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .connectFailed)
        }
        await client.shutdown()
    }

    func testPoliciesDoNotReadDoNotWriteAndAskServerIfModified() async throws {
        let origin = try await CacheOriginServer { request in
            if request.headers["if-none-match"] == "\"p\"" { return .init(status: 304, headers: [("ETag", "\"p\"")]) }
            return .init(status: 200, headers: [("Cache-Control", "max-age=600"), ("ETag", "\"p\"")], body: Array("p".utf8))
        }
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock()))
        _ = try await get(client, origin.url("/w")) { $0.cachePolicy = .doNotWrite }
        do { let status = try await get(client, origin.url("/w")).response.cacheStatus; XCTAssertEqual(status, .miss, "doNotWrite stored nothing") }
        do { let status = try await get(client, origin.url("/w")).response.cacheStatus; XCTAssertEqual(status, .hit) }
        let notRead = try await get(client, origin.url("/w")) { $0.cachePolicy = .doNotRead }
        XCTAssertEqual(notRead.response.cacheStatus, .miss)
        XCTAssertNil(origin.requests.last?.headers["if-none-match"])
        let asked = try await get(client, origin.url("/w")) { $0.cachePolicy = .askServerIfModified }
        XCTAssertEqual(asked.response.cacheStatus, .revalidated)
        XCTAssertEqual(origin.count("/w"), 4)
        await client.shutdown()
        try await origin.shutdown()
    }

    func testRequestsWithTheirOwnConditionalsPassThrough() async throws {
        let origin = try await CacheOriginServer { request in
            if request.headers["if-none-match"] == "\"c\"" { return .init(status: 304, headers: [("ETag", "\"c\"")]) }
            return .init(status: 200, headers: [("Cache-Control", "max-age=600"), ("ETag", "\"c\"")], body: Array("c".utf8))
        }
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock()))
        _ = try await get(client, origin.url("/c"))
        let own = try await get(client, origin.url("/c"), headers: [("If-None-Match", "\"c\"")])
        XCTAssertEqual(own.response.status.code, 304, "the caller's own conditional request gets the server's answer")
        XCTAssertEqual(origin.count("/c"), 2)
        await client.shutdown()
        try await origin.shutdown()
    }

    // MARK: Bodies

    func testABodyCutShortOrAbandonedIsNeverStored() async throws {
        let body = [UInt8](repeating: 0x61, count: 100_000)
        let origin = try await CacheOriginServer { request in
            .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: body,
                  stallAfter: request.target == "/stall" ? 40_000 : nil, stallMilliseconds: 3000)
        }
        let directory = makeCacheDirectory()
        let cache = try HTTPCache.forTesting(directory: directory, clock: CacheTestClock())
        let client = client(cache) { $0.inactivityTimeout = .milliseconds(300) }

        // The caller stops reading after the first chunk and drops the body.
        do {
            let response = try await client.send(HTTPClientRequest(url: origin.url("/drop")))
            for try await _ in response.body { break }
        }
        // The server stalls past the inactivity timeout: the body fails half way.
        do {
            _ = try await get(client, origin.url("/stall"))
            XCTFail("the stalled body should time out")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .timeout)
        }
        do { let status = try await get(client, origin.url("/drop")).response.cacheStatus; XCTAssertEqual(status, .miss, "§3.3: not stored as complete") }
        XCTAssertEqual(origin.count("/stall"), 1)
        XCTAssertFalse(cacheFiles(in: directory).contains { $0.hasSuffix(".tmp") }, "temporary files removed: \(cacheFiles(in: directory))")
        await client.shutdown()
        try await origin.shutdown()
    }

    func testALargeBodyIsStreamedFromItsFileOnAHit() async throws {
        let body = (0..<(3 << 20)).map { UInt8($0 % 251) }
        let origin = try await CacheOriginServer { _ in .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: body) }
        let directory = makeCacheDirectory()
        let client = client(try HTTPCache.forTesting(directory: directory, clock: CacheTestClock()))
        let first = try await client.send(HTTPClientRequest(url: origin.url("/big")))
        let firstBody = try await first.body.collect(upTo: 4 << 20)
        XCTAssertEqual(firstBody, body)
        XCTAssertEqual(cacheFiles(in: directory).filter { $0.hasSuffix(".body") }.count, 1)

        let hit = try await client.send(HTTPClientRequest(url: origin.url("/big")))
        XCTAssertEqual(hit.cacheStatus, .hit)
        var chunks = 0
        var received: [UInt8] = []
        for try await chunk in hit.body {
            chunks += 1
            XCTAssertLessThanOrEqual(chunk.count, CachedFileBody.chunkSize, "streamed, not loaded whole")
            received.append(contentsOf: chunk)
        }
        XCTAssertEqual(received, body)
        XCTAssertGreaterThan(chunks, 40)
        XCTAssertEqual(origin.count("/big"), 1)
        await client.shutdown()
        try await origin.shutdown()
    }

    func testACompressedBodyIsStoredAsSentAndDecodedOnEveryHit() async throws {
        let text = Array(String(repeating: "compressible text ", count: 200).utf8)
        let deflater = Deflater(encoding: .gzip)
        var gzipped: [UInt8] = []
        try text.withUnsafeBytes { input in
            try deflater.compress(input) { gzipped.append(contentsOf: $0) }
            try deflater.finish { gzipped.append(contentsOf: $0) }
        }
        let compressed = gzipped
        let origin = try await CacheOriginServer { request in
            let wantsGzip = request.headers["accept-encoding"]?.contains("gzip") ?? false
            return .init(status: 200, headers: [("Cache-Control", "max-age=600"), ("Vary", "Accept-Encoding")]
                         + (wantsGzip ? [("Content-Encoding", "gzip")] : []), body: wantsGzip ? compressed : text)
        }
        let directory = makeCacheDirectory()
        let client = client(try HTTPCache.forTesting(directory: directory, clock: CacheTestClock()))
        let first = try await get(client, origin.url("/gz"))
        XCTAssertEqual(first.body, String(decoding: text, as: UTF8.self))
        let hit = try await get(client, origin.url("/gz"))
        XCTAssertEqual(hit.response.cacheStatus, .hit)
        XCTAssertTrue(hit.response.isCompressed)
        XCTAssertEqual(hit.body, String(decoding: text, as: UTF8.self))
        let meta = try XCTUnwrap(cacheFiles(in: directory).first { $0.hasSuffix(".meta") })
        let stored = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/" + meta)))
        XCTAssertNotNil(stored.firstRange(of: compressed), "the gzip bytes are stored as sent")
        await client.shutdown()
        try await origin.shutdown()
    }

    // MARK: Storage, limits, damage

    func testSessionEntriesGoWithTheLastClientAndWithClear() async throws {
        let origin = try await CacheOriginServer { _ in .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: Array("s".utf8)) }
        let directory = makeCacheDirectory()
        let cache = try HTTPCache.forTesting(directory: directory, clock: CacheTestClock(), defaultStoragePolicy: .session)
        let one = client(cache)
        let two = client(cache)
        _ = try await get(one, origin.url("/s1"))
        _ = try await get(one, origin.url("/p")) { $0.cacheStoragePolicy = .permanent }
        do { let status = try await get(two, origin.url("/s1")).response.cacheStatus; XCTAssertEqual(status, .hit, "one cache shared by two clients") }
        cache.clearCachedResponses(for: .session)
        do { let status = try await get(two, origin.url("/s1")).response.cacheStatus; XCTAssertEqual(status, .miss) }
        await one.shutdown()
        XCTAssertTrue(cacheFiles(in: directory).contains { $0.hasPrefix("session-") }, "another client still uses the cache")
        await two.shutdown()
        XCTAssertFalse(cacheFiles(in: directory).contains { $0.hasPrefix("session-") }, "\(cacheFiles(in: directory))")
        XCTAssertTrue(cacheFiles(in: directory).contains { $0.hasPrefix("entries/") }, "permanent entries stay")
        let three = client(cache)
        do { let status = try await get(three, origin.url("/p")).response.cacheStatus; XCTAssertEqual(status, .hit) }
        await three.shutdown()
        try await origin.shutdown()
    }

    func testLeastRecentlyUsedEntriesAreEvictedAndOversizedOnesNotStored() async throws {
        let origin = try await CacheOriginServer { request in
            let size = request.target == "/huge" ? 40_000 : 20_000
            return .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: [UInt8](repeating: 0x62, count: size))
        }
        let clock = CacheTestClock()
        let cache = try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: clock, maxSize: 70_000, maxEntrySize: 30_000)
        let client = client(cache)
        for name in ["/1", "/2", "/3"] {
            _ = try await get(client, origin.url(name))
            clock.advance(1)
        }
        _ = try await get(client, origin.url("/1"))  // /1 is now the most recently used
        clock.advance(1)
        _ = try await get(client, origin.url("/4"))
        XCTAssertLessThanOrEqual(cache.sizeOnDisk, 70_000)
        do { let status = try await get(client, origin.url("/1")).response.cacheStatus; XCTAssertEqual(status, .hit) }
        do { let status = try await get(client, origin.url("/2")).response.cacheStatus; XCTAssertEqual(status, .miss, "the least recently used went") }
        _ = try await get(client, origin.url("/huge"))
        do { let status = try await get(client, origin.url("/huge")).response.cacheStatus; XCTAssertEqual(status, .miss, "bigger than maxEntrySize") }
        await client.shutdown()
        try await origin.shutdown()
    }

    func testADamagedEntryIsDiscardedWithALogLineAndNeverServed() async throws {
        let big = (0..<200_000).map { UInt8($0 % 199) }
        let origin = try await CacheOriginServer { request in
            .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: request.target == "/big" ? big : Array("small".utf8))
        }
        let directory = makeCacheDirectory()
        let log = CacheLogRecorder()
        let client = client(try HTTPCache.forTesting(directory: directory, clock: CacheTestClock(), logger: log.logger))
        _ = try await get(client, origin.url("/small"))
        _ = try await get(client, origin.url("/big"))
        let files = cacheFiles(in: directory)
        let smallMeta = directory + "/entries/" + HTTPCache.hash("\(origin.baseURL)/small") + ".meta"
        XCTAssertTrue(files.contains("entries/" + HTTPCache.hash("\(origin.baseURL)/small") + ".meta"))
        // Flip one byte of the small entry's head file.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: smallMeta)))
        bytes[bytes.count / 2] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: smallMeta))
        let small = try await get(client, origin.url("/small"))
        XCTAssertEqual(small.response.cacheStatus, .miss)
        XCTAssertEqual(small.body, "small")
        XCTAssertTrue(log.lines.withLock { $0.contains { $0.contains("damaged entry") } })

        // Flip one byte in the middle of the big body file: the hit fails at its end, never ends as whole.
        let bodyFile = try XCTUnwrap(cacheFiles(in: directory).first { $0.hasSuffix(".body") })
        var body = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/" + bodyFile)))
        body[100_000] ^= 0x01
        try Data(body).write(to: URL(fileURLWithPath: directory + "/" + bodyFile))
        do {
            _ = try await get(client, origin.url("/big"))
            XCTFail("a damaged body must not be served as complete")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .ioFailure)
        }
        let refetched = try await get(client, origin.url("/big"))
        XCTAssertEqual(refetched.response.cacheStatus, .miss, "the damaged entry was removed")
        // Truncate the (new) body file: caught before serving.
        let newBody = try XCTUnwrap(cacheFiles(in: directory).first { $0.hasSuffix(".body") })
        try Data(body.prefix(1000)).write(to: URL(fileURLWithPath: directory + "/" + newBody))
        do { let status = try await get(client, origin.url("/big")).response.cacheStatus; XCTAssertEqual(status, .miss) }
        XCTAssertFalse(log.lines.withLock { $0.joined().contains("/big") }, "no URL in the log lines")
        await client.shutdown()
        try await origin.shutdown()
    }

    func testFilesArePrivate() async throws {
        let origin = try await CacheOriginServer { _ in .init(status: 200, headers: [("Cache-Control", "max-age=60")], body: [UInt8](repeating: 1, count: 50_000)) }
        let directory = makeCacheDirectory() + "/nested/cache"
        let client = client(try HTTPCache.forTesting(directory: directory, clock: CacheTestClock()))
        _ = try await get(client, origin.url("/f"))
        for file in cacheFiles(in: directory) {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/" + file)
            XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600, file)
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/entries")
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o700)
        await client.shutdown()
        try await origin.shutdown()
    }

    func testBadSizesAreRefusedWithATypedError() throws {
        for (maxSize, maxEntrySize) in [(0, nil), (-1, nil), (1000, 0)] as [(Int, Int?)] {
            XCTAssertThrowsError(try HTTPCache(directory: makeCacheDirectory(), maxSize: maxSize, maxEntrySize: maxEntrySize)) {
                XCTAssertEqual(($0 as? HTTPClientError)?.code, .invalidConfiguration)
            }
        }
        let file = makeCacheDirectory() + "/file"
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data()))
        XCTAssertThrowsError(try HTTPCache(directory: file)) {
            XCTAssertEqual(($0 as? HTTPClientError)?.code, .ioFailure)
        }
    }

    func testRemoveCachedResponseAndHEADPassThrough() async throws {
        let origin = try await CacheOriginServer { _ in .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: Array("r".utf8)) }
        let cache = try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock())
        let client = client(cache)
        _ = try await get(client, origin.url("/r"))
        var head = HTTPClientRequest(url: origin.url("/r"))
        head.method = .head
        let headResponse = try await client.send(head)
        XCTAssertNil(headResponse.cacheStatus, "HEAD goes to the server")
        XCTAssertEqual(origin.count("/r"), 2)
        do { let status = try await get(client, origin.url("/r")).response.cacheStatus; XCTAssertEqual(status, .hit) }
        try cache.removeCachedResponse(for: origin.url("/r"))
        do { let status = try await get(client, origin.url("/r")).response.cacheStatus; XCTAssertEqual(status, .miss) }
        await client.shutdown()
        try await origin.shutdown()
    }

    func testEachHopOfARedirectIsCachedBelowTheRedirectStep() async throws {
        let origin = try await CacheOriginServer { request in
            if request.target == "/old" {
                return .init(status: 301, headers: [("Location", "/new"), ("Cache-Control", "max-age=600")],
                             body: Array("moved".utf8))
            }
            return .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: Array("new".utf8))
        }
        let client = client(try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock()))
        let first = try await get(client, origin.url("/old"))
        XCTAssertEqual(first.body, "new")
        let second = try await get(client, origin.url("/old"))
        XCTAssertEqual(second.body, "new")
        XCTAssertEqual(second.response.cacheStatus, .hit)
        XCTAssertEqual(second.response.history.count, 1, "the stored 301 was followed again")
        XCTAssertEqual(origin.count("/old"), 1)
        XCTAssertEqual(origin.count("/new"), 1)
        await client.shutdown()
        try await origin.shutdown()
    }

    func testTheChainPutsTheCacheBelowCompression() throws {
        var configuration = HTTPClient.Configuration()
        configuration.cache = try HTTPCache(directory: makeCacheDirectory())
        let chain = HTTPClient.builtInMiddleware(configuration, authenticator: Authenticator(configuration: .init(), logger: configuration.logger),
                                                 proxies: ProxyRouter(.none))
        let names = chain.map { String(describing: type(of: $0)) }
        // Below compression (it stores what the server sent), above the throttle (innermost, issue 15).
        XCTAssertEqual(Array(names.suffix(3)), ["CompressionMiddleware", "CacheMiddleware", "ThrottleMiddleware"])
    }

    // MARK: What a stored response must not do again

    /// A stored `Set-Cookie` would set its cookie again on every use of the entry (the cookie step sits above the
    /// cache): a session rotated since, or a login logged out, would come back. It is neither stored (nor on
    /// disk) nor replayed; a `304`'s own `Set-Cookie` still reaches the jar.
    func testASetCookieIsNotStoredAndNotSetAgainByAHitOrARevalidation() async throws {
        let origin = try await CacheOriginServer { request in
            switch request.target {
            case "/login":
                return .init(status: 200, headers: [("Cache-Control", "no-store"), ("Set-Cookie", "sid=AUTH")])
            default:
                if request.headers["if-none-match"] == "\"1\"" {
                    return .init(status: 304, headers: [("ETag", "\"1\""), ("Cache-Control", "max-age=60"), ("Set-Cookie", "seen=yes")])
                }
                return .init(status: 200, headers: [("Cache-Control", "max-age=60"), ("ETag", "\"1\""), ("Set-Cookie", "sid=anon")],
                             body: Array("page".utf8))
            }
        }
        let clock = CacheTestClock()
        let directory = makeCacheDirectory()
        let cache = try HTTPCache.forTesting(directory: directory, clock: clock)
        let jar = CookieJar()
        let client = client(cache) { $0.cookieJar = jar }
        func cookies() async throws -> [String: String] {
            Dictionary(uniqueKeysWithValues: try await jar.cookies(for: origin.url("/")).map { ($0.name, $0.value) })
        }

        _ = try await get(client, origin.url("/page"))
        var current = try await cookies()
        XCTAssertEqual(current["sid"], "anon", "a live response's cookie is set")
        _ = try await get(client, origin.url("/login"))
        current = try await cookies()
        XCTAssertEqual(current["sid"], "AUTH")

        clock.advance(10)
        let hit = try await get(client, origin.url("/page"))
        XCTAssertEqual(hit.response.cacheStatus, .hit)
        XCTAssertNil(hit.response.headers[.setCookie], "a hit carries no stored cookie")
        current = try await cookies()
        XCTAssertEqual(current["sid"], "AUTH", "the hit set the stored cookie again")

        clock.advance(60)
        let revalidated = try await get(client, origin.url("/page"))
        XCTAssertEqual(revalidated.response.cacheStatus, .revalidated)
        XCTAssertEqual(revalidated.body, "page")
        current = try await cookies()
        XCTAssertEqual(current["sid"], "AUTH", "the revalidation set the stored cookie again")
        XCTAssertEqual(current["seen"], "yes", "the 304's own cookie is live and reaches the jar")

        for file in cacheFiles(in: directory) {
            let bytes = try XCTUnwrap(FileManager.default.contents(atPath: directory + "/" + file))
            XCTAssertFalse(String(decoding: bytes, as: UTF8.self).contains("sid="), "\(file) holds a cookie")
            XCTAssertFalse(String(decoding: bytes, as: UTF8.self).contains("seen="), "\(file) holds a cookie")
        }
        await client.shutdown()
        try await origin.shutdown()
    }

    /// A `401` with freshness would answer the authenticated retry from the cache, and the credentials would never
    /// reach the server while it stayed fresh.
    func testAChallengeIsNotStoredSoTheRetryWithCredentialsReachesTheServer() async throws {
        let origin = try await CacheOriginServer { request in
            guard request.headers["authorization"] != nil else {
                return .init(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"r\""), ("Cache-Control", "max-age=300")],
                             body: Array("who are you".utf8))
            }
            return .init(status: 200, headers: [("Cache-Control", "private, max-age=300")], body: Array("secret".utf8))
        }
        let cache = try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock())
        let client = client(cache) { $0.authentication.allowsBasicOverPlainHTTP = true }  // the origin is plain loopback http
        let answer = try await get(client, origin.url("/private")) {
            $0.credentials = HTTPCredentials(username: "user", password: "pass")
        }
        XCTAssertEqual(answer.response.status.code, 200, "the stored 401 answered the retry that carried the credentials")
        XCTAssertEqual(answer.body, "secret")
        XCTAssertEqual(origin.count("/private"), 2, "the challenge, then the authenticated request")
        await client.shutdown()
        try await origin.shutdown()
    }

    /// A new full response that only its size keeps out of the cache still makes the stored one out of date: the
    /// stored one must not answer the next request.
    func testANewResponseTooLargeToStoreRemovesTheStoredOne() async throws {
        let version = Locked(1)
        let origin = try await CacheOriginServer { request in
            let current = version.withLock { $0 }
            let body = current == 1 ? Array("v1".utf8) : [UInt8](repeating: 0x32, count: 40_000)
            // /streamed answers without Content-Length (chunked), so the size shows only as the body streams in.
            let framing: [(String, String)] = request.target == "/streamed" ? [("Transfer-Encoding", "chunked")] : []
            return .init(status: 200, headers: [("Cache-Control", "max-age=3600"), ("ETag", "\"\(current)\"")] + framing, body: body)
        }
        let cache = try HTTPCache.forTesting(directory: makeCacheDirectory(), clock: CacheTestClock(), maxEntrySize: 30_000)
        let client = client(cache)
        for path in ["/announced", "/streamed"] {
            version.withLock { $0 = 1 }
            let first = try await get(client, origin.url(path))
            XCTAssertEqual(first.body, "v1")
            version.withLock { $0 = 2 }
            let reloaded = try await get(client, origin.url(path), headers: [("Cache-Control", "no-cache")])
            XCTAssertEqual(reloaded.body.count, 40_000, path)
            let next = try await get(client, origin.url(path))
            XCTAssertEqual(next.response.cacheStatus, .miss, "\(path): the stored v1 answered after v2 was seen")
            XCTAssertEqual(next.body.count, 40_000, path)
            XCTAssertEqual(origin.count(path), 3, path)
        }
        await client.shutdown()
        try await origin.shutdown()
    }
}
