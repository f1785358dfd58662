import HTTPTypes
import XCTest
@testable import AsyncHTTP

/// TLS against the in-process server with a CA generated at test time.
final class TLSTests: XCTestCase {
    func client(_ configure: (inout TLSConfiguration) -> Void = { _ in }) throws -> HTTPClient {
        var tls = TLSConfiguration()
        tls.trustRoots = .file(TestTLS.shared.caFile)
        configure(&tls)
        var configuration = HTTPClient.Configuration(tls: tls)
        configuration.connectTimeout = .seconds(5)
        return HTTPClient(configuration: configuration)
    }

    func testTrustedCertificateByNameAndByIPAddress() async throws {
        let server = try await NIOTestServer(tls: .trusted)
        let client = try client()
        for host in ["localhost", "127.0.0.1"] {
            let response = try await client.send(HTTPClientRequest(url: "https://\(host):\(server.port)/hello"))
            let value1 = try await response.body.collect(upTo: 100)
            XCTAssertEqual(value1, Array("hello".utf8), host)
        }
        await client.shutdown()
        try await server.shutdown()
    }

    /// `additionalTrustDirectory` that is missing, or a file, is a clear error when the first TLS connection is made
    /// (OpenSSL itself would take it silently and fail every chain later).
    func testAMissingCADirectoryIsNamed() async throws {
        let server = try await NIOTestServer(tls: .trusted)
        for (path, why) in [("/nonexistent/ahttp-ca-dir", "it does not exist"), (TestTLS.shared.caFile, "it is not a directory")] {
            let client = try client { $0.additionalTrustDirectory = path }
            let error = await assertThrowsHTTPError(.tlsHandshakeFailed) {
                try await client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/hello"))
            }
            XCTAssertEqual(error?.message, "cannot use CA directory '\(path)': \(why)")
            await client.shutdown()
        }
        try await server.shutdown()
    }

    /// A fully qualified name (`localhost.`) is checked against the certificate, and sent as SNI, without its dot:
    /// OpenSSL's name check does not ignore it, so every such https request failed verification.
    func testAHostWithATrailingDotIsVerifiedWithoutIt() async throws {
        let server = try await NIOTestServer(tls: .trusted)
        let client = try client()
        var request = HTTPClientRequest(url: "https://localhost.:\(server.port)/hello")
        request.resolve = [try ResolveOverride(host: "localhost.", port: server.port, addresses: ["127.0.0.1"])]
        let response = try await client.send(request)
        let body = try await response.body.collect(upTo: 100)
        XCTAssertEqual(body, Array("hello".utf8))
        await client.shutdown()
        try await server.shutdown()
    }

    func testKeepAliveOverTLS() async throws {
        let server = try await NIOTestServer(tls: .trusted)
        let client = try client()
        for _ in 0..<10 {
            _ = try await client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/bytes?n=70000")).body.collect(upTo: 1 << 20)
        }
        XCTAssertEqual(server.connectionsAccepted, 1)
        await client.shutdown()
        try await server.shutdown()
    }

    func testLargeBodiesBothWaysOverTLS() async throws {
        let server = try await NIOTestServer(tls: .trusted)
        let client = try client()
        var request = HTTPClientRequest(url: "https://localhost:\(server.port)/echo")
        request.method = .post
        let payload = (0..<(3 << 20)).map { UInt8($0 % 241) }
        request.body = .stream(ChunkSequence(stride(from: 0, to: payload.count, by: 100_000).map {
            Array(payload[$0..<min($0 + 100_000, payload.count)])
        }))
        let echoed = try await client.send(request).body.collect(upTo: 8 << 20)
        XCTAssertEqual(echoed, payload)
        await client.shutdown()
        try await server.shutdown()
    }

    func testSelfSignedCertificateIsRejected() async throws {
        let server = try await NIOTestServer(tls: .selfSigned)
        let client = try client()
        let error = await assertThrows(.certificateInvalid) {
            _ = try await client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/hello"))
        }
        XCTAssertNotNil(error?.tlsReason)
        await client.shutdown()
        try await server.shutdown()
    }

    func testExpiredCertificateIsRejected() async throws {
        let server = try await NIOTestServer(tls: .expired)
        let client = try client()
        await assertThrows(.certificateInvalid, containing: "expired") {
            _ = try await client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/hello"))
        }
        await client.shutdown()
        try await server.shutdown()
    }

    func testCertificateForAnotherHostIsRejected() async throws {
        let server = try await NIOTestServer(tls: .wrongHost)
        let client = try client()
        await assertThrows(.certificateInvalid, containing: "mismatch") {
            _ = try await client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/hello"))
        }
        await client.shutdown()
        try await server.shutdown()
    }

    func testVerificationOffAcceptsAnyCertificate() async throws {
        let server = try await NIOTestServer(tls: .selfSigned)
        let client = HTTPClient(configuration: .init(tls: .insecure))
        let response = try await client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/hello"))
        XCTAssertEqual(response.status, .ok)
        await client.shutdown()
        try await server.shutdown()
    }

    func testSystemTrustStoreDoesNotTrustTheTestCA() async throws {
        let server = try await NIOTestServer(tls: .trusted)
        let client = HTTPClient()
        await assertThrows(.certificateInvalid) {
            _ = try await client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/hello"))
        }
        await client.shutdown()
        try await server.shutdown()
    }

    func testServerRequiringAClientCertificate() async throws {
        let server = try await NIOTestServer(tls: .trusted(requireClientCertificate: true))
        let url = "https://localhost:\(server.port)/hello"
        let anonymous = try client()
        do {
            // TLS 1.3 reports the missing certificate after the handshake, as an alert on the first read; the
            // error says so, as a failed handshake.
            _ = try await anonymous.send(HTTPClientRequest(url: url)).body.collect(upTo: 100)
            XCTFail("a server requiring a client certificate accepted none")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .tlsHandshakeFailed, "\(error)")
            XCTAssertTrue(error.message.hasPrefix("localhost:\(server.port) refused the TLS client certificate"), "\(error)")
        }
        await anonymous.shutdown()

        let tls = TestTLS.shared
        let authenticated = try client {
            $0.clientCertificate = .init(certificateFile: tls.clientCertFile, privateKeyFile: tls.clientKeyFile)
        }
        let response = try await authenticated.send(HTTPClientRequest(url: url))
        XCTAssertEqual(response.headers[HTTPField.Name("X-Client-Cert-Subject")!], TestTLS.clientCommonName)
        await authenticated.shutdown()
        try await server.shutdown()
    }

    /// An encrypted client key is refused at once, with an error that says so: with no passphrase callback OpenSSL
    /// prompted for one on the controlling terminal, holding every https request of the client until someone typed.
    func testAnEncryptedClientKeyIsRefusedWithoutAPrompt() async throws {
        let server = try await NIOTestServer(tls: .trusted)
        let tls = TestTLS.shared
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("enc-key-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let encrypted = directory + "/client-encrypted.key"
        let made = try TestTLS.openssl(["pkey", "-in", tls.clientKeyFile, "-aes256", "-passout", "pass:secret", "-out", encrypted])
        XCTAssertEqual(made.status, 0, made.output)
        let client = try client { $0.clientCertificate = .init(certificateFile: tls.clientCertFile, privateKeyFile: encrypted) }
        await assertThrows(.tlsHandshakeFailed, containing: "encrypted") {
            _ = try await client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/hello"))
        }
        await client.shutdown()
        try await server.shutdown()
    }

    func testMissingClientKeyFileIsATypedError() async throws {
        let server = try await NIOTestServer(tls: .trusted)
        let client = try client { $0.clientCertificate = .init(certificateFile: "/nonexistent.pem", privateKeyFile: "/nonexistent.key") }
        await assertThrows(.tlsHandshakeFailed, containing: "/nonexistent.pem") {
            _ = try await client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/hello"))
        }
        await client.shutdown()
        try await server.shutdown()
    }

    func testReconnectsResumeTheTLSSession() async throws {
        let server = try await NIOTestServer(tls: .trusted)
        let client = try client()
        for _ in 0..<3 {
            var request = HTTPClientRequest(url: "https://localhost:\(server.port)/hello")
            request.persistentConnection = false
            _ = try await client.send(request).body.collect(upTo: 100)
        }
        XCTAssertEqual(server.connectionsAccepted, 3)
        XCTAssertEqual(client.tlsSessionsResumed, 2, "every reconnect after the first resumed")
        await client.shutdown()
        try await server.shutdown()
    }

    /// A session is resumed only on the route it was made on: a ticket from a direct connection offered through a
    /// proxy (or to another endpoint for the name) would let the server link the two visits.
    func testASessionIsNotOfferedOnAnotherRoute() async throws {
        let server = try await NIOTestServer(tls: .trusted)
        let client = try client()
        let url = "https://localhost:\(server.port)/hello"
        var direct = HTTPClientRequest(url: url)
        direct.persistentConnection = false
        _ = try await client.send(direct).body.collect(upTo: 100)
        var rerouted = direct
        rerouted.connectTo = [try ConnectToOverride("localhost:\(server.port):127.0.0.1:\(server.port)")]
        _ = try await client.send(rerouted).body.collect(upTo: 100)
        XCTAssertEqual(client.tlsSessionsResumed, 0, "the direct connection's session was offered on another route")
        _ = try await client.send(direct).body.collect(upTo: 100)
        XCTAssertEqual(client.tlsSessionsResumed, 1, "the direct route still resumes its own")
        await client.shutdown()
        try await server.shutdown()
    }
}
