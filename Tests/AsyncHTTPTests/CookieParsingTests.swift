import XCTest

@testable import AsyncHTTP

final class CookieParsingTests: XCTestCase {
    let now = 1_700_000_000.0
    let https = CookieJar.RequestContext(host: "www.example.com", path: "/account/login", isSecure: true)
    let http = CookieJar.RequestContext(host: "www.example.com", path: "/account/login", isSecure: false)

    private func parse(_ header: String, _ request: CookieJar.RequestContext? = nil) -> HTTPClient.Cookie? {
        HTTPClient.Cookie.parse(setCookie: header, request: request ?? https, now: now)
    }

    // MARK: Cookie dates, RFC 6265 §5.1.1

    func testCookieDateParsesTheThreeHTTPDateFormats() {
        // RFC 1123, RFC 850 and asctime: the three forms RFC 7231 §7.1.1.1 lists; all the same instant.
        XCTAssertEqual(CookieDate.parse("Sun, 06 Nov 1994 08:49:37 GMT"), 784_111_777)
        XCTAssertEqual(CookieDate.parse("Sunday, 06-Nov-94 08:49:37 GMT"), 784_111_777)
        XCTAssertEqual(CookieDate.parse("Sun Nov  6 08:49:37 1994"), 784_111_777)
        XCTAssertEqual(CookieDate.parse("Wed, 09 Jun 2021 10:18:14 GMT"), 1_623_233_894)
    }

    func testCookieDateTwoDigitYears() {
        XCTAssertEqual(CookieDate.parse("Thursday, 01-Jan-70 00:00:01 GMT"), 1)
        XCTAssertEqual(CookieDate.parse("Thu, 01-Jan-99 00:00:00 GMT"), 915_148_800)  // 1999
        XCTAssertEqual(CookieDate.parse("Tue, 01-Jan-69 00:00:00 GMT"), 3_124_224_000)  // 2069
        XCTAssertEqual(CookieDate.parse("Sat, 01-Jan-00 00:00:00 GMT"), 946_684_800)  // 2000
    }

    func testCookieDateAcceptsAnyTokenOrderCaseAndDecoration() {
        XCTAssertEqual(CookieDate.parse("08:49:37 1994 NOV 06"), 784_111_777)
        XCTAssertEqual(CookieDate.parse("november 6th, 1994, 8:49:37am"), 784_111_777)
        XCTAssertEqual(CookieDate.parse("06/Nov/1994:08:49:37 +0000"), nil)  // "1994:08:49:37" is no time token
        XCTAssertEqual(CookieDate.parse("06 Nov 1994 08:49:37"), 784_111_777)
    }

    func testCookieDateRejectsOutOfRangeFields() {
        XCTAssertNil(CookieDate.parse("Wed, 32 Jun 2021 10:18:14 GMT"))  // day 32
        XCTAssertNil(CookieDate.parse("Wed, 00 Jun 2021 10:18:14 GMT"))  // day 0
        XCTAssertNil(CookieDate.parse("Wed, 09 Jun 2021 24:00:00 GMT"))  // hour 24
        XCTAssertNil(CookieDate.parse("Wed, 09 Jun 2021 10:60:00 GMT"))  // minute 60
        XCTAssertNil(CookieDate.parse("Wed, 09 Jun 2021 10:18:60 GMT"))  // second 60
        XCTAssertNil(CookieDate.parse("Mon, 01 Jan 1600 00:00:00 GMT"))  // before 1601
        XCTAssertEqual(CookieDate.parse("Mon, 01 Jan 1601 00:00:00 GMT"), -11_644_473_600)
        XCTAssertEqual(CookieDate.parse("Fri, 31 Dec 9999 23:59:59 GMT"), 253_402_300_799)
    }

    func testCookieDateRejectsDaysThatDoNotExist() {
        XCTAssertNil(CookieDate.parse("31 Apr 2021 00:00:00"))
        XCTAssertNil(CookieDate.parse("29 Feb 2021 00:00:00"))
        XCTAssertNil(CookieDate.parse("29 Feb 1900 00:00:00"))  // divisible by 100, not by 400
        XCTAssertEqual(CookieDate.parse("29 Feb 2024 12:00:00"), 1_709_208_000)
        XCTAssertNotNil(CookieDate.parse("29 Feb 2000 00:00:00"))
    }

    func testCookieDateNeedsAllFourParts() {
        XCTAssertNil(CookieDate.parse("Wed, 09 Jun 2021 GMT"))  // no time
        XCTAssertNil(CookieDate.parse("09 2021 10:18:14"))  // no month
        XCTAssertNil(CookieDate.parse("Jun 2021 10:18:14"))  // "2021" is not a day: 1*2DIGIT then non-digit
        XCTAssertNil(CookieDate.parse(""))
        XCTAssertNil(CookieDate.parse("garbage"))
    }

    func testCookieDateTokenGrammarEdges() {
        XCTAssertNil(CookieDate.parse("09 Jun 994 10:18:14"))  // 3-digit year 994 < 1601
        XCTAssertNil(CookieDate.parse("09 Jun 20210 10:18:14"))  // 5 digits: no year
        XCTAssertNil(CookieDate.parse("09 Jun 2021 100:18:14"))  // 3-digit hour: no time
        XCTAssertEqual(CookieDate.parse("09 Jun 2021 10:18:14GMT"), 1_623_233_894)  // non-digit after time is fine
        XCTAssertEqual(CookieDate.parse("9 Jun 2021 1:2:3"), 1_623_196_800 + 3723)
    }

    // MARK: Name and value, §5.2

    func testNameValueAreTrimmedAndSplitAtTheFirstEquals() throws {
        let cookie = try XCTUnwrap(parse("  sid \t=  a=b=c  ; Path=/"))
        XCTAssertEqual(cookie.name, "sid")
        XCTAssertEqual(cookie.value, "a=b=c")
        XCTAssertEqual(try XCTUnwrap(parse("q=\"quoted value\"")).value, "\"quoted value\"")
        XCTAssertEqual(try XCTUnwrap(parse("empty=")).value, "")
    }

    func testCookieWithoutEqualsOrNameIsIgnored() {
        XCTAssertNil(parse("novalue"))
        XCTAssertNil(parse("novalue; Path=/"))
        XCTAssertNil(parse("=value"))
        XCTAssertNil(parse("  =value"))
        XCTAssertNil(parse(""))
    }

    func testControlCharactersRejectTheWholeCookie() {
        XCTAssertNil(parse("a=b\r\nX-Injected: 1"))
        XCTAssertNil(parse("a=b\u{0}c"))
        XCTAssertNil(parse("a=b; Path=/\u{7F}"))
        XCTAssertNotNil(parse("a=b\tc"))  // HTAB is allowed
    }

    func testOversizedNameValueOrAttributeIsRefused() {
        XCTAssertNil(parse("n=" + String(repeating: "v", count: 4096)))  // 4097 octets
        XCTAssertNotNil(parse("n=" + String(repeating: "v", count: 4095)))  // exactly 4096
        // An over-long attribute value is ignored, not the cookie.
        let cookie = parse("n=v; Path=/" + String(repeating: "p", count: 1024))
        XCTAssertEqual(cookie?.path, "/account")
    }

    // MARK: Expires and Max-Age

    func testExpiresMakesThePersistentExpiry() throws {
        let cookie = try XCTUnwrap(parse("a=b; Expires=Wed, 09 Jun 2038 10:18:14 GMT"))
        XCTAssertEqual(cookie.expirySeconds, 2_159_691_494)
        XCTAssertTrue(cookie.isPersistent)
        XCTAssertFalse(try XCTUnwrap(parse("a=b")).isPersistent)
    }

    func testUnparsableExpiresIsIgnored() throws {
        let cookie = try XCTUnwrap(parse("a=b; Expires=tomorrow"))
        XCTAssertNil(cookie.expirySeconds)
        // The last *valid* Expires wins; an invalid one after it does not erase it.
        let second = try XCTUnwrap(parse("a=b; Expires=Wed, 09 Jun 2038 10:18:14 GMT; Expires=soon"))
        XCTAssertEqual(second.expirySeconds, 2_159_691_494)
    }

    func testMaxAgeOverridesExpiresInEitherOrder() throws {
        let before = try XCTUnwrap(parse("a=b; Max-Age=60; Expires=Wed, 09 Jun 2038 10:18:14 GMT"))
        let after = try XCTUnwrap(parse("a=b; Expires=Wed, 09 Jun 2038 10:18:14 GMT; max-age=60"))
        XCTAssertEqual(before.expirySeconds, now + 60)
        XCTAssertEqual(after.expirySeconds, now + 60)
    }

    func testMaxAgeZeroOrNegativeExpiresAtOnce() throws {
        for header in ["a=b; Max-Age=0", "a=b; Max-Age=-1", "a=b; Max-Age=-999999"] {
            let cookie = try XCTUnwrap(parse(header), header)
            XCTAssertTrue(cookie.isExpired(at: now), header)
            XCTAssertTrue(cookie.isExpired(at: -1e300), header)
        }
    }

    func testMalformedMaxAgeIsIgnored() throws {
        for value in ["+5", "5s", "1.5", "", " ", "-", "0x10"] {
            let cookie = try XCTUnwrap(parse("a=b; Max-Age=\(value)"), value)
            XCTAssertNil(cookie.expirySeconds, "Max-Age=\(value)")
        }
        XCTAssertEqual(try XCTUnwrap(parse("a=b; Max-Age = 10 ")).expirySeconds, now + 10)
        // Too big for Int64 but still "far in the future", not an overflow.
        let huge = try XCTUnwrap(parse("a=b; Max-Age=99999999999999999999999"))
        XCTAssertGreaterThan(try XCTUnwrap(huge.expirySeconds), 1e22)
    }

    // MARK: Domain

    func testDomainAttributeDropsLeadingDotAndLowercases() throws {
        let cookie = try XCTUnwrap(parse("a=b; Domain=.EXAMPLE.com"))
        XCTAssertEqual(cookie.domain, "example.com")
        XCTAssertFalse(cookie.hostOnly)
    }

    func testNoOrEmptyDomainMakesAHostOnlyCookie() throws {
        for header in ["a=b", "a=b; Domain=", "a=b; Domain=."] {
            let cookie = try XCTUnwrap(parse(header), header)
            XCTAssertEqual(cookie.domain, "www.example.com", header)
            XCTAssertTrue(cookie.hostOnly, header)
        }
    }

    func testDomainThatTheHostDoesNotDomainMatchIsRejected() {
        XCTAssertNil(parse("a=b; Domain=other.com"))
        XCTAssertNil(parse("a=b; Domain=ample.com"))  // suffix, but not at a dot
        XCTAssertNil(parse("a=b; Domain=sub.www.example.com"))  // a subdomain of the host
        XCTAssertNotNil(parse("a=b; Domain=www.example.com"))
    }

    func testPublicSuffixDomainIsRejectedUnlessItIsTheHost() throws {
        let shop = CookieJar.RequestContext(host: "shop.example.co.uk", path: "/", isSecure: true)
        XCTAssertNil(parse("a=b; Domain=co.uk", shop))
        XCTAssertNil(parse("a=b; Domain=uk", shop))
        XCTAssertNotNil(parse("a=b; Domain=example.co.uk", shop))
        // §5.3 step 5: a Domain equal to the host becomes host-only even if it is a public suffix.
        let registry = CookieJar.RequestContext(host: "github.io", path: "/", isSecure: true)
        let cookie = try XCTUnwrap(parse("a=b; Domain=github.io", registry))
        XCTAssertTrue(cookie.hostOnly)
        XCTAssertEqual(cookie.domain, "github.io")
        // Without a list, the check is off.
        XCTAssertNotNil(
            HTTPClient.Cookie.parse(setCookie: "a=b; Domain=co.uk", request: shop, now: now, publicSuffixList: nil))
    }

    /// The list has `*.sch.uk` but no rule `sch.uk`, so by the list's algorithm `sch.uk` is no public suffix; yet
    /// a school that could set `Domain=sch.uk` would reach every other school. The `Domain` must be the host's
    /// registrable domain or below it, as Chromium, Firefox and curl (libpsl) require. Checked against a small
    /// list and against the bundled one.
    func testDomainAboveTheRegistrableDomainUnderAWildcardOrExceptionRuleIsRejected() throws {
        let small = PublicSuffixList(listText: "uk\n*.sch.uk\njp\n*.kawasaki.jp\n!city.kawasaki.jp\n")
        for (name, list) in [("small", small), ("bundled", PublicSuffixList.shared)] {
            func parse(_ header: String, from host: String) -> HTTPClient.Cookie? {
                let request = CookieJar.RequestContext(host: host, path: "/", isSecure: true)
                return HTTPClient.Cookie.parse(setCookie: header, request: request, now: now, publicSuffixList: list)
            }
            // The parent of a wildcard rule, from a host under it.
            XCTAssertNil(parse("a=b; Domain=sch.uk", from: "www.school.sch.uk"), name)
            XCTAssertNil(parse("a=b; Domain=sch.uk", from: "www.myschool.lancs.sch.uk"), name)
            XCTAssertNil(parse("a=b; Domain=lancs.sch.uk", from: "www.myschool.lancs.sch.uk"), name)
            let school = try XCTUnwrap(parse("a=b; Domain=myschool.lancs.sch.uk", from: "www.myschool.lancs.sch.uk"), name)
            XCTAssertEqual(school.domain, "myschool.lancs.sch.uk", name)
            XCTAssertFalse(school.hostOnly, name)
            // An exception rule: city.kawasaki.jp is registrable, its parent kawasaki.jp is not for it to claim.
            XCTAssertNil(parse("a=b; Domain=kawasaki.jp", from: "www.city.kawasaki.jp"), name)
            XCTAssertNil(parse("a=b; Domain=kawasaki.jp", from: "a.b.kawasaki.jp"), name)
            XCTAssertNil(parse("a=b; Domain=b.kawasaki.jp", from: "a.b.kawasaki.jp"), name)
            let city = try XCTUnwrap(parse("a=b; Domain=city.kawasaki.jp", from: "www.city.kawasaki.jp"), name)
            XCTAssertEqual(city.domain, "city.kawasaki.jp", name)
            XCTAssertFalse(city.hostOnly, name)
            // A host that is itself a public suffix: only its own name, and then host-only (§5.3 step 5).
            let suffix = try XCTUnwrap(parse("a=b; Domain=b.kawasaki.jp", from: "b.kawasaki.jp"), name)
            XCTAssertEqual(suffix.domain, "b.kawasaki.jp", name)
            XCTAssertTrue(suffix.hostOnly, name)
            XCTAssertNil(parse("a=b; Domain=kawasaki.jp", from: "b.kawasaki.jp"), name)
        }
        // The private section's wildcards too: one EC2 instance cannot set cookies for all of them.
        let ec2 = CookieJar.RequestContext(
            host: "ec2-192-0-2-1.eu-west-1.compute.amazonaws.com", path: "/", isSecure: true)
        XCTAssertNil(parse("a=b; Domain=compute.amazonaws.com", ec2))
        XCTAssertNil(parse("a=b; Domain=amazonaws.com", ec2))
        XCTAssertNil(parse("a=b; Domain=eu-west-1.compute.amazonaws.com", ec2))
        XCTAssertNotNil(parse("a=b; Domain=ec2-192-0-2-1.eu-west-1.compute.amazonaws.com", ec2))
    }

    /// `localhost` is one unlisted label, a public suffix by the default rule: it may name itself (host-only) and
    /// nothing under it may claim it.
    func testLocalhostMayNameOnlyItself() throws {
        let localhost = CookieJar.RequestContext(host: "localhost", path: "/", isSecure: false)
        let own = try XCTUnwrap(parse("a=b; Domain=localhost", localhost))
        XCTAssertEqual(own.domain, "localhost")
        XCTAssertTrue(own.hostOnly)
        let app = CookieJar.RequestContext(host: "app.localhost", path: "/", isSecure: false)
        XCTAssertNil(parse("a=b; Domain=localhost", app))
        XCTAssertEqual(try XCTUnwrap(parse("a=b; Domain=app.localhost", app)).domain, "app.localhost")
    }

    func testIPAddressHostAcceptsOnlyItsOwnAddressAsDomain() throws {
        let ip = CookieJar.RequestContext(host: "192.168.0.10", path: "/", isSecure: false)
        XCTAssertNil(parse("a=b; Domain=168.0.10", ip))
        XCTAssertNil(parse("a=b; Domain=10", ip))
        XCTAssertEqual(try XCTUnwrap(parse("a=b; Domain=192.168.0.10", ip)).domain, "192.168.0.10")
    }

    func testUnicodeDomainAttributeIsPunycoded() throws {
        let request = CookieJar.RequestContext(host: "www.Bücher.de", path: "/", isSecure: true)
        XCTAssertEqual(request.host, "www.xn--bcher-kva.de")
        let cookie = try XCTUnwrap(parse("a=b; Domain=BÜCHER.de", request))
        XCTAssertEqual(cookie.domain, "xn--bcher-kva.de")
    }

    // MARK: Path

    func testDefaultPathAlgorithm() {
        XCTAssertEqual(CookiePath.defaultPath(ofRequestPath: ""), "/")
        XCTAssertEqual(CookiePath.defaultPath(ofRequestPath: "/"), "/")
        XCTAssertEqual(CookiePath.defaultPath(ofRequestPath: "/login"), "/")
        XCTAssertEqual(CookiePath.defaultPath(ofRequestPath: "/account/login"), "/account")
        XCTAssertEqual(CookiePath.defaultPath(ofRequestPath: "/account/"), "/account")
        XCTAssertEqual(CookiePath.defaultPath(ofRequestPath: "/a/b/c"), "/a/b")
        XCTAssertEqual(CookiePath.defaultPath(ofRequestPath: "relative/x"), "/")
    }

    func testPathAttributeOrDefault() throws {
        XCTAssertEqual(try XCTUnwrap(parse("a=b")).path, "/account")
        XCTAssertEqual(try XCTUnwrap(parse("a=b; Path=/docs")).path, "/docs")
        XCTAssertEqual(try XCTUnwrap(parse("a=b; Path=")).path, "/account")
        XCTAssertEqual(try XCTUnwrap(parse("a=b; Path=docs")).path, "/account")
        XCTAssertEqual(try XCTUnwrap(parse("a=b; Path=/one; path=/two")).path, "/two")  // the last one wins
        // The query is not part of the request path.
        let withQuery = CookieJar.RequestContext(host: "example.com", path: "/a/b?next=/c/d", isSecure: true)
        XCTAssertEqual(try XCTUnwrap(parse("a=b", withQuery)).path, "/a")
    }

    func testPathMatch() {
        XCTAssertTrue(CookiePath.pathMatches(requestPath: "/docs", cookiePath: "/docs"))
        XCTAssertTrue(CookiePath.pathMatches(requestPath: "/docs/", cookiePath: "/docs"))
        XCTAssertTrue(CookiePath.pathMatches(requestPath: "/docs/web", cookiePath: "/docs"))
        XCTAssertTrue(CookiePath.pathMatches(requestPath: "/docs/web", cookiePath: "/docs/"))
        XCTAssertTrue(CookiePath.pathMatches(requestPath: "/anything", cookiePath: "/"))
        XCTAssertFalse(CookiePath.pathMatches(requestPath: "/docsets", cookiePath: "/docs"))
        XCTAssertFalse(CookiePath.pathMatches(requestPath: "/doc", cookiePath: "/docs"))
        XCTAssertFalse(CookiePath.pathMatches(requestPath: "/Docs", cookiePath: "/docs"))
    }

    func testDomainMatch() {
        XCTAssertTrue(CookieDomain.domainMatches("example.com", "example.com"))
        XCTAssertTrue(CookieDomain.domainMatches("www.example.com", "example.com"))
        XCTAssertFalse(CookieDomain.domainMatches("wwwexample.com", "example.com"))
        XCTAssertFalse(CookieDomain.domainMatches("example.com", "www.example.com"))
        XCTAssertFalse(CookieDomain.domainMatches("1.2.3.4", "2.3.4"))
        XCTAssertTrue(CookieDomain.domainMatches("::1", "::1"))
    }

    // MARK: Flags

    func testSecureAndHttpOnlyFlagsCaseInsensitive() throws {
        let cookie = try XCTUnwrap(parse("a=b; SECURE; httponly"))
        XCTAssertTrue(cookie.secure)
        XCTAssertTrue(cookie.httpOnly)
        let plain = try XCTUnwrap(parse("a=b; Securely; HttpOnlyX"))
        XCTAssertFalse(plain.secure)
        XCTAssertFalse(plain.httpOnly)
    }

    func testSecureCookieFromAnInsecureOriginIsRefused() {
        XCTAssertNil(parse("a=b; Secure", http))
        let localhost = CookieJar.RequestContext(host: "localhost", path: "/", isSecure: false)
        XCTAssertNil(parse("a=b; Secure", localhost))
        let loopback = CookieJar.RequestContext(host: "127.0.0.1", path: "/", isSecure: false)
        XCTAssertNil(parse("a=b; Secure", loopback))
        XCTAssertNotNil(parse("a=b", http))
    }

    func testSameSiteValues() throws {
        XCTAssertEqual(try XCTUnwrap(parse("a=b; SameSite=Strict")).sameSite, .strict)
        XCTAssertEqual(try XCTUnwrap(parse("a=b; samesite=LAX")).sameSite, .lax)
        XCTAssertEqual(try XCTUnwrap(parse("a=b; SameSite=None; Secure")).sameSite, .none)
        XCTAssertEqual(try XCTUnwrap(parse("a=b; SameSite=bogus")).sameSite, .unspecified)
        XCTAssertEqual(try XCTUnwrap(parse("a=b; SameSite")).sameSite, .unspecified)
        XCTAssertEqual(try XCTUnwrap(parse("a=b")).sameSite, .unspecified)
        XCTAssertEqual(try XCTUnwrap(parse("a=b; SameSite=Lax; SameSite=Strict")).sameSite, .strict)
    }

    func testSameSiteNoneWithoutSecureIsRefused() {
        XCTAssertNil(parse("a=b; SameSite=None"))
    }

    func testUnknownAttributesAreIgnored() throws {
        let cookie = try XCTUnwrap(parse("a=b; Version=1; Comment=hi; Priority=High; Partitioned; ;;"))
        XCTAssertEqual(cookie.name, "a")
        XCTAssertEqual(cookie.value, "b")
    }

    // MARK: Prefixes, 6265bis §4.1.3

    func testSecurePrefixRequiresSecure() {
        XCTAssertNil(parse("__Secure-id=1"))
        XCTAssertNil(parse("__secure-id=1"))  // matched case-insensitively
        XCTAssertNotNil(parse("__Secure-id=1; Secure"))
        XCTAssertNotNil(parse("__Secure-id=1; Secure; Domain=example.com; Path=/x"))
        XCTAssertNil(parse("__Secure-id=1; Secure", http))
    }

    func testHostPrefixRequiresSecureHostOnlyAndRootPath() {
        XCTAssertNotNil(parse("__Host-id=1; Secure; Path=/"))
        XCTAssertNil(parse("__Host-id=1; Path=/"))  // not Secure
        XCTAssertNil(parse("__Host-id=1; Secure"))  // no Path attribute
        XCTAssertNil(parse("__Host-id=1; Secure; Path=/account"))
        XCTAssertNil(parse("__Host-id=1; Secure; Path=/; Domain=example.com"))
        XCTAssertNil(parse("__Host-id=1; Secure; Path=/; Domain=www.example.com"))  // even the host itself
        XCTAssertNil(parse("__HOST-id=1; Path=/"))
        XCTAssertNotNil(parse("__Hostile=1"))  // not the prefix
    }

    func testCreationAndAccessTimesAreNow() throws {
        let cookie = try XCTUnwrap(parse("a=b"))
        XCTAssertEqual(cookie.creationSeconds, now)
        XCTAssertEqual(cookie.lastAccessSeconds, now)
    }
}
