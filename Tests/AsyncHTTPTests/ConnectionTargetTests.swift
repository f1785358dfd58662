import XCTest

@testable import AsyncHTTP

/// The pure parts of reaching servers: curl's `--resolve` and `--connect-to` syntax, which endpoint a request
/// is dialled at, Unix socket addresses, and the Happy Eyeballs schedule as sequences of events and actions.
final class ConnectionTargetTests: XCTestCase {
    // MARK: --resolve

    func testResolveOverrideParsesCurlSyntax() throws {
        let plain = try ResolveOverride("Example.com:443:127.0.0.1")
        XCTAssertEqual(plain.host, "example.com")
        XCTAssertEqual(plain.port, 443)
        XCTAssertEqual(plain.addresses, ["127.0.0.1"])

        let several = try ResolveOverride("example.com:8080:[::1],127.0.0.1")
        XCTAssertEqual(several.addresses, ["::1", "127.0.0.1"])

        let wildcard = try ResolveOverride("*:80:127.0.0.1")
        XCTAssertTrue(wildcard.matches(host: "anything.test", port: 80))
        XCTAssertFalse(wildcard.matches(host: "anything.test", port: 81))
    }

    func testResolveOverrideRefusesWhatCurlRefuses() {
        for text in ["example.com", "example.com:443", "example.com:http:127.0.0.1", "example.com:0:127.0.0.1",
                     "example.com:443:", "example.com:443:not-an-address", ":443:127.0.0.1"] {
            XCTAssertThrowsError(try ResolveOverride(text), text) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .invalidConfiguration, text)
            }
        }
    }

    // MARK: --connect-to

    func testConnectToParsesCurlSyntaxWithEmptyParts() throws {
        let full = try ConnectToOverride("example.com:443:backend.test:8443")
        XCTAssertEqual(full.host, "example.com")
        XCTAssertEqual(full.port, 443)
        XCTAssertEqual(full.targetHost, "backend.test")
        XCTAssertEqual(full.targetPort, 8443)

        let any = try ConnectToOverride("::backend.test:")
        XCTAssertNil(any.host)
        XCTAssertNil(any.port)
        XCTAssertEqual(any.targetHost, "backend.test")
        XCTAssertNil(any.targetPort)
        XCTAssertTrue(any.matches(host: "whatever.test", port: 1234))

        let ipv6 = try ConnectToOverride("example.com:80:[::1]:8080")
        XCTAssertEqual(ipv6.targetHost, "::1")
        XCTAssertEqual(ipv6.targetPort, 8080)
    }

    func testConnectToRefusesMalformedRules() {
        for text in ["example.com:443:backend", "a:b:c:d", "example.com:443:backend:70000", "x:1:2:3:4"] {
            XCTAssertThrowsError(try ConnectToOverride(text), text) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .invalidConfiguration, text)
            }
        }
    }

    // MARK: Which endpoint

    func testNoOverridesMeansPlainDNS() {
        XCTAssertNil(ConnectionTargets().endpoint(host: "example.com", port: 443))
    }

    func testResolveGivesTheAddressesForItsHostAndPortOnly() throws {
        let targets = ConnectionTargets(resolve: [try ResolveOverride("example.com:443:127.0.0.1,::1")])
        XCTAssertEqual(targets.endpoint(host: "example.com", port: 443), .addresses(["127.0.0.1", "::1"], port: 443))
        XCTAssertNil(targets.endpoint(host: "example.com", port: 80))
        XCTAssertNil(targets.endpoint(host: "other.com", port: 443))
    }

    func testAnExactResolveEntryWinsOverTheWildcard() throws {
        let targets = ConnectionTargets(resolve: [try ResolveOverride("*:443:127.0.0.2"), try ResolveOverride("example.com:443:127.0.0.1")])
        XCTAssertEqual(targets.endpoint(host: "example.com", port: 443), .addresses(["127.0.0.1"], port: 443))
        XCTAssertEqual(targets.endpoint(host: "other.com", port: 443), .addresses(["127.0.0.2"], port: 443))
    }

    func testConnectToMovesAndThenResolveAppliesToTheNewTarget() throws {
        let moved = ConnectionTargets(connectTo: [try ConnectToOverride("example.com:443:backend.test:8443")])
        XCTAssertEqual(moved.endpoint(host: "example.com", port: 443), .host("backend.test", port: 8443))
        XCTAssertNil(moved.endpoint(host: "example.com", port: 80))

        var both = moved
        both.resolve = [try ResolveOverride("backend.test:8443:127.0.0.1")]
        XCTAssertEqual(both.endpoint(host: "example.com", port: 443), .addresses(["127.0.0.1"], port: 8443))
    }

    func testAConnectToRuleThatChangesNothingIsPlainDNS() throws {
        let targets = ConnectionTargets(connectTo: [try ConnectToOverride("example.com:443::")])
        XCTAssertNil(targets.endpoint(host: "example.com", port: 443))
    }

    func testAUnixSocketReplacesEveryOtherOverride() throws {
        let targets = ConnectionTargets(resolve: [try ResolveOverride("*:80:127.0.0.1")],
                                        connectTo: [try ConnectToOverride("::backend:1")], unixSocket: .path("/run/x.sock"))
        XCTAssertEqual(targets.endpoint(host: "example.com", port: 80), .unixSocket(.path("/run/x.sock")))
    }

    // MARK: Through a proxy (curl's rules)

    func testThroughAProxyConnectToMovesWhatTheProxyReachesAndResolveAppliesToNamesResolvedHere() throws {
        let http = ProxyConfiguration(kind: .http, host: "proxy.test", port: 3128)
        let socks5h = ProxyConfiguration(kind: .socks5h, host: "proxy.test", port: 3128)
        let socks5 = ProxyConfiguration(kind: .socks5, host: "proxy.test", port: 3128)
        let resolve = [try ResolveOverride("proxy.test:3128:127.0.0.9"), try ResolveOverride("example.com:80:127.0.0.1"),
                       try ResolveOverride("backend.test:8080:127.0.0.2")]
        let moved = ConnectionTargets(resolve: resolve, connectTo: [try ConnectToOverride("::backend.test:8080")])
        // The rule matches every host and port, but never the proxy's: the proxy is dialled where --resolve says.
        XCTAssertEqual(moved.proxyEndpoint(http), .addresses(["127.0.0.9"], port: 3128))
        XCTAssertEqual(moved.proxyTarget(host: "example.com", port: 80, through: http), .host("backend.test", port: 8080))
        XCTAssertEqual(moved.proxyTarget(host: "example.com", port: 80, through: socks5h), .host("backend.test", port: 8080))
        XCTAssertEqual(moved.proxyTarget(host: "example.com", port: 80, through: socks5), .addresses(["127.0.0.2"], port: 8080))

        // Without a rule, the origin's --resolve entry counts only where the client resolves the origin: socks5.
        let resolveOnly = ConnectionTargets(resolve: resolve)
        XCTAssertNil(resolveOnly.proxyTarget(host: "example.com", port: 80, through: http))
        XCTAssertNil(resolveOnly.proxyTarget(host: "example.com", port: 80, through: socks5h))
        XCTAssertEqual(resolveOnly.proxyTarget(host: "example.com", port: 80, through: socks5), .addresses(["127.0.0.1"], port: 80))
        XCTAssertNil(ConnectionTargets(resolve: resolve).proxyEndpoint(ProxyConfiguration(kind: .http, host: "other.test", port: 3128)))
        // A rule that names neither a host nor a port moves nothing, through a proxy too.
        XCTAssertNil(ConnectionTargets(connectTo: [try ConnectToOverride("example.com:80::")])
            .proxyTarget(host: "example.com", port: 80, through: http))
    }

    func testAPlainHTTPURLGoesThroughATunnelWhenARuleMovesItOrTheProxyAlwaysTunnels() throws {
        let http = ProxyConfiguration(kind: .http, host: "proxy.test", port: 3128)
        let router = ProxyRouter(.proxy(http), targets: ConnectionTargets(connectTo: [try ConnectToOverride("example.com:80:backend.test:8080")]))
        let moved = HTTPClientRequest(url: "http://example.com/")
        let other = HTTPClientRequest(url: "http://example.org/")
        XCTAssertFalse(router.sendsAbsoluteForm(moved, url: try moved.httpURL(), to: http), "curl's test 2050: a tunnel to the rule's target")
        XCTAssertTrue(router.sendsAbsoluteForm(other, url: try other.httpURL(), to: http))
        var tunnelling = http
        tunnelling.alwaysTunnel = true
        XCTAssertFalse(router.sendsAbsoluteForm(other, url: try other.httpURL(), to: tunnelling))
        let secure = HTTPClientRequest(url: "https://example.org/")
        XCTAssertFalse(router.sendsAbsoluteForm(secure, url: try secure.httpURL(), to: http))
        XCTAssertFalse(router.sendsAbsoluteForm(other, url: try other.httpURL(), to: nil))
        // A request's own rules replace the client's.
        var own = other
        own.connectTo = [try ConnectToOverride("::backend.test:")]
        XCTAssertFalse(router.sendsAbsoluteForm(own, url: try own.httpURL(), to: http))
        var none = moved
        none.connectTo = []
        XCTAssertTrue(router.sendsAbsoluteForm(none, url: try none.httpURL(), to: http))
        // A Unix socket is dialled directly, as the transport does: the auth step must not build a proxy's side.
        var socket = other
        socket.unixSocket = .path("/run/app.sock")
        XCTAssertFalse(router.sendsAbsoluteForm(socket, url: try socket.httpURL(), to: http))
        let unixURL = HTTPClientRequest(url: "http+unix://%2Frun%2Fapp.sock/x")
        XCTAssertFalse(router.sendsAbsoluteForm(unixURL, url: try unixURL.httpURL(), to: http))

        // The target is part of the pool key, and makes a plain-http key a tunnel.
        let plain = ConnectionKey(scheme: "http", host: "example.com", port: 80, proxy: http)
        let tunnel = ConnectionKey(scheme: "http", host: "example.com", port: 80, proxy: http, target: .host("backend.test", port: 8080))
        XCTAssertFalse(plain.tunnelsThroughProxy)
        XCTAssertTrue(tunnel.tunnelsThroughProxy)
        XCTAssertNotEqual(plain, tunnel)
        XCTAssertEqual(tunnel.description, "http://example.com:80 via http://proxy.test:3128 to backend.test:8080")
        XCTAssertTrue(tunnel.proxyTarget == ("backend.test", 8080, nil))
        XCTAssertTrue(ConnectionKey(scheme: "http", host: "example.com", port: 80, proxy: tunnelling).tunnelsThroughProxy)
        XCTAssertNil(ConnectionKey(scheme: "http", host: "example.com", port: 80, target: .host("x", port: 1)).target,
                     "a target without a proxy is nothing")
    }

    func testARequestsOwnSettingsReplaceTheClients() throws {
        let client = ConnectionTargets(resolve: [try ResolveOverride("example.com:80:127.0.0.1")], unixSocket: .path("/a"))
        var options = ConnectionTargetOptions()
        XCTAssertTrue(options.isUnset)
        options.unixSocket = .abstract("b")
        let merged = client.applying(options)
        XCTAssertEqual(merged.unixSocket, .abstract("b"))
        XCTAssertEqual(merged.resolve, client.resolve)

        var request = HTTPClientRequest(url: "http://example.com/")
        request.resolve = []
        XCTAssertEqual(client.applying(request[ConnectionTargetOptions.self]).resolve, [])
    }

    func testTheEndpointIsPartOfThePoolKey() throws {
        let plain = ConnectionKey(scheme: "http", host: "example.com", port: 80)
        var overridden = plain
        overridden.endpoint = .addresses(["127.0.0.1"], port: 80)
        XCTAssertNotEqual(plain, overridden)
        XCTAssertEqual(overridden.description, "http://example.com:80 at 127.0.0.1:80")
        var unix = plain
        unix.endpoint = .unixSocket(.abstract("name"))
        XCTAssertEqual(unix.description, "http://example.com:80 at unix:@name")
    }

    func testKeysWithEqualPartsAreEqualAndHashAlike() throws {
        let proxy = ProxyConfiguration(kind: .http, host: "proxy", port: 3128)
        let a = ConnectionKey(scheme: "http", host: "example.com", port: 80, proxy: proxy)
        var b = ConnectionKey(scheme: "http", host: "example.com", port: 80)
        b.proxy = proxy  // the same parts, set afterwards and boxed apart
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.hashValue, b.hashValue)
        XCTAssertEqual(Set([a, b]).count, 1)
        b.proxy = nil
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(b, ConnectionKey(scheme: "http", host: "example.com", port: 80))
        XCTAssertNotEqual(b, ConnectionKey(scheme: "https", host: "example.com", port: 80))
        XCTAssertNotEqual(b, ConnectionKey(scheme: "http", host: "example.org", port: 80))
        XCTAssertNotEqual(b, ConnectionKey(scheme: "http", host: "example.com", port: 81))
        var c = b
        c.endpoint = .host("other", port: 80)
        XCTAssertNotEqual(b, c)
        c.endpoint = nil
        XCTAssertEqual(b, c)
        XCTAssertEqual(b.hashValue, c.hashValue)
    }

    // MARK: Unix socket addresses

    func testUnixSocketAddressLengths() throws {
        let path = try SocketAddress(unix: .path("/tmp/a.sock"))
        XCTAssertEqual(path.family, AF_UNIX)
        XCTAssertEqual(Int(path.length), 2 + 11 + 1, "family, path, terminating NUL")
        XCTAssertEqual(path.description, "unix:/tmp/a.sock")

        let abstract = try SocketAddress(unix: .abstract("asynchttp"))
        XCTAssertEqual(Int(abstract.length), 2 + 1 + 9, "family, leading NUL, name, no terminator")
        XCTAssertEqual(abstract.description, "unix:@asynchttp")
    }

    func testUnixSocketPathsThatCannotFitAreRefusedWithTheReason() {
        let longest = "/" + String(repeating: "a", count: 106)
        XCTAssertNoThrow(try SocketAddress(unix: .path(longest)))
        XCTAssertThrowsError(try SocketAddress(unix: .path(longest + "a"))) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .invalidRequest)
            XCTAssertTrue("\(error)".contains("108 bytes long; at most 107 fit in sun_path"), "\(error)")
        }
        XCTAssertThrowsError(try SocketAddress(unix: .path(""))) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .invalidRequest)
        }
        XCTAssertThrowsError(try SocketAddress(unix: .path("/tmp/a\0b"))) { error in
            XCTAssertTrue("\(error)".contains("NUL"), "\(error)")
        }
    }

    // MARK: http+unix URLs

    func testUnixSocketURLsParseAndPrintBack() throws {
        let url = try HTTPURL("http+unix://%2Fvar%2Frun%2FDocker.sock/v1.45/info?all=1")
        XCTAssertTrue(url.isUnixSocket)
        XCTAssertEqual(url.unixSocketPath, "/var/run/Docker.sock", "decoded, case kept")
        XCTAssertEqual(url.hostHeader, "localhost")
        XCTAssertEqual(url.requestTarget, "/v1.45/info?all=1")
        XCTAssertFalse(url.isSecure)
        XCTAssertEqual(url.description, "http+unix://%2Fvar%2Frun%2FDocker.sock/v1.45/info?all=1")
        XCTAssertEqual(try HTTPURL(url.description), url)
        XCTAssertEqual(try url.resolving("../v2/x").description, "http+unix://%2Fvar%2Frun%2FDocker.sock/v2/x")

        let secure = try HTTPURL("HTTPS+UNIX://user:pw@%2Frun%2Fa.sock")
        XCTAssertTrue(secure.isSecure)
        XCTAssertEqual(secure.port, 443)
        XCTAssertEqual(secure.user, "user")
        XCTAssertEqual(secure.redactedDescription, "https+unix://%2Frun%2Fa.sock/")
        XCTAssertFalse(try HTTPURL("http://localhost/").isUnixSocket)
        XCTAssertEqual(try HTTPURL("http+unix://%00name/").unixSocketPath, "\0name", "an abstract socket's name")
    }

    func testUnixSocketURLsRefuseAPortAndAnEmptyPath() {
        for (text, reason) in [("http+unix://%2Frun%2Fa.sock:80/", "has no port"), ("http+unix:///x", "missing socket path"),
                               ("ftp+unix://%2Fa/", "unsupported scheme")] {
            XCTAssertThrowsError(try HTTPURL(text), text) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .invalidURL, text)
                XCTAssertTrue("\(error)".contains(reason), "\(text): \(error)")
            }
        }
    }

    // MARK: Happy Eyeballs

    func testAddressesAreInterleavedStartingWithTheFirstFamily() {
        // (family, name): 6 = IPv6, 4 = IPv4.
        let resolved = [(6, "a"), (6, "b"), (6, "c"), (4, "x"), (4, "y")]
        XCTAssertEqual(HappyEyeballs.interleave(resolved) { Int32($0.0) }.map(\.1), ["a", "x", "b", "y", "c"])
        let v4First = [(4, "x"), (6, "a"), (6, "b"), (4, "y")]
        XCTAssertEqual(HappyEyeballs.interleave(v4First) { Int32($0.0) }.map(\.1), ["x", "a", "y", "b"])
        XCTAssertEqual(HappyEyeballs.interleave([(4, "x")]) { Int32($0.0) }.map(\.1), ["x"])
        XCTAssertTrue(HappyEyeballs.interleave([(Int, String)]()) { Int32($0.0) }.isEmpty)
    }

    func testTheNextAttemptStartsWhenTheDelayTimerFires() {
        var schedule = HappyEyeballs.Schedule(count: 3)
        XCTAssertEqual(schedule.begin(), .start(index: 0, timer: 1))
        XCTAssertEqual(schedule.timerFired(generation: 1), .start(index: 1, timer: 2))
        XCTAssertEqual(schedule.timerFired(generation: 2), .start(index: 2, timer: nil), "the last attempt arms no timer")
        XCTAssertEqual(schedule.timerFired(generation: 2), .wait)
        XCTAssertEqual(schedule.attemptFailed(), .wait, "two attempts still run")
        XCTAssertEqual(schedule.attemptFailed(), .wait)
        XCTAssertEqual(schedule.attemptFailed(), .giveUp)
    }

    func testAFailureStartsTheNextAttemptAtOnceAndTheOldTimerIsIgnored() {
        var schedule = HappyEyeballs.Schedule(count: 3)
        XCTAssertEqual(schedule.begin(), .start(index: 0, timer: 1))
        XCTAssertEqual(schedule.attemptFailed(), .start(index: 1, timer: 2), "refused: the next one now (RFC 8305 §5)")
        XCTAssertEqual(schedule.timerFired(generation: 1), .wait, "the first attempt's timer is stale")
        XCTAssertEqual(schedule.timerFired(generation: 2), .start(index: 2, timer: nil))
        XCTAssertEqual(schedule.attemptFailed(), .wait)
        XCTAssertEqual(schedule.attemptFailed(), .giveUp)
    }

    func testASingleAddressIsOneAttemptWithoutATimer() {
        var schedule = HappyEyeballs.Schedule(count: 1)
        XCTAssertEqual(schedule.begin(), .start(index: 0, timer: nil))
        XCTAssertEqual(schedule.attemptFailed(), .giveUp)
    }
}
