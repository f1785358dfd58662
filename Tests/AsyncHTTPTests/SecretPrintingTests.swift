import Foundation
import XCTest

@testable import AsyncHTTP

/// A cookie's value and a password never show in text made from the value that holds them: `print` and string
/// interpolation (`description`), `String(reflecting:)` (`debugDescription`), and `dump` (the mirror), alone or
/// inside a collection or another value. The fields that are no secret still show, so the text stays useful.
final class SecretPrintingTests: XCTestCase {
    let now = 1_700_000_000.0

    /// Every way Swift turns `value` into text for a person.
    private func texts(_ value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return ["\(value)", String(describing: value), String(reflecting: value), dumped]
    }

    func testCookieTextShowsItsNameAndDomainButNeverItsValue() {
        let cookie = HTTPClient.Cookie(
            name: "sid", value: "SESSION-TOKEN-31d4", domain: "example.com", hostOnly: false, path: "/account",
            expirySeconds: now + 3600, secure: true, httpOnly: true, sameSite: .lax, creationSeconds: now)
        for text in texts(cookie) + texts([cookie]) + texts(Optional(cookie) as Any) + [cookie.debugDescription] {
            XCTAssertFalse(text.contains("SESSION-TOKEN"), text)
            XCTAssertTrue(text.contains("<redacted>"), text)
            XCTAssertTrue(text.contains("sid"), text)
            XCTAssertTrue(text.contains("example.com"), text)
            XCTAssertTrue(text.contains("/account"), text)
        }
        XCTAssertEqual(
            cookie.description,
            "Cookie(sid=<redacted>; domain: .example.com, path: /account, expires: \(cookie.expiresDate!), secure, httpOnly, sameSite: Lax)")
        let session = HTTPClient.Cookie(name: "a", value: "b-secret", domain: "www.example.com", creationSeconds: now)
        XCTAssertEqual(session.description, "Cookie(a=<redacted>; domain: www.example.com, path: /, expires: session)")
        // The value itself is still there for whoever asks for it.
        XCTAssertEqual(cookie.value, "SESSION-TOKEN-31d4")
    }

    /// `setCookies(fromHeaders:for:now:)` returns what it stored "for logging": logging it is safe.
    func testTheStoredCookiesAJarReturnsForLoggingHideTheirValues() async {
        let jar = CookieJar()
        let request = CookieJar.RequestContext(host: "www.example.com", path: "/", isSecure: true)
        let stored = await jar.setCookies(
            fromHeaders: ["sid=SESSION-TOKEN-31d4; Secure; HttpOnly", "theme=TOKEN-TOO"], for: request, now: now)
        XCTAssertEqual(stored.count, 2)
        for text in texts(stored) {
            XCTAssertFalse(text.contains("SESSION-TOKEN") || text.contains("TOKEN-TOO"), text)
            XCTAssertTrue(text.contains("sid") && text.contains("theme"), text)
        }
        // The Cookie header and the cookie file carry the values: nothing there reads the description.
        let header = await jar.cookieHeader(for: request, now: now)
        XCTAssertEqual(header, "sid=SESSION-TOKEN-31d4; theme=TOKEN-TOO")
    }

    func testCredentialsDumpShowsTheUserButNeverThePassword() {
        let credentials = HTTPCredentials(username: "alice", password: "PASS-s3cret", domain: "CORP", workstation: "WS1")
        let proxy = ProxyConfiguration(kind: .http, host: "proxy.example", port: 3128, credentials: credentials)
        for text in texts(credentials) + texts([credentials]) + texts(Optional(credentials) as Any) + [credentials.debugDescription] {
            XCTAssertFalse(text.contains("PASS-s3cret"), text)
            XCTAssertTrue(text.contains("alice"), text)
        }
        // A value holding credentials: its dump reaches them through their mirror.
        for text in texts(proxy) {
            XCTAssertFalse(text.contains("PASS-s3cret"), text)
        }
        var proxyDump = ""
        dump(proxy, to: &proxyDump)
        XCTAssertTrue(proxyDump.contains("alice"), proxyDump)
        var dumped = ""
        dump(credentials, to: &dumped)
        XCTAssertTrue(dumped.contains("password: \"<redacted>\""), dumped)
        XCTAssertTrue(dumped.contains("CORP"), dumped)
        XCTAssertTrue(dumped.contains("WS1"), dumped)
        // The password is still there to authenticate with, and survives encoding (a CredentialFile's JSON).
        XCTAssertEqual(credentials.password, "PASS-s3cret")
        let decoded = try? JSONDecoder().decode(HTTPCredentials.self, from: JSONEncoder().encode(credentials))
        XCTAssertEqual(decoded, credentials)
    }

    func testRequestTextShowsItsMethodURLAndHeadersButNoSecret() {
        var request = HTTPClientRequest(
            url: "https://bob:URL-PASSWORD@example.com/api?page=2&X-Amz-Signature=SIGNATURE-SECRET#FRAGMENT")
        request.headers[.authorization] = "Bearer AUTH-HEADER-TOKEN"
        request.headers[.cookie] = "sid=COOKIE-VALUE"
        request.headers[HTTPField.Name("X-Api-Key")!] = "API-KEY-VALUE"
        request.headers[.accept] = "application/json"
        request.sensitiveHeaders = [HTTPField.Name("X-Api-Key")!]
        request.bearerToken = "BEARER-TOKEN"
        request.credentials = HTTPCredentials(username: "bob", password: "CREDENTIAL-PASSWORD")
        request.body = .bytes(Array("hello".utf8))
        for text in texts(request) + texts([request]) + texts(Optional(request) as Any) {
            for secret in ["URL-PASSWORD", "SIGNATURE-SECRET", "FRAGMENT", "AUTH-HEADER-TOKEN", "COOKIE-VALUE",
                           "API-KEY-VALUE", "BEARER-TOKEN",
                           "CREDENTIAL-PASSWORD"] {
                XCTAssertFalse(text.contains(secret), text)
            }
            XCTAssertTrue(text.contains("example.com/api?page=2"), text)
        }
        XCTAssertEqual(request.description, "GET https://example.com/api?page=2&X-Amz-Signature=REDACTED")
        let debug = String(reflecting: request)
        XCTAssertTrue(debug.contains("Authorization: Bearer <redacted>"), debug)
        XCTAssertTrue(debug.contains("Accept: application/json"), debug)
        XCTAssertTrue(debug.contains("X-Api-Key: <redacted>"), debug)
        XCTAssertTrue(debug.contains("(body: 5 bytes)"), debug)
    }
}
