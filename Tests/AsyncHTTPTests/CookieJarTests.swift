import XCTest

@testable import AsyncHTTP

final class CookieJarTests: XCTestCase {
    let now = 1_700_000_000.0

    private func site(_ host: String, _ path: String = "/", secure: Bool = true) -> CookieJar.RequestContext {
        CookieJar.RequestContext(host: host, path: path, isSecure: secure)
    }

    func testCookieHeaderJoinsNameValuePairs() async {
        let jar = CookieJar()
        let request = site("www.example.com")
        await jar.setCookies(fromHeaders: ["a=1", "b=2; Path=/"], for: request, now: now)
        let header = await jar.cookieHeader(for: request, now: now)
        XCTAssertEqual(header, "a=1; b=2")
        let none = await jar.cookieHeader(for: site("other.com"), now: now)
        XCTAssertNil(none)
    }

    func testDomainCookieReachesSubdomainsButHostOnlyCookieDoesNot() async {
        let jar = CookieJar()
        await jar.setCookies(
            fromHeaders: ["wide=1; Domain=example.com", "narrow=2"], for: site("www.example.com"), now: now)
        let onHost = await jar.cookieHeader(for: site("www.example.com"), now: now)
        let onParent = await jar.cookieHeader(for: site("example.com"), now: now)
        let onChild = await jar.cookieHeader(for: site("a.www.example.com"), now: now)
        let onSibling = await jar.cookieHeader(for: site("api.example.com"), now: now)
        let onLookalike = await jar.cookieHeader(for: site("notexample.com"), now: now)
        XCTAssertEqual(onHost, "wide=1; narrow=2")
        XCTAssertEqual(onParent, "wide=1")
        XCTAssertEqual(onChild, "wide=1")
        XCTAssertEqual(onSibling, "wide=1")
        XCTAssertNil(onLookalike)
    }

    func testPublicSuffixDomainCookiesAreNotStored() async {
        let jar = CookieJar()
        let stored = await jar.setCookies(
            fromHeaders: ["evil=1; Domain=co.uk", "tld=1; Domain=uk", "ok=1; Domain=example.co.uk"],
            for: site("shop.example.co.uk"), now: now)
        XCTAssertEqual(stored.map(\.name), ["ok"])
        let other = await jar.cookieHeader(for: site("bank.co.uk"), now: now)
        XCTAssertNil(other)
        // The private section: one github.io user cannot set cookies for all of them.
        let pages = await jar.setCookies(
            fromHeaders: ["x=1; Domain=github.io"], for: site("attacker.github.io"), now: now)
        XCTAssertEqual(pages, [])
    }

    /// The bundled list has `*.sch.uk` but no `sch.uk`: a school's `Domain=sch.uk` must not be stored, or it would
    /// go to every other school (it did, before the Domain was held to the host's registrable domain).
    func testParentOfAWildcardSuffixCookieIsNotStoredOrSentToOtherSites() async {
        let jar = CookieJar()
        let stored = await jar.setCookies(
            fromHeaders: ["sid=x; Domain=sch.uk"], for: site("www.school.sch.uk"), now: now)
        XCTAssertEqual(stored, [])
        await jar.setCookies(fromHeaders: ["city=1; Domain=kawasaki.jp"], for: site("www.city.kawasaki.jp"), now: now)
        for host in ["other.sch.uk", "www.other.sch.uk", "www.school.sch.uk", "www.other.kawasaki.jp", "kawasaki.jp"] {
            let header = await jar.cookieHeader(for: site(host), now: now)
            XCTAssertNil(header, host)
        }
        let all = await jar.allCookies
        XCTAssertEqual(all, [])
    }

    func testSecureCookieIsSentOnlyOverHTTPS() async {
        let jar = CookieJar()
        await jar.setCookies(fromHeaders: ["s=1; Secure", "p=2"], for: site("example.com"), now: now)
        let overHTTPS = await jar.cookieHeader(for: site("example.com"), now: now)
        let overHTTP = await jar.cookieHeader(for: site("example.com", secure: false), now: now)
        XCTAssertEqual(overHTTPS, "s=1; p=2")
        XCTAssertEqual(overHTTP, "p=2")
    }

    func testSecureCookieIsNeitherSetNorSentOverPlainLocalhost() async {
        let jar = CookieJar()
        let plain = site("localhost", secure: false)
        let stored = await jar.setCookies(fromHeaders: ["s=1; Secure", "p=2"], for: plain, now: now)
        XCTAssertEqual(stored.map(\.name), ["p"])
        await jar.setCookies(fromHeaders: ["s=1; Secure"], for: site("localhost"), now: now)
        let header = await jar.cookieHeader(for: plain, now: now)
        XCTAssertEqual(header, "p=2")
    }

    func testInsecureResponseCannotOverwriteOrShadowASecureCookie() async {
        let jar = CookieJar()
        await jar.setCookies(fromHeaders: ["sid=good; Secure; Path=/"], for: site("www.example.com"), now: now)
        let attempts = [
            "sid=evil", "sid=evil; Path=/", "sid=evil; Path=/deeper", "sid=evil; Domain=example.com",
        ]
        let stored = await jar.setCookies(
            fromHeaders: attempts, for: site("www.example.com", "/", secure: false), now: now + 1)
        XCTAssertEqual(stored, [])
        let header = await jar.cookieHeader(for: site("www.example.com", "/deeper/x"), now: now + 2)
        XCTAssertEqual(header, "sid=good")
        // Another name is fine, and so is the same name over https.
        let other = await jar.setCookies(
            fromHeaders: ["other=1"], for: site("www.example.com", secure: false), now: now)
        XCTAssertEqual(other.count, 1)
        let replaced = await jar.setCookies(fromHeaders: ["sid=new; Path=/"], for: site("www.example.com"), now: now)
        XCTAssertEqual(replaced.count, 1)
    }

    func testCookiesAreOrderedByPathLengthThenCreationTime() async {
        let jar = CookieJar()
        let request = site("example.com", "/a/b/c")
        await jar.setCookies(fromHeaders: ["root1=1; Path=/"], for: request, now: now)
        await jar.setCookies(fromHeaders: ["ab=1; Path=/a/b"], for: request, now: now + 1)
        await jar.setCookies(fromHeaders: ["root2=1; Path=/"], for: request, now: now + 2)
        await jar.setCookies(fromHeaders: ["a=1; Path=/a"], for: request, now: now + 3)
        // Same creation time: arrival order decides.
        await jar.setCookies(fromHeaders: ["root3=1; Path=/", "root4=1; Path=/"], for: request, now: now + 4)
        await jar.setCookies(fromHeaders: ["unrelated=1; Path=/x"], for: request, now: now + 5)
        let header = await jar.cookieHeader(for: request, now: now + 10)
        XCTAssertEqual(header, "ab=1; a=1; root1=1; root2=1; root3=1; root4=1")
        let names = await jar.cookies(for: request, now: now + 10).map(\.name)
        XCTAssertEqual(names, ["ab", "a", "root1", "root2", "root3", "root4"])
    }

    func testPathMatchingUsesTheRequestPath() async {
        let jar = CookieJar()
        await jar.setCookies(fromHeaders: ["d=1; Path=/docs"], for: site("example.com"), now: now)
        for (path, expected) in [
            ("/docs", "d=1"), ("/docs/", "d=1"), ("/docs/web?q=1", "d=1"), ("/docsets", nil), ("/", nil),
        ] {
            let header = await jar.cookieHeader(for: site("example.com", path), now: now)
            XCTAssertEqual(header, expected, path)
        }
    }

    func testReplacingACookieKeepsItsCreationTime() async throws {
        let jar = CookieJar()
        let request = site("example.com")
        await jar.setCookies(fromHeaders: ["a=old"], for: request, now: now)
        await jar.setCookies(fromHeaders: ["b=1"], for: request, now: now + 5)
        await jar.setCookies(fromHeaders: ["a=new; HttpOnly"], for: request, now: now + 10)
        let cookies = await jar.allCookies
        XCTAssertEqual(cookies.count, 2)
        let a = try XCTUnwrap(cookies.first { $0.name == "a" })
        XCTAssertEqual(a.value, "new")
        XCTAssertTrue(a.httpOnly)
        XCTAssertEqual(a.creationSeconds, now)
        XCTAssertEqual(a.lastAccessSeconds, now + 10)
        // Still older than b, so it still comes first.
        let header = await jar.cookieHeader(for: request, now: now + 11)
        XCTAssertEqual(header, "a=new; b=1")
    }

    func testSameNameWithDifferentPathOrDomainAreDistinctCookies() async {
        let jar = CookieJar()
        let request = site("www.example.com", "/a/b")
        await jar.setCookies(
            fromHeaders: ["n=1; Path=/", "n=2; Path=/a", "n=3; Domain=example.com; Path=/"], for: request, now: now)
        let count = await jar.allCookies.count
        XCTAssertEqual(count, 3)
        let header = await jar.cookieHeader(for: request, now: now)
        XCTAssertEqual(header, "n=2; n=1; n=3")
    }

    func testMaxAgeZeroAndPastExpiresDeleteTheCookie() async {
        let jar = CookieJar()
        let request = site("example.com")
        await jar.setCookies(fromHeaders: ["a=1", "b=2", "c=3"], for: request, now: now)
        let stored = await jar.setCookies(
            fromHeaders: ["a=; Max-Age=0", "b=; Expires=Thu, 01 Jan 1970 00:00:01 GMT"], for: request, now: now + 1)
        XCTAssertEqual(stored, [])
        let header = await jar.cookieHeader(for: request, now: now + 1)
        XCTAssertEqual(header, "c=3")
        let count = await jar.allCookies.count
        XCTAssertEqual(count, 1)
    }

    func testExpiredCookiesAreNotSentAndAreSwept() async {
        let jar = CookieJar()
        let request = site("example.com")
        await jar.setCookies(fromHeaders: ["short=1; Max-Age=60", "long=2; Max-Age=3600"], for: request, now: now)
        let early = await jar.cookieHeader(for: request, now: now + 59)
        XCTAssertEqual(early, "short=1; long=2")
        let late = await jar.cookieHeader(for: request, now: now + 60)
        XCTAssertEqual(late, "long=2")
        let remaining = await jar.allCookies.map(\.name)
        XCTAssertEqual(remaining, ["long"])
    }

    func testCookieHeaderUpdatesLastAccessButCookiesForDoesNot() async {
        let jar = CookieJar()
        let request = site("example.com")
        await jar.setCookies(fromHeaders: ["a=1"], for: request, now: now)
        _ = await jar.cookies(for: request, now: now + 5)
        let afterPeek = await jar.allCookies.first?.lastAccessSeconds
        XCTAssertEqual(afterPeek, now)
        _ = await jar.cookieHeader(for: request, now: now + 7)
        let afterSend = await jar.allCookies.first?.lastAccessSeconds
        XCTAssertEqual(afterSend, now + 7)
    }

    func testPerDomainLimitEvictsTheLeastRecentlyAccessedCookie() async {
        let jar = CookieJar(maxCookiesPerDomain: 3)
        let request = site("example.com")
        await jar.setCookies(fromHeaders: ["a=1"], for: request, now: now)
        await jar.setCookies(fromHeaders: ["b=1"], for: request, now: now + 1)
        await jar.setCookies(fromHeaders: ["c=1; Path=/c"], for: request, now: now + 2)
        // Sending a and b touches them; c, only sent under /c, becomes the least recently used.
        _ = await jar.cookieHeader(for: request, now: now + 3)
        await jar.setCookies(fromHeaders: ["d=1"], for: request, now: now + 4)
        let names = await jar.allCookies.map(\.name).sorted()
        XCTAssertEqual(names, ["a", "b", "d"])
        // Other domains are not affected by this domain's limit.
        await jar.setCookies(fromHeaders: ["x=1"], for: site("other.com"), now: now + 5)
        let count = await jar.allCookies.count
        XCTAssertEqual(count, 4)
    }

    func testPerDomainLimitEvictsExpiredCookiesFirst() async {
        let jar = CookieJar(maxCookiesPerDomain: 2)
        let request = site("example.com")
        await jar.setCookies(fromHeaders: ["old=1"], for: request, now: now)
        await jar.setCookies(fromHeaders: ["brief=1; Max-Age=10"], for: request, now: now + 1)
        await jar.setCookies(fromHeaders: ["new=1"], for: request, now: now + 20)
        let names = await jar.allCookies.map(\.name).sorted()
        XCTAssertEqual(names, ["new", "old"])
    }

    func testTotalLimitEvictsExpiredThenLeastRecentlyAccessedAcrossDomains() async {
        let jar = CookieJar(maxCookiesPerDomain: 50, maxCookies: 3)
        await jar.setCookies(fromHeaders: ["a=1"], for: site("a.com"), now: now)
        await jar.setCookies(fromHeaders: ["b=1; Max-Age=5"], for: site("b.com"), now: now + 1)
        await jar.setCookies(fromHeaders: ["c=1"], for: site("c.com"), now: now + 2)
        await jar.setCookies(fromHeaders: ["d=1"], for: site("d.com"), now: now + 10)  // b has expired
        var names = await jar.allCookies.map(\.name)
        XCTAssertEqual(names, ["a", "c", "d"])
        _ = await jar.cookieHeader(for: site("a.com"), now: now + 11)  // a is now more recent than c
        await jar.setCookies(fromHeaders: ["e=1"], for: site("e.com"), now: now + 12)
        names = await jar.allCookies.map(\.name)
        XCTAssertEqual(names, ["a", "d", "e"])
    }

    func testDefaultLimitsAreRFC6265Minimums() async {
        let jar = CookieJar()
        XCTAssertEqual(jar.maxCookiesPerDomain, 50)
        XCTAssertEqual(jar.maxCookies, 3000)
        let request = site("example.com")
        await jar.setCookies(fromHeaders: (0..<60).map { "c\($0)=1" }, for: request, now: now)
        let count = await jar.allCookies.count
        XCTAssertEqual(count, 50)
    }

    func testRemoveSessionCookiesKeepsPersistentOnes() async {
        let jar = CookieJar()
        let request = site("example.com")
        await jar.setCookies(
            fromHeaders: ["session=1", "kept=2; Max-Age=3600", "dated=3; Expires=Wed, 09 Jun 2038 10:18:14 GMT"],
            for: request, now: now)
        await jar.removeSessionCookies()
        let header = await jar.cookieHeader(for: request, now: now)
        XCTAssertEqual(header, "kept=2; dated=3")
    }

    func testRemoveByNameDomainAndPath() async {
        let jar = CookieJar()
        let request = site("www.example.com", "/a/b")
        await jar.setCookies(fromHeaders: ["n=1; Path=/", "n=2; Path=/a"], for: request, now: now)
        let wrongPath = await jar.remove(name: "n", domain: "www.example.com", path: "/x")
        XCTAssertFalse(wrongPath)
        let removed = await jar.remove(name: "n", domain: "WWW.Example.com", path: "/a")
        XCTAssertTrue(removed)
        let header = await jar.cookieHeader(for: request, now: now)
        XCTAssertEqual(header, "n=1")
        await jar.removeAll()
        let empty = await jar.allCookies
        XCTAssertEqual(empty, [])
    }

    func testIPAddressCookiesOnlyMatchTheSameAddress() async {
        let jar = CookieJar()
        await jar.setCookies(fromHeaders: ["a=1"], for: site("10.0.0.1", secure: false), now: now)
        let same = await jar.cookieHeader(for: site("10.0.0.1", secure: false), now: now)
        let other = await jar.cookieHeader(for: site("0.0.1", secure: false), now: now)
        XCTAssertEqual(same, "a=1")
        XCTAssertNil(other)
    }

    func testHostIsCanonicalisedBeforeMatching() async {
        let jar = CookieJar()
        await jar.setCookies(fromHeaders: ["a=1; Domain=Example.COM"], for: site("WWW.EXAMPLE.COM"), now: now)
        let header = await jar.cookieHeader(for: site("api.example.com"), now: now)
        XCTAssertEqual(header, "a=1")
    }

    /// curl's CVE-2022-27779: `evil.com.` setting a cookie for `Domain=com.` got one for the public suffix "com",
    /// sent to `bank.com.` (and, with the dot dropped, to `bank.com`). The trailing dot is dropped from the host
    /// and the attribute, so the public suffix check sees "com".
    func testATrailingDotDoesNotTakeACookiePastThePublicSuffixCheck() async {
        let jar = CookieJar()
        await jar.setCookies(fromHeaders: ["a=b; Domain=com.", "c=d; Domain=com"], for: site("evil.com."), now: now)
        for host in ["bank.com.", "bank.com"] {
            let header = await jar.cookieHeader(for: site(host), now: now)
            XCTAssertNil(header, host)
        }
        // A cookie of the host itself still works, with or without the dot.
        await jar.setCookies(fromHeaders: ["own=1; Domain=example.com."], for: site("www.example.com."), now: now)
        let own = await jar.cookieHeader(for: site("www.example.com"), now: now)
        XCTAssertEqual(own, "own=1")
    }

    /// One site cannot push another site's cookies out of a full jar: a host with many labels, or many
    /// subdomains, stays within each domain's limit yet floods the total. The jar evicts from the site that
    /// holds the most cookies, so the flood evicts its own. (Plain least-recently-used across the jar evicted
    /// the bank's session first.)
    func testAFloodFromOneSiteEvictsItsOwnCookiesNotAnotherSites() async {
        let jar = CookieJar(maxCookiesPerDomain: 50, maxCookies: 100)
        await jar.setCookies(fromHeaders: ["sid=bank"], for: site("bank.com"), now: now)
        for index in 0..<5 {
            await jar.setCookies(fromHeaders: (0..<50).map { "f\($0)=1" }, for: site("s\(index).evil.com"), now: now + Double(index + 1))
        }
        let count = await jar.allCookies.count
        XCTAssertEqual(count, 100)
        let header = await jar.cookieHeader(for: site("bank.com"), now: now + 10)
        XCTAssertEqual(header, "sid=bank", "the flood from evil.com evicted bank.com's session")
    }
}
