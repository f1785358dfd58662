import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// The redirect middleware against a scripted peer: every rule of `RedirectPolicy`, no sockets.
final class RedirectMiddlewareTests: XCTestCase {
    let xApiKey = HTTPField.Name("X-Api-Key")!
    let host = HTTPField.Name("Host")!

    func redirect(_ policy: RedirectPolicy = RedirectPolicy()) -> [any HTTPClientMiddleware] {
        [RedirectMiddleware(policy: policy)]
    }

    func post(_ url: String, body: String = "name=pen") -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = .post
        request.headers[.contentType] = "application/x-www-form-urlencoded"
        request.headers[.contentLanguage] = "en"
        request.body = .bytes(Array(body.utf8))
        return request
    }

    // MARK: Methods and bodies

    func testPostAnswered301Or302Or303IsFollowedAsGetWithoutBodyOrBodyHeaders() async throws {
        for code in [301, 302, 303] {
            let peer = ScriptedPeer([.redirect(code, to: "/done"), .init(.ok)])
            let response = try await peer.send(post("http://a.test/form"), through: redirect())
            XCTAssertEqual(response.status, .ok)
            let next = peer.requests[1]
            XCTAssertEqual(next.method, .get, "\(code)")
            XCTAssertNil(next.body, "\(code)")
            XCTAssertNil(next.headers[.contentType], "\(code): Fetch drops the body's headers with it")
            XCTAssertNil(next.headers[.contentLanguage], "\(code)")
            XCTAssertEqual(next.url, "http://a.test/done")
        }
    }

    /// 301 and 302 turn only a POST into a GET, as Fetch, curl and async-http-client: a PUT, PATCH or DELETE goes on
    /// with its method, its body and the body's headers. They used to become GETs (as ASIHTTPRequest and Go).
    func testMethodsOtherThanPostKeepMethodAndBodyOn301And302() async throws {
        for code in [301, 302] {
            for method in [HTTPRequest.Method.put, .patch, .delete, .options] {
                var request = post("http://a.test/item")
                request.method = method
                let peer = ScriptedPeer([.redirect(code, to: "/item/1"), .init(.ok)])
                _ = try await peer.send(request, through: redirect())
                let next = peer.requests[1]
                XCTAssertEqual(next.method, method, "\(code) \(method)")
                let body = try await bodyBytes(next.body)
                XCTAssertEqual(body, Array("name=pen".utf8), "\(code) \(method)")
                XCTAssertEqual(next.headers[.contentType], "application/x-www-form-urlencoded", "\(code) \(method)")
                XCTAssertEqual(next.url, "http://a.test/item/1")
            }
        }
    }

    /// The common trailing-slash redirect: `DELETE /dir` answered `301 Location: /dir/` deletes `/dir/`; as a GET it
    /// answered 200 and the caller took the directory for deleted.
    func testDeleteAnsweredATrailingSlash301IsADeleteOfTheNewURL() async throws {
        var request = HTTPClientRequest(url: "http://a.test/dir")
        request.method = .delete
        let peer = ScriptedPeer([.redirect(301, to: "/dir/"), .init(.noContent)])
        let response = try await peer.send(request, through: redirect())
        XCTAssertEqual(response.status, .noContent)
        XCTAssertEqual(peer.requests.map(\.method), [.delete, .delete])
        XCTAssertEqual(peer.requests[1].url, "http://a.test/dir/")
        XCTAssertEqual(response.history.map(\.method), [.delete])
    }

    /// A PUT keeps its body on 301 and 302, so a one-shot stream fails as on 307 instead of being sent as a GET.
    func testPutWithAOneShotStreamBodyAnswered301FailsWithBodyNotReplayable() async throws {
        for code in [301, 302] {
            var request = post("http://a.test/upload")
            request.method = .put
            request.body = .stream(oneShotStream([Array("part".utf8)]))
            let peer = ScriptedPeer([.redirect(code, to: "/elsewhere"), .init(.ok)])
            let error = await assertThrowsHTTPError(.bodyNotReplayable) {
                try await peer.send(request, through: self.redirect())
            }
            XCTAssertTrue(error?.message.contains("\(code)") ?? false, error?.message ?? "")
            XCTAssertEqual(peer.requests.count, 1, "nothing sent twice")
        }
    }

    /// 303 still turns every method but HEAD into a GET without a body (RFC 9110 §15.4.4).
    func testPutAnswered303IsFollowedAsGet() async throws {
        var request = post("http://a.test/item")
        request.method = .put
        let peer = ScriptedPeer([.redirect(303, to: "/item/1"), .init(.ok)])
        _ = try await peer.send(request, through: redirect())
        XCTAssertEqual(peer.requests[1].method, .get)
        XCTAssertNil(peer.requests[1].body)
        XCTAssertNil(peer.requests[1].headers[.contentType])
    }

    func testHeadStaysHeadOn301And302And303() async throws {
        for code in [301, 302, 303] {
            var request = HTTPClientRequest(url: "http://a.test/x")
            request.method = .head
            let peer = ScriptedPeer([.redirect(code, to: "/y"), .init(.ok)])
            _ = try await peer.send(request, through: redirect())
            XCTAssertEqual(peer.requests[1].method, .head, "\(code)")
        }
    }

    func testRFC2616BehaviourKeepsMethodAndBodyOn301And302ButNotOn303() async throws {
        let policy = RedirectPolicy(keepsMethodOn301And302: true)
        for code in [301, 302] {
            let peer = ScriptedPeer([.redirect(code, to: "/again"), .init(.ok)])
            _ = try await peer.send(post("http://a.test/form"), through: redirect(policy))
            let next = peer.requests[1]
            XCTAssertEqual(next.method, .post, "\(code)")
            let body = try await bodyBytes(next.body)
            XCTAssertEqual(body, Array("name=pen".utf8), "\(code)")
            XCTAssertEqual(next.headers[.contentType], "application/x-www-form-urlencoded")
        }
        let peer = ScriptedPeer([.redirect(303, to: "/see"), .init(.ok)])
        _ = try await peer.send(post("http://a.test/form"), through: redirect(policy))
        XCTAssertEqual(peer.requests[1].method, .get)
        XCTAssertNil(peer.requests[1].body)
    }

    /// `keepsMethodOn303` (ahttp's -X): the method and the body go on to a 303's target, and the body's headers
    /// with them; 301 and 302 keep following `keepsMethodOn301And302` alone, and HEAD stays HEAD.
    func testKeepsMethodOn303KeepsMethodAndBodyOn303Only() async throws {
        let policy = RedirectPolicy(keepsMethodOn303: true)
        let see = ScriptedPeer([.redirect(303, to: "/see"), .init(.ok)])
        _ = try await see.send(post("http://a.test/form"), through: redirect(policy))
        XCTAssertEqual(see.requests[1].method, .post)
        let body = try await bodyBytes(see.requests[1].body)
        XCTAssertEqual(body, Array("name=pen".utf8))
        XCTAssertEqual(see.requests[1].headers[.contentType], "application/x-www-form-urlencoded")
        for code in [301, 302] {
            let peer = ScriptedPeer([.redirect(code, to: "/moved"), .init(.ok)])
            _ = try await peer.send(post("http://a.test/form"), through: redirect(policy))
            XCTAssertEqual(peer.requests[1].method, .get, "\(code): not this switch's business")
            XCTAssertNil(peer.requests[1].body, "\(code)")
        }
        var head = HTTPClientRequest(url: "http://a.test/x")
        head.method = .head
        let headPeer = ScriptedPeer([.redirect(303, to: "/y"), .init(.ok)])
        _ = try await headPeer.send(head, through: redirect(policy))
        XCTAssertEqual(headPeer.requests[1].method, .head)
        // Both switches: every 3xx that is followed keeps the method, as curl's -X.
        let both = RedirectPolicy(keepsMethodOn301And302: true, keepsMethodOn303: true)
        for code in [301, 302, 303, 307, 308] {
            let peer = ScriptedPeer([.redirect(code, to: "/next"), .init(.ok)])
            _ = try await peer.send(post("http://a.test/form"), through: redirect(both))
            XCTAssertEqual(peer.requests[1].method, .post, "\(code)")
        }
    }

    /// The two switches added for ahttp leave the defaults as they were: 303 becomes a GET, loops are detected.
    func testNewSwitchesDefaultToThePreviousBehaviour() {
        let policy = RedirectPolicy()
        XCTAssertFalse(policy.keepsMethodOn303)
        XCTAssertTrue(policy.detectsLoops)
        XCTAssertFalse(policy.keepsMethodOn301And302)
        XCTAssertEqual(policy.maxRedirects, 10)
        XCTAssertEqual(HTTPClient.Configuration().redirectPolicy, policy)
        XCTAssertFalse(RedirectPolicy.disabled.followsRedirects)
        XCTAssertTrue(RedirectPolicy.disabled.detectsLoops)
    }

    func test307And308KeepMethodAndBody() async throws {
        for code in [307, 308] {
            let peer = ScriptedPeer([.redirect(code, to: "/elsewhere"), .init(.created)])
            let response = try await peer.send(post("http://a.test/upload", body: "payload"), through: redirect())
            XCTAssertEqual(response.status, .created)
            let next = peer.requests[1]
            XCTAssertEqual(next.method, .post, "\(code)")
            let body = try await bodyBytes(next.body)
            XCTAssertEqual(body, Array("payload".utf8), "\(code)")
            XCTAssertEqual(next.headers[.contentType], "application/x-www-form-urlencoded")
        }
    }

    func test307WithAOneShotStreamBodyFailsWithBodyNotReplayable() async throws {
        var request = post("http://a.test/upload")
        request.body = .stream(oneShotStream([Array("part".utf8)]))
        let peer = ScriptedPeer([.redirect(307, to: "/elsewhere"), .init(.ok)])
        let error = await assertThrowsHTTPError(.bodyNotReplayable) {
            try await peer.send(request, through: self.redirect())
        }
        XCTAssertTrue(error?.message.contains("307") ?? false, error?.message ?? "")
        XCTAssertEqual(peer.requests.count, 1, "nothing sent twice")
    }

    func test302WithAStreamBodyIsFollowedBecauseTheBodyIsDropped() async throws {
        var request = post("http://a.test/upload")
        request.body = .stream(oneShotStream([Array("part".utf8)]))
        let peer = ScriptedPeer([.redirect(302, to: "/done"), .init(.ok)])
        let response = try await peer.send(request, through: redirect())
        XCTAssertEqual(response.status, .ok)
        XCTAssertNil(peer.requests[1].body)
    }

    // MARK: Location

    func testLocationIsResolvedAgainstTheURLThatSentIt() async throws {
        let peer = ScriptedPeer([
            .redirect(302, to: "../c/d?x=1"),              // from /a/b/page → /a/c/d?x=1
            .redirect(302, to: "e"),                       // → /a/c/e
            .redirect(302, to: "?q=2"),                    // → /a/c/e?q=2
            .redirect(302, to: "//b.test:8080/f"),         // → http://b.test:8080/f
            .redirect(302, to: "/g/./h/../i"),             // → http://b.test:8080/g/i
            .init(.ok),
        ])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/a/b/page"), through: redirect())
        XCTAssertEqual(peer.requests.map(\.url), [
            "http://a.test/a/b/page", "http://a.test/a/c/d?x=1", "http://a.test/a/c/e", "http://a.test/a/c/e?q=2",
            "http://b.test:8080/f", "http://b.test:8080/g/i",
        ])
        XCTAssertEqual(response.url.description, "http://b.test:8080/g/i")
    }

    func testLocationWithRawSpacesAndUTF8IsPercentEncodedAsCurlDoes() async throws {
        let peer = ScriptedPeer([.redirect(302, to: " /files/my report é.pdf "), .init(.ok)])
        _ = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: redirect())
        XCTAssertEqual(peer.requests[1].url, "http://a.test/files/my%20report%20%C3%A9.pdf")
    }

    /// `[` `]` in a path or query (PHP, Rails and JSON:API style) and a second `#` are sent encoded, as curl and
    /// browsers follow them; an IPv6 literal's brackets stay brackets. They failed as malformedResponse.
    func testLocationWithBracketsOrASecondHashIsEncodedAndFollowed() async throws {
        let peer = ScriptedPeer([
            .redirect(302, to: "/items?filter[name]=x&ids[]=1"),
            .redirect(302, to: "/a[1]/b"),
            .redirect(302, to: "/page#a#b[c]"),
            .redirect(302, to: "http://[::1]:8080/v6?k[]=v"),
            .init(.ok),
        ])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: redirect())
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(peer.requests.map(\.url), [
            "http://a.test/", "http://a.test/items?filter%5Bname%5D=x&ids%5B%5D=1", "http://a.test/a%5B1%5D/b",
            "http://a.test/page#a%23b%5Bc%5D", "http://[::1]:8080/v6?k%5B%5D=v#a%23b%5Bc%5D",
        ])
        XCTAssertEqual(response.url.host, "::1")
    }

    func testLocationWithASecondHashKeepsTheFirstAsTheFragment() async throws {
        let peer = ScriptedPeer([.redirect(302, to: "/a#b#c"), .init(.ok)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: redirect())
        XCTAssertEqual(peer.requests[1].url, "http://a.test/a#b%23c")
        XCTAssertEqual(response.url.path, "/a")
        XCTAssertEqual(response.url.fragment, "b%23c")
    }

    /// A Location naming a non-ASCII host is followed to its IDNA ASCII form (Punycode), as curl does; the host was
    /// percent-encoded and the URL refused (malformedResponse). The path's UTF-8 is still percent-encoded.
    func testLocationWithANonASCIIHostIsFollowedToItsPunycodeForm() async throws {
        let peer = ScriptedPeer([
            .redirect(302, to: "http://bücher.example/x"),
            .redirect(302, to: "//BÜCHER.example:8080/y?q=é"),
            .init(.ok),
        ])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: redirect())
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(peer.requests.map(\.url), [
            "http://a.test/", "http://xn--bcher-kva.example/x", "http://xn--bcher-kva.example:8080/y?q=%C3%A9",
        ])
        XCTAssertEqual(response.url.host, "xn--bcher-kva.example")
        XCTAssertEqual(RedirectMiddleware.asciiHost("http://user:pä@bücher.example/ü"), "http://user:pä@xn--bcher-kva.example/ü",
                       "only the host: the userinfo and the path are percent-encoded afterwards")
        XCTAssertEqual(RedirectMiddleware.asciiHost("/bücher"), "/bücher", "no authority")
    }

    func testFragmentOfTheRequestIsKeptWhenTheLocationHasNone() async throws {
        let peer = ScriptedPeer([.redirect(301, to: "/new"), .init(.ok)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/old#section"), through: redirect())
        XCTAssertEqual(response.url.path, "/new")
        XCTAssertEqual(response.url.fragment, "section", "RFC 9110 §10.2.2")
    }

    func testRedirectToAnotherSchemeIsRefused() async throws {
        let peer = ScriptedPeer([.redirect(302, to: "ftp://a.test/file"), .init(.ok)])
        await assertThrowsHTTPError(.redirectRefused) {
            try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: self.redirect())
        }
        XCTAssertEqual(peer.requests.count, 1)
    }

    func testUnusableLocationIsAMalformedResponse() async throws {
        let peer = ScriptedPeer([.redirect(302, to: "http://exa mple.test:99999/"), .init(.ok)])
        await assertThrowsHTTPError(.malformedResponse) {
            try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: self.redirect())
        }
    }

    func testResponsesThatAreNotRedirectsToFollowAreReturned() async throws {
        // 300 (a preference only), 304 (not a redirect), and a 302 without Location (RFC 9110 §15.4).
        let replies: [ScriptedPeer.Reply] = [
            .redirect(300, to: "/choice"), .redirect(304, to: "/cached"), .init(HTTPResponse.Status(code: 302)),
        ]
        for reply in replies {
            let peer = ScriptedPeer([reply, .init(.ok)])
            let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: redirect())
            XCTAssertEqual(response.status.code, reply.status.code)
            XCTAssertEqual(peer.requests.count, 1)
            XCTAssertTrue(response.history.isEmpty)
        }
    }

    // MARK: Limits

    func testExactlyMaxRedirectsAreFollowed() async throws {
        let peer = ScriptedPeer { _, index in index < 3 ? .redirect(302, to: "/\(index + 1)") : .init(.ok) }
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/0"), through: redirect(.init(maxRedirects: 3)))
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.history.count, 3)
    }

    func testOneRedirectMoreThanTheMaximumThrowsTooManyRedirects() async throws {
        let peer = ScriptedPeer { _, index in .redirect(302, to: "/\(index + 1)") }
        await assertThrowsHTTPError(.tooManyRedirects) {
            try await peer.send(HTTPClientRequest(url: "http://a.test/0"), through: self.redirect())
        }
        XCTAssertEqual(peer.requests.count, 11, "the original and 10 redirects (the default), no more")
    }

    func testRedirectBackToAURLAlreadyRequestedIsALoop() async throws {
        let peer = ScriptedPeer { request, _ in
            request.url.hasSuffix("/a") ? .redirect(302, to: "/b") : .redirect(302, to: "/a")
        }
        let error = await assertThrowsHTTPError(.redirectLoop) {
            try await peer.send(HTTPClientRequest(url: "http://a.test/a"), through: self.redirect())
        }
        XCTAssertEqual(peer.requests.count, 2, "a → b → a is detected before a is requested again")
        XCTAssertTrue(error?.message.contains("http://a.test/a") ?? false, error?.message ?? "")
    }

    func testRedirectToItselfIsALoop() async throws {
        let peer = ScriptedPeer([.redirect(301, to: "/self")])
        await assertThrowsHTTPError(.redirectLoop) {
            try await peer.send(HTTPClientRequest(url: "http://a.test/self"), through: self.redirect())
        }
    }

    /// `detectsLoops` off (curl's -L, ahttp): a loop is followed, and only `maxRedirects` ends it.
    func testWithoutLoopDetectionALoopRunsToMaxRedirects() async throws {
        let policy = RedirectPolicy(maxRedirects: 4, detectsLoops: false)
        let pingPong = ScriptedPeer { request, _ in
            request.url.hasSuffix("/a") ? .redirect(302, to: "/b") : .redirect(302, to: "/a")
        }
        await assertThrowsHTTPError(.tooManyRedirects) {
            try await pingPong.send(HTTPClientRequest(url: "http://a.test/a"), through: self.redirect(policy))
        }
        XCTAssertEqual(pingPong.requests.map(\.url), ["http://a.test/a", "http://a.test/b", "http://a.test/a", "http://a.test/b",
                                                      "http://a.test/a"], "the original and 4 redirects, revisits included")
        let itself = ScriptedPeer { _, _ in .redirect(301, to: "/self") }
        await assertThrowsHTTPError(.tooManyRedirects) {
            try await itself.send(HTTPClientRequest(url: "http://a.test/self"), through: self.redirect(policy))
        }
        XCTAssertEqual(itself.requests.count, 5)
        // A loop that ends within the limit is simply followed to its answer.
        let comesBack = ScriptedPeer { _, index in
            index < 2 ? .redirect(302, to: "/start") : .init(.ok)
        }
        let response = try await comesBack.send(HTTPClientRequest(url: "http://a.test/start"), through: redirect(policy))
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.history.count, 2)
    }

    func testRevisitingAURLAfterASetCookieIsNotALoop() async throws {
        // The login pattern: /app sets a session cookie and redirects to /app, which now answers.
        let peer = ScriptedPeer([
            .redirect(302, to: "/app", extra: HTTPFields([("Set-Cookie", "session=1")])), .init(.ok),
        ])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/app"), through: redirect())
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.history.count, 1)
    }

    /// Without a jar (the client's, or this request's), a `Set-Cookie` cannot change the next request: a redirect
    /// back to a URL already requested is a loop, cookie or not (it ran on to the limit, and without one forever).
    func testASetCookieDoesNotHideALoopWhenNoJarTakesIt() async throws {
        let looping = { () -> ScriptedPeer in
            ScriptedPeer { _, _ in .redirect(302, to: "/app", extra: HTTPFields([("Set-Cookie", "session=1")])) }
        }
        let noJarAtAll = looping()
        await assertThrowsHTTPError(.redirectLoop) {
            try await noJarAtAll.send(HTTPClientRequest(url: "http://a.test/app"),
                                      through: [RedirectMiddleware(policy: RedirectPolicy(), keepsCookies: false)])
        }
        XCTAssertEqual(noJarAtAll.requests.count, 1, "the hop back to /app is the loop")

        let jarNotUsed = looping()
        var request = HTTPClientRequest(url: "http://a.test/app")
        request.usesCookieJar = false
        await assertThrowsHTTPError(.redirectLoop) {
            try await jarNotUsed.send(request, through: self.redirect())
        }
        XCTAssertEqual(jarNotUsed.requests.count, 1)
    }

    /// A client without a jar but with steps of its own keeps the revisit-after-Set-Cookie allowance: a user step
    /// sits inside the redirect step and may keep the cookies itself.
    func testAUserStepCountsAsKeepingCookies() {
        func keepsCookies(_ change: (inout HTTPClient.Configuration) -> Void) -> Bool? {
            var configuration = HTTPClient.Configuration()
            change(&configuration)
            let chain = HTTPClient.builtInMiddleware(configuration, authenticator: Authenticator(configuration: .init(), logger: configuration.logger),
                                                     proxies: ProxyRouter(.none))
            return (chain.first as? RedirectMiddleware)?.keepsCookies
        }
        XCTAssertEqual(keepsCookies { _ in }, true, "the default jar")
        XCTAssertEqual(keepsCookies { $0.cookieJar = nil }, false)
        XCTAssertEqual(keepsCookies { $0.cookieJar = nil; $0.middleware = [RedirectMiddleware()] }, true, "a user step")
    }

    func testSameURLWithAnotherMethodIsNotALoop() async throws {
        // POST /form → 303 → GET /form is the post/redirect/get pattern.
        let peer = ScriptedPeer([.redirect(303, to: "/form"), .init(.ok)])
        let response = try await peer.send(post("http://a.test/form"), through: redirect())
        XCTAssertEqual(response.status, .ok)
    }

    // MARK: Security

    func testCrossOriginRedirectDropsCredentialsAndSensitiveHeaders() async throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request.headers[.authorization] = "Basic dXNlcjpwYXNz"
        request.headers[.proxyAuthorization] = "Basic cHJveHk6cGFzcw=="
        request.headers[.cookie] = "mine=1"
        request.headers[xApiKey] = "secret"
        request.headers[.accept] = "text/html"
        request.sensitiveHeaders = [xApiKey]
        let peer = ScriptedPeer([.redirect(302, to: "/same"), .redirect(302, to: "http://b.test/other"), .init(.ok)])
        _ = try await peer.send(request, through: redirect())

        let sameOrigin = peer.requests[1]
        XCTAssertEqual(sameOrigin.headers[.authorization], "Basic dXNlcjpwYXNz", "same origin keeps credentials")
        XCTAssertEqual(sameOrigin.headers[.cookie], "mine=1")
        XCTAssertEqual(sameOrigin.headers[xApiKey], "secret")

        let crossOrigin = peer.requests[2]
        XCTAssertNil(crossOrigin.headers[.authorization])
        XCTAssertNil(crossOrigin.headers[.proxyAuthorization])
        XCTAssertNil(crossOrigin.headers[.cookie])
        XCTAssertNil(crossOrigin.headers[xApiKey])
        XCTAssertEqual(crossOrigin.headers[.accept], "text/html", "other headers go on")
    }

    /// `sendsCredentialsToOtherOrigins` (curl's --location-trusted) keeps every credential across origins, and still
    /// drops the sensitive headers and the caller's Host.
    func testTrustedRedirectsKeepCredentialsAcrossOrigins() async throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request.headers[.authorization] = "Basic dXNlcjpwYXNz"
        request.headers[.cookie] = "mine=1"
        request.headers[xApiKey] = "secret"
        request.headers[host] = "a.test"
        request.credentials = HTTPCredentials(username: "user", password: "pass")
        request.sendsCredentialsPreemptively = true
        request.sensitiveHeaders = [xApiKey]
        var policy = RedirectPolicy()
        policy.sendsCredentialsToOtherOrigins = true
        let peer = ScriptedPeer([.redirect(302, to: "http://b.test/other"), .init(.ok)])
        _ = try await peer.send(request, through: redirect(policy))
        let next = peer.requests[1]
        XCTAssertEqual(next.headers[.authorization], "Basic dXNlcjpwYXNz")
        XCTAssertEqual(next.headers[.cookie], "mine=1")
        XCTAssertEqual(next.credentials, HTTPCredentials(username: "user", password: "pass"))
        XCTAssertTrue(next.sendsCredentialsPreemptively)
        XCTAssertNil(next.headers[xApiKey], "sensitive headers are still dropped")
        XCTAssertNil(next.headers[host])
        XCTAssertFalse(RedirectPolicy().sendsCredentialsToOtherOrigins, "off by default")
    }

    func testChangeOfPortOrSchemeIsAChangeOfOrigin() async throws {
        for target in ["http://a.test:8080/", "https://a.test/"] {
            var request = HTTPClientRequest(url: "http://a.test/")
            request.headers[.authorization] = "Bearer t"
            let peer = ScriptedPeer([.redirect(302, to: target), .init(.ok)])
            _ = try await peer.send(request, through: redirect())
            XCTAssertNil(peer.requests[1].headers[.authorization], target)
        }
    }

    func testPolicySensitiveHeadersAreDroppedAcrossOrigins() async throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request.headers[xApiKey] = "secret"
        request.headers[host] = "a.test"
        let peer = ScriptedPeer([.redirect(302, to: "http://b.test/"), .init(.ok)])
        _ = try await peer.send(request, through: redirect(.init(sensitiveHeaders: [xApiKey])))
        XCTAssertNil(peer.requests[1].headers[xApiKey])
        XCTAssertNil(peer.requests[1].headers[host], "a Host set for a.test must not go to b.test")
    }

    func testCredentialsDroppedOnLeavingTheOriginStayDroppedOnReturn() async throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request.headers[.authorization] = "Bearer t"
        let peer = ScriptedPeer([.redirect(302, to: "http://b.test/"), .redirect(302, to: "http://a.test/back"), .init(.ok)])
        _ = try await peer.send(request, through: redirect())
        XCTAssertNil(peer.requests[2].headers[.authorization], "as in Fetch: b.test chose where to send them")
    }

    func testHTTPSToHTTPRedirectIsRefusedUnlessAllowed() async throws {
        let refused = ScriptedPeer([.redirect(302, to: "http://a.test/plain"), .init(.ok)])
        await assertThrowsHTTPError(.redirectRefused) {
            try await refused.send(HTTPClientRequest(url: "https://a.test/"), through: self.redirect())
        }
        XCTAssertEqual(refused.requests.count, 1)

        let allowed = ScriptedPeer([.redirect(302, to: "http://a.test/plain"), .init(.ok)])
        let response = try await allowed.send(HTTPClientRequest(url: "https://a.test/"),
                                              through: redirect(.init(allowsHTTPSToHTTP: true)))
        XCTAssertEqual(response.url.description, "http://a.test/plain")
    }

    func testHTTPToHTTPSIsFollowed() async throws {
        let peer = ScriptedPeer([.redirect(301, to: "https://a.test/"), .init(.ok)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: redirect())
        XCTAssertEqual(response.url.description, "https://a.test/")
    }

    // MARK: Switches and results

    func testDisabledPolicyReturnsTheRedirectItself() async throws {
        let peer = ScriptedPeer([.redirect(302, to: "/next"), .init(.ok)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: redirect(.disabled))
        XCTAssertEqual(response.status.code, 302)
        XCTAssertEqual(response.headers[.location], "/next")
        XCTAssertEqual(peer.requests.count, 1)
    }

    func testPerRequestPolicyOverridesTheClients() async throws {
        var off = HTTPClientRequest(url: "http://a.test/")
        off.redirectPolicy = .disabled
        let peer = ScriptedPeer([.redirect(302, to: "/next"), .init(.ok)])
        let response = try await peer.send(off, through: redirect())
        XCTAssertEqual(response.status.code, 302, "ASIHTTPRequest's shouldRedirect = NO")

        var on = HTTPClientRequest(url: "http://a.test/")
        on.redirectPolicy = RedirectPolicy()
        let second = ScriptedPeer([.redirect(302, to: "/next"), .init(.ok)])
        let followed = try await second.send(on, through: redirect(.disabled))
        XCTAssertEqual(followed.status, .ok)
    }

    func testResponseCarriesFinalURLOriginalURLAndHistory() async throws {
        let peer = ScriptedPeer([
            .redirect(301, to: "/b", extra: HTTPFields([("Set-Cookie", "x=1")])),
            .redirect(307, to: "http://c.test/c"),
            .init(.ok, body: Array("done".utf8)),
        ])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/a"), through: redirect())
        XCTAssertEqual(response.url.description, "http://c.test/c")
        XCTAssertEqual(response.originalURL.description, "http://a.test/a")
        XCTAssertEqual(response.history.map(\.url.description), ["http://a.test/a", "http://a.test/b"])
        XCTAssertEqual(response.history.map(\.status.code), [301, 307])
        XCTAssertEqual(response.history.map(\.method), [.get, .get])
        XCTAssertEqual(response.history[0].headers[.setCookie], "x=1")
        let body = try await response.body.collect(upTo: 100)
        XCTAssertEqual(body, Array("done".utf8))
    }

    func testWithoutRedirectsOriginalURLIsTheURL() async throws {
        let peer = ScriptedPeer([.init(.ok)])
        let response = try await peer.send(HTTPClientRequest(url: "http://a.test/x?y=1"), through: redirect())
        XCTAssertEqual(response.originalURL, response.url)
        XCTAssertTrue(response.history.isEmpty)
    }

    func testRedirectBodiesAreReadToTheirEndBeforeTheNextHop() async throws {
        let peer = ScriptedPeer { _, index in index < 2 ? .redirect(302, to: "/\(index + 1)") : .init(.ok, body: [1]) }
        _ = try await peer.send(HTTPClientRequest(url: "http://a.test/0"), through: redirect())
        XCTAssertEqual(peer.completedBodies, 2, "both redirect bodies drained (their connections can be reused); the final one is the caller's")
    }

    func testInvalidRequestURLFailsAsInvalidURL() async throws {
        let peer = ScriptedPeer([.init(.ok)])
        await assertThrowsHTTPError(.invalidURL) {
            try await peer.send(HTTPClientRequest(url: "not a url"), through: self.redirect())
        }
        XCTAssertTrue(peer.requests.isEmpty)
    }

    /// A server behind one Unix socket cannot send the client to another socket (`//%2Fother.sock/x`, a
    /// network-path reference, names a socket), as curl's --unix-socket never changes on a redirect. Paths on
    /// the same socket are followed.
    func testARedirectStaysOnItsUnixSocket() throws {
        let base = try HTTPURL("http+unix://%2Frun%2Fapp.sock/upload")
        for location in ["//%2Fvar%2Frun%2Fdocker.sock/containers/create", "//%00abstract/x"] {
            XCTAssertThrowsError(try RedirectMiddleware.resolve(location, against: base), location) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .redirectRefused, "\(error)")
            }
        }
        XCTAssertEqual(try RedirectMiddleware.resolve("/next", against: base).unixSocketPath, "/run/app.sock")
        XCTAssertEqual(try RedirectMiddleware.resolve("//%2Frun%2Fapp.sock/y", against: base).unixSocketPath, "/run/app.sock")
    }
}
