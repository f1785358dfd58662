import Foundation
import XCTest

/// `ahttp`'s authentication, proxy and client-certificate options, run as a user would, against real peers.
final class CommandLineAuthOptionsTests: XCTestCase {
    func ahttp(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runAhttp(arguments)
    }

    func testUserSendsBasicAtOnceAsCurl() throws {
        let base = try Peers.httpbin()
        // hidden-basic-auth never challenges: only credentials sent unasked get through.
        let result = try ahttp(["-s", "-u", "ann:pw", base + "/hidden-basic-auth/ann/pw"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("\"user\": \"ann\""), result.stdout)
        let basic = try ahttp(["-s", "--basic", "-u", "ann:pw", "-w", "%{http_code}", "-o", "/dev/null", base + "/basic-auth/ann/pw"])
        XCTAssertEqual(basic.stdout, "200")
        let wrong = try ahttp(["-s", "-u", "ann:nope", "-w", "%{http_code}", "-o", "/dev/null", base + "/basic-auth/ann/pw"])
        XCTAssertEqual(wrong.stdout, "401", "refused credentials give the 401, exit status 0, as curl")
        XCTAssertEqual(wrong.status, 0)
    }

    /// -u wins over the URL's `user:password@`, as in curl (the URL's used to win).
    func testUserWinsOverTheURLsCredentials() throws {
        let port = try Peers.httpbin().split(separator: ":").last.map(String.init) ?? ""
        let result = try ahttp(["-s", "-u", "ann:pw", "-w", " %{http_code}", "http://cat:dog@127.0.0.1:\(port)/basic-auth/ann/pw"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("\"user\": \"ann\"") && result.stdout.hasSuffix(" 200"), result.stdout)
        let urlOnly = try ahttp(["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://ann:pw@127.0.0.1:\(port)/basic-auth/ann/pw"])
        XCTAssertEqual(urlOnly.stdout, "200", "without -u the URL's credentials are sent")
    }

    func testDigestOnlyWithDigest() throws {
        let base = try Peers.httpbin()
        let url = base + "/digest-auth/auth/dan/pw/SHA-256"
        let digest = try ahttp(["-s", "--digest", "-u", "dan:pw", "-w", "%{http_code}", "-o", "/dev/null", url])
        XCTAssertEqual(digest.stdout, "200", digest.stderr)
        let anyauth = try ahttp(["-s", "--anyauth", "-u", "dan:pw", "-w", "%{http_code}", "-o", "/dev/null", url])
        XCTAssertEqual(anyauth.stdout, "200", anyauth.stderr)
        let basicOnly = try ahttp(["-s", "--basic", "-u", "dan:pw", "-w", "%{http_code}", "-o", "/dev/null", url])
        XCTAssertEqual(basicOnly.stdout, "401", "--basic does not answer a Digest challenge")
    }

    func testOAuth2Bearer() throws {
        let result = try ahttp(["-s", "--oauth2-bearer", "tok-42", try Peers.httpbin() + "/bearer"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("\"token\": \"tok-42\""), result.stdout)
    }

    func testClientCertificateWithCertAndKey() async throws {
        let server = try await NIOTestServer(tls: .trusted(requireClientCertificate: true))
        let tls = TestTLS.shared
        let url = "https://localhost:\(server.port)/hello"
        let result = try ahttp(["-s", "-i", "--cacert", tls.caFile, "-E", tls.clientCertFile, "--key", tls.clientKeyFile, url])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.lowercased().contains("x-client-cert-subject: \(TestTLS.clientCommonName)"), result.stdout)
        let encrypted = try ahttp(["-E", tls.clientCertFile + ":password", url])
        XCTAssertEqual(encrypted.status, 2, "an encrypted key is refused up front with a usage error")
        try await server.shutdown()
    }

    func testBadProxyIsAUsageError() throws {
        let result = try ahttp(["-x", "ftp://proxy:21", "http://127.0.0.1:1/"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("invalid proxy"), result.stderr)
    }

    /// A -x value that cannot be used is named in the error without its password.
    func testABadProxyValueIsNamedWithoutItsPassword() throws {
        for value in ["http://ann:s3cr3tpw@proxy.example:notaport", "ann:s3cr3tpw@proxy.example:notaport",
                      "ftp://ann:s3cr3tpw@proxy.example:21", "ann:s3cr3tpw/x@proxy.example:notaport",
                      "http://ann:s3cr3tpw#x@proxy.example:notaport"] {
            let result = try ahttp(["-x", value, "http://127.0.0.1:1/"])
            XCTAssertEqual(result.status, 2, result.stderr)
            XCTAssertTrue(result.stderr.contains("invalid proxy"), result.stderr)
            XCTAssertFalse(result.stderr.contains("s3cr3tpw"), "the password leaked: \(result.stderr)")
        }
    }

    /// curl: `-x ""` turns off every proxy, the environment's too (ahttp refused it as an invalid proxy).
    func testEmptyProxyTurnsOffTheEnvironmentsProxy() async throws {
        let server = try await NIOTestServer()
        // A proxy that refuses connections: a request through it fails.
        let environment = ["http_proxy": "http://127.0.0.1:\(try unusedPort())", "NO_PROXY": ""]
        let through = try runAhttp(["-s", "--resolve", "origin.test:\(server.port):127.0.0.1", "http://origin.test:\(server.port)/hello"],
                                   environment: environment)
        XCTAssertNotEqual(through.status, 0, "the environment's proxy is used without -x \"\": \(through.stderr)")
        let direct = try runAhttp(["-s", "-x", "", "--resolve", "origin.test:\(server.port):127.0.0.1",
                                   "http://origin.test:\(server.port)/hello"], environment: environment)
        XCTAssertEqual(direct.status, 0, direct.stderr)
        XCTAssertEqual(direct.stdout, "hello")
        try await server.shutdown()
    }

    /// curl gives -U to whichever proxy it uses, the environment's too, as Basic at once (`--proxy-basic`, its
    /// default); ahttp dropped it without -x, then sent it only after a 407.
    func testProxyUserGoesToTheEnvironmentsProxy() throws {
        // The "proxy": 200 to whatever it is asked; the one request it gets must already carry the credentials.
        let proxy = try FaultServer(script: FaultScript { _, _ in [.response("through the proxy")] })
        defer { proxy.stop() }
        let result = try runAhttp(["-s", "-U", "ann:p@ss word", "http://origin.invalid/x"],
                                  environment: ["http_proxy": "http://127.0.0.1:\(proxy.port)"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "through the proxy")
        let heads = proxy.requestHeads.joined(separator: "\n").lowercased()
        // base64("ann:p@ss word")
        XCTAssertTrue(heads.contains("proxy-authorization: basic " + Data("ann:p@ss word".utf8).base64EncodedString().lowercased()), heads)
        XCTAssertTrue(heads.contains("get http://origin.invalid/x http/1.1"), heads)
        XCTAssertEqual(proxy.requestsReceived, 1, "no 407 round: the credentials went with the first request")
    }
}
