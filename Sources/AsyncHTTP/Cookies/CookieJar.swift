import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#elseif canImport(Foundation)
import Foundation
#endif

/// Where a ``CookieJar`` keeps cookies between runs.
///
/// ``NetscapeCookieFile`` is the one AsyncHTTP ships (curl's `cookies.txt`). Implementations decide what
/// to keep: the jar hands ``save(_:)`` every unexpired cookie, session cookies included.
public protocol CookieStorage: Sendable {
    /// Reads the stored cookies. A store that does not exist yet holds no cookies (not an error).
    func load() throws -> [HTTPClient.Cookie]
    /// Replaces the stored cookies with `cookies`.
    func save(_ cookies: [HTTPClient.Cookie]) throws
}

/// Stores cookies from responses and chooses which to send with requests, as RFC 6265 §5.3 and §5.4
/// describe, with 6265bis's secure-cookie rules.
///
/// ```swift
/// let jar = CookieJar(storage: NetscapeCookieFile(path: "cookies.txt"))
/// try await jar.load()
/// let site = CookieJar.RequestContext(host: "www.example.com", path: "/login", isSecure: true)
/// await jar.setCookies(fromHeaders: ["sid=31d4; Path=/; Secure; HttpOnly"], for: site)
/// await jar.cookieHeader(for: site)   // "sid=31d4"
/// try await jar.save()
/// ```
///
/// Time is a parameter: every method that depends on the clock takes `now:` (seconds since 1970), which
/// defaults to the system clock.
public actor CookieJar {
    /// The parts of a request URL the cookie rules look at. Build it from the request's URL.
    public struct RequestContext: Sendable, Hashable {
        /// The canonical host: lowercased, non-ASCII labels Punycode-encoded (RFC 6265 §5.1.2).
        public var host: String
        /// The path without query or fragment; "/" when the URL has none.
        public var path: String
        /// Whether the scheme is secure (https). Only then are `Secure` cookies accepted or sent.
        /// `http://localhost` and `http://127.0.0.1` are not secure here (browsers and curl treat them as
        /// secure; a library cannot know the loopback traffic is private).
        public var isSecure: Bool

        /// Canonicalises `host` and `path`: lowercases the host (IDNA ToASCII for non-ASCII labels), drops one
        /// trailing dot (`example.com.` is the fully qualified `example.com`, and must not slip past the public
        /// suffix check as "com."; curl strips it too), and drops any `?query` or `#fragment` from the path.
        public init(host: String, path: String, isSecure: Bool) {
            let host = hostWithoutTrailingDot(host)
            self.host = IDNA.toASCII(host) ?? host.lowercased()
            var path = Substring(path)
            if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
            self.path = path.isEmpty ? "/" : String(path)
            self.isSecure = isSecure
        }
    }

    /// A stored cookie and the order it arrived in, the tie-breaker for eviction and §5.4 ordering.
    private struct Entry {
        var cookie: HTTPClient.Cookie
        var sequence: UInt64
    }

    /// The most cookies kept for one domain before the least recently used are evicted.
    public nonisolated let maxCookiesPerDomain: Int
    /// The most cookies kept in all.
    public nonisolated let maxCookies: Int
    private let storage: (any CookieStorage)?
    /// Where the Public Suffix List comes from. The bundled list is read on the first cookie, not when the
    /// jar is made: parsing it costs tens of milliseconds, which a client that never sees a cookie should not pay.
    private enum SuffixListSource {
        case bundled
        case given(PublicSuffixList?)
    }

    private let suffixListSource: SuffixListSource

    private var publicSuffixList: PublicSuffixList? {
        switch suffixListSource {
        case .bundled: .shared
        case .given(let list): list
        }
    }

    /// Cookies by their `domain`, in arrival order. A request for `a.b.example.com` looks up at most one
    /// bucket per label of its host.
    private var buckets: [String: [Entry]] = [:]
    private var count = 0 {
        didSet { storedCount.store(count, ordering: .releasing) }
    }
    /// `count`, readable without a hop onto the actor: the cookie middleware skips the jar for requests
    /// while it is empty (the common case for API clients), instead of two actor hops per request.
    private let storedCount = Atomic<Int>(0)
    private var nextSequence: UInt64 = 0
    /// Each stored domain's site (its registrable domain), remembered for eviction, which groups the jar by site:
    /// looked up afresh, a full jar's every new cookie cost one Public Suffix List lookup per stored domain
    /// (thousands, for a crawler's jar). Forgotten wholesale when it grows past twice the domains stored.
    private var siteOfDomain: [String: String] = [:]

    private func site(of domain: String) -> String {
        if let known = siteOfDomain[domain] { return known }
        let site = publicSuffixList?.registrableDomain(of: domain) ?? domain
        if siteOfDomain.count >= 2 * max(buckets.count, 64) { siteOfDomain.removeAll(keepingCapacity: true) }
        siteOfDomain[domain] = site
        return site
    }

    /// Creates an empty jar.
    ///
    /// - Parameters:
    ///   - storage: where ``load(now:)`` and ``save(now:)`` read and write; nil keeps cookies in memory only.
    ///   - maxCookiesPerDomain: 50 is RFC 6265 §6.1's minimum ("at least 50 cookies per domain"); browsers
    ///     keep about 180.
    ///   - maxCookies: 3000 is §6.1's minimum total ("at least 3000 cookies total").
    ///   - publicSuffixList: the list that refuses `Domain` attributes like `com`; nil turns the check off.
    public init(
        storage: (any CookieStorage)? = nil, maxCookiesPerDomain: Int = 50, maxCookies: Int = 3000,
        publicSuffixList: PublicSuffixList?
    ) {
        self.storage = storage
        self.maxCookiesPerDomain = max(1, maxCookiesPerDomain)
        self.maxCookies = max(1, maxCookies)
        self.suffixListSource = .given(publicSuffixList)
    }

    /// Creates an empty jar that checks `Domain` attributes against the bundled Public Suffix List
    /// (``PublicSuffixList/shared``), loaded when the first cookie arrives.
    public init(storage: (any CookieStorage)? = nil, maxCookiesPerDomain: Int = 50, maxCookies: Int = 3000) {
        self.storage = storage
        self.maxCookiesPerDomain = max(1, maxCookiesPerDomain)
        self.maxCookies = max(1, maxCookies)
        self.suffixListSource = .bundled
    }

    /// Whether the jar holds any cookie right now; a snapshot, readable from any task without waiting.
    public nonisolated var isEmpty: Bool {
        storedCount.load(ordering: .acquiring) == 0
    }

    /// The system clock, in seconds since 1970: the default for every `now:` parameter.
    public nonisolated static func currentTime() -> Double {
        SystemClock.secondsSince1970()
    }

    // MARK: Receiving cookies

    /// Stores the cookies of a response's `Set-Cookie` fields (RFC 6265 §5.3).
    ///
    /// Cookies the rules refuse are dropped silently, as browsers do: a `Domain` the request host does not
    /// domain-match or that lies above the host's registrable domain (a public suffix such as `co.uk`, or
    /// `sch.uk` from `www.school.sch.uk`, under the wildcard rule `*.sch.uk`), `Secure` (or a `__Secure-`/
    /// `__Host-` name) over http, a non-secure cookie over http that would shadow a stored `Secure` one
    /// (6265bis "strict secure cookies"), `SameSite=None` without `Secure`. A cookie that is already expired deletes its stored namesake.
    ///
    /// - Parameters:
    ///   - values: the field values of every `Set-Cookie` field, in order (they must not be comma-joined).
    ///   - request: the URL the response answers.
    ///   - now: the jar's clock, in seconds since 1970; the system clock by default.
    /// - Returns: the cookies that were stored, for logging (printed, a cookie shows `<redacted>` for its value).
    @discardableResult
    public func setCookies(fromHeaders values: [String], for request: RequestContext, now: Double = currentTime())
        -> [HTTPClient.Cookie]
    {
        var stored: [HTTPClient.Cookie] = []
        for value in values {
            guard let cookie = HTTPClient.Cookie.parse(
                setCookie: value, request: request, now: now, publicSuffixList: publicSuffixList)
            else { continue }
            if !cookie.secure && !request.isSecure && shadowsSecureCookie(cookie) { continue }
            if let kept = store(cookie, now: now) { stored.append(kept) }
        }
        return stored
    }

    /// Inserts `cookie`, replacing the one with the same name, domain and path (§5.3 steps 11-12) and
    /// evicting as needed. Returns the cookie as stored, or nil when it was already expired.
    private func store(_ cookie: HTTPClient.Cookie, now: Double) -> HTTPClient.Cookie? {
        var cookie = cookie
        var bucket = buckets[cookie.domain] ?? []
        if let old = bucket.firstIndex(where: { $0.cookie.name == cookie.name && $0.cookie.path == cookie.path }) {
            // Step 11.3: "Update the creation-time of the newly created cookie to match the creation-time of
            // the old-cookie."
            cookie.creationSeconds = bucket[old].cookie.creationSeconds
            bucket.remove(at: old)
            count -= 1
        }
        // §5.3: expired cookies are evicted at once, so an expired one is never inserted: this is how a
        // server deletes a cookie (Max-Age=0 or an Expires in the past).
        guard !cookie.isExpired(at: now) else {
            buckets[cookie.domain] = bucket.isEmpty ? nil : bucket
            return nil
        }
        bucket.append(Entry(cookie: cookie, sequence: nextSequence))
        nextSequence += 1
        count += 1
        buckets[cookie.domain] = bucket
        evict(domain: cookie.domain, now: now)
        return cookie
    }

    /// 6265bis §5.7 ("strict secure cookies"): a cookie set over an insecure connection is ignored if a
    /// stored `Secure` cookie has the same name, domains that domain-match one another, and a path the new
    /// cookie's path path-matches. Otherwise http://example.com could overwrite https's session cookie.
    private func shadowsSecureCookie(_ cookie: HTTPClient.Cookie) -> Bool {
        for (domain, bucket) in buckets
        where CookieDomain.domainMatches(domain, cookie.domain) || CookieDomain.domainMatches(cookie.domain, domain) {
            for entry in bucket where entry.cookie.secure && entry.cookie.name == cookie.name
                && CookiePath.pathMatches(requestPath: cookie.path, cookiePath: entry.cookie.path)
            {
                return true
            }
        }
        return false
    }

    /// §5.3's eviction: first expired cookies, then the least recently accessed (ties: the earliest stored),
    /// until `domain` and the whole jar are within their limits.
    private func evict(domain: String, now: Double) {
        if var bucket = buckets[domain], bucket.count > maxCookiesPerDomain {
            let before = bucket.count
            bucket.removeAll { $0.cookie.isExpired(at: now) }
            while bucket.count > maxCookiesPerDomain {
                bucket.remove(at: Self.leastRecentlyUsed(in: bucket))
            }
            count -= before - bucket.count
            buckets[domain] = bucket
        }
        guard count > maxCookies else { return }
        removeExpiredCookies(now: now)
        guard count > maxCookies else { return }
        // §5.3's second priority, "cookies that share a domain field with more than a predetermined number of
        // other cookies", cannot apply: no domain is ever left over its limit. But one site can hold many
        // domains (a host with many labels may set 50 cookies for each of its parents, a site any number of
        // subdomains), so the least recently used cookie is taken from the site that holds the most, as
        // browsers cap cookies per registrable domain: a site flooding the jar evicts its own cookies, not
        // another site's session.
        var sites: [String: (count: Int, domains: [String])] = [:]
        for (domain, bucket) in buckets {
            let owner = site(of: domain)
            sites[owner, default: (0, [])].count += bucket.count
            sites[owner, default: (0, [])].domains.append(domain)
        }
        while count > maxCookies {
            guard let most = sites.values.map(\.count).max(), most > 0 else { return }
            var victim: (site: String, domain: String, index: Int, entry: Entry)?
            for (site, held) in sites where held.count == most {
                for domain in held.domains {
                    guard let bucket = buckets[domain], !bucket.isEmpty else { continue }
                    let index = Self.leastRecentlyUsed(in: bucket)
                    if let current = victim, !Self.isUsedLessRecently(bucket[index], than: current.entry) { continue }
                    victim = (site, domain, index, bucket[index])
                }
            }
            guard let victim else { return }
            buckets[victim.domain]!.remove(at: victim.index)
            if buckets[victim.domain]!.isEmpty { buckets[victim.domain] = nil }
            sites[victim.site]!.count -= 1
            count -= 1
        }
    }

    private static func leastRecentlyUsed(in bucket: [Entry]) -> Int {
        var best = bucket.startIndex
        for index in bucket.indices.dropFirst() where isUsedLessRecently(bucket[index], than: bucket[best]) {
            best = index
        }
        return best
    }

    private static func isUsedLessRecently(_ a: Entry, than b: Entry) -> Bool {
        (a.cookie.lastAccessSeconds, a.sequence) < (b.cookie.lastAccessSeconds, b.sequence)
    }

    // MARK: Sending cookies

    /// The value of the `Cookie` field for a request (RFC 6265 §5.4), or nil when no cookie applies.
    ///
    /// Cookies whose domain and path match, `Secure` ones only when ``RequestContext/isSecure``, ordered
    /// longer paths first and then earlier creation first, as `name=value` pairs joined by `"; "`.
    /// Updates each sent cookie's ``HTTPClient/Cookie/lastAccessDate`` (§5.4 step 3).
    public func cookieHeader(for request: RequestContext, now: Double = currentTime()) -> String? {
        let matches = matchingEntries(for: request, now: now)
        guard !matches.isEmpty else { return nil }
        var header = ""
        for (domain, index) in matches {
            buckets[domain]![index].cookie.lastAccessSeconds = now
            let cookie = buckets[domain]![index].cookie
            if !header.isEmpty { header += "; " }
            header += cookie.name
            header += "="
            header += cookie.value
        }
        return header
    }

    /// The cookies ``cookieHeader(for:now:)`` would send, in the same order, without marking them accessed.
    public func cookies(for request: RequestContext, now: Double = currentTime()) -> [HTTPClient.Cookie] {
        matchingEntries(for: request, now: now).map { buckets[$0.domain]![$0.index].cookie }
    }

    /// §5.4 step 1 and 2: the matching cookies as (bucket, index) pairs, sorted. Removes expired cookies from
    /// the buckets it visits.
    private func matchingEntries(for request: RequestContext, now: Double) -> [(domain: String, index: Int)] {
        // The buckets that can hold matching cookies: the host itself, then each parent domain (IP addresses
        // only match themselves).
        var domains = [request.host]
        if !CookieDomain.isIPAddress(request.host) {
            var rest = Substring(request.host)
            while let dot = rest.firstIndex(of: ".") {
                rest = rest[rest.index(after: dot)...]
                if !rest.isEmpty { domains.append(String(rest)) }
            }
        }
        var matches: [(domain: String, index: Int, entry: Entry)] = []
        for domain in domains {
            guard var bucket = buckets[domain] else { continue }
            let before = bucket.count
            bucket.removeAll { $0.cookie.isExpired(at: now) }
            if bucket.count != before {
                count -= before - bucket.count
                buckets[domain] = bucket.isEmpty ? nil : bucket
            }
            let isHost = domain == request.host
            for (index, entry) in bucket.enumerated() {
                let cookie = entry.cookie
                // Host-only cookies go to their exact host only; domain cookies to it and its subdomains.
                guard isHost || !cookie.hostOnly,
                      CookiePath.pathMatches(requestPath: request.path, cookiePath: cookie.path),
                      !cookie.secure || request.isSecure
                else { continue }
                matches.append((domain, index, entry))
            }
        }
        // §5.4 step 2: longer paths first; equal lengths, earlier creation-times first. The arrival sequence
        // makes the order total (RFC: "SHOULD"; identical creation times are common when `now` is injected).
        matches.sort { a, b in
            let aLength = a.entry.cookie.path.utf8.count
            let bLength = b.entry.cookie.path.utf8.count
            if aLength != bLength { return aLength > bLength }
            return (a.entry.cookie.creationSeconds, a.entry.sequence) < (b.entry.cookie.creationSeconds, b.entry.sequence)
        }
        return matches.map { ($0.domain, $0.index) }
    }

    // MARK: Inspecting and removing

    /// Every stored cookie, grouped by domain, in arrival order within a domain. May include cookies that
    /// expired since the jar last looked at them; call ``removeExpiredCookies(now:)`` first to drop them.
    public var allCookies: [HTTPClient.Cookie] {
        buckets.keys.sorted().flatMap { buckets[$0]!.map(\.cookie) }
    }

    /// Removes every cookie.
    public func removeAll() {
        buckets = [:]
        count = 0
    }

    /// Removes the cookies without an expiry, which live for one session (ASIHTTPRequest's `clearSession`).
    public func removeSessionCookies() {
        removeAll { !$0.isPersistent }
    }

    /// Removes the cookies that have expired at `now`.
    public func removeExpiredCookies(now: Double = currentTime()) {
        removeAll { $0.isExpired(at: now) }
    }

    /// Removes the cookie identified by `name`, `domain` and `path` (RFC 6265's identity of a cookie).
    /// - Returns: whether there was one.
    @discardableResult
    public func remove(name: String, domain: String, path: String) -> Bool {
        let domain = IDNA.toASCII(domain) ?? domain.lowercased()
        guard var bucket = buckets[domain],
              let index = bucket.firstIndex(where: { $0.cookie.name == name && $0.cookie.path == path })
        else { return false }
        bucket.remove(at: index)
        buckets[domain] = bucket.isEmpty ? nil : bucket
        count -= 1
        return true
    }

    private func removeAll(where shouldRemove: (HTTPClient.Cookie) -> Bool) {
        for (domain, bucket) in buckets {
            let kept = bucket.filter { !shouldRemove($0.cookie) }
            guard kept.count != bucket.count else { continue }
            count -= bucket.count - kept.count
            buckets[domain] = kept.isEmpty ? nil : kept
        }
    }

    // MARK: Persistence

    /// Adds the cookies in the jar's ``CookieStorage`` to the jar; does nothing without one.
    ///
    /// Expired cookies are skipped. Stored cookies replace those in the jar with the same name, domain and
    /// path. A stored cookie whose creation time is 0 (cookie files do not record it) gets `now`, in the
    /// order the storage returned them; its last-access time becomes `now` either way.
    public func load(now: Double = currentTime()) throws {
        guard let storage else { return }
        for var cookie in try storage.load() {
            guard !cookie.name.isEmpty, !cookie.domain.isEmpty, !cookie.isExpired(at: now) else { continue }
            cookie.domain = IDNA.toASCII(cookie.domain) ?? cookie.domain.lowercased()
            if cookie.creationSeconds == 0 { cookie.creationSeconds = now }
            cookie.lastAccessSeconds = now
            _ = store(cookie, now: now)
        }
    }

    /// Writes the jar's unexpired cookies to its ``CookieStorage``; does nothing without one.
    /// The storage decides whether session cookies are kept (``NetscapeCookieFile`` skips them by default).
    public func save(now: Double = currentTime()) throws {
        guard let storage else { return }
        removeExpiredCookies(now: now)
        let entries = buckets.values.flatMap { $0 }.sorted { $0.sequence < $1.sequence }
        try storage.save(entries.map(\.cookie))
    }
}

// MARK: - By URL

extension CookieJar.RequestContext {
    /// The context of a request to `url`: its host, its path and whether its scheme is https.
    public init(url: HTTPURL) {
        self.init(host: url.host, path: url.path, isSecure: url.isSecure)
    }
}

extension CookieJar {
    /// The cookies the jar would send with a request to `url`, in the order it would send them, without
    /// marking them accessed.
    ///
    /// ```swift
    /// let sent = try await jar.cookies(for: "https://www.example.com/account")
    /// ```
    ///
    /// - Throws: `HTTPClientError` with code `.invalidURL` when `url` is not an absolute http(s) URL.
    public func cookies(for url: String, now: Double = currentTime()) throws(HTTPClientError) -> [HTTPClient.Cookie] {
        cookies(for: RequestContext(url: try HTTPURL(url)), now: now)
    }

    /// The cookies the jar would send with a request to `url` (as the `String` overload does).
    public func cookies(for url: URL, now: Double = currentTime()) throws(HTTPClientError) -> [HTTPClient.Cookie] {
        try cookies(for: url.absoluteString, now: now)
    }
}
