import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// The cookie middleware, alone and in the built-in chain (where its place below redirects matters).
final class CookieMiddlewareTests: XCTestCase {
    func cookies(_ jar: CookieJar) -> [any HTTPClientMiddleware] { [CookieMiddleware(jar: jar)] }

    /// The client's built-in chain with this jar, as `HTTPClient` builds it.
    func builtIn(_ jar: CookieJar?, redirects: RedirectPolicy = RedirectPolicy()) -> [any HTTPClientMiddleware] {
        var configuration = HTTPClient.Configuration()
        configuration.cookieJar = jar
        configuration.redirectPolicy = redirects
        return HTTPClient.builtInMiddleware(configuration, authenticator: Authenticator(configuration: .init(), logger: configuration.logger),
                                            proxies: ProxyRouter(.none))
    }

    func setCookie(_ values: String...) -> HTTPFields {
        HTTPFields(values.map { ("Set-Cookie", $0) })
    }

    func testCookieSetByAResponseIsSentWithTheNextMatchingRequest() async throws {
        let jar = CookieJar()
        let peer = ScriptedPeer([.init(.ok, headers: setCookie("sid=31d4; Path=/", "theme=dark; Path=/account")), .init(.ok), .init(.ok)])
        _ = try await peer.send(HTTPClientRequest(url: "http://a.test/login"), through: cookies(jar))
        _ = try await peer.send(HTTPClientRequest(url: "http://a.test/account/settings"), through: cookies(jar))
        _ = try await peer.send(HTTPClientRequest(url: "http://b.test/"), through: cookies(jar))
        XCTAssertNil(peer.requests[0].headers[.cookie])
        XCTAssertEqual(peer.requests[1].headers[values: .cookie], ["theme=dark; sid=31d4"],
                       "one field (RFC 6265 §5.4), longer paths first")
        XCTAssertNil(peer.requests[2].headers[.cookie], "another host gets none")
    }

    func testRequestWithTheJarOffNeitherSendsNorStoresCookies() async throws {
        let jar = CookieJar()
        await jar.setCookies(fromHeaders: ["old=1"], for: .init(host: "a.test", path: "/", isSecure: false))
        var request = HTTPClientRequest(url: "http://a.test/")
        request.usesCookieJar = false
        let peer = ScriptedPeer([.init(.ok, headers: setCookie("new=2"))])
        _ = try await peer.send(request, through: cookies(jar))
        XCTAssertNil(peer.requests[0].headers[.cookie], "ASIHTTPRequest's useCookiePersistence = NO")
        let names = await jar.allCookies.map(\.name)
        XCTAssertEqual(names, ["old"])
    }

    func testOwnCookiesAreSentWithTheJarOffAndMergedWithTheJarOn() async throws {
        let jar = CookieJar()
        await jar.setCookies(fromHeaders: ["a=jar", "b=jar"], for: .init(host: "a.test", path: "/", isSecure: false))

        var own = HTTPClientRequest(url: "http://a.test/")
        own.headers[.cookie] = "a=mine; c=mine"
        own.usesCookieJar = false
        let off = ScriptedPeer([.init(.ok)])
        _ = try await off.send(own, through: cookies(jar))
        XCTAssertEqual(off.requests[0].headers[.cookie], "a=mine; c=mine")

        own.usesCookieJar = true
        let on = ScriptedPeer([.init(.ok)])
        _ = try await on.send(own, through: cookies(jar))
        XCTAssertEqual(on.requests[0].headers[values: .cookie], ["a=mine; c=mine; b=jar"], "one Cookie field; the caller's a wins")
    }

    func testExpiredSetCookieDeletesTheStoredCookie() async throws {
        let jar = CookieJar()
        let peer = ScriptedPeer([
            .init(.ok, headers: setCookie("a=1; Path=/")),
            .init(.ok, headers: setCookie("a=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/")),
            .init(.ok),
        ])
        for _ in 0..<3 { _ = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: cookies(jar)) }
        XCTAssertEqual(peer.requests[1].headers[.cookie], "a=1")
        XCTAssertNil(peer.requests[2].headers[.cookie])
    }

    // MARK: In the built-in chain

    func testBuiltInChainIsRedirectThenAuthThenCookiesThenCompression() {
        let chain = builtIn(CookieJar())
        XCTAssertEqual(chain.count, 5)
        XCTAssertTrue(chain[0] is RedirectMiddleware)
        XCTAssertTrue(chain[1] is AuthMiddleware)
        XCTAssertTrue(chain[2] is CookieMiddleware)
        XCTAssertTrue(chain[3] is CompressionMiddleware)
        XCTAssertTrue(chain[4] is AsyncHTTP.ThrottleMiddleware, "throttle innermost")
        XCTAssertFalse(builtIn(nil).contains { $0 is CookieMiddleware }, "no jar, no cookie step")
    }

    func testCookieSetOnA302IsSentOnTheNextHop() async throws {
        let peer = ScriptedPeer([
            .redirect(302, to: "/cookies", extra: setCookie("a=1; Path=/")),
            .init(.ok),
        ])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/cookies/set?a=1"), through: builtIn(CookieJar()))
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(peer.requests[1].headers[.cookie], "a=1", "redirect is outside cookies, so each hop goes through the jar")
    }

    func testCookiesFromEveryHopAreStoredAndSentWhereTheyMatch() async throws {
        let jar = CookieJar()
        let peer = ScriptedPeer([
            .redirect(302, to: "http://b.test/two", extra: setCookie("one=1")),
            .redirect(302, to: "http://a.test/three", extra: setCookie("two=2")),
            .init(.ok, headers: setCookie("three=3")),
        ])
        _ = try await peer.send(HTTPClientRequest(url: "http://a.test/one"), through: builtIn(jar))
        XCTAssertNil(peer.requests[1].headers[.cookie], "a.test's cookie does not go to b.test")
        XCTAssertEqual(peer.requests[2].headers[.cookie], "one=1", "back on a.test its cookie is sent again")
        let stored = await jar.allCookies.map(\.name).sorted()
        XCTAssertEqual(stored, ["one", "three", "two"])
    }

    func testSecureCookieIsNotSentAfterADowngradeToHTTP() async throws {
        let jar = CookieJar()
        let peer = ScriptedPeer([
            .redirect(302, to: "http://a.test/plain", extra: setCookie("s=1; Secure", "p=2")),
            .init(.ok),
        ])
        _ = try await peer.send(HTTPClientRequest(url: "https://a.test/"),
                                through: builtIn(jar, redirects: .init(allowsHTTPSToHTTP: true)))
        XCTAssertEqual(peer.requests[1].headers[.cookie], "p=2")
    }

    func testCallersCookieHeaderIsNotSentToAnotherOriginButTheJarsCookiesAre() async throws {
        let jar = CookieJar()
        await jar.setCookies(fromHeaders: ["b=jar"], for: .init(host: "b.test", path: "/", isSecure: false))
        var request = HTTPClientRequest(url: "http://a.test/")
        request.headers[.cookie] = "secret=for-a"
        let peer = ScriptedPeer([.redirect(302, to: "http://b.test/"), .init(.ok)])
        _ = try await peer.send(request, through: builtIn(jar))
        XCTAssertEqual(peer.requests[0].headers[.cookie], "secret=for-a")
        XCTAssertEqual(peer.requests[1].headers[.cookie], "b=jar", "the jar decides afresh for the new origin")
    }
}
