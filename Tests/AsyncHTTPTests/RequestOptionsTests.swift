import HTTPTypes
import XCTest

@testable import AsyncHTTP

// A middleware as a user (or a later built-in step) would write it: its option type and its step, declared
// here, outside the library. Nothing in `HTTPClientRequest` knows about either.

/// How many bytes per second to allow; nil: no limit.
private enum ThrottleOption: HTTPRequestOption {
    static let defaultValue: Int? = nil
}

/// A value type with more than one field and a non-nil default.
private struct TagOptions: HTTPRequestOption, Equatable {
    var tags: [String] = ["default"]
    var priority = 3
    static var defaultValue: TagOptions { TagOptions() }
}

/// Reads its option in `intercept` and reports it in a header of the request it passes on.
private struct ThrottleMiddleware: HTTPClientMiddleware {
    static let header = HTTPField.Name("X-Throttle")!

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        guard let limit = request[ThrottleOption.self] else { return try await next(request) }
        var request = request
        request.headers[Self.header] = String(limit)
        return try await next(request)
    }
}

/// Changes an option for the steps below it only.
private struct Escalate: HTTPClientMiddleware {
    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        var request = request
        request[TagOptions.self].priority += 1
        return try await next(request)
    }
}

extension HTTPClientRequest {
    /// A convenience property over a user's option, as a middleware package would declare it.
    fileprivate var throttle: Int? {
        get { self[ThrottleOption.self] }
        set { self[ThrottleOption.self] = newValue }
    }
}

/// Typed per-middleware options on `HTTPClientRequest` (`HTTPRequestOption`).
final class RequestOptionsTests: XCTestCase {
    // MARK: A middleware of one's own

    func testAMiddlewareReadsItsOwnOptionFromTheRequest() async throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request[ThrottleOption.self] = 1000
        let peer = ScriptedPeer([.init(.ok), .init(.ok)])
        _ = try await peer.send(request, through: [ThrottleMiddleware()])
        _ = try await peer.send(HTTPClientRequest(url: "http://a.test/"), through: [ThrottleMiddleware()])
        XCTAssertEqual(peer.requests[0].headers[ThrottleMiddleware.header], "1000")
        XCTAssertNil(peer.requests[1].headers[ThrottleMiddleware.header], "the default, nil: no limit")
        XCTAssertEqual(peer.requests[0][ThrottleOption.self], 1000, "options reach the end of the chain")
    }

    func testAUserOptionTravelsThroughTheBuiltInChainAndEachRedirectHop() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.middleware = [ThrottleMiddleware()]
        let chain = HTTPClient.builtInMiddleware(
            configuration, authenticator: Authenticator(configuration: .init(), logger: configuration.logger), proxies: ProxyRouter(.none))
            + configuration.middleware
        var request = HTTPClientRequest(url: "http://a.test/start")
        request.throttle = 512
        let peer = ScriptedPeer([.redirect(302, to: "http://b.test/next"), .init(.ok)])
        let response = try await peer.send(request, through: chain)
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(peer.requests.map { $0.headers[ThrottleMiddleware.header] }, ["512", "512"])
    }

    func testAMiddlewareChangesAnOptionForTheStepsBelowItOnly() async throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request[TagOptions.self].tags = ["mine"]
        let peer = ScriptedPeer([.init(.ok)])
        _ = try await peer.send(request, through: [Escalate(), Escalate()])
        XCTAssertEqual(peer.requests[0][TagOptions.self], TagOptions(tags: ["mine"], priority: 5))
        XCTAssertEqual(request[TagOptions.self].priority, 3, "the caller's request is a value")
    }

    // MARK: Values

    func testUnsetOptionsHaveTheirDefaults() {
        let request = HTTPClientRequest(url: "http://a.test/")
        XCTAssertNil(request[ThrottleOption.self])
        XCTAssertNil(request.throttle)
        XCTAssertEqual(request[TagOptions.self], TagOptions())
        XCTAssertEqual(request[TagOptions.self].tags, ["default"])
        XCTAssertEqual(request.optionCount, 0, "reading an option stores nothing")
    }

    func testOptionsOfDifferentTypesAreIndependent() {
        var request = HTTPClientRequest(url: "http://a.test/")
        request[ThrottleOption.self] = 10
        request[TagOptions.self].priority = 9
        request[ThrottleOption.self] = 20
        XCTAssertEqual(request[ThrottleOption.self], 20)
        XCTAssertEqual(request[TagOptions.self], TagOptions(tags: ["default"], priority: 9))
        XCTAssertEqual(request.optionCount, 2, "setting an option again replaces it")
        request[ThrottleOption.self] = nil
        XCTAssertNil(request[ThrottleOption.self], "set back to its default")
    }

    // MARK: Copy-on-write

    func testCopiesHaveIndependentOptions() {
        var original = HTTPClientRequest(url: "http://a.test/")
        original[ThrottleOption.self] = 1
        original.compressesBody = true
        var copy = original
        XCTAssertEqual(copy.storageIdentity, original.storageIdentity, "a copy shares the box")

        copy[ThrottleOption.self] = 2
        copy[TagOptions.self].tags.append("copy")
        copy.compressesBody = false
        XCTAssertNotEqual(copy.storageIdentity, original.storageIdentity, "the first write copies it")

        XCTAssertEqual(original[ThrottleOption.self], 1)
        XCTAssertEqual(original[TagOptions.self], TagOptions())
        XCTAssertTrue(original.compressesBody)
        XCTAssertEqual(copy[ThrottleOption.self], 2)
        XCTAssertEqual(copy[TagOptions.self].tags, ["default", "copy"])
        XCTAssertFalse(copy.compressesBody)

        original[ThrottleOption.self] = 3
        XCTAssertEqual(copy[ThrottleOption.self], 2, "and the other way round")
    }

    func testReadingOptionsAndTheParsedURLNeverCopiesTheBox() throws {
        var request = HTTPClientRequest(url: "http://a.test/")
        request[ThrottleOption.self] = 1
        let copy = request
        let box = request.storageIdentity
        _ = request[ThrottleOption.self]
        _ = request[TagOptions.self]
        _ = request.credentials
        _ = request.usesCookieJar
        _ = try request.httpURL()
        XCTAssertEqual(request.storageIdentity, box)
        XCTAssertEqual(copy.storageIdentity, box)
        XCTAssertTrue(copy.hasParsedURL, "a parse kept by one copy serves the others")
    }

    func testWritingAUniqueRequestsOptionsKeepsItsBox() {
        var request = HTTPClientRequest(url: "http://a.test/")
        let box = request.storageIdentity
        request[ThrottleOption.self] = 1
        request.credentials = HTTPCredentials(username: "u", password: "p")
        request.connectionPin = ConnectionPin()
        XCTAssertEqual(request.storageIdentity, box)
    }

    // MARK: The built-in options and their properties

    func testEachLegacyPropertyReadsAndWritesItsOption() {
        var request = HTTPClientRequest(url: "http://a.test/")

        request.redirectPolicy = .disabled
        XCTAssertEqual(request[RedirectOptions.self].policy, .disabled)
        request[RedirectOptions.self].policy = RedirectPolicy(maxRedirects: 2)
        XCTAssertEqual(request.redirectPolicy?.maxRedirects, 2)

        let key = HTTPField.Name("X-Api-Key")!
        request.sensitiveHeaders = [key]
        XCTAssertEqual(request[RedirectOptions.self].sensitiveHeaders, [key])
        request[RedirectOptions.self].sensitiveHeaders = []
        XCTAssertEqual(request.sensitiveHeaders, [])

        request.usesCookieJar = false
        XCTAssertFalse(request[CookieOptions.self].usesCookieJar)
        request[CookieOptions.self].usesCookieJar = true
        XCTAssertTrue(request.usesCookieJar)

        request.acceptsCompressedResponse = false
        XCTAssertEqual(request[CompressionOptions.self].acceptsCompressedResponse, false)
        request[CompressionOptions.self].acceptsCompressedResponse = nil
        XCTAssertNil(request.acceptsCompressedResponse)

        request.compressesBody = true
        XCTAssertTrue(request[CompressionOptions.self].compressesBody)
        request[CompressionOptions.self].compressesBody = false
        XCTAssertFalse(request.compressesBody)

        request.keepsRawCompressedBody = true
        XCTAssertTrue(request[CompressionOptions.self].keepsRawCompressedBody)
        request[CompressionOptions.self].keepsRawCompressedBody = false
        XCTAssertFalse(request.keepsRawCompressedBody)

        let utf8 = TextDecodingFallback(encoding: .utf8)
        request.textDecodingFallback = utf8
        XCTAssertEqual(request[TextDecodingOption.self], utf8)
        request[TextDecodingOption.self] = nil
        XCTAssertNil(request.textDecodingFallback)

        let user = HTTPCredentials(username: "u", password: "p")
        request.credentials = user
        XCTAssertEqual(request[AuthenticationOptions.self].credentials, user)
        request[AuthenticationOptions.self].credentials = nil
        XCTAssertNil(request.credentials)

        request.authenticationSchemes = [.digest]
        XCTAssertEqual(request[AuthenticationOptions.self].schemes, [.digest])
        request[AuthenticationOptions.self].schemes = [.basic]
        XCTAssertEqual(request.authenticationSchemes, [.basic])

        request.sendsCredentialsPreemptively = true
        XCTAssertTrue(request[AuthenticationOptions.self].sendsCredentialsPreemptively)
        request[AuthenticationOptions.self].sendsCredentialsPreemptively = false
        XCTAssertFalse(request.sendsCredentialsPreemptively)

        request.bearerToken = "t1"
        XCTAssertEqual(request[AuthenticationOptions.self].bearerToken, "t1")
        request[AuthenticationOptions.self].bearerToken = "t2"
        XCTAssertEqual(request.bearerToken, "t2")

        let pin = ConnectionPin()
        request.connectionPin = pin
        XCTAssertTrue(request[ConnectionPinOption.self] === pin)
        request[ConnectionPinOption.self] = nil
        XCTAssertNil(request.connectionPin)
    }

    func testLegacyPropertiesKeepTheirDefaults() {
        let request = HTTPClientRequest(url: "http://a.test/")
        XCTAssertNil(request.redirectPolicy)
        XCTAssertEqual(request.sensitiveHeaders, [])
        XCTAssertTrue(request.usesCookieJar)
        XCTAssertNil(request.acceptsCompressedResponse)
        XCTAssertFalse(request.compressesBody)
        XCTAssertFalse(request.keepsRawCompressedBody)
        XCTAssertNil(request.textDecodingFallback)
        XCTAssertNil(request.credentials)
        XCTAssertNil(request.authenticationSchemes)
        XCTAssertFalse(request.sendsCredentialsPreemptively)
        XCTAssertNil(request.bearerToken)
        XCTAssertNil(request.connectionPin)
        XCTAssertNil(request.proxy)
        XCTAssertTrue(request.persistentConnection)
    }

    func testFieldsOfOneOptionAreSetTogetherAndIndependently() {
        var request = HTTPClientRequest(url: "http://a.test/")
        request.credentials = HTTPCredentials(username: "u", password: "p")
        request.bearerToken = "t"
        request.sendsCredentialsPreemptively = true
        request.credentials = nil  // as a cross-origin redirect does
        XCTAssertNil(request.credentials)
        XCTAssertEqual(request.bearerToken, "t")
        XCTAssertTrue(request.sendsCredentialsPreemptively)
        XCTAssertEqual(request.optionCount, 1, "one option for the auth step's four settings")
    }
}
