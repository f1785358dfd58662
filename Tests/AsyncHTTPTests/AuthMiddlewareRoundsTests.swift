import HTTPTypes
import Logging
import XCTest

@testable import AsyncHTTP

/// What goes out on each round of a challenge, seen from the auth middleware with a scripted `next`, no network:
/// how often credentials are sent, Digest nonce counts across a proxy's and an origin's challenges, and what the
/// callback is told.
final class AuthMiddlewareRoundsTests: XCTestCase {
    func middleware(_ configuration: AuthenticationConfiguration = AuthenticationConfiguration(),
                    proxy: ProxySetting = .none) -> AuthMiddleware {
        AuthMiddleware(authenticator: Authenticator(configuration: configuration, logger: Logger(label: "test")),
                       proxies: ProxyRouter(proxy, environment: [:]))
    }

    static func response(_ status: HTTPResponse.Status, _ field: HTTPField.Name? = nil, _ value: String = "",
                         url: HTTPURL) -> HTTPClientResponse {
        var headers = HTTPFields()
        if let field { headers[field] = value }
        return HTTPClientResponse(status: status, headers: headers, url: url)
    }

    /// `ahttp -u alice:wrong URL`: credentials presented as Basic before the challenge and refused by a Basic
    /// challenge are not sent again, as curl sends them once (they went out twice, and lockout policies count both).
    func testPreemptiveBasicRefusedByABasicChallengeIsSentOnce() async throws {
        let url = try HTTPURL("https://basic.test/private")
        for viaURL in [false, true] {
            let sent = Locked<[String?]>([])
            var request = HTTPClientRequest(url: viaURL ? "https://alice:wrong@basic.test/private" : "https://basic.test/private")
            if !viaURL { request.credentials = HTTPCredentials(username: "alice", password: "wrong") }
            request.sendsCredentialsPreemptively = true
            let response = try await middleware().intercept(request) { sent_ in
                sent.withLock { $0.append(sent_.headers[.authorization]) }
                return Self.response(.unauthorized, .wwwAuthenticate, #"Basic realm="r""#, url: url)
            }
            XCTAssertEqual(response.status.code, 401)
            XCTAssertEqual(sent.withLock { $0 }, [Authenticator.basic(HTTPCredentials(username: "alice", password: "wrong"))],
                           "one round: the refused credentials are not sent again (userinfo: \(viaURL))")
        }
    }

    /// Still answered when the server wants another scheme: a preemptive Basic refused by a Digest challenge.
    func testPreemptiveBasicStillAnswersAnotherScheme() async throws {
        let url = try HTTPURL("https://digest.test/private")
        let sent = Locked<[String?]>([])
        var request = HTTPClientRequest(url: "https://digest.test/private")
        request.credentials = HTTPCredentials(username: "alice", password: "pw")
        request.sendsCredentialsPreemptively = true
        _ = try await middleware().intercept(request) { sent_ in
            sent.withLock { $0.append(sent_.headers[.authorization]) }
            return Self.response(.unauthorized, .wwwAuthenticate, #"Digest realm="r", nonce="n", qop="auth""#, url: url)
        }
        let values = sent.withLock { $0 }
        XCTAssertEqual(values.count, 2)
        XCTAssertTrue(values.last??.hasPrefix("Digest ") ?? false)
    }

    /// A body the chain compresses (`compressesBody`) is not what Digest `auth-int` would hash: offered both, the
    /// answer is `auth`; offered only auth-int, the request fails saying why, instead of sending a hash of the
    /// uncompressed bytes that the server refuses. An uncompressed body is still hashed for auth-int.
    func testAuthIntIsNotAnsweredForABodyTheChainCompresses() async throws {
        let url = try HTTPURL("https://digest.test/upload")
        func qopSent(offered: String, compresses: Bool) async throws -> String? {
            let sent = Locked<[String?]>([])
            var request = HTTPClientRequest(url: "https://digest.test/upload")
            request.method = .post
            request.body = .bytes(Array(repeating: UInt8(ascii: "a"), count: 1000))
            request.compressesBody = compresses
            request.credentials = HTTPCredentials(username: "alice", password: "pw")
            _ = try await middleware().intercept(request) { sent_ in
                sent.withLock { $0.append(sent_.headers[.authorization]) }
                return Self.response(.unauthorized, .wwwAuthenticate, #"Digest realm="r", nonce="n", qop="\#(offered)""#, url: url)
            }
            return sent.withLock { $0 }.compactMap { $0 }.last.flatMap { AuthChallenge.parse([$0]).first?.parameters["qop"] }
        }
        let both = try await qopSent(offered: "auth,auth-int", compresses: true)
        XCTAssertEqual(both, "auth")
        let plain = try await qopSent(offered: "auth-int", compresses: false)
        XCTAssertEqual(plain, "auth-int")
        do {
            _ = try await qopSent(offered: "auth-int", compresses: true)
            XCTFail("a hash of the uncompressed body was sent for auth-int")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .authenticationFailed)
            XCTAssertTrue(error.message.contains("auth-int"), error.message)
        }
    }

    /// `maxCallbackAttempts = .max` ("ask as often as it takes") bounds the rounds without overflowing (it trapped).
    func testAnUnboundedCallbackLimitDoesNotOverflow() async throws {
        var configuration = AuthenticationConfiguration()
        configuration.maxCallbackAttempts = .max
        let authenticator = Authenticator(configuration: configuration, logger: Logger(label: "test"))
        var exchange = AuthExchange(
            isProxy: false, scheme: "https", host: "a.test", port: 443, target: try HTTPURL("https://a.test/"),
            urlCredentials: nil, requestCredentials: HTTPCredentials(username: "u", password: "p"), allowedSchemes: nil)
        let value = try await authenticator.respond(to: [AuthChallenge(scheme: "basic", parameters: ["realm": "r"])],
                                                    exchange: &exchange, method: "GET", uri: "/", body: [])
        XCTAssertEqual(value?.value, Authenticator.basic(HTTPCredentials(username: "u", password: "p")))
    }

    /// A plain-http request through a Digest proxy to a Digest origin: the proxy's answer goes again with the next
    /// nonce count when the origin's `401` is answered (it went unchanged, which a proxy checking counts, as squid
    /// with `check_nonce_count`, takes as a replay).
    func testTheProxysDigestAnswerIsRenewedOnTheOriginsRound() async throws {
        let proxy = ProxyConfiguration(kind: .http, host: "proxy.test", port: 3128,
                                       credentials: HTTPCredentials(username: "p", password: "pp"))
        let url = try HTTPURL("http://origin.test/doc")
        var request = HTTPClientRequest(url: "http://origin.test/doc")
        request.credentials = HTTPCredentials(username: "o", password: "op")
        let counts = Locked<[String?]>([])
        func nonceCount(_ value: String?) -> String? {
            value.flatMap { AuthChallenge.parse([$0]).first?.parameters["nc"] }
        }
        let response = try await middleware(proxy: .proxy(proxy)).intercept(request) { sent in
            counts.withLock { $0.append(nonceCount(sent.headers[.proxyAuthorization])) }
            if sent.headers[.proxyAuthorization] == nil {
                return Self.response(.proxyAuthenticationRequired, .proxyAuthenticate,
                                     #"Digest realm="proxy", nonce="pn", qop="auth""#, url: url)
            }
            if sent.headers[.authorization] == nil {
                return Self.response(.unauthorized, .wwwAuthenticate, #"Digest realm="origin", nonce="on", qop="auth""#, url: url)
            }
            return Self.response(.ok, url: url)
        }
        XCTAssertEqual(response.status.code, 200)
        XCTAssertEqual(counts.withLock { $0 }, [nil, "00000001", "00000002"])
    }

    /// A server that answers the NTLM negotiate message with another scheme only is answered in that scheme, with
    /// the same credentials (the request used to fail: "did not continue the NTLM handshake").
    func testANegotiateMessageAnsweredWithAnotherSchemeFallsBackToIt() async throws {
        let url = try HTTPURL("https://mixed.test/private")
        let sent = Locked<[String]>([])
        let pinned = Locked<[Bool]>([])
        var request = HTTPClientRequest(url: "https://mixed.test/private")
        request.credentials = HTTPCredentials(username: "user", password: "secret")
        let response = try await middleware().intercept(request) { sent_ in
            let value = sent_.headers[.authorization] ?? ""
            sent.withLock { $0.append(String(value.prefix(while: { $0 != " " }))) }
            pinned.withLock { $0.append(sent_.connectionPin != nil) }
            switch value.prefix(while: { $0 != " " }) {
            case "": return Self.response(.unauthorized, .wwwAuthenticate, "NTLM", url: url)
            case "NTLM": return Self.response(.unauthorized, .wwwAuthenticate, #"Basic realm="r""#, url: url)
            default: return Self.response(.ok, url: url)
            }
        }
        XCTAssertEqual(response.status.code, 200)
        XCTAssertEqual(sent.withLock { $0 }, ["", "NTLM", "Basic"])
        XCTAssertEqual(pinned.withLock { $0 }, [false, true, false], "the Basic answer takes any connection")
    }

    /// A proxy offering only `qop=auth-int` is answered for `CONNECT`, which has no body: the hash of the empty body
    /// (the tunnel passed "no body known", and the challenge could not be answered).
    func testCONNECTAnswersADigestProxyOfferingOnlyAuthInt() async throws {
        let authenticator = Authenticator(configuration: AuthenticationConfiguration(), logger: Logger(label: "test"))
        let proxy = ProxyConfiguration(kind: .http, host: "proxy.test", port: 3128,
                                       credentials: HTTPCredentials(username: "p", password: "pp"))
        var exchange = try authenticator.beginTunnel(through: proxy, authority: "a.test:443")
        let value = try await authenticator.answer([#"Digest realm="proxy", nonce="pn", qop="auth-int""#],
                                                   exchange: &exchange, authority: "a.test:443")
        XCTAssertEqual(value.flatMap { AuthChallenge.parse([$0]).first?.parameters["qop"] }, "auth-int")
    }

    /// `stale=true` says the credentials were right in the realm they answered: from another realm it says nothing,
    /// and they are not sent there as if it did (they were, with the new nonce).
    func testAStaleChallengeFromAnotherRealmIsNotAnsweredWithTheSameCredentials() async throws {
        let authenticator = Authenticator(configuration: AuthenticationConfiguration(), logger: Logger(label: "test"))
        var exchange = AuthExchange(
            isProxy: false, scheme: "https", host: "a.test", port: 443, target: try HTTPURL("https://a.test/"),
            urlCredentials: nil, requestCredentials: HTTPCredentials(username: "u", password: "p"), allowedSchemes: nil)
        let first = try await authenticator.respond(
            to: [AuthChallenge(scheme: "digest", parameters: ["realm": "A", "nonce": "n1", "qop": "auth"])],
            exchange: &exchange, method: "GET", uri: "/", body: [])
        XCTAssertNotNil(first)
        let second = try await authenticator.respond(
            to: [AuthChallenge(scheme: "digest", parameters: ["realm": "B", "nonce": "n2", "qop": "auth", "stale": "true"])],
            exchange: &exchange, method: "GET", uri: "/", body: [])
        XCTAssertNil(second, "the request's own credentials were refused in realm A; nothing else is known")
        XCTAssertEqual(exchange.failures, 1)
    }

    /// The callback is told the user name that was refused last (it was always nil).
    func testTheCallbackIsToldTheRefusedUserName() async throws {
        let told = Locked<[String?]>([])
        var configuration = AuthenticationConfiguration()
        configuration.authenticationNeeded = { challenge in
            told.withLock { $0.append(challenge.previousUsername) }
            return HTTPCredentials(username: "user\(told.withLock { $0.count })", password: "wrong")
        }
        let url = try HTTPURL("https://basic.test/private")
        let response = try await middleware(configuration).intercept(HTTPClientRequest(url: "https://basic.test/private")) { _ in
            Self.response(.unauthorized, .wwwAuthenticate, #"Basic realm="r""#, url: url)
        }
        XCTAssertEqual(response.status.code, 401)
        XCTAssertEqual(told.withLock { $0 }, [nil, "user1", "user2"])
    }
}
