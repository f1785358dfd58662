@testable import AsyncHTTP
import HTTPTypes
import XCTest

/// RFC 9111's requirements for a private cache, as pure functions with an injected clock. Each test names
/// the section and requirement it covers; docs/cache.md lists them.
final class CacheRulesTests: XCTestCase {
    /// 2026-01-01T00:00:00Z, the tests' "now" unless they say otherwise.
    let t0: Double = 1_767_225_600

    // MARK: Storing (§3)

    private func whyNot(
        status: Int = 200, _ response: [(String, String)], request: [(String, String)] = [], method: HTTPRequest.Method = .get,
        policy: HTTPCachePolicy = .askServerIfModifiedWhenStale, ignores: Bool = false, secondsToCache: Double? = nil
    ) -> String? {
        CacheRules.whyNotStorable(method: method, requestHeaders: fields(request), status: status, responseHeaders: fields(response),
                                  policy: policy, ignoresServerDirectives: ignores, secondsToCache: secondsToCache)
    }

    func testStorabilityTable() {
        // (status, response fields, request fields, storable?, requirement)
        let cases: [(Int, [(String, String)], [(String, String)], Bool, String)] = [
            (200, [], [], true, "§3: 200 is heuristically cacheable (RFC 9110 §15.1)"),
            (404, [], [], true, "§3: 404 is heuristically cacheable"),
            (500, [], [], false, "§3: 500 without explicit freshness MUST NOT be stored"),
            (500, [("Cache-Control", "max-age=60")], [], true, "§3: any final status with max-age"),
            (302, [("Expires", httpDate(t0 + 60))], [], true, "§3: Expires makes it storable"),
            (302, [("Cache-Control", "private")], [], true, "§3/§5.2.2.7: private is fine in a private cache"),
            (302, [("Cache-Control", "s-maxage=60")], [], false, "§3: s-maxage counts only for shared caches"),
            (200, [("Cache-Control", "no-store")], [], false, "§5.2.2.5: MUST NOT store no-store"),
            (200, [("Cache-Control", "max-age=60, No-Store")], [], false, "§5.2: directive names are case-insensitive"),
            (200, [("Cache-Control", "max-age=60")], [("Cache-Control", "no-store")], false, "§5.2.1.5: request no-store"),
            (200, [("Cache-Control", "no-store, must-understand")], [], true, "§5.2.2.3: must-understand overrides no-store"),
            (206, [("Cache-Control", "max-age=60")], [], false, "§3.3: partial content not stored as whole"),
            (304, [("Cache-Control", "max-age=60")], [], false, "§3: 304 is not a storable response"),
            (200, [("Cache-Control", "max-age=60")], [("Range", "bytes=0-9")], false, "§3.3: Range requests not stored"),
            (200, [("Cache-Control", "max-age=60")], [("Authorization", "Basic eDp5")], false, "§3.5: Authorization"),
            (200, [("Cache-Control", "max-age=60, public")], [("Authorization", "Basic eDp5")], true, "§3.5: public allows"),
            (200, [("Cache-Control", "must-revalidate")], [("Authorization", "Basic eDp5")], true, "§3.5: must-revalidate allows"),
            (200, [("Cache-Control", "s-maxage=5")], [("Authorization", "Basic eDp5")], true, "§3.5: s-maxage allows"),
            (200, [("Cache-Control", "max-age=60"), ("Vary", "*")], [], false, "§4.1: Vary: * can never match"),
        ]
        for (status, response, request, storable, requirement) in cases {
            let why = whyNot(status: status, response, request: request)
            XCTAssertEqual(why == nil, storable, "\(requirement): \(why ?? "storable")")
        }
    }

    func testOnlyGETIsStoredAndPolicyDoNotWriteStoresNothing() {
        XCTAssertNotNil(whyNot([("Cache-Control", "max-age=60")], method: .post))
        XCTAssertNotNil(whyNot([("Cache-Control", "max-age=60")], policy: .doNotWrite))
    }

    func testIgnoringServerDontCacheHeadersStoresNoStoreButNotAuthorizedOrRequestNoStore() {
        XCTAssertNil(whyNot([("Cache-Control", "no-store")], ignores: true))
        XCTAssertNotNil(whyNot([("Cache-Control", "no-store")], request: [("Authorization", "Basic eDp5")], ignores: true))
        XCTAssertNotNil(whyNot([], request: [("Cache-Control", "no-store")], ignores: true))
    }

    func testSecondsToCacheMakesAResponseWithoutFreshnessStorable() {
        XCTAssertNotNil(whyNot(status: 500, []))
        XCTAssertNil(whyNot(status: 500, [], secondsToCache: 60))
    }

    /// §3.1: MUST NOT store Connection and the fields it nominates; hop-by-hop fields dropped.
    func testConnectionAndTheFieldsItNamesAreNotStored() {
        let stored = CacheRules.storableHeaders(fields([
            ("Connection", "X-Hop, keep-alive"), ("X-Hop", "1"), ("Keep-Alive", "timeout=5"),
            ("Transfer-Encoding", "chunked"), ("ETag", "\"a\""),
        ]))
        XCTAssertEqual(stored.map(\.name.canonicalName), ["etag"])
    }

    // MARK: Freshness (§4.2)

    private func lifetime(status: Int = 200, _ response: [(String, String)]) -> Double {
        CacheRules.freshnessLifetime(status: status, headers: fields(response), responseTime: t0)
    }

    func testFreshnessLifetimeTable() {
        let date = ("Date", httpDate(t0))
        let cases: [(Int, [(String, String)], Double, String)] = [
            (200, [date, ("Cache-Control", "max-age=60"), ("Expires", httpDate(t0 + 600))], 60,
             "§4.2.1: max-age takes precedence over Expires"),
            (200, [date, ("Cache-Control", "s-maxage=600, max-age=60")], 60, "§4.2.1: a private cache ignores s-maxage"),
            (200, [date, ("Cache-Control", "s-maxage=600")], 0, "§4.2.1: s-maxage alone gives nothing"),
            (200, [date, ("Expires", httpDate(t0 + 600))], 600, "§4.2.1: Expires minus Date"),
            (200, [("Date", httpDate(t0 - 100)), ("Expires", httpDate(t0 + 500))], 600, "§4.2.1: Expires minus Date, not now"),
            (200, [date, ("Expires", "0")], 0, "§5.3: an invalid Expires MUST be treated as in the past"),
            (200, [date, ("Expires", "Thu, 01 Dec 1994 16:00:00 GMT")], 0, "§5.3: a past Expires"),
            (200, [date, ("Cache-Control", "max-age=60"), ("Cache-Control", "max-age=120")], 0,
             "§4.2.1: conflicting max-age: stale"),
            (200, [date, ("Cache-Control", "max-age=\"60\"")], 60, "§5.2: the quoted form is accepted"),
            (200, [date, ("Cache-Control", "max-age=abc")], 0, "§5.2.2.1: an invalid max-age: stale"),
            (200, [date, ("Cache-Control", "max-age=99999999999999999999")], 2_147_483_648,
             "§1.2.2: a delta-seconds overflow MUST be 2147483648"),
            (200, [date, ("Last-Modified", httpDate(t0 - 1000))], 100, "§4.2.2: heuristic, 10% of Date − Last-Modified"),
            (200, [date, ("Last-Modified", httpDate(t0 - 100 * 86_400))], 86_400, "§4.2.2: heuristic capped at 24 h"),
            (500, [date, ("Last-Modified", httpDate(t0 - 1000))], 0, "§4.2.2: no heuristic for a code not heuristically cacheable"),
            (500, [date, ("Last-Modified", httpDate(t0 - 1000)), ("Cache-Control", "public")], 100, "§4.2.2: public allows a heuristic"),
            (200, [date, ("Last-Modified", httpDate(t0 - 1000)), ("Expires", httpDate(t0 + 10))], 10,
             "§4.2.2: no heuristic when there is explicit freshness"),
            (200, [date], 0, "no freshness information: stale at once"),
        ]
        for (status, response, expected, requirement) in cases {
            XCTAssertEqual(lifetime(status: status, response), expected, requirement)
        }
    }

    /// §4.2.3's example arithmetic: apparent_age, response_delay, corrected_age_value, resident_time.
    func testCurrentAgeFollowsSection4_2_3() {
        // Sent at t0, received 2 s later; Date says 10 s before the response arrived; Age: 5.
        let headers = fields([("Date", httpDate(t0 - 8)), ("Age", "5")])
        let age = CacheRules.currentAge(headers: headers, requestTime: t0, responseTime: t0 + 2, now: t0 + 102)
        // apparent_age = 10, corrected_age_value = 5 + 2 = 7, corrected_initial_age = 10, resident_time = 100.
        XCTAssertEqual(age, 110)
        // No Date: the response time stands in for it; the Age value plus the delay wins.
        let noDate = CacheRules.currentAge(headers: fields([("Age", "30")]), requestTime: t0, responseTime: t0 + 1, now: t0 + 1)
        XCTAssertEqual(noDate, 31)
        // A Date in the future (clock skew) never makes the age negative.
        let skew = CacheRules.currentAge(headers: fields([("Date", httpDate(t0 + 500))]), requestTime: t0, responseTime: t0, now: t0)
        XCTAssertEqual(skew, 0)
        // An invalid Age is ignored.
        let invalid = CacheRules.currentAge(headers: fields([("Age", "-3")]), requestTime: t0, responseTime: t0, now: t0 + 4)
        XCTAssertEqual(invalid, 4)
    }

    // MARK: Decisions (§4, §5.2.1)

    private func stored(_ response: [(String, String)], status: Int = 200, receivedAgo: Double = 0, ignores: Bool = false,
                        secondsToCache: Double? = nil) -> CachedResponseHead {
        var headers = fields(response)
        if !headers.contains(.date) { headers[.date] = httpDate(t0 - receivedAgo) }
        return CachedResponseHead(key: "http://a.test/x", status: status, reasonPhrase: "OK", version: .http1_1, headers: headers,
                                  requestTime: t0 - receivedAgo, responseTime: t0 - receivedAgo,
                                  secondsToCache: secondsToCache, ignoresServerDirectives: ignores)
    }

    private func decide(_ stored: CachedResponseHead?, request: [(String, String)] = [],
                        policy: HTTPCachePolicy = .askServerIfModifiedWhenStale) -> CacheRules.Decision {
        CacheRules.decide(stored: stored, requestHeaders: fields(request), policy: policy, now: t0)
    }

    func testDecisionTable() {
        let fresh = stored([("Cache-Control", "max-age=100")], receivedAgo: 10)
        let stale = stored([("Cache-Control", "max-age=100")], receivedAgo: 150)
        let mustRevalidate = stored([("Cache-Control", "max-age=100, must-revalidate")], receivedAgo: 150)
        let noCache = stored([("Cache-Control", "max-age=100, no-cache")], receivedAgo: 10)
        typealias D = CacheRules.Decision
        let cases: [(CachedResponseHead?, [(String, String)], HTTPCachePolicy, D, String)] = [
            (nil, [], .askServerIfModifiedWhenStale, .fetch, "nothing stored"),
            (fresh, [], .askServerIfModifiedWhenStale, .serveFresh, "§4.2: a fresh response is reused"),
            (stale, [], .askServerIfModifiedWhenStale, .validate, "§4.2.4/§4.3: a stale response is validated"),
            (noCache, [], .askServerIfModifiedWhenStale, .validate, "§5.2.2.4: no-cache MUST be validated, even fresh"),
            (fresh, [("Cache-Control", "no-cache")], .askServerIfModifiedWhenStale, .validate, "§5.2.1.4: request no-cache"),
            (fresh, [("Pragma", "no-cache")], .askServerIfModifiedWhenStale, .validate, "§5.4: Pragma: no-cache"),
            (fresh, [("Pragma", "no-cache"), ("Cache-Control", "max-stale")], .askServerIfModifiedWhenStale, .serveFresh,
             "§5.4: Pragma is ignored when Cache-Control is present"),
            (fresh, [("Cache-Control", "max-age=5")], .askServerIfModifiedWhenStale, .validate, "§5.2.1.1: older than max-age"),
            (fresh, [("Cache-Control", "max-age=50")], .askServerIfModifiedWhenStale, .serveFresh, "§5.2.1.1: within max-age"),
            (fresh, [("Cache-Control", "min-fresh=95")], .askServerIfModifiedWhenStale, .validate, "§5.2.1.3: not fresh enough"),
            (fresh, [("Cache-Control", "min-fresh=50")], .askServerIfModifiedWhenStale, .serveFresh, "§5.2.1.3: fresh enough"),
            (stale, [("Cache-Control", "max-stale")], .askServerIfModifiedWhenStale, .serveStale, "§5.2.1.2: any staleness"),
            (stale, [("Cache-Control", "max-stale=60")], .askServerIfModifiedWhenStale, .serveStale, "§5.2.1.2: within bound"),
            (stale, [("Cache-Control", "max-stale=10")], .askServerIfModifiedWhenStale, .validate, "§5.2.1.2: past bound"),
            (mustRevalidate, [("Cache-Control", "max-stale")], .askServerIfModifiedWhenStale, .validate,
             "§5.2.2.2: must-revalidate: MUST NOT serve stale, even with max-stale"),
            (nil, [("Cache-Control", "only-if-cached")], .askServerIfModifiedWhenStale, .unavailable,
             "§5.2.1.7: only-if-cached with nothing stored: 504"),
            (stale, [("Cache-Control", "only-if-cached")], .askServerIfModifiedWhenStale, .unavailable,
             "§5.2.1.7: only-if-cached never goes to the network"),
            (fresh, [("Cache-Control", "only-if-cached")], .askServerIfModifiedWhenStale, .serveFresh, "§5.2.1.7: fresh is fine"),
            (stale, [("Cache-Control", "only-if-cached, max-stale")], .askServerIfModifiedWhenStale, .serveStale,
             "§5.2.1.7 with max-stale"),
            // ASIDownloadCache's policies.
            (fresh, [], .doNotRead, .fetch, "doNotRead never reads"),
            (fresh, [], .askServerIfModified, .validate, "askServerIfModified always validates"),
            (stale, [], .onlyLoadIfNotCached, .serveStale, "onlyLoadIfNotCached uses a stale response"),
            (fresh, [], .onlyLoadIfNotCached, .serveFresh, "onlyLoadIfNotCached, fresh"),
            (nil, [], .onlyLoadIfNotCached, .fetch, "onlyLoadIfNotCached loads when nothing is stored"),
            (stale, [], .dontLoad, .serveStale, "dontLoad serves a stale response offline"),
            (nil, [], .dontLoad, .unavailable, "dontLoad with nothing stored: 504"),
            (mustRevalidate, [], .dontLoad, .unavailable, "§4.2.4: dontLoad cannot serve a must-revalidate response stale"),
            (mustRevalidate, [], .onlyLoadIfNotCached, .validate, "§4.2.4: onlyLoadIfNotCached revalidates must-revalidate"),
            (noCache, [], .onlyLoadIfNotCached, .validate, "§5.2.2.4: no-cache is validated even under onlyLoadIfNotCached"),
            (stale, [], [.askServerIfModifiedWhenStale, .fallbackToCacheIfLoadFails], .validate, "fallback changes nothing up front"),
        ]
        for (stored, request, policy, expected, requirement) in cases {
            XCTAssertEqual(decide(stored, request: request, policy: policy), expected, requirement)
        }
    }

    func testIgnoringServerDirectivesLetsNoCacheAndMustRevalidateResponsesBeServed() {
        let noCache = stored([("Cache-Control", "no-cache, max-age=100")], receivedAgo: 10, ignores: true)
        XCTAssertEqual(decide(noCache), .serveFresh)
        let stale = stored([("Cache-Control", "must-revalidate, max-age=1")], receivedAgo: 10, ignores: true)
        XCTAssertEqual(decide(stale, policy: .dontLoad), .serveStale)
        XCTAssertTrue(CacheRules.mayServeStaleOnError(stale))
    }

    func testSecondsToCacheReplacesTheServersFreshness() {
        let head = stored([("Cache-Control", "max-age=0")], receivedAgo: 100, secondsToCache: 3600)
        XCTAssertEqual(decide(head), .serveFresh)
        let expired = stored([("Cache-Control", "max-age=99999")], receivedAgo: 100, secondsToCache: 50)
        XCTAssertEqual(decide(expired), .validate)
    }

    /// §4.2.4: a cache MUST NOT generate a stale response if must-revalidate or no-cache forbids it.
    func testStaleOnErrorIsRefusedAfterMustRevalidateOrNoCache() {
        XCTAssertTrue(CacheRules.mayServeStaleOnError(stored([("Cache-Control", "max-age=1")])))
        XCTAssertFalse(CacheRules.mayServeStaleOnError(stored([("Cache-Control", "max-age=1, must-revalidate")])))
        XCTAssertFalse(CacheRules.mayServeStaleOnError(stored([("Cache-Control", "no-cache")])))
    }

    // MARK: Validation (§4.3)

    func testConditionalRequestCarriesTheStoredValidators() {
        let head = stored([("ETag", "\"v1\""), ("Last-Modified", httpDate(t0 - 100))])
        let fields = CacheRules.conditionalHeaders(for: head)
        XCTAssertEqual(fields.map(\.name), [.ifNoneMatch, .ifModifiedSince])
        XCTAssertEqual(fields.map(\.value), ["\"v1\"", httpDate(t0 - 100)])
        XCTAssertTrue(CacheRules.conditionalHeaders(for: stored([])).isEmpty)
    }

    /// §4.3.4: which stored response a 304 selects.
    func testNotModifiedSelectsOnlyTheMatchingStoredResponse() {
        let head = stored([("ETag", "\"v1\""), ("Last-Modified", httpDate(t0 - 100))])
        XCTAssertTrue(CacheRules.notModifiedSelects(head, notModified: fields([("ETag", "\"v1\"")])))
        XCTAssertFalse(CacheRules.notModifiedSelects(head, notModified: fields([("ETag", "\"v2\"")])))
        XCTAssertTrue(CacheRules.notModifiedSelects(head, notModified: fields([("ETag", "W/\"v1\"")])), "weak comparison")
        XCTAssertTrue(CacheRules.notModifiedSelects(head, notModified: fields([("Last-Modified", httpDate(t0 - 100))])))
        XCTAssertFalse(CacheRules.notModifiedSelects(head, notModified: fields([("Last-Modified", httpDate(t0 - 5))])))
    }

    /// §3.2 / §4.3.4: the 304's fields replace the stored ones, except Content-Length (and what the body depends on).
    func testNotModifiedFieldsReplaceStoredFieldsExceptContentLength() {
        let storedFields = fields([("Content-Length", "5"), ("Cache-Control", "max-age=1"), ("ETag", "\"v1\""),
                                   ("Content-Encoding", "gzip"), ("X-Old", "kept"), ("X-Multi", "a"), ("X-Multi", "b")])
        let merged = CacheRules.freshenedHeaders(storedFields, with: fields([
            ("Cache-Control", "max-age=60"), ("Content-Length", "0"), ("X-Multi", "c"), ("Connection", "close"),
            ("Content-Encoding", "identity"),
        ]))
        XCTAssertEqual(merged[.contentLength], "5")
        XCTAssertEqual(merged[.cacheControl], "max-age=60")
        XCTAssertEqual(merged[values: HTTPField.Name("X-Multi")!], ["c"])
        XCTAssertEqual(merged[HTTPField.Name("X-Old")!], "kept")
        XCTAssertEqual(merged[.contentEncoding], "gzip")
        XCTAssertNil(merged[.connection])
    }

    // MARK: Vary (§4.1)

    func testVaryMatchesOnTheNominatedRequestFields() {
        var head = stored([("Vary", "Accept-Language, accept-encoding")])
        head.vary = CacheRules.varyValues(names: CacheRules.varyNames(head.headers)!,
                                          requestHeaders: fields([("Accept-Language", "en"), ("Accept-Encoding", "gzip")]))
        XCTAssertTrue(CacheRules.varyMatches(head, requestHeaders: fields([("accept-encoding", "gzip"), ("Accept-Language", "en")])))
        XCTAssertTrue(CacheRules.varyMatches(head, requestHeaders: fields([("Accept-Language", " en "), ("Accept-Encoding", "gzip")])),
                      "§4.1: whitespace normalised")
        XCTAssertFalse(CacheRules.varyMatches(head, requestHeaders: fields([("Accept-Language", "fr"), ("Accept-Encoding", "gzip")])))
        XCTAssertFalse(CacheRules.varyMatches(head, requestHeaders: fields([("Accept-Encoding", "gzip")])), "§4.1: absent vs present")
        var absent = stored([("Vary", "X-Token")])
        absent.vary = CacheRules.varyValues(names: ["x-token"], requestHeaders: fields([]))
        XCTAssertTrue(CacheRules.varyMatches(absent, requestHeaders: fields([])), "§4.1: absent in both matches")
        var star = stored([("Vary", "Accept, *")])
        star.vary = []
        XCTAssertFalse(CacheRules.varyMatches(star, requestHeaders: fields([])), "§4.1: Vary: * always fails to match")
    }

    func testVaryKeepsOnlyADigestOfTheRequestsValue() {
        let values = CacheRules.varyValues(names: ["cookie"], requestHeaders: fields([("Cookie", "session=secret")]))
        XCTAssertEqual(values.first?.digest?.count, 32)
        XCTAssertFalse(String(decoding: values.first?.digest ?? [], as: UTF8.self).contains("secret"))
    }

    // MARK: Invalidation (§4.4)

    func testUnsafeMethodsInvalidateTheTargetAndSameOriginLocations() throws {
        let url = try HTTPURL("http://a.test/items/1")
        let keys = CacheRules.invalidatedKeys(method: .post, url: url, status: 201, headers: fields([
            ("Location", "/items/2"), ("Content-Location", "http://other.test/items/3"),
        ]))
        XCTAssertEqual(keys, ["http://a.test/items/1", "http://a.test/items/2"], "§4.4: same origin only")
        XCTAssertEqual(CacheRules.invalidatedKeys(method: .delete, url: url, status: 204, headers: [:]), ["http://a.test/items/1"])
        XCTAssertEqual(CacheRules.invalidatedKeys(method: .post, url: url, status: 500, headers: [:]), [], "§4.4: error: nothing")
        XCTAssertEqual(CacheRules.invalidatedKeys(method: .get, url: url, status: 200, headers: [:]), [], "safe methods: nothing")
    }

    func testCacheKeyDropsUserinfoAndFragmentAndDefaultPort() throws {
        XCTAssertEqual(CacheRules.cacheKey(try HTTPURL("HTTP://user:pw@A.test:80/p?q=1#frag")), "http://a.test/p?q=1")
    }

    // MARK: Directives (§5.2)

    func testDirectiveParsingHandlesQuotesCaseAndArguments() {
        let parsed = CacheControl(parsing: #"Private="Set-Cookie, X-A", MAX-AGE=10, max-stale, min-fresh=5, no-cache="X""#)
        XCTAssertTrue(parsed.isPrivate)
        XCTAssertEqual(parsed.maxAge, 10)
        XCTAssertEqual(parsed.maxStale, .any)
        XCTAssertEqual(parsed.minFresh, 5)
        XCTAssertTrue(parsed.noCache)
        XCTAssertEqual(CacheControl(parsing: "max-stale=30").maxStale, .seconds(30))
        XCTAssertEqual(CacheControl(parsing: "only-if-cached").onlyIfCached, true)
        XCTAssertEqual(CacheControl(parsing: ",, ,").maxAge, nil)
    }

    // MARK: The entry format

    func testEntryRecordRoundTripsAndRejectsDamage() {
        var head = stored([("ETag", "\"v1\""), ("Cache-Control", "max-age=60")])
        head.vary = [.init(name: "accept-encoding", digest: Array(repeating: 7, count: 32)), .init(name: "x", digest: nil)]
        head.secondsToCache = 12
        let record = CacheEntryRecord(head: head, body: .inline(Array("hello".utf8)))
        let bytes = record.encode()
        XCTAssertEqual(CacheEntryRecord.decode(bytes), record)
        let bodyName = HTTPCache.hash(head.key) + ".0123456789abcdef.body"
        let fileRecord = CacheEntryRecord(head: head, body: .file(name: bodyName, length: 1 << 20, crc: 42))
        XCTAssertEqual(CacheEntryRecord.decode(fileRecord.encode()), fileRecord)
        // Every single-byte flip and every truncation is detected.
        for index in stride(from: 0, to: bytes.count, by: 3) {
            var damaged = bytes
            damaged[index] ^= 0x40
            XCTAssertNil(CacheEntryRecord.decode(damaged), "flip at \(index)")
        }
        for length in [0, 3, 8, bytes.count / 2, bytes.count - 1] {
            XCTAssertNil(CacheEntryRecord.decode(Array(bytes.prefix(length))), "truncated to \(length)")
        }
        XCTAssertNil(CacheEntryRecord.decode(bytes + [0]), "trailing bytes")
    }

    /// A head's body file name is joined to the cache directory to serve, evict and remove the entry; a record
    /// whose name is not one the cache writes (`HASH.RANDOM.body`) is damaged, not a path to follow.
    func testAnEntryRecordWhoseBodyNameIsNotTheCachesOwnIsRejected() {
        let head = stored([("Cache-Control", "max-age=60")])
        let hash = HTTPCache.hash(head.key)
        let otherHash = HTTPCache.hash("http://a.test/other")
        for bad in [
            "../../../etc/passwd", "/etc/passwd", "sub/\(hash).0123456789abcdef.body", "\(hash).0123456789abcdef.body/..",
            "..", "", "\(hash)..body", "\(hash).0123456789ABCDEF.body", "\(hash).0123456789abcde.body",
            "\(hash).0123456789abcdef0.body", "\(hash).0123456789abcdef.meta", "\(hash).0123456789abcdef.body.x",
            "\(otherHash).0123456789abcdef.body", "\(hash.uppercased()).0123456789abcdef.body",
        ] {
            let record = CacheEntryRecord(head: head, body: .file(name: bad, length: 10, crc: 1))
            XCTAssertNil(CacheEntryRecord.decode(record.encode()), bad)
            XCTAssertFalse(CacheEntryRecord.isBodyFileName(bad, key: head.key), bad)
        }
        XCTAssertTrue(CacheEntryRecord.isBodyFileName(hash + ".0123456789abcdef.body", key: head.key))
    }
}

// MARK: Helpers shared by the cache tests

func fields(_ pairs: [(String, String)]) -> HTTPFields {
    var fields = HTTPFields()
    for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
    return fields
}

/// An IMF-fixdate (RFC 9110 §5.6.7) for `seconds` since 1970.
func httpDate(_ seconds: Double) -> String {
    let total = Int(seconds.rounded(.down))
    let days = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
    let secondOfDay = total - days * 86_400
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((days % 7) + 7) % 7]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    return "\(weekday), \(two(day)) \(months[month - 1]) \(year) \(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
}
