import Foundation
import XCTest

@testable import AsyncHTTP

/// NTLM authenticates a connection, not a request: what the client does when a server or a CONNECT proxy closes
/// the connection somewhere in the handshake. Against in-process `FaultServer` scripts, without other peers.
final class AuthNTLMConnectionTests: XCTestCase {
    static let challenge = NTLMTests.challengeMessage(
        flags: NTLM.Flags([.negotiateUnicode, .negotiateNTLM, .negotiateExtendedSessionSecurity]).rawValue,
        serverChallenge: [1, 2, 3, 4, 5, 6, 7, 8], targetName: NTLM.utf16LE("EXAMPLE"),
        targetInfo: NTLMTests.avPair(2, NTLM.utf16LE("EXAMPLE")) + NTLMTests.avPair(0, []))
    static let credentials = HTTPCredentials(username: "user", password: "secret", domain: "EXAMPLE")

    /// The NTLM message type in a request head's `field` (1 negotiate, 3 authenticate), 0 when it has none.
    static func ntlmType(_ head: String, field: String) -> UInt8 {
        let prefix = field.lowercased() + ": ntlm "
        guard let line = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix(prefix) }),
              let message = Base64.decode(String(line.dropFirst(prefix.count))), message.count > 8 else { return 0 }
        return message[8]
    }

    static func proxyChallenge(_ value: String, closing: Bool) -> [FaultAction] {
        let response = FaultAction.response(
            "", status: "407 Proxy Authentication Required",
            headers: ["Proxy-Authenticate: \(value)"] + (closing ? ["Connection: close"] : []))
        return closing ? [response, .close] : [response]
    }

    private var clients: [HTTPClient] = []

    override func tearDown() async throws {
        for client in clients { await client.shutdown() }
        clients = []
    }

    func makeClient(_ change: (inout HTTPClient.Configuration) -> Void) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        change(&configuration)
        let client = HTTPClient(configuration: configuration)
        clients.append(client)
        return client
    }

    func clientThroughProxy(port: Int) -> HTTPClient {
        makeClient {
            $0.proxy = .proxy(ProxyConfiguration(kind: .http, host: "127.0.0.1", port: port, credentials: Self.credentials))
        }
    }

    // MARK: A CONNECT proxy

    /// A proxy that closes after its first, bare `407 NTLM` is answered with the negotiate message on a new
    /// connection, where the handshake goes on (curl does the same). It used to fail at once, "closed in the
    /// middle of the NTLM handshake", as if the handshake had begun.
    func testAProxyClosingAfterItsFirstNTLMChallengeIsAnsweredOnANewConnection() async throws {
        let connections = Locked<[Int]>([])
        let challenge = NTLM.authorizationValue(Self.challenge)
        let proxy = try FaultServer(script: FaultScript { connection, request in
            connections.withLock { $0.append(connection) }
            switch (connection, request) {
            case (0, _): return Self.proxyChallenge("NTLM", closing: true)
            case (1, 0): return Self.proxyChallenge(challenge, closing: false)
            // The authenticate message came: refused with a status of its own, so the test sees how far it went.
            default: return [.response("no", status: "403 Forbidden"), .close]
            }
        })
        defer { proxy.stop() }
        let client = clientThroughProxy(port: proxy.port)
        let error = await assertThrowsHTTPError(.proxyFailed) {
            try await client.send(HTTPClientRequest(url: "https://127.0.0.1:\(try unusedPort())/"))
        }
        XCTAssertTrue(error?.message.contains("403") ?? false, "\(error.map { "\($0)" } ?? "")")
        XCTAssertEqual(proxy.requestHeads.map { Self.ntlmType($0, field: "Proxy-Authorization") }, [0, 1, 3])
        XCTAssertEqual(connections.withLock { $0 }, [0, 1, 1], "negotiate and authenticate share the second connection")
    }

    /// A proxy that closes after the `407` carrying its challenge message ends the handshake with an error: the
    /// authenticate message answers that connection's challenge and means nothing on another. It used to be sent
    /// on a new connection, where the proxy could only refuse it (and stored credentials were then removed).
    func testAProxyClosingAfterItsChallengeMessageFailsTheHandshake() async throws {
        let challenge = NTLM.authorizationValue(Self.challenge)
        let proxy = try FaultServer(script: FaultScript { connection, request in
            switch (connection, request) {
            case (0, 0): return Self.proxyChallenge("NTLM", closing: false)
            case (0, _): return Self.proxyChallenge(challenge, closing: true)
            default: return [.response("no", status: "403 Forbidden"), .close]
            }
        })
        defer { proxy.stop() }
        let client = clientThroughProxy(port: proxy.port)
        let error = await assertThrowsHTTPError(.authenticationFailed) {
            try await client.send(HTTPClientRequest(url: "https://127.0.0.1:\(try unusedPort())/"))
        }
        XCTAssertTrue(error?.message.contains("middle of the NTLM handshake") ?? false, "\(error.map { "\($0)" } ?? "")")
        XCTAssertEqual(proxy.requestHeads.map { Self.ntlmType($0, field: "Proxy-Authorization") }, [0, 1],
                       "no authenticate message on a connection that never saw the challenge")
        XCTAssertEqual(proxy.connectionsAccepted, 1)
    }

    /// A proxy that answers the negotiate message with Basic only and closes: NTLM is dropped for Basic, which
    /// any connection can carry, so the request goes on on a new one (it failed "in the middle of the NTLM
    /// handshake").
    func testAProxyDroppingNTLMForBasicAndClosingIsAnsweredOnANewConnection() async throws {
        let proxy = try FaultServer(script: FaultScript { connection, request in
            switch (connection, request) {
            case (0, 0): return Self.proxyChallenge("NTLM", closing: false)
            case (0, _): return Self.proxyChallenge("Basic realm=\"proxy\"", closing: true)
            default: return [.response("no", status: "403 Forbidden"), .close]
            }
        })
        defer { proxy.stop() }
        let client = clientThroughProxy(port: proxy.port)
        let error = await assertThrowsHTTPError(.proxyFailed) {
            try await client.send(HTTPClientRequest(url: "https://127.0.0.1:\(try unusedPort())/"))
        }
        XCTAssertTrue(error?.message.contains("403") ?? false, "\(error.map { "\($0)" } ?? "")")
        XCTAssertEqual(proxy.requestHeads.map { Self.ntlmType($0, field: "Proxy-Authorization") }, [0, 1, 0])
        XCTAssertTrue(proxy.requestHeads.last?.contains("Proxy-Authorization: Basic ") ?? false, proxy.requestHeads.last ?? "")
        XCTAssertEqual(proxy.connectionsAccepted, 2)
    }

    // MARK: An origin

    /// An origin that lets the challenge's connection go (`Connection: close`, or a challenge body longer than the
    /// client reads) fails the request with an error saying so, and leaves the stored credentials alone. The
    /// authenticate message used to go on a new connection, be refused there, and the session store's
    /// credentials were removed as wrong; the request then returned the `401` with no word of why.
    func testAnOriginClosingAfterItsChallengeMessageFailsTheHandshakeAndKeepsTheStore() async throws {
        let challenge = NTLM.authorizationValue(Self.challenge)
        let bare = FaultAction.response("", status: "401 Unauthorized", headers: ["WWW-Authenticate: NTLM"])
        let closing = [FaultAction.response("", status: "401 Unauthorized",
                                            headers: ["WWW-Authenticate: \(challenge)", "Connection: close"]), .close]
        // 200 KiB: past the 64 KiB the client reads of a challenge's body, and past what it drains to reuse it.
        let long = [FaultAction.response(String(repeating: "x", count: 200 * 1024), status: "401 Unauthorized",
                                         headers: ["WWW-Authenticate: \(challenge)"])]
        for (name, challengeActions) in [("Connection: close", closing), ("a long body", long)] {
            let server = try FaultServer(script: FaultScript { connection, request in
                switch (connection, request) {
                case (0, 0): return [bare]
                case (0, 1): return challengeActions
                default: return [bare, .close]
                }
            })
            defer { server.stop() }
            let store = InMemoryCredentialStore()
            let space = ProtectionSpace(scheme: "http", host: "127.0.0.1", port: server.port, realm: nil,
                                        authenticationScheme: .ntlm)
            await store.store(Self.credentials, for: space)
            let client = makeClient { $0.authentication.sessionStore = store }
            let error = await assertThrowsHTTPError(.authenticationFailed) {
                try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/private"))
            }
            XCTAssertTrue(error?.message.contains("middle of the NTLM handshake") ?? false, "\(name): \(error.map { "\($0)" } ?? "")")
            XCTAssertFalse("\(error.map { "\($0)" } ?? "")".contains("secret"), name)
            XCTAssertEqual(server.requestHeads.map { Self.ntlmType($0, field: "Authorization") }, [0, 1],
                           "\(name): no authenticate message on a connection that never saw the challenge")
            let kept = await store.credentials(for: space)
            XCTAssertEqual(kept, Self.credentials, "\(name): credentials that were never tried stay in the store")
        }
    }
}
