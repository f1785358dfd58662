import Foundation
import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// Every proxy kind against a real proxy started by `./scripts/test.sh`, reaching the nginx peer through it:
/// tinyproxy (open, and with Basic), squid with Digest, dante (SOCKS5), a Python RFC 1929 SOCKS5 server, and a
/// pyspnego NTLM origin and proxy.
final class ProxyIntegrationTests: XCTestCase {
    private var clients: [HTTPClient] = []

    override func tearDown() async throws {
        for client in clients { await client.shutdown() }
        clients = []
    }

    func client(proxy: ProxySetting, _ change: (inout HTTPClient.Configuration) -> Void = { _ in }) throws -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.tls.trustRoots = .file(try Peers.nginx().caFile)
        configuration.proxy = proxy
        change(&configuration)
        let client = HTTPClient(configuration: configuration)
        clients.append(client)
        return client
    }

    func proxy(_ url: String, user: String? = nil, password: String? = nil, domain: String? = nil) throws -> ProxySetting {
        var proxy = try ProxyConfiguration(url: url)
        if let user { proxy.credentials = HTTPCredentials(username: user, password: password ?? "", domain: domain) }
        return .proxy(proxy)
    }

    /// nginx's small.txt over http and https (through CONNECT or SOCKS), compared with the file on disk.
    func assertFetchesSmallFile(_ client: HTTPClient, host: String = "127.0.0.1", file: StaticString = #filePath, line: UInt = #line) async throws {
        let nginx = try Peers.nginx()
        let expected = try Data(contentsOf: URL(fileURLWithPath: try Peers.directory() + "/www/small.txt"))
        for url in ["http://\(host):\(nginx.httpPort)/small.txt", "https://\(host):\(nginx.httpsPort)/small.txt"] {
            let response = try await client.send(HTTPClientRequest(url: url))
            XCTAssertEqual(response.status, .ok, url, file: file, line: line)
            let body = try await response.body.collect(upTo: 1 << 20)
            XCTAssertEqual(Data(body), expected, url, file: file, line: line)
        }
    }

    // MARK: HTTP proxies

    func testTinyproxyAbsoluteFormAndConnect() async throws {
        let client = try client(proxy: try proxy(try Peers.tinyproxy().url))
        try await assertFetchesSmallFile(client)
        // Both schemes went through the proxy: nginx is not reachable on another route from tinyproxy's view,
        // but tinyproxy adds a Via header to what it forwards.
        let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(try Peers.nginx().httpPort)/small.txt"))
        XCTAssertNotNil(response.headers[HTTPField.Name("Via")!], "the plain request went through the proxy")
    }

    func testTinyproxyBasicWithCredentialsForBothSchemes() async throws {
        let peer = try Peers.tinyproxyAuth()
        let client = try client(proxy: try proxy(peer.url, user: peer.user, password: peer.password))
        try await assertFetchesSmallFile(client)
    }

    func testTinyproxyWithoutCredentials() async throws {
        let client = try client(proxy: try proxy(try Peers.tinyproxyAuth().url))
        let nginx = try Peers.nginx()
        let plain = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/small.txt"))
        XCTAssertEqual(plain.status.code, 407, "a plain request gets the proxy's 407 as it is")
        await assertThrowsHTTPError(.proxyFailed) {
            try await client.send(HTTPClientRequest(url: "https://127.0.0.1:\(nginx.httpsPort)/small.txt"))
        }
    }

    func testProxyCallbackIsAskedForA407() async throws {
        let peer = try Peers.tinyproxyAuth()
        let asked = Counter()
        let client = try client(proxy: try proxy(peer.url)) { configuration in
            configuration.authentication.proxyAuthenticationNeeded = { challenge in
                asked.increment()
                XCTAssertTrue(challenge.space.isProxy)
                XCTAssertEqual(challenge.space.port, peer.port)
                return HTTPCredentials(username: peer.user, password: peer.password)
            }
        }
        try await assertFetchesSmallFile(client)
        XCTAssertEqual(asked.value, 1, "the answer is kept in the session store for the next request")
    }

    func testSquidDigestForBothSchemes() async throws {
        let peer = try Peers.squidDigest()
        let client = try client(proxy: try proxy(peer.url, user: peer.user, password: peer.password))
        try await assertFetchesSmallFile(client)
        try await assertFetchesSmallFile(client) // again, now presenting Digest before the challenge
    }

    func testSquidRefusesAWrongPassword() async throws {
        let peer = try Peers.squidDigest()
        let client = try client(proxy: try proxy(peer.url, user: peer.user, password: "wrong-\(peer.password)"))
        let nginx = try Peers.nginx()
        let plain = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/small.txt"))
        XCTAssertEqual(plain.status.code, 407)
        let error = await assertThrowsHTTPError(.proxyFailed) {
            try await client.send(HTTPClientRequest(url: "https://127.0.0.1:\(nginx.httpsPort)/small.txt"))
        }
        // The rounds of the refused tunnel: the bare CONNECT and its 407, then the Digest answer and the 407 that
        // refused it; the requests without the credentials.
        let rounds = error?.proxyRounds ?? []
        XCTAssertEqual(rounds.map(\.status.code), [407, 407])
        XCTAssertEqual(error?.proxyStatus, 407)
        XCTAssertTrue(rounds.allSatisfy { $0.request.hasPrefix("CONNECT 127.0.0.1:\(nginx.httpsPort) HTTP/1.1\r\n") }, "\(rounds)")
        XCTAssertEqual(rounds.last?.request.contains("\r\nProxy-Authorization: Digest <redacted>\r\n"), true, "\(rounds)")
        XCTAssertTrue(rounds.allSatisfy { !$0.request.contains(peer.password) && !$0.request.contains("response=") }, "\(rounds)")
        XCTAssertTrue(rounds.first?.headers[.proxyAuthenticate]?.hasPrefix("Digest") == true, "\(rounds)")
    }

    // MARK: SOCKS5

    func testDanteSocks5LocalAndRemoteResolution() async throws {
        let url = try Peers.socks5().url
        try await assertFetchesSmallFile(try client(proxy: try proxy(url)))
        let remote = url.replacingOccurrences(of: "socks5://", with: "socks5h://")
        try await assertFetchesSmallFile(try client(proxy: try proxy(remote)), host: "localhost")
    }

    func testSocks5UsernamePassword() async throws {
        let peer = try Peers.socks5Auth()
        let remote = peer.url.replacingOccurrences(of: "socks5://", with: "socks5h://")
        try await assertFetchesSmallFile(try client(proxy: try proxy(remote, user: peer.user, password: peer.password)), host: "localhost")
        if let log = peer.logFile {
            let text = try String(contentsOfFile: log, encoding: .utf8)
            XCTAssertTrue(text.contains("atyp=domain target=localhost:"), "socks5h sent the name for the proxy to resolve:\n\(text)")
        }
        let nginx = try Peers.nginx()
        let url = "http://127.0.0.1:\(nginx.httpPort)/small.txt"
        await assertThrowsHTTPError(.proxyFailed) { // no credentials offered
            try await self.client(proxy: try self.proxy(peer.url)).send(HTTPClientRequest(url: url))
        }
        await assertThrowsHTTPError(.authenticationFailed) { // wrong password
            try await self.client(proxy: try self.proxy(peer.url, user: peer.user, password: "wrong")).send(HTTPClientRequest(url: url))
        }
    }

    // MARK: SOCKS4 and SOCKS4a

    /// dante answers SOCKS4 (not 4a): an IPv4 literal goes as it is, and a name is resolved here to its IPv4
    /// address (`localhost` resolves to ::1 as well, which SOCKS4 cannot carry). http and https both tunnel.
    func testDanteSocks4ReachesIPv4AddressesAndNamesResolvedHere() async throws {
        let url = try Peers.socks4().url
        try await assertFetchesSmallFile(try client(proxy: try proxy(url)))
        try await assertFetchesSmallFile(try client(proxy: try proxy(url)), host: "localhost")
        // The user ID is the user name; dante without identd checks ignores it.
        try await assertFetchesSmallFile(try client(proxy: try proxy(url, user: "alice", password: "unsent")))
        let nginx = try Peers.nginx()
        let error = await assertThrowsHTTPError(.proxyFailed) {
            try await self.client(proxy: try self.proxy(url)).send(HTTPClientRequest(url: "http://[::1]:\(nginx.httpPort)/small.txt"))
        }
        XCTAssertTrue(error?.message.contains("SOCKS4 reaches IPv4 addresses only") == true, error?.message ?? "")
        // dante's rules allow only 127.0.0.0/8: anything else is refused with reply 91, before dante connects.
        let refused = await assertThrowsHTTPError(.proxyFailed) {
            try await self.client(proxy: try self.proxy(url)).send(HTTPClientRequest(url: "http://192.0.2.1:\(nginx.httpPort)/small.txt"))
        }
        XCTAssertTrue(refused?.message.contains("CONNECT to 192.0.2.1:\(nginx.httpPort) failed: request rejected or failed (code 91)") == true,
                      refused?.message ?? "")
        XCTAssertTrue(refused?.message.hasPrefix("SOCKS4 proxy socks4://127.0.0.1:") == true, refused?.message ?? "")
    }

    /// OpenSSH's `ssh -D` reads SOCKS4a: the proxy is given the name (sshd's log shows the target as it was
    /// asked for), an IPv4 literal still goes as an address, and a target sshd may not open closes the connection.
    func testSocks4aGivesTheProxyTheName() async throws {
        let (peer, log) = try Peers.socks4a()
        let nginx = try Peers.nginx()
        let client = try client(proxy: try proxy(peer.url))
        try await assertFetchesSmallFile(client, host: "localhost")
        try await assertFetchesSmallFile(client)
        // sshd's session process writes the line as it opens the channel, so it may lag the response a little.
        try await waitUntil("sshd logs the targets by name and by address") {
            let text = try String(contentsOfFile: log, encoding: .utf8)
            return ["target localhost port \(nginx.httpPort)", "target localhost port \(nginx.httpsPort)",
                    "target 127.0.0.1 port \(nginx.httpPort)"].allSatisfy(text.contains)
        }
        let error = await assertThrowsHTTPError(.proxyFailed) {
            try await client.send(HTTPClientRequest(url: "http://127.0.0.2:\(nginx.httpPort)/small.txt"))
        }
        XCTAssertTrue(error?.message.contains("the proxy closed the connection during the handshake") == true, error?.message ?? "")
    }

    /// What goes on the wire, read by a raw server that answers as a SOCKS4 proxy and then as the origin (its
    /// recorded head is everything before the request's blank line, the SOCKS4 request included): the user ID is
    /// the user name without the password, SOCKS4a's name follows it after DSTIP 0.0.0.1, and a refusal or a
    /// reply that is not SOCKS4 is a `proxyFailed` that says which.
    func testSocks4RequestBytesAndReplies() async throws {
        let granted: [UInt8] = [0, 90, 0, 0, 0, 0, 0, 0]
        let server = try FaultServer(script: FaultScript(onAccept: { _ in [.send(granted)] }, onRequest: { _, _ in [.response("ok"), .close] }))
        defer { server.stop() }
        func fetch(_ scheme: String, _ url: String, user: String? = "alice") async throws -> String {
            let client = try client(proxy: try proxy("\(scheme)://127.0.0.1:\(server.port)", user: user, password: "s3cret"))
            let response = try await client.send(HTTPClientRequest(url: url))
            let body = try await response.body.collect(upTo: 64)
            XCTAssertEqual(String(decoding: body, as: UTF8.self), "ok")
            return try XCTUnwrap(server.requestHeads.last)
        }
        let byName = try await fetch("socks4a", "http://origin.example:7967/a")
        XCTAssertTrue(byName.hasPrefix("\u{4}\u{1}\u{1F}\u{1F}\0\0\0\u{1}alice\0origin.example\0GET /a HTTP/1.1\r\n"), byName.debugDescription)
        let byAddress = try await fetch("socks4a", "http://127.0.0.1:80/b")
        XCTAssertTrue(byAddress.hasPrefix("\u{4}\u{1}\0\u{50}\u{7F}\0\0\u{1}alice\0GET /b HTTP/1.1\r\n"), byAddress.debugDescription)
        let resolvedHere = try await fetch("socks4", "http://localhost:80/c", user: nil)
        XCTAssertTrue(resolvedHere.hasPrefix("\u{4}\u{1}\0\u{50}\u{7F}\0\0\u{1}\0GET /c HTTP/1.1\r\n"), resolvedHere.debugDescription)
        for head in server.requestHeads { XCTAssertFalse(head.contains("s3cret"), "SOCKS4 has no password field") }

        for (reply, expected) in [([UInt8]([0, 92, 0, 0, 0, 0, 0, 0]), "could not reach the client's identd (code 92)"),
                                  ([0, 93, 0, 0, 0, 0, 0, 0], "differs from the one identd reports (code 93)"),
                                  ([5, 0, 0, 0, 0, 0, 0, 0], "the proxy does not speak SOCKS4 (reply version byte 5)")] {
            let refusing = try FaultServer(script: FaultScript(onAccept: { _ in [.send(reply), .close] }, onRequest: { _, _ in [] }))
            defer { refusing.stop() }
            let error = await assertThrowsHTTPError(.proxyFailed) {
                try await self.client(proxy: try self.proxy("socks4a://127.0.0.1:\(refusing.port)"))
                    .send(HTTPClientRequest(url: "http://origin.example/"))
            }
            XCTAssertTrue(error?.message.contains(expected) == true, error?.message ?? "")
            XCTAssertTrue(error?.message.hasPrefix("SOCKS4a proxy socks4a://127.0.0.1:") == true, error?.message ?? "")
        }
    }

    // MARK: NTLM

    func testNTLMOriginHandshakeOnOneConnection() async throws {
        let peer = try Peers.ntlm()
        let client = try client(proxy: .none)
        var request = HTTPClientRequest(url: peer.url + "/ntlm/hello")
        request.credentials = HTTPCredentials(username: peer.user, password: peer.password, domain: peer.domain)
        let response = try await client.send(request)
        XCTAssertEqual(response.status, .ok)
        let body = try JSONSerialization.jsonObject(with: Data(try await response.body.collect(upTo: 1 << 16))) as? [String: Any]
        XCTAssertEqual(body?["user"] as? String, peer.qualifiedUser)
        XCTAssertEqual(body?["ntlmResponse"] as? String, "NTLMv2")
        XCTAssertEqual(body?["handshakesOnConnection"] as? Int, 1)
        // The authenticated connection is not kept (the server would take any later request on it as this user):
        // the next request, which brings no credentials, is challenged on a new connection and answered from the
        // session store, where the first request's credentials went.
        let again = try await client.send(HTTPClientRequest(url: peer.url + "/ntlm/again"))
        XCTAssertEqual(again.status, .ok)
        let againBody = try JSONSerialization.jsonObject(with: Data(try await again.body.collect(upTo: 1 << 16))) as? [String: Any]
        XCTAssertEqual(againBody?["handshakesOnConnection"] as? Int, 1, "a new handshake on a new connection")
        XCTAssertEqual(client.connectionsOpened, 2)
    }

    /// A connection that completed an NTLM handshake stays authenticated at the server as that user. It used to
    /// go back to the pool, where a request with no credentials (or someone else's) took it and was answered as
    /// that user.
    func testAnNTLMAuthenticatedConnectionIsNotReusedByARequestWithoutCredentials() async throws {
        let peer = try Peers.ntlm()
        // No session store: nothing the first request proves is remembered for the second.
        let client = try client(proxy: .none) { $0.authentication.sessionStore = nil }
        var request = HTTPClientRequest(url: peer.url + "/ntlm/private")
        request.credentials = HTTPCredentials(username: peer.user, password: peer.password, domain: peer.domain)
        let first = try await client.send(request)
        XCTAssertEqual(first.status, .ok)
        _ = try await first.body.collect(upTo: 1 << 16)
        let anonymous = try await client.send(HTTPClientRequest(url: peer.url + "/ntlm/private"))
        XCTAssertEqual(anonymous.status.code, 401, "a request without credentials was answered as the user before it")
    }

    func testNTLMWithDomainInTheUserNameAndAWrongPassword() async throws {
        let peer = try Peers.ntlm()
        let client = try client(proxy: .none)
        var request = HTTPClientRequest(url: peer.url + "/ntlm/x")
        request.credentials = HTTPCredentials(username: peer.qualifiedUser, password: peer.password)
        let qualified = try await client.send(request).status
        XCTAssertEqual(qualified, .ok, "DOMAIN\\user works as well as a separate domain")
        let other = try self.client(proxy: .none)
        request.credentials = HTTPCredentials(username: peer.qualifiedUser, password: "wrong")
        let refused = try await other.send(request).status.code
        XCTAssertEqual(refused, 401)
    }

    func testNTLMProxyForBothSchemes() async throws {
        let peer = try Peers.ntlmProxy()
        let client = try client(proxy: try proxy(peer.url, user: peer.user, password: peer.password, domain: peer.domain))
        try await assertFetchesSmallFile(client)
    }

    // MARK: --connect-to and --resolve through a proxy (curl's rules)

    /// curl's test 2050: a `connectTo` rule is matched against the URL's host, and through an HTTP proxy it
    /// turns a plain-http request into a tunnel to the rule's target. The URL's name does not resolve and
    /// tinyproxy's filter refuses it, so only the tunnel to 127.0.0.1 reaches nginx; the request inside
    /// names the URL's host.
    func testConnectToThroughAnHTTPProxyTunnelsToTheRulesTarget() async throws {
        let nginx = try Peers.nginx()
        let rules = [try ConnectToOverride("origin.invalid:80:127.0.0.1:\(nginx.httpPort)"),
                     try ConnectToOverride("localhost:1:127.0.0.1:\(nginx.httpsPort)")]
        let client = try client(proxy: try proxy(try Peers.tinyproxy().url)) { $0.connectTo = rules }
        let expected = try Data(contentsOf: URL(fileURLWithPath: try Peers.directory() + "/www/small.txt"))
        let plain = try await client.send(HTTPClientRequest(url: "http://origin.invalid/small.txt"))
        XCTAssertEqual(plain.status, .ok)
        XCTAssertNil(plain.headers[HTTPField.Name("Via")!], "tunnelled, not forwarded by tinyproxy (which adds Via)")
        let plainBody = try await plain.body.collect(upTo: 1 << 20)
        XCTAssertEqual(Data(plainBody), expected)
        // https: the tunnel goes to the rule's target; TLS still verifies the URL's host.
        let secure = try await client.send(HTTPClientRequest(url: "https://localhost:1/small.txt"))
        XCTAssertEqual(secure.status, .ok)
        let secureBody = try await secure.body.collect(upTo: 1 << 20)
        XCTAssertEqual(Data(secureBody), expected)
        let log = try String(contentsOfFile: try Peers.directory() + "/tinyproxy/open.log", encoding: .utf8)
        XCTAssertTrue(log.contains("CONNECT 127.0.0.1:\(nginx.httpPort) "), "tinyproxy was asked for the rule's target:\n\(log.suffix(2000))")
    }

    /// The tunnel a rule makes is authenticated on `CONNECT`, as any tunnel: tinyproxy's 407 to it is answered.
    func testConnectToThroughAnAuthenticatingProxyAnswersTheChallengeToCONNECT() async throws {
        let nginx = try Peers.nginx()
        let peer = try Peers.tinyproxyAuth()
        let rule = try ConnectToOverride("origin.invalid:80:127.0.0.1:\(nginx.httpPort)")
        let client = try client(proxy: try proxy(peer.url, user: peer.user, password: peer.password)) { $0.connectTo = [rule] }
        let response = try await client.send(HTTPClientRequest(url: "http://origin.invalid/small.txt"))
        XCTAssertEqual(response.status, .ok)
        XCTAssertNil(response.headers[HTTPField.Name("Via")!])
    }

    /// curl's `--proxytunnel`: plain http through a `CONNECT` tunnel, in origin form.
    func testAProxyThatAlwaysTunnelsCarriesPlainHTTPInATunnel() async throws {
        var proxy = try ProxyConfiguration(url: try Peers.tinyproxy().url)
        proxy.alwaysTunnel = true
        let client = try client(proxy: .proxy(proxy))
        try await assertFetchesSmallFile(client)
        let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(try Peers.nginx().httpPort)/small.txt"))
        XCTAssertNil(response.headers[HTTPField.Name("Via")!], "tunnelled, not forwarded")
    }

    /// Through `socks5` the client resolves the origin's name, so a `resolve` entry for it applies (curl); through
    /// `socks5h` a rule's target is the name the proxy is given.
    func testResolveAndConnectToThroughSOCKS5() async throws {
        let nginx = try Peers.nginx()
        let entry = try ResolveOverride("origin.invalid:\(nginx.httpPort):127.0.0.1")
        let local = try client(proxy: try proxy(try Peers.socks5().url)) { $0.resolve = [entry] }
        let resolved = try await local.send(HTTPClientRequest(url: "http://origin.invalid:\(nginx.httpPort)/small.txt"))
        XCTAssertEqual(resolved.status, .ok)

        let peer = try Peers.socks5Auth()
        let remote = peer.url.replacingOccurrences(of: "socks5://", with: "socks5h://")
        let rule = try ConnectToOverride("origin.invalid:80:localhost:\(nginx.httpPort)")
        let moved = try client(proxy: try proxy(remote, user: peer.user, password: peer.password)) { $0.connectTo = [rule] }
        let response = try await moved.send(HTTPClientRequest(url: "http://origin.invalid/small.txt"))
        XCTAssertEqual(response.status, .ok)
        if let log = peer.logFile {
            let text = try String(contentsOfFile: log, encoding: .utf8)
            XCTAssertTrue(text.contains("atyp=domain target=localhost:\(nginx.httpPort)"), "the rule's target went to the proxy:\n\(text)")
        }
    }

    /// Observers see the proxy's answers to `CONNECT` with the connection's first request: the `407` tinyproxy
    /// sends, then its `200`; a reused connection reports none.
    func testObserversSeeTheProxysAnswersToCONNECT() async throws {
        final class Connections: HTTPClientObserver, @unchecked Sendable {
            // @unchecked: `seen` is behind `Locked`.
            let seen = Locked([HTTPClientEvent.ConnectionInfo]())
            func observe(_ event: HTTPClientEvent) {
                if case .connectionAcquired(let info) = event.kind { seen.withLock { $0.append(info) } }
            }
        }
        let connections = Connections()
        let peer = try Peers.tinyproxyAuth()
        let client = try client(proxy: try proxy(peer.url, user: peer.user, password: peer.password)) { $0.observers = [connections] }
        let url = "https://localhost:\(try Peers.nginx().httpsPort)/small.txt"
        for _ in 0..<2 { _ = try await client.send(HTTPClientRequest(url: url)).body.collect(upTo: 1 << 20) }
        let seen = connections.seen.withLock { $0 }
        XCTAssertEqual(seen.map(\.reused), [false, true])
        XCTAssertEqual(seen.first?.tunnelResponses.map(\.status.code), [407, 200])
        XCTAssertEqual(seen.last?.tunnelResponses.count, 0)
    }

    /// curl's `-U`: Basic at once, so the first `CONNECT` is accepted without a `407`; the schemes limit what a
    /// `407` is answered with.
    func testProxyCredentialsSentAtOnceAndLimitedToSchemes() async throws {
        final class Tunnels: HTTPClientObserver, @unchecked Sendable {
            // @unchecked: `codes` is behind `Locked`.
            let codes = Locked([[Int]]())
            func observe(_ event: HTTPClientEvent) {
                if case .connectionAcquired(let info) = event.kind { codes.withLock { $0.append(info.tunnelResponses.map(\.status.code)) } }
            }
        }
        let peer = try Peers.tinyproxyAuth()
        let nginx = try Peers.nginx()
        var proxy = try ProxyConfiguration(url: peer.url)
        proxy.credentials = HTTPCredentials(username: peer.user, password: peer.password)
        proxy.sendsCredentialsPreemptively = true
        let tunnels = Tunnels()
        let client = try client(proxy: .proxy(proxy)) { $0.observers = [tunnels] }
        try await assertFetchesSmallFile(client)
        XCTAssertEqual(tunnels.codes.withLock { $0 }.last, [200], "no 407: Basic went with the first CONNECT")

        proxy.sendsCredentialsPreemptively = false
        proxy.authenticationSchemes = [.digest]
        let digestOnly = try self.client(proxy: .proxy(proxy))
        await assertThrowsHTTPError(.proxyFailed) {
            try await digestOnly.send(HTTPClientRequest(url: "https://127.0.0.1:\(nginx.httpsPort)/small.txt"))
        }
        let plain = try await digestOnly.send(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/small.txt"))
        XCTAssertEqual(plain.status.code, 407, "tinyproxy's Basic challenge is not answered when only Digest is allowed")
    }

    // MARK: HTTPS proxies

    /// Through an HTTPS proxy (stunnel before tinyproxy): a plain-http URL in absolute form inside the TLS to the
    /// proxy (tinyproxy's `Via` shows it forwarded), an https URL with its own TLS inside that one, and `alwaysTunnel`
    /// carrying plain http in a tunnel; the connection is reused for each.
    func testAnHTTPSProxyCarriesBothSchemesAndTunnels() async throws {
        var proxy = try ProxyConfiguration(url: try Peers.httpsProxy().url)
        proxy.tls.trustRoots = .file(try Peers.nginx().caFile)
        let nginx = try Peers.nginx()
        let client = try client(proxy: .proxy(proxy))
        let secure = "https://127.0.0.1:\(nginx.httpsPort)/small.txt"
        for _ in 0..<3 { _ = try await client.send(HTTPClientRequest(url: secure)).body.collect(upTo: 1 << 20) }
        XCTAssertEqual(client.connectionsOpened, 1, "the tunnel, TLS inside TLS, is reused")
        try await assertFetchesSmallFile(client)
        let plain = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/small.txt"))
        XCTAssertNotNil(plain.headers[HTTPField.Name("Via")!], "forwarded by the proxy in absolute form")
        // A large body through two layers of TLS arrives whole.
        let big = try await client.send(HTTPClientRequest(url: "https://127.0.0.1:\(nginx.httpsPort)/big.bin"))
        let expected = try Data(contentsOf: URL(fileURLWithPath: try Peers.directory() + "/www/big.bin"))
        let bigBody = try await big.body.collect(upTo: 16 << 20)
        XCTAssertEqual(Data(bigBody), expected)

        // And 8 MiB the other way, a PUT whose writes through both layers fill the socket, stored byte for byte.
        let name = "https-proxy-\(UInt32.random(in: 0...UInt32.max)).bin"
        var put = HTTPClientRequest(url: "https://127.0.0.1:\(nginx.httpsPort)/dav/\(name)")
        put.method = .put
        put.body = .bytes(Array(expected))
        let stored = try await client.send(put)
        XCTAssertTrue([201, 204].contains(stored.status.code), "\(stored.status)")
        let storedPath = try Peers.directory() + "/dav/" + name
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: storedPath)), expected)
        try? FileManager.default.removeItem(atPath: storedPath)

        proxy.alwaysTunnel = true
        let tunnelling = try self.client(proxy: .proxy(proxy))
        let tunnelled = try await tunnelling.send(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/small.txt"))
        XCTAssertEqual(tunnelled.status, .ok)
        XCTAssertNil(tunnelled.headers[HTTPField.Name("Via")!], "tunnelled, not forwarded")
    }

    /// The proxy's certificate is checked against its own trust settings, not the client's: with only the origins'
    /// CA configured for the client, the proxy (same certificate) is rejected as unknown, naming the proxy; with
    /// verification off for the proxy alone the request goes through and the origin is still verified.
    func testAnHTTPSProxysCertificateIsVerifiedApartFromTheOrigins() async throws {
        let nginx = try Peers.nginx()
        let url = "https://127.0.0.1:\(nginx.httpsPort)/small.txt"
        var proxy = try ProxyConfiguration(url: try Peers.httpsProxy().url)
        let unknown = try client(proxy: .proxy(proxy))
        let error = await assertThrowsHTTPError(.certificateInvalid) { try await unknown.send(HTTPClientRequest(url: url)) }
        XCTAssertTrue(error?.message.hasPrefix("TLS to proxy https://127.0.0.1:") == true, error?.message ?? "")

        proxy.tls.certificateVerification = false
        let insecure = try client(proxy: .proxy(proxy))
        let response = try await insecure.send(HTTPClientRequest(url: url))
        XCTAssertEqual(response.status, .ok)

        // The origin's check still applies inside the tunnel: the client trusting only the system's CAs rejects it.
        let strict = try client(proxy: .proxy(proxy)) { $0.tls.trustRoots = .system }
        let origin = await assertThrowsHTTPError(.certificateInvalid) { try await strict.send(HTTPClientRequest(url: url)) }
        XCTAssertFalse(origin?.message.hasPrefix("TLS to proxy") == true, origin?.message ?? "")
    }

    /// A proxy that requires a client certificate (stunnel's `verify = 2`) gets the one in the proxy's own TLS
    /// settings; the client's certificate for origins is not offered to it.
    func testAnHTTPSProxyThatAsksForAClientCertificateGetsTheProxysOwn() async throws {
        let nginx = try Peers.nginx()
        let peer = try Peers.httpsProxyRequiringClientCertificate()
        let certificate = TLSConfiguration.ClientCertificate(certificateFile: peer.certificate, privateKeyFile: peer.key)
        var proxy = try ProxyConfiguration(url: peer.proxy.url)
        proxy.tls.trustRoots = .file(nginx.caFile)
        for url in ["https://127.0.0.1:\(nginx.httpsPort)/small.txt", "http://127.0.0.1:\(nginx.httpPort)/small.txt"] {
            // The origins' certificate is the client's, not the proxy's: the proxy refuses the handshake.
            let without = try client(proxy: .proxy(proxy)) { $0.tls.clientCertificate = certificate }
            do {
                let response = try await without.send(HTTPClientRequest(url: url))
                XCTFail("\(url): the proxy let a client without its certificate through: \(response.status)")
            } catch let error as HTTPClientError {
                XCTAssertEqual(error.code, .tlsHandshakeFailed, "\(url): \(error)")
                XCTAssertTrue(error.message.hasPrefix("proxy https://127.0.0.1:\(peer.proxy.port) refused the TLS client certificate"),
                              "\(url): \(error)")
            }
            var withCertificate = proxy
            withCertificate.tls.clientCertificate = certificate
            let through = try client(proxy: .proxy(withCertificate))
            let response = try await through.send(HTTPClientRequest(url: url))
            XCTAssertEqual(response.status, .ok, url)
            let body = try await response.body.collect(upTo: 1 << 20)
            XCTAssertEqual(body.count, 1024, url)
        }
    }

    // MARK: Pool

    func testConnectionsAreKeyedByProxy() async throws {
        let nginx = try Peers.nginx()
        let url = "http://127.0.0.1:\(nginx.httpPort)/small.txt"
        let client = try client(proxy: .none)
        for proxy in [ProxySetting.none, try proxy(try Peers.tinyproxy().url), try proxy(try Peers.socks5().url), .none] {
            var request = HTTPClientRequest(url: url)
            request.proxy = proxy
            let status = try await client.send(request).status
            XCTAssertEqual(status, .ok)
        }
        XCTAssertEqual(client.connectionsOpened, 3, "direct, via tinyproxy and via SOCKS are three pools; the last direct request reused the first")
    }

    // MARK: ahttp

    func testCommandLineProxyOptions() throws {
        let nginx = try Peers.nginx()
        let small = "http://127.0.0.1:\(nginx.httpPort)/small.txt"
        let secure = "https://127.0.0.1:\(nginx.httpsPort)/small.txt"
        let tiny = try Peers.tinyproxyAuth()
        let args = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", nginx.caFile]
        XCTAssertEqual(try runAhttp(args + ["-x", tiny.url, "-U", "\(tiny.user):\(tiny.password)", secure]).stdout, "200")
        XCTAssertEqual(try runAhttp(args + ["-x", tiny.url, small]).stdout, "407")
        let socks = try Peers.socks5Auth()
        let hostPort = socks.url.replacingOccurrences(of: "socks5://", with: "")
        let viaSocks = try runAhttp(args + ["--socks5-hostname", "\(socks.user):\(socks.password)@\(hostPort)", secure])
        XCTAssertEqual(viaSocks.stdout, "200", viaSocks.stderr)
        // From the environment, and --noproxy overriding it.
        let env = ["https_proxy": tiny.url.replacingOccurrences(of: "://", with: "://\(tiny.user):\(tiny.password)@")]
        let fromEnv = try runAhttp(args + ["-v", secure], environment: env)
        XCTAssertEqual(fromEnv.stdout, "200", fromEnv.stderr)
        let bypassed = try runAhttp(args + ["--noproxy", "*", secure], environment: ["https_proxy": "http://127.0.0.1:1"])
        XCTAssertEqual(bypassed.stdout, "200", "--noproxy * reaches nginx directly: \(bypassed.stderr)")
        // -v and --trace-ascii show the tunnel's CONNECT and the proxy's answer before the request, as curl does,
        // the proxy's credentials redacted.
        let verbose = try runAhttp(["-s", "-v", "-o", "/dev/null", "--cacert", nginx.caFile, "--trace-ascii", "-",
                                    "-x", tiny.url, "-U", "\(tiny.user):\(tiny.password)", secure])
        let lines = verbose.stderr.split(separator: "\n").map(String.init)
        let connect = lines.firstIndex(of: "> CONNECT 127.0.0.1:\(nginx.httpsPort) HTTP/1.1")
        let established = lines.firstIndex { $0.hasPrefix("< HTTP/1.") && $0.contains(" 200 ") }
        let get = lines.firstIndex(of: "> GET /small.txt HTTP/1.1")
        XCTAssertNotNil(connect, verbose.stderr)
        XCTAssertTrue(lines.contains("> Proxy-Authorization: Basic <redacted>"), verbose.stderr)
        XCTAssertFalse(verbose.stderr.contains(tiny.password) || verbose.stdout.contains(tiny.password), "no secret in -v or the trace")
        if let connect, let established, let get {
            XCTAssertTrue(connect < established && established < get, verbose.stderr)
        } else {
            XCTFail("the CONNECT exchange and the GET: \(verbose.stderr)")
        }
        XCTAssertTrue(verbose.stdout.contains("0000: CONNECT 127.0.0.1:\(nginx.httpsPort) HTTP/1.1"), verbose.stdout)
        XCTAssertTrue(verbose.stdout.split(separator: "\n").contains { $0.hasPrefix("0000: HTTP/1.") && $0.contains(" 200 ") }, verbose.stdout)
        // A CONNECT the proxy refuses (a wrong password) is shown too: the request, credentials redacted, and the answer.
        let refused = try runAhttp(["-s", "-v", "-o", "/dev/null", "--cacert", nginx.caFile, "--trace-ascii", "-",
                                    "-x", tiny.url, "-U", "\(tiny.user):wrong-\(tiny.password)", secure])
        XCTAssertEqual(refused.status, 56, refused.stderr)
        let refusedLines = refused.stderr.split(separator: "\n").map(String.init)
        XCTAssertTrue(refusedLines.contains("> CONNECT 127.0.0.1:\(nginx.httpsPort) HTTP/1.1"), refused.stderr)
        XCTAssertTrue(refusedLines.contains("> Proxy-Authorization: Basic <redacted>"), refused.stderr)
        // tinyproxy answers a wrong Basic password with 401, not 407.
        XCTAssertTrue(refusedLines.contains { $0.hasPrefix("< HTTP/1.0 401 ") }, refused.stderr)
        XCTAssertTrue(refused.stdout.contains("0000: CONNECT 127.0.0.1:\(nginx.httpsPort) HTTP/1.1"), refused.stdout)
        XCTAssertTrue(refused.stdout.split(separator: "\n").contains { $0.hasPrefix("0000: HTTP/1.0 401 ") }, refused.stdout)
        XCTAssertFalse(refused.stderr.contains(tiny.password) || refused.stdout.contains(tiny.password), "no secret in -v or the trace")
        let ntlm = try Peers.ntlm()
        let viaNTLM = try runAhttp(["-s", "--ntlm", "-u", "\(ntlm.qualifiedUser):\(ntlm.password)", ntlm.url + "/ntlm/cli"])
        XCTAssertTrue(viaNTLM.stdout.contains("\"authenticated\": true"), viaNTLM.stdout + viaNTLM.stderr)
    }
}
