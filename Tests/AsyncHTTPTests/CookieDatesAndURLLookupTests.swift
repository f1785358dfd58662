// The cookie API as a new user meets it: times as `Date`s, looking cookies up by URL, and the type's name.

import XCTest

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@testable import AsyncHTTP

final class CookieDatesAndURLLookupTests: XCTestCase {
    private let now: Double = 1_700_000_000

    func testCookieTimesAreDatesOnTheJarsClock() throws {
        let site = CookieJar.RequestContext(host: "www.example.com", path: "/", isSecure: true)
        let cookie = try XCTUnwrap(HTTPClient.Cookie.parse(setCookie: "a=1; Max-Age=60", request: site, now: now))
        XCTAssertEqual(cookie.expiresDate, Date(timeIntervalSince1970: now + 60))
        XCTAssertEqual(cookie.creationDate, Date(timeIntervalSince1970: now))
        XCTAssertEqual(cookie.lastAccessDate, Date(timeIntervalSince1970: now))
        XCTAssertFalse(cookie.isExpired(at: Date(timeIntervalSince1970: now + 59)))
        XCTAssertTrue(cookie.isExpired(at: Date(timeIntervalSince1970: now + 60)))

        let session = try XCTUnwrap(HTTPClient.Cookie.parse(setCookie: "s=1", request: site, now: now))
        XCTAssertNil(session.expiresDate)
        XCTAssertFalse(session.isPersistent)
    }

    func testDateInitialiserAndSettersRoundTripThroughTheStoredSeconds() {
        var cookie = HTTPClient.Cookie(
            name: "a", value: "1", domain: "example.com", expiresDate: Date(timeIntervalSince1970: 2_000_000_000),
            creationDate: Date(timeIntervalSince1970: now))
        XCTAssertEqual(cookie.expirySeconds, 2_000_000_000)
        XCTAssertEqual(cookie.creationSeconds, now)
        XCTAssertEqual(cookie.lastAccessSeconds, now, "the last access defaults to the creation time")
        cookie.lastAccessDate = Date(timeIntervalSince1970: now + 5)
        cookie.expiresDate = nil
        XCTAssertEqual(cookie.lastAccessSeconds, now + 5)
        XCTAssertNil(cookie.expirySeconds)
    }

    func testJarLooksCookiesUpByURLStringAndFoundationURL() async throws {
        let jar = CookieJar(publicSuffixList: nil)
        let site = CookieJar.RequestContext(host: "www.example.com", path: "/account/login", isSecure: true)
        await jar.setCookies(
            fromHeaders: ["sid=1; Path=/account; Secure", "lang=en; Path=/", "other=1; Path=/elsewhere"], for: site, now: now)

        let byString = try await jar.cookies(for: "https://WWW.example.com/account/settings?tab=1", now: now + 1)
        XCTAssertEqual(byString.map(\.name), ["sid", "lang"])
        let byContext = await jar.cookies(
            for: CookieJar.RequestContext(host: "www.example.com", path: "/account/settings", isSecure: true), now: now + 1)
        XCTAssertEqual(byString, byContext)

        let plain = try await jar.cookies(for: "http://www.example.com/account/settings", now: now + 1)
        XCTAssertEqual(plain.map(\.name), ["lang"], "a Secure cookie is not sent over http")

        let url = try XCTUnwrap(URL(string: "https://www.example.com/"))
        let byURL = try await jar.cookies(for: url, now: now + 1)
        XCTAssertEqual(byURL.map(\.name), ["lang"])
    }

    func testJarLookupByAnInvalidURLThrowsInvalidURL() async {
        let jar = CookieJar(publicSuffixList: nil)
        do {
            _ = try await jar.cookies(for: "not a url", now: now)
            XCTFail("expected .invalidURL")
        } catch {
            XCTAssertEqual(error.code, .invalidURL)
        }
    }

    func testRequestContextFromAnHTTPURL() throws {
        let context = CookieJar.RequestContext(url: try HTTPURL("https://Example.COM:8443/a/b?q=1#f"))
        XCTAssertEqual(context, CookieJar.RequestContext(host: "example.com", path: "/a/b", isSecure: true))
    }
}
