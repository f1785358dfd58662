import HTTPTypes

/// The head of a stored response and what the cache recorded with it: everything RFC 9111's rules need,
/// without the body.
struct CachedResponseHead: Sendable, Equatable {
    /// The cache key (§2): the target URI without userinfo or fragment.
    var key: String
    var status: Int
    var reasonPhrase: String
    var version: HTTPVersion
    /// The header fields as stored (§3.1: without hop-by-hop fields).
    var headers: HTTPFields
    /// When the request that got this response was sent, and when its head arrived, in seconds since 1970
    /// (§4.2.3's `request_time` and `response_time`).
    var requestTime: Double
    var responseTime: Double
    /// A freshness lifetime the caller imposed (ASIHTTPRequest's `secondsToCache`), replacing the server's.
    var secondsToCache: Double?
    /// Stored with ``HTTPCache/ignoresServerDontCacheHeaders``: the server's `no-cache` and
    /// `must-revalidate` do not apply to it.
    var ignoresServerDirectives = false
    /// The request's values of the fields the response's `Vary` nominates, hashed (§4.1).
    var vary: [CacheRules.VaryValue] = []
}

/// RFC 9111's rules for a private cache as pure functions of the messages and the time, so that every
/// requirement can be tested with a table and an injected clock. Times are seconds since 1970.
enum CacheRules {
    // MARK: Storing (§3)

    /// Status codes "heuristically cacheable" (RFC 9110 §15.1): storable and given a heuristic lifetime
    /// without explicit freshness. 206 is in RFC 9110's list but is never stored here (no range support).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The final status codes this cache understands for `must-understand` (§5.2.2.3): every one it would
    /// store, that is every final code but 206 and 304.
    static func understands(_ status: Int) -> Bool {
        status >= 200 && status <= 599 && status != 206 && status != 304
    }

    /// Why a response is not stored, or nil when it may be (§3). Methods other than GET are never stored.
    static func whyNotStorable(
        method: HTTPRequest.Method, requestHeaders: HTTPFields, status: Int, responseHeaders: HTTPFields,
        policy: HTTPCachePolicy, ignoresServerDirectives: Bool, secondsToCache: Double?,
        requestCarriedAuthorization: Bool = false
    ) -> String? {
        guard method == .get else { return "the method is not GET" }
        guard !policy.contains(.doNotWrite) else { return "the policy says doNotWrite" }
        let requestDirectives = CacheControl(requestHeaders)
        if requestDirectives.noStore { return "the request says no-store (§5.2.1.5)" }
        if requestHeaders.contains(.range) { return "a Range request (§3.3: partial content is not stored)" }
        guard status >= 200, status != 206, status != 304 else { return "status \(status) is not stored (§3)" }
        // A challenge answers one request's credentials: stored, it would answer the retry that carries them (the
        // auth step's second try is a new request through this cache) and the right credentials would never
        // reach the server while it stayed fresh.
        guard status != 401, status != 407 else { return "status \(status) is a challenge to this request's credentials" }
        let directives = CacheControl(responseHeaders)
        if directives.mustUnderstand {
            // §5.2.2.3: not stored unless the status is understood; then no-store is overridden.
            guard understands(status) else { return "must-understand with a status this cache does not know" }
        } else if directives.noStore, !ignoresServerDirectives {
            return "the response says no-store (§5.2.2.5)"
        }
        // §3.5 (shared caches in the RFC; a client's cache is applied the same rule because one client may
        // send several users' credentials): a response to a request with Authorization only when allowed.
        // `requestCarriedAuthorization`: the request as sent had one, added by a step below the cache.
        if requestCarriedAuthorization || requestHeaders.contains(.authorization),
           !(directives.isPublic || directives.mustRevalidate || directives.sharedMaxAge != nil) {
            return "the request has Authorization and the response is not public (§3.5)"
        }
        if varyNames(responseHeaders) == nil { return "Vary: * never matches (§4.1)" }
        // §3: explicit freshness, a directive allowing it, or a heuristically cacheable status.
        let explicit = directives.maxAge != nil || responseHeaders.contains(.expires) || directives.isPublic
            || directives.isPrivate || secondsToCache != nil
        guard explicit || heuristicallyCacheable.contains(status) else {
            return "status \(status) without explicit freshness (§3)"
        }
        return nil
    }

    /// Header fields a cache does not store (§3.1): `Connection` and the fields it lists, and the other
    /// hop-by-hop fields; `Transfer-Encoding` too, since the body is stored decoded of its framing. And
    /// `Set-Cookie` (as browsers' caches keep their heads without cookies): a stored one would set its cookie
    /// again on every later use of the entry (the cookie step sits above the cache), bringing back a session the
    /// server has since rotated or a login since logged out, and it would lie on disk in clear.
    static func storableHeaders(_ headers: HTTPFields) -> HTTPFields {
        var excluded: Set<String> = ["connection", "keep-alive", "proxy-connection", "te", "transfer-encoding",
                                     "upgrade", "trailer", "set-cookie", "set-cookie2"]
        for value in headers[values: .connection] {
            for token in value.split(separator: ",") { excluded.insert(token.trimmingWhitespace().lowercased()) }
        }
        return HTTPFields(headers.filter { !excluded.contains($0.name.canonicalName) })
    }

    // MARK: Freshness (§4.2)

    /// The most a heuristic lifetime can be: 24 hours, past which RFC 7234 §4.2.2 required a warning
    /// (Warning 113); capping there keeps a decade-old `Last-Modified` from meaning a year of freshness.
    static let heuristicCap: Double = 86_400
    /// §4.2.2's "typical setting": 10 % of the time since `Last-Modified`.
    static let heuristicFraction = 0.1

    /// §4.2.1 for a private cache: `max-age`, else `Expires` minus `Date`, else the heuristic (only for
    /// heuristically cacheable codes or `public`); `s-maxage` is ignored.
    static func freshnessLifetime(status: Int, headers: HTTPFields, responseTime: Double) -> Double {
        let directives = CacheControl(headers)
        if let maxAge = directives.maxAge { return Double(maxAge) }
        let dateValue = date(headers) ?? responseTime
        if headers.contains(.expires) {
            // §5.3: an invalid Expires (such as "0") is a time in the past; two different ones: stale (§4.2.1).
            let values = headers[values: .expires]
            guard Set(values).count == 1, let expires = httpDate(values[0]) else { return 0 }
            return Swift.max(0, expires - dateValue)
        }
        guard heuristicallyCacheable.contains(status) || directives.isPublic,
              let lastModified = headers[.lastModified].flatMap(httpDate), lastModified <= dateValue
        else { return 0 }
        return Swift.min(heuristicCap, (dateValue - lastModified) * heuristicFraction)
    }

    /// §4.2.3's `current_age`.
    static func currentAge(headers: HTTPFields, requestTime: Double, responseTime: Double, now: Double) -> Double {
        currentAge(ageValue: ageValue(headers), dateValue: date(headers), requestTime: requestTime,
                   responseTime: responseTime, now: now)
    }

    /// The `Age` field's value (§5.1), 0 when absent or invalid.
    static func ageValue(_ headers: HTTPFields) -> Double {
        Double(headers[.age].flatMap { CacheControl.deltaSeconds(Substring($0).trimmingWhitespace()) } ?? 0)
    }

    /// §4.2.3's `current_age`, from the parsed `Age` and `Date` values.
    static func currentAge(ageValue: Double, dateValue: Double?, requestTime: Double, responseTime: Double,
                           now: Double) -> Double {
        let dateValue = dateValue ?? responseTime
        let apparentAge = Swift.max(0, responseTime - dateValue)
        let responseDelay = Swift.max(0, responseTime - requestTime)
        let correctedAgeValue = ageValue + responseDelay
        let correctedInitialAge = Swift.max(apparentAge, correctedAgeValue)
        let residentTime = Swift.max(0, now - responseTime)
        return correctedInitialAge + residentTime
    }

    static func date(_ headers: HTTPFields) -> Double? { headers[.date].flatMap(httpDate) }

    /// An HTTP-date (RFC 9110 §5.6.7), read in all three formats (and the variants servers send) by the
    /// lax cookie-date algorithm.
    static func httpDate(_ text: String) -> Double? { CookieDate.parse(text) }

    /// What the rules read from a stored response's fields, parsed once: a hit would otherwise parse its
    /// `Cache-Control`, `Date` and `Age` several times.
    struct StoredFacts: Sendable {
        var directives: CacheControl
        /// The freshness lifetime (§4.2.1), or the caller's `secondsToCache`.
        var lifetime: Double
        var dateValue: Double?
        var ageValue: Double

        init(_ head: CachedResponseHead) {
            directives = CacheControl(head.headers)
            lifetime = head.secondsToCache
                ?? CacheRules.freshnessLifetime(status: head.status, headers: head.headers, responseTime: head.responseTime)
            dateValue = CacheRules.date(head.headers)
            ageValue = CacheRules.ageValue(head.headers)
        }

        /// The current age (§4.2.3) at `now`.
        func age(_ head: CachedResponseHead, now: Double) -> Double {
            CacheRules.currentAge(ageValue: ageValue, dateValue: dateValue, requestTime: head.requestTime,
                                  responseTime: head.responseTime, now: now)
        }
    }

    /// Freshness and age of a stored response at `now`.
    static func freshness(of stored: CachedResponseHead, now: Double) -> (lifetime: Double, age: Double) {
        let facts = StoredFacts(stored)
        return (facts.lifetime, facts.age(stored, now: now))
    }

    // MARK: Choosing what to do (§4)

    enum Decision: Equatable, Sendable {
        /// Nothing usable is stored: go to the network as usual.
        case fetch
        /// Serve the stored response as it is, fresh.
        case serveFresh
        /// Serve the stored response, stale, as the request or the policy allowed.
        case serveStale
        /// Ask the server whether the stored response is still good (§4.3).
        case validate
        /// Answer `504 Gateway Timeout` without the network (§5.2.1.7 only-if-cached, or dontLoad).
        case unavailable
    }

    /// What to do for a GET request, given the (Vary-matching) stored response if any (§4, §5.2.1).
    static func decide(
        stored: CachedResponseHead?, requestHeaders: HTTPFields, policy: HTTPCachePolicy, now: Double
    ) -> Decision {
        decide(stored: stored, facts: stored.map(StoredFacts.init), requestHeaders: requestHeaders, policy: policy, now: now)
    }

    /// ``decide(stored:requestHeaders:policy:now:)`` with the stored response's facts already parsed.
    static func decide(
        stored: CachedResponseHead?, facts: StoredFacts?, requestHeaders: HTTPFields, policy: HTTPCachePolicy, now: Double
    ) -> Decision {
        let request = CacheControl(requestHeaders)
        // Pragma: no-cache is no-cache when the request has no Cache-Control (RFC 7234 §5.4 required it; RFC 9111
        // §5.4 deprecates Pragma, and honouring it remains the safe reading of an old client's request).
        let requestNoCache = request.noCache
            || (!requestHeaders.contains(.cacheControl) && requestHeaders[values: pragma].contains {
                $0.lowercased().contains("no-cache") })
        let offline = policy.contains(.dontLoad) || request.onlyIfCached
        guard let stored, let facts, !policy.contains(.doNotRead) else { return offline ? .unavailable : .fetch }

        let response = facts.directives
        let ignores = stored.ignoresServerDirectives
        // §5.2.2.4: no-cache: never used without a successful validation.
        let alwaysValidate = response.noCache && !ignores
        // §4.2.4 / §5.2.2.2: must-revalidate (and no-cache) forbid serving stale.
        let staleForbidden = (response.mustRevalidate || response.noCache) && !ignores
        let lifetime = facts.lifetime
        let age = facts.age(stored, now: now)
        let fresh = lifetime > age

        if policy.contains(.onlyLoadIfNotCached) || policy.contains(.dontLoad) {
            if alwaysValidate || (!fresh && staleForbidden) {
                return policy.contains(.dontLoad) ? .unavailable : .validate
            }
            return fresh ? .serveFresh : .serveStale
        }
        if policy.contains(.askServerIfModified) || requestNoCache || alwaysValidate {
            return offline ? .unavailable : .validate
        }
        var acceptable = fresh
        if let maxAge = request.maxAge, age > Double(maxAge) { acceptable = false }          // §5.2.1.1
        if let minFresh = request.minFresh, lifetime - age < Double(minFresh) { acceptable = false }  // §5.2.1.3
        if acceptable { return .serveFresh }
        // §5.2.1.2: max-stale allows a stale response, within its bound, unless the server forbade it.
        if !fresh, !staleForbidden, let maxStale = request.maxStale {
            let withinBound = switch maxStale {
            case .any: true
            case .seconds(let seconds): age - lifetime <= Double(seconds)
            }
            let withinMaxAge = request.maxAge.map { age <= Double($0) } ?? true
            if withinBound && withinMaxAge { return .serveStale }
        }
        return offline ? .unavailable : .validate
    }

    /// Whether a stale stored response may stand in when the network failed
    /// (``HTTPCachePolicy/fallbackToCacheIfLoadFails``; §4.2.4 forbids it after must-revalidate or no-cache).
    static func mayServeStaleOnError(_ stored: CachedResponseHead) -> Bool {
        let response = CacheControl(stored.headers)
        return stored.ignoresServerDirectives || !(response.mustRevalidate || response.noCache)
    }

    static let pragma = HTTPField.Name("Pragma")!

    /// Request fields that make a request conditional or partial: such requests go to the server untouched
    /// (the caller is managing validation or ranges itself).
    static let callerConditionals: [HTTPField.Name] = [.ifNoneMatch, .ifModifiedSince, .ifMatch, .ifUnmodifiedSince,
                                                       .ifRange, .range]

    // MARK: Validation (§4.3)

    /// The conditional fields for revalidating `stored` (§4.3.1): `If-None-Match` with its `ETag`,
    /// `If-Modified-Since` with its `Last-Modified`. Empty when it has no validator.
    static func conditionalHeaders(for stored: CachedResponseHead) -> [HTTPField] {
        var fields: [HTTPField] = []
        if let etag = stored.headers[.eTag] { fields.append(HTTPField(name: .ifNoneMatch, value: etag)) }
        if let lastModified = stored.headers[.lastModified] {
            fields.append(HTTPField(name: .ifModifiedSince, value: lastModified))
        }
        return fields
    }

    /// Whether a `304` refers to `stored` (§4.3.4): a strong `ETag` must equal the stored one, a weak one
    /// match it weakly; else a `Last-Modified` must equal the stored one. A 304 with no validator at all
    /// answers the conditional request made from this one stored response, and is taken as its.
    static func notModifiedSelects(_ stored: CachedResponseHead, notModified headers: HTTPFields) -> Bool {
        if let etag = headers[.eTag] {
            guard let storedTag = stored.headers[.eTag] else { return false }
            if etag.hasPrefix("W/") || storedTag.hasPrefix("W/") {
                return etag.dropFirst(etag.hasPrefix("W/") ? 2 : 0) == storedTag.dropFirst(storedTag.hasPrefix("W/") ? 2 : 0)
            }
            return etag == storedTag
        }
        if let lastModified = headers[.lastModified] {
            return stored.headers[.lastModified] == lastModified
        }
        return true
    }

    /// The stored fields updated from a `304` (§3.2, §4.3.4): each field of the 304 replaces the stored
    /// field lines of that name, except `Content-Length` and the fields the stored body depends on
    /// (`Content-Encoding`, `Content-Range`, `Transfer-Encoding`) and hop-by-hop fields (§3.1).
    static func freshenedHeaders(_ stored: HTTPFields, with notModified: HTTPFields) -> HTTPFields {
        let kept: Set<String> = ["content-length", "content-encoding", "content-range", "transfer-encoding"]
        let update = storableHeaders(notModified).filter { !kept.contains($0.name.canonicalName) }
        let replaced = Set(update.map { $0.name.canonicalName })
        var result = HTTPFields(stored.filter { !replaced.contains($0.name.canonicalName) })
        result.append(contentsOf: update)
        return result
    }

    // MARK: Vary (§4.1)

    struct VaryValue: Sendable, Equatable {
        /// The nominated field's name, lowercased.
        var name: String
        /// SHA-256 of the request's value (field lines joined with ", "), nil when the request had none.
        /// Hashed so that a `Vary: Cookie` entry keeps no cookie on disk.
        var digest: [UInt8]?
    }

    /// The field names `Vary` nominates, lowercased; nil for `Vary: *`, which never matches (§4.1).
    static func varyNames(_ headers: HTTPFields) -> [String]? {
        var names: [String] = []
        for value in headers[values: .vary] {
            for token in value.split(separator: ",") {
                let name = token.trimmingWhitespace().lowercased()
                if name == "*" { return nil }
                if !name.isEmpty, !names.contains(name) { names.append(name) }
            }
        }
        return names
    }

    /// The request's value of each nominated field, normalised (lines joined, whitespace trimmed) and hashed.
    static func varyValues(names: [String], requestHeaders: HTTPFields) -> [VaryValue] {
        names.map { name in
            guard let fieldName = HTTPField.Name(name) else { return VaryValue(name: name, digest: nil) }
            let lines = requestHeaders[values: fieldName].map { String(Substring($0).trimmingWhitespace()) }
            guard !lines.isEmpty else { return VaryValue(name: name, digest: nil) }
            let digest = (try? HashFunction.sha256.hash(Array(lines.joined(separator: ", ").utf8))) ?? []
            return VaryValue(name: name, digest: digest)
        }
    }

    /// Whether a new request matches the request a stored response was stored for (§4.1).
    static func varyMatches(_ stored: CachedResponseHead, requestHeaders: HTTPFields) -> Bool {
        guard let names = varyNames(stored.headers) else { return false }
        return varyValues(names: names, requestHeaders: requestHeaders) == stored.vary
    }

    // MARK: Invalidation (§4.4)

    /// Methods that are safe (RFC 9110 §9.2.1): their responses invalidate nothing.
    static func isSafe(_ method: HTTPRequest.Method) -> Bool {
        method == .get || method == .head || method == .options || method == .trace
    }

    /// The keys to invalidate after an unsafe request's response (§4.4): for a non-error status (2xx, 3xx),
    /// the target URI, and `Location` and `Content-Location` when they share its origin.
    static func invalidatedKeys(method: HTTPRequest.Method, url: HTTPURL, status: Int, headers: HTTPFields) -> [String] {
        guard !isSafe(method), (200..<400).contains(status) else { return [] }
        var keys = [cacheKey(url)]
        for name in [HTTPField.Name.location, .contentLocation] {
            guard let value = headers[name], let target = try? url.resolving(value),
                  target.scheme == url.scheme, target.host == url.host, target.port == url.port
            else { continue }
            let key = cacheKey(target)
            if !keys.contains(key) { keys.append(key) }
        }
        return keys
    }

    /// The cache key (§2): the target URI, normalised, without userinfo or fragment.
    static func cacheKey(_ url: HTTPURL) -> String { url.absoluteFormTarget }
}
