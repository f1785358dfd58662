import XCTest

@testable import AsyncHTTP

/// Proxy URLs, the `*_proxy` environment variables and `no_proxy` matching: pure logic, no sockets.
final class ProxyConfigurationTests: XCTestCase {
    func testProxyURLForms() throws {
        let plain = try ProxyConfiguration(url: "proxy.internal:3128")
        XCTAssertEqual(plain, ProxyConfiguration(kind: .http, host: "proxy.internal", port: 3128))
        XCTAssertEqual(try ProxyConfiguration(url: "http://proxy.internal").port, 1080, "curl's default proxy port")
        let socks = try ProxyConfiguration(url: "SOCKS5H://u%40x:p%3Aw@[::1]:9050")
        XCTAssertEqual(socks.kind, .socks5h)
        XCTAssertEqual(socks.host, "::1")
        XCTAssertEqual(socks.port, 9050)
        XCTAssertEqual(socks.credentials, HTTPCredentials(username: "u@x", password: "p:w"))
        XCTAssertEqual(socks.description, "socks5h://[::1]:9050", "no credentials in the description")
        XCTAssertEqual(try ProxyConfiguration(url: "socks5://127.0.0.1:1080").kind, .socks5)
        let secure = try ProxyConfiguration(url: "HTTPS://proxy.internal")
        XCTAssertEqual(secure.kind, .https)
        XCTAssertEqual(secure.port, 443, "curl's default HTTPS proxy port")
        XCTAssertEqual(secure.description, "https://proxy.internal:443")
        XCTAssertTrue(secure.isHTTP)
        XCTAssertFalse(secure.isSOCKS)
        XCTAssertEqual(try ProxyConfiguration(url: "https://proxy.internal:8443").port, 8443)
        let socks4 = try ProxyConfiguration(url: "socks4://ann:pw@gate")
        XCTAssertEqual(socks4, ProxyConfiguration(kind: .socks4, host: "gate", port: 1080, credentials: HTTPCredentials(username: "ann", password: "pw")))
        XCTAssertEqual(socks4.description, "socks4://gate:1080")
        XCTAssertTrue(socks4.isSOCKS && socks4.resolvesTargetLocally && !socks4.isHTTP)
        let socks4a = try ProxyConfiguration(url: "SOCKS4A://[::1]:9050")
        XCTAssertEqual(socks4a.kind, .socks4a)
        XCTAssertEqual(socks4a.description, "socks4a://[::1]:9050")
        XCTAssertTrue(socks4a.isSOCKS && !socks4a.resolvesTargetLocally)
        XCTAssertEqual(ProxyResolver(.environment, environment: ["all_proxy": "socks4a://gate:1081"])
            .proxy(for: try HTTPURL("https://example.com/"))?.kind, .socks4a, "a SOCKS4a proxy from the environment")
        do {
            _ = try ProxyConfiguration(url: "socks6://gate")
            XCTFail("socks6 accepted")
        } catch {
            XCTAssertEqual(error.message, "unsupported proxy scheme 'socks6' in proxy URL (use http, https, socks5, socks5h, socks4 or socks4a)")
        }
    }

    /// An HTTPS proxy from the environment, and its TLS settings part of the pool key: connections made trusting
    /// another CA for the proxy are not shared.
    func testHTTPSProxiesFromTheEnvironmentAndInPoolKeys() throws {
        let resolver = ProxyResolver(.environment, environment: ["https_proxy": "https://secure:8443", "no_proxy": ""])
        let proxy = try XCTUnwrap(resolver.proxy(for: try HTTPURL("https://example.com/")))
        XCTAssertEqual(proxy.kind, .https)
        XCTAssertEqual(proxy.tls, TLSConfiguration(), "the system's CAs, verified")
        var key = ConnectionKey(scheme: "https", host: "h", port: 443)
        key.proxy = proxy
        var otherTrust = key
        otherTrust.proxy?.tls.trustRoots = .file("/tmp/other-ca.pem")
        var plainProxy = key
        plainProxy.proxy?.kind = .http
        XCTAssertEqual(Set([key, otherTrust, plainProxy]).count, 3)
    }

    /// `environmentProxy.tls` configures an `https://` proxy the environment names, wherever it is named, and no
    /// other kind: plain-http and SOCKS proxies have no TLS of their own.
    func testEnvironmentProxyTLSAppliesToHTTPSProxiesFromTheEnvironment() throws {
        var tls = TLSConfiguration()
        tls.trustRoots = .file("/tmp/proxy-ca.pem")
        tls.clientCertificate = .init(certificateFile: "/tmp/proxy-client.pem", privateKeyFile: "/tmp/proxy-client.key")
        let http = try HTTPURL("http://example.com/")
        let https = try HTTPURL("https://example.com/")
        let secure = ProxyResolver(.environment, environmentProxy: EnvironmentProxyOptions(tls: tls),
                                   environment: ["https_proxy": "https://secure:8443", "http_proxy": "http://web:3128"])
        XCTAssertEqual(secure.proxy(for: https)?.tls, tls)
        XCTAssertEqual(secure.proxy(for: http)?.tls, TLSConfiguration(), "an http:// proxy: no TLS to configure")
        let all = ProxyResolver(.environment, environmentProxy: EnvironmentProxyOptions(tls: tls), environment: ["all_proxy": "https://everything:443"])
        XCTAssertEqual(all.proxy(for: http)?.tls, tls, "all_proxy's HTTPS proxy, for plain-http URLs too")
        XCTAssertEqual(ProxyResolver(.environment, environmentProxy: EnvironmentProxyOptions(tls: tls), environment: ["all_proxy": "socks5h://sock:1080"])
            .proxy(for: https)?.tls, TLSConfiguration())
        // A proxy given explicitly keeps its own settings.
        let explicit = try ProxyConfiguration(url: "https://given:443")
        XCTAssertEqual(ProxyResolver(.proxy(explicit), environmentProxy: EnvironmentProxyOptions(tls: tls)).proxy(for: https)?.tls, TLSConfiguration())
        // And the router hands it to requests that ask for the environment while the client has another setting.
        let router = ProxyRouter(.none, environmentProxy: EnvironmentProxyOptions(tls: tls), environment: ["https_proxy": "https://secure:8443"])
        var request = HTTPClientRequest(url: "https://example.com/")
        request.proxy = .environment
        XCTAssertEqual(try router.route(for: request, url: https)?.tls, tls)
    }

    func testBadProxyURLsAreTypedErrors() {
        for bad in ["ftp://proxy:21", "http://proxy:3128/path", "http://", "http://proxy:99999"] {
            XCTAssertThrowsError(try ProxyConfiguration(url: bad), bad) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .invalidURL, bad)
            }
        }
    }

    func testEnvironmentPicksTheProxyByScheme() throws {
        let resolver = ProxyResolver(.environment, environment: [
            "http_proxy": "http://web:3128", "HTTPS_PROXY": "http://secure:3129", "no_proxy": "",
        ])
        XCTAssertEqual(resolver.proxy(for: try HTTPURL("http://example.com/"))?.host, "web")
        XCTAssertEqual(resolver.proxy(for: try HTTPURL("https://example.com/"))?.host, "secure")
        let all = ProxyResolver(.environment, environment: ["ALL_PROXY": "socks5h://sock:1080"])
        XCTAssertEqual(all.proxy(for: try HTTPURL("http://example.com/"))?.kind, .socks5h)
        XCTAssertEqual(all.proxy(for: try HTTPURL("https://example.com/"))?.kind, .socks5h)
        XCTAssertNil(ProxyResolver(.environment, environment: [:]).proxy(for: try HTTPURL("http://example.com/")))
    }

    func testLowerCaseWinsAndUpperCaseHTTPProxyIsIgnoredUnderCGI() throws {
        let both = ProxyResolver(.environment, environment: ["http_proxy": "lower:1", "HTTP_PROXY": "upper:2"])
        XCTAssertEqual(both.proxy(for: try HTTPURL("http://example.com/"))?.host, "lower")
        let cgi = ProxyResolver(.environment, environment: ["HTTP_PROXY": "attacker:80", "REQUEST_METHOD": "GET"])
        XCTAssertNil(cgi.proxy(for: try HTTPURL("http://example.com/")), "httpoxy: a CGI program's HTTP_PROXY comes from the request")
    }

    func testLoopbackIsNeverProxiedFromTheEnvironment() throws {
        let resolver = ProxyResolver(.environment, environment: ["all_proxy": "http://proxy:3128"])
        for url in ["http://127.0.0.1:8080/", "http://[::1]/", "http://localhost/", "https://app.localhost/"] {
            XCTAssertNil(resolver.proxy(for: try HTTPURL(url)), url)
        }
        // An explicit proxy is used for loopback too: the caller asked for it.
        let explicit = ProxyResolver(.proxy(ProxyConfiguration(kind: .http, host: "proxy", port: 1)))
        XCTAssertNotNil(explicit.proxy(for: try HTTPURL("http://127.0.0.1/")))
    }

    func testInvalidEnvironmentProxyIsReported() throws {
        let resolver = ProxyResolver(.environment, environment: ["https_proxy": "gopher://x"])
        XCTAssertEqual(resolver.problem?.code, .invalidURL)
        XCTAssertTrue(resolver.problem?.message.contains("https_proxy") ?? false)
    }

    /// `environmentProxy`'s tunnelling and credential settings go to every proxy read from the environment, of
    /// any kind, and to none given in code.
    func testEnvironmentProxyOptionsApplyToEveryProxyFromTheEnvironment() throws {
        let options = EnvironmentProxyOptions(alwaysTunnel: true, sendsCredentialsPreemptively: true, authenticationSchemes: [.digest])
        let resolver = ProxyResolver(.environment, environmentProxy: options,
                                     environment: ["http_proxy": "http://u:p@web:3128", "https_proxy": "socks5h://sock:1080"])
        for url in ["http://example.com/", "https://example.com/"] {
            let proxy = try XCTUnwrap(resolver.proxy(for: try HTTPURL(url)))
            XCTAssertTrue(proxy.alwaysTunnel, url)
            XCTAssertTrue(proxy.sendsCredentialsPreemptively, url)
            XCTAssertEqual(proxy.authenticationSchemes, [.digest], url)
        }
        let plain = try XCTUnwrap(ProxyResolver(.environment, environment: ["http_proxy": "http://u:p@web:3128"])
            .proxy(for: try HTTPURL("http://example.com/")))
        XCTAssertFalse(plain.alwaysTunnel || plain.sendsCredentialsPreemptively, "off by default")
        XCTAssertNil(plain.authenticationSchemes)
        let explicit = try ProxyConfiguration(url: "http://given:3128")
        XCTAssertEqual(ProxyResolver(.proxy(explicit), environmentProxy: options).proxy(for: try HTTPURL("http://example.com/")), explicit)
    }

    /// A bad proxy variable fails the requests that would go through it, not every request: not plain http when
    /// only https_proxy is bad, not loopback, not a host no_proxy names (they all failed with `.invalidURL`).
    func testABadProxyVariableFailsOnlyTheRequestsThatWouldUseIt() throws {
        let resolver = ProxyResolver(.environment, environment: ["https_proxy": "ftp://proxy.corp:8443", "no_proxy": "intranet.test"])
        XCTAssertEqual(resolver.problem(for: try HTTPURL("https://example.com/"))?.code, .invalidURL)
        XCTAssertNil(resolver.problem(for: try HTTPURL("http://example.com/")), "plain http does not use https_proxy")
        XCTAssertNil(resolver.problem(for: try HTTPURL("https://localhost:8443/")), "loopback bypasses proxies")
        XCTAssertNil(resolver.problem(for: try HTTPURL("https://intranet.test/")), "no_proxy bypasses it")

        let all = ProxyResolver(.environment, environment: ["all_proxy": "socks6://old:1080", "https_proxy": "http://good:3128"])
        XCTAssertEqual(all.problem(for: try HTTPURL("http://example.com/"))?.code, .invalidURL, "http falls back to the bad all_proxy")
        XCTAssertNil(all.problem(for: try HTTPURL("https://example.com/")), "https has a good variable of its own")
        XCTAssertEqual(all.proxy(for: try HTTPURL("https://example.com/"))?.host, "good")
    }

    func testNoProxyMatching() {
        let list = NoProxyList(" example.com, .internal.test,10.0.0.0/8 , 192.168.1.7, fd00::/8, [::2]:8443,api.test:8080")
        let cases: [(String, Int, Bool)] = [
            ("example.com", 80, true), ("www.example.com", 443, true), ("badexample.com", 80, false),
            ("internal.test", 80, true), ("a.b.internal.test", 80, true),
            ("10.1.2.3", 80, true), ("11.1.2.3", 80, false), ("192.168.1.7", 80, true), ("192.168.1.8", 80, false),
            ("fd12::1", 80, true), ("fe80::1", 80, false), ("::2", 8443, true), ("::2", 443, false),
            ("api.test", 8080, true), ("api.test", 80, false), ("EXAMPLE.COM", 80, true),
        ]
        for (host, port, expected) in cases {
            XCTAssertEqual(list.matches(host: host, port: port), expected, "\(host):\(port)")
        }
        XCTAssertTrue(NoProxyList("*").matches(host: "anything.example", port: 1))
        XCTAssertFalse(NoProxyList("").matches(host: "example.com", port: 80))
    }

    func testExplicitProxyBypassList() throws {
        let resolver = ProxyResolver(.proxy(ProxyConfiguration(kind: .http, host: "proxy", port: 1), bypass: "skip.test"))
        XCTAssertNil(resolver.proxy(for: try HTTPURL("http://skip.test/")))
        XCTAssertNotNil(resolver.proxy(for: try HTTPURL("http://other.test/")))
        XCTAssertNil(ProxyResolver(.none).proxy(for: try HTTPURL("http://other.test/")))
    }

    func testPoolKeysDifferByProxyAndProxyUser() {
        let direct = ConnectionKey(scheme: "http", host: "h", port: 80)
        var viaA = direct
        viaA.proxy = ProxyConfiguration(kind: .http, host: "proxy", port: 3128)
        var viaAasBob = viaA
        viaAasBob.proxy?.credentials = HTTPCredentials(username: "bob", password: "x")
        XCTAssertEqual(Set([direct, viaA, viaAasBob]).count, 3)
        XCTAssertFalse(viaAasBob.description.contains("bob"))
    }

    func testCredentialsNeverPrintTheirPassword() {
        let credentials = HTTPCredentials(username: "alice", password: "s3cret", domain: "CORP")
        XCTAssertFalse("\(credentials)".contains("s3cret"))
        XCTAssertTrue("\(credentials)".contains("CORP\\alice"))
    }

    // MARK: The router: decided once per hop, the environment read once

    func testRouterReadsTheEnvironmentOnceEvenForRequestsThatAskForIt() throws {
        // The client is set to go direct; a request asking for `.environment` gets the environment as it was when
        // the client was made (here: given), not as it is at request time.
        let router = ProxyRouter(.none, environment: ["http_proxy": "http://web:3128"])
        var request = HTTPClientRequest(url: "http://example.com/")
        let url = try request.httpURL()
        XCTAssertNil(try router.route(for: request, url: url))
        request.proxy = .environment
        XCTAssertEqual(try router.route(for: request, url: url)?.host, "web")
    }

    func testAProxiedDecisionIsRecordedAndTakenByTheNextStepForTheSameURLOnly() throws {
        let router = ProxyRouter(.proxy(ProxyConfiguration(kind: .http, host: "first", port: 1)), environment: [:])
        var request = HTTPClientRequest(url: "http://example.com/a")
        XCTAssertEqual(try router.route(recordingOn: &request, url: try request.httpURL())?.host, "first")
        XCTAssertEqual(request[ProxyRouteOption.self]?.proxy.host, "first")

        // A router with another setting (standing in for "decided again") is not asked: the recorded decision wins.
        let other = ProxyRouter(.proxy(ProxyConfiguration(kind: .http, host: "second", port: 2)), environment: [:])
        XCTAssertEqual(try other.route(for: request, url: try request.httpURL())?.host, "first")

        // A new URL (a redirect hop) or a new proxy setting is decided afresh.
        request.url = "http://example.com/b"
        XCTAssertEqual(try other.route(for: request, url: try request.httpURL())?.host, "second")
        request.url = "http://example.com/a"
        request.proxy = ProxySetting.none
        XCTAssertNil(try other.route(for: request, url: try request.httpURL()))
    }

    func testADirectDecisionIsNotRecorded() throws {
        var request = HTTPClientRequest(url: "http://example.com/")
        XCTAssertNil(try ProxyRouter(.none, environment: [:]).route(recordingOn: &request, url: try request.httpURL()))
        XCTAssertNil(request[ProxyRouteOption.self], "a direct route costs nothing to find again; recording it would copy the box")
    }

    /// A proxy URL whose password holds a '#' (or '/', '?') unencoded ends its authority early, and the parser
    /// then reads the password as the port: its message must not quote it. All-digit passwords used to show
    /// up as "port … out of range", and a '#' before digits made a valid-looking proxy of the user name.
    func testAnInvalidProxyURLNeverQuotesItsPassword() {
        for url in ["http://u:Sup3rS3cret#1@p:3128", "http://u:12345678901#x@p:3128", "http://u:abc/Sup3rS3cret@p:3128",
                    "http://u:123#Sup3rS3cret@p:3128"] {
            XCTAssertThrowsError(try ProxyConfiguration(url: url), url) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .invalidURL)
                for secret in ["Sup3rS3cret", "12345678901"] {
                    XCTAssertFalse("\(error)".contains(secret), "\(url): \(error)")
                }
            }
            let resolver = ProxyResolver(.environment, environment: ["https_proxy": url])
            let problem = resolver.problem.map { "\($0)" } ?? ""
            XCTAssertFalse(problem.isEmpty, url)
            XCTAssertFalse(problem.contains("Sup3rS3cret") || problem.contains("12345678901"), problem)
        }
    }

    /// An IPv6 proxy without a port takes curl's default, 1080: the colons inside the brackets are no port.
    func testAnIPv6ProxyWithoutAPortGetsTheDefaultPort() throws {
        XCTAssertEqual(try ProxyConfiguration(url: "socks5://[::1]").port, 1080)
        XCTAssertEqual(try ProxyConfiguration(url: "http://u:p@[::1]").port, 1080)
        XCTAssertEqual(try ProxyConfiguration(url: "socks5h://[::1]:9050").port, 9050)
    }

    /// A host with a trailing dot is the same host: `intranet.corp.` matches `no_proxy=corp`, `localhost.` is
    /// loopback, and an entry written with a trailing dot matches the host without one.
    func testATrailingDotDoesNotTakeAHostPastNoProxy() throws {
        XCTAssertTrue(NoProxyList("corp").matches(host: "x.corp.", port: 80))
        XCTAssertTrue(NoProxyList("corp.").matches(host: "x.corp", port: 80))
        XCTAssertFalse(NoProxyList("corp").matches(host: "x.corpx.", port: 80))
        let resolver = ProxyResolver(.environment, environment: ["http_proxy": "http://proxy:3128", "no_proxy": "corp"])
        XCTAssertNil(resolver.proxy(for: try HTTPURL("http://intranet.corp./")))
        XCTAssertNil(resolver.proxy(for: try HTTPURL("http://localhost./")))
        XCTAssertNotNil(resolver.proxy(for: try HTTPURL("http://example.com./")))
    }

    /// A proxy's port is any `Int` in its public initializer; one outside 0…65535 is a typed error, not a trap in
    /// the conversion to the socket address's 16 bits (the process crashed).
    func testAProxyPortOutOfRangeIsATypedErrorNotACrash() async throws {
        let client = HTTPClient()
        for port in [70_000, -1] {
            var request = HTTPClientRequest(url: "http://127.0.0.1:9/")
            request.proxy = .proxy(ProxyConfiguration(kind: .http, host: "127.0.0.1", port: port))
            do {
                _ = try await client.send(request)
                XCTFail("sent through a proxy on port \(port)")
            } catch let error as HTTPClientError {
                XCTAssertEqual(error.code, .invalidRequest, "\(error)")
                XCTAssertTrue(error.message.contains("\(port)"), error.message)
            }
        }
        await client.shutdown()
    }
}
