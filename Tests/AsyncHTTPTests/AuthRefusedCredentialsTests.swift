import Foundation
import HTTPTypes
import Logging
import XCTest

@testable import AsyncHTTP

/// Credentials refused once in a request are not sent again in it from another store, seen from the auth middleware
/// with a scripted `next`, no network.
final class AuthRefusedCredentialsTests: XCTestCase {
    /// The session store and the persistent store hold the same stale credentials (a success copies them from one
    /// to the other): refused from the session store, they went out again from the persistent store, two failed
    /// logins for one request (half a lockout threshold). They are sent once, removed from both stores, and the
    /// callback is asked.
    func testCredentialsRefusedFromTheSessionStoreAreNotSentAgainFromThePersistentStore() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-refused-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let space = ProtectionSpace(scheme: "https", host: "a.test", port: 443, realm: "r", authenticationScheme: .basic)
        let old = HTTPCredentials(username: "u", password: "old")
        let new = HTTPCredentials(username: "u", password: "new")
        let session = InMemoryCredentialStore()
        await session.store(old, for: space)
        let file = try CredentialFile(path: directory.appendingPathComponent("credentials.json").path)
        try await file.store(old, for: space)
        let asked = Counter()
        var configuration = AuthenticationConfiguration()
        configuration.sessionStore = session
        configuration.persistentStore = file
        configuration.authenticationNeeded = { _ in
            asked.increment()
            return new
        }
        let middleware = AuthMiddleware(authenticator: Authenticator(configuration: configuration, logger: Logger(label: "test")),
                                        proxies: ProxyRouter(.none, environment: [:]))
        let url = try HTTPURL("https://a.test/private")
        let sent = Locked<[String?]>([])
        let response = try await middleware.intercept(HTTPClientRequest(url: "https://a.test/private")) { request in
            let authorization = request.headers[.authorization]
            sent.withLock { $0.append(authorization) }
            var headers = HTTPFields()
            if authorization == Authenticator.basic(new) { return HTTPClientResponse(status: .ok, headers: headers, url: url) }
            headers[.wwwAuthenticate] = #"Basic realm="r""#
            return HTTPClientResponse(status: .unauthorized, headers: headers, url: url)
        }
        XCTAssertEqual(response.status, .ok)
        let values = sent.withLock { $0 }
        XCTAssertEqual(values.filter { $0 == Authenticator.basic(old) }.count, 1, "the refused credentials went out once: \(values)")
        XCTAssertEqual(values, [nil, Authenticator.basic(old), Authenticator.basic(new)])
        XCTAssertEqual(asked.value, 1)
        let inFile = await file.credentials(for: space)
        XCTAssertEqual(inFile, new, "the refused copy is gone from the file, the new credentials saved")
        let inSession = await session.credentials(for: space)
        XCTAssertEqual(inSession, new)
    }
}
