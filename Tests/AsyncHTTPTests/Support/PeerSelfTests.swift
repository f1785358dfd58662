import Foundation
import Glibc
import XCTest

/// Checks the test peers themselves with a tiny blocking raw-socket client, independent of AsyncHTTP,
/// so a failing client test can be trusted to be the client's fault.
final class PeerSelfTests: XCTestCase {
    // MARK: NIOTestServer

    func testNIOTestServerAnswersHelloAndKeepsTheConnectionAlive() async throws {
        let server = try await NIOTestServer()
        defer { Task { try await server.shutdown() } }
        let connection = try RawConnection(port: server.port)
        try connection.send("GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let hello = try connection.readResponse()
        XCTAssertEqual(hello.statusLine, "HTTP/1.1 200 OK")
        XCTAssertEqual(hello.headers["content-length"], "5")
        XCTAssertEqual(String(decoding: hello.body, as: UTF8.self), "hello")

        try connection.send("GET /status/418 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let teapot = try connection.readResponse()
        XCTAssertEqual(teapot.statusLine.prefix(12), "HTTP/1.1 418")
        XCTAssertEqual(teapot.body, [])
        XCTAssertEqual(server.connectionsAccepted, 1)
        XCTAssertEqual(server.requestsServed, 2)
        try await server.shutdown()
    }

    func testNIOTestServerStreamsDeterministicBytesInRequestedChunkSizes() async throws {
        let server = try await NIOTestServer()
        defer { Task { try await server.shutdown() } }
        let connection = try RawConnection(port: server.port)
        try connection.send("GET /stream?n=1000&chunk=300 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try connection.readResponse()
        XCTAssertEqual(response.headers["transfer-encoding"], "chunked")
        XCTAssertEqual(response.chunkSizes, [300, 300, 300, 100])
        XCTAssertEqual(response.body, TestPattern.slice(offset: 0, count: 1000))
        XCTAssertEqual(response.body[251], 0)
        XCTAssertNil(TestPattern.firstMismatch(in: response.body))
        XCTAssertEqual(TestPattern.firstMismatch(in: [0, 1, 9, 3]), 2, "the checker itself must notice a wrong byte")
        try await server.shutdown()
    }

    func testNIOTestServerStreamsLargeContentLengthBodyIntact() async throws {
        let server = try await NIOTestServer()
        defer { Task { try await server.shutdown() } }
        let connection = try RawConnection(port: server.port)
        let size = 24 * 1024 * 1024 + 7
        try connection.send("GET /bytes?n=\(size) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        let response = try connection.readResponse()
        XCTAssertEqual(response.headers["content-length"], String(size))
        XCTAssertEqual(response.headers["connection"], "close")
        XCTAssertEqual(response.body.count, size)
        XCTAssertNil(TestPattern.firstMismatch(in: response.body), "index of the first byte that differs from the pattern")
        XCTAssertEqual(try connection.receive(max: 1), [], "server must close after Connection: close")
        try await server.shutdown()
    }

    func testNIOTestServerHeadRequestGetsHeadWithoutBody() async throws {
        let server = try await NIOTestServer()
        defer { Task { try await server.shutdown() } }
        let connection = try RawConnection(port: server.port)
        try connection.send("HEAD /stream?n=5000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let head = try connection.readHead()
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 200 OK\r\n"), head)
        // If any body byte had been sent, it would precede this second response's status line.
        try connection.send("GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let hello = try connection.readResponse()
        XCTAssertEqual(hello.statusLine, "HTTP/1.1 200 OK")
        XCTAssertEqual(hello.body, Array("hello".utf8))
        try await server.shutdown()
    }

    func testNIOTestServerEchoReportsChunkedUploadAndAnswersExpectContinue() async throws {
        let server = try await NIOTestServer()
        defer { Task { try await server.shutdown() } }
        let connection = try RawConnection(port: server.port)
        try connection.send(
            "PUT /echo HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        let interim = try connection.readHead()
        XCTAssertTrue(interim.hasPrefix("HTTP/1.1 100 Continue"), interim)
        try connection.send("3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n")
        let echo = try connection.readResponse()
        XCTAssertEqual(String(decoding: echo.body, as: UTF8.self), "abcdefg")
        XCTAssertEqual(echo.headers["x-request-method"], "PUT")
        XCTAssertEqual(echo.headers["x-request-transfer-encoding"], "chunked")
        XCTAssertNil(echo.headers["x-request-content-length"])
        XCTAssertEqual(echo.headers["x-request-body-length"], "7")
        try await server.shutdown()
    }

    func testNIOTestServerServesHTTPSAndReportsTheClientCertificateSubject() async throws {
        let tls = TestTLS.shared
        let server = try await NIOTestServer(tls: .trusted(requireClientCertificate: true))
        defer { Task { try await server.shutdown() } }
        XCTAssertTrue(server.baseURL.hasPrefix("https://127.0.0.1:"))
        let withCertificate = try TestTLS.run("curl", [
            "-sS", "-i", "--max-time", "10", "--cacert", tls.caFile,
            "--cert", tls.clientCertFile, "--key", tls.clientKeyFile, server.url("/hello"),
        ])
        XCTAssertEqual(withCertificate.status, 0, withCertificate.output)
        XCTAssertTrue(
            withCertificate.output.lowercased().contains("x-client-cert-subject: \(TestTLS.clientCommonName)"),
            withCertificate.output
        )
        XCTAssertTrue(withCertificate.output.hasSuffix("hello"), withCertificate.output)

        let withoutCertificate = try TestTLS.run("curl", ["-sS", "--max-time", "10", "--cacert", tls.caFile, server.url("/hello")])
        XCTAssertNotEqual(withoutCertificate.status, 0, "a client without a certificate must be refused")
        try await server.shutdown()
    }

    func testNIOTestServerWithSelfSignedCertificateIsRejectedByATrustingClient() async throws {
        let server = try await NIOTestServer(tls: .selfSigned)
        defer { Task { try await server.shutdown() } }
        let result = try TestTLS.run("curl", ["-sS", "--max-time", "10", "--cacert", TestTLS.shared.caFile, server.url("/hello")])
        XCTAssertEqual(result.status, 60, "curl exit 60 is 'peer certificate cannot be authenticated': \(result.output)")
        try await server.shutdown()
    }

    func testNIOTestServerHeadersRouteReportsRequestLineAndHeadersAsReceived() async throws {
        let server = try await NIOTestServer()
        defer { Task { try await server.shutdown() } }
        let connection = try RawConnection(port: server.port)
        try connection.send("GET /headers?x=1 HTTP/1.0\r\nHost: example\r\nX-Custom: A b\r\n\r\n")
        let response = try connection.readResponse()
        XCTAssertEqual(
            String(decoding: response.body, as: UTF8.self),
            "method: GET\ntarget: /headers?x=1\nversion: HTTP/1.0\n\nHost: example\nX-Custom: A b\n"
        )
        XCTAssertEqual(response.headers["connection"], "close", "HTTP/1.0 without keep-alive")
        XCTAssertEqual(try connection.receive(max: 1), [])
        try await server.waitUntilAllConnectionsClosed()
        XCTAssertEqual(server.connectionsOpen, 0)
        try await server.shutdown()
    }

    func testNIOTestServerBigHeadIsAtLeastTheRequestedSize() async throws {
        let server = try await NIOTestServer()
        defer { Task { try await server.shutdown() } }
        let connection = try RawConnection(port: server.port)
        try connection.send("GET /big-head?n=4000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let head = try connection.readHead()
        XCTAssertGreaterThanOrEqual(head.utf8.count, 4000)
        XCTAssertLessThan(head.utf8.count, 4000 + 1200)
        try await server.shutdown()
    }

    func testNIOTestServerShutdownClosesTheListeningSocket() async throws {
        let server = try await NIOTestServer()
        let port = server.port
        try await server.shutdown()
        try await server.shutdown()
        XCTAssertThrowsError(try RawConnection(port: port))
    }

    // MARK: FaultServer

    func testFaultServerClosesRightAfterTheHeadAsScripted() throws {
        let server = try FaultServer(script: .closeAfterHead)
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let received = try connection.receiveToEnd()
        XCTAssertEqual(String(decoding: received, as: UTF8.self), "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
        XCTAssertEqual(server.requestsReceived, 1)
        XCTAssertEqual(server.requestHeads.first?.hasPrefix("GET / HTTP/1.1\r\n"), true)
    }

    func testFaultServerStaleKeepAliveClosesOnlyTheReusedFirstConnection() throws {
        let server = try FaultServer(script: .staleKeepAlive)
        defer { server.stop() }
        let first = try RawConnection(port: server.port)
        try first.send("GET /a HTTP/1.1\r\nHost: localhost\r\n\r\n")
        XCTAssertEqual(try first.readResponse().body, Array("hello".utf8))
        try first.send("POST /b HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nxyz")
        XCTAssertEqual(try first.receiveToEnd(), [], "the reused connection must close without an answer")

        let second = try RawConnection(port: server.port)
        for _ in 0..<2 {
            try second.send("GET /c HTTP/1.1\r\nHost: localhost\r\n\r\n")
            XCTAssertEqual(try second.readResponse().body, Array("hello".utf8))
        }
        XCTAssertEqual(server.connectionsAccepted, 2)
        XCTAssertEqual(server.requestsReceived, 4)
    }

    func testFaultServerStopClosesAHeldConnection() throws {
        let server = try FaultServer(script: .neverResponds)
        let connection = try RawConnection(port: server.port)
        try connection.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        server.stop()
        XCTAssertEqual(try connection.receiveToEnd(), [], "stop() must close connections it holds")
        XCTAssertThrowsError(try RawConnection(port: server.port))
    }

    // MARK: TestTLS

    func testTestTLSCertificatesVerifyOnlyWhereTheyShould() throws {
        let tls = TestTLS.shared
        let good = try TestTLS.run("openssl", ["verify", "-CAfile", tls.caFile, tls.serverCertFile, tls.clientCertFile, tls.wrongHostCertFile])
        XCTAssertEqual(good.status, 0, good.output)
        let selfSigned = try TestTLS.run("openssl", ["verify", "-CAfile", tls.caFile, tls.selfSignedCertFile])
        XCTAssertNotEqual(selfSigned.status, 0, selfSigned.output)
        let expired = try TestTLS.run("openssl", ["verify", "-CAfile", tls.caFile, tls.expiredCertFile])
        XCTAssertNotEqual(expired.status, 0)
        XCTAssertTrue(expired.output.contains("expired"), expired.output)
        let names = try TestTLS.run("openssl", ["x509", "-noout", "-ext", "subjectAltName", "-in", tls.serverCertFile])
        XCTAssertTrue(names.output.contains("DNS:localhost") && names.output.contains("IP Address:127.0.0.1"), names.output)
        let host = try TestTLS.run("openssl", ["verify", "-CAfile", tls.caFile, "-verify_hostname", "localhost", tls.wrongHostCertFile])
        XCTAssertNotEqual(host.status, 0, "the wrong-host certificate must not match localhost")
    }

    // MARK: nginx (started by ./scripts/test.sh)

    func testNginxPeerServesStaticFilesOverHTTPAndHTTPS() throws {
        let nginx = try Peers.nginx()
        let connection = try RawConnection(port: nginx.httpPort)
        try connection.send("GET /small.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let small = try connection.readResponse()
        XCTAssertEqual(small.statusLine, "HTTP/1.1 200 OK")
        XCTAssertEqual(small.body.count, 1024)
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: try Peers.directory() + "/www/small.txt"))
        XCTAssertEqual(small.body, Array(onDisk))

        let https = try TestTLS.run("curl", [
            "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "--cacert", nginx.caFile,
            "https://127.0.0.1:\(nginx.httpsPort)/index.html",
        ])
        XCTAssertEqual(https.output, "200")
    }
}

extension PeerSelfTests {
    func testHttpbinPeerAnswersGet() throws {
        let base = try Peers.httpbin()
        let port = try XCTUnwrap(base.split(separator: ":").last.flatMap { Int($0) }, base)
        let connection = try RawConnection(port: port)
        try connection.send("GET /get HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let response = try connection.readResponse()
        XCTAssertEqual(response.statusLine, "HTTP/1.1 200 OK")
        XCTAssertTrue(String(decoding: response.body, as: UTF8.self).contains("\"url\""))
    }
}

// MARK: proxy and authentication peers (started by ./scripts/test.sh), checked with curl through nginx

extension PeerSelfTests {
    /// curl fetching nginx's `small.txt` (1 KiB) over `scheme` with extra arguments (the proxy), printing only
    /// `<status> <CONNECT status> <bytes>`, e.g. `200 200 1024` through a tunnel or `200 000 1024` without one.
    /// curl's own error message, if any, comes first.
    private func curlSmallFile(
        _ scheme: String, _ arguments: [String], host: String = "127.0.0.1"
    ) throws -> (status: Int32, output: String) {
        let nginx = try Peers.nginx()
        let url = scheme == "https"
            ? "https://\(host):\(nginx.httpsPort)/small.txt" : "http://\(host):\(nginx.httpPort)/small.txt"
        return try TestTLS.run("curl", [
            "-sS", "-o", "/dev/null", "--max-time", "10", "--cacert", nginx.caFile,
            "-w", "%{http_code} %{http_connect} %{size_download}",
        ] + arguments + [url])
    }

    func testTinyproxyPeersForwardAndTunnelWithAndWithoutBasicAuthentication() throws {
        let open = try Peers.tinyproxy()
        XCTAssertEqual(try curlSmallFile("http", ["-x", open.url]).output, "200 000 1024")
        XCTAssertEqual(try curlSmallFile("https", ["-x", open.url]).output, "200 200 1024")

        let auth = try Peers.tinyproxyAuth()
        let refused = try curlSmallFile("http", ["-x", auth.url])
        XCTAssertTrue(refused.output.hasPrefix("407 "), refused.output)
        let credentials = ["-x", auth.url, "--proxy-basic", "--proxy-user", "\(auth.user):\(auth.password)"]
        XCTAssertEqual(try curlSmallFile("http", credentials).output, "200 000 1024")
        XCTAssertEqual(try curlSmallFile("https", credentials).output, "200 200 1024")
    }

    func testSquidPeerWantsDigestProxyAuthenticationAndThenForwardsAndTunnels() throws {
        let squid = try Peers.squidDigest()
        let nginx = try Peers.nginx()
        let challenge = try TestTLS.run("curl", [
            "-sS", "-o", "/dev/null", "-D", "-", "--max-time", "10", "-x", squid.url,
            "http://127.0.0.1:\(nginx.httpPort)/small.txt",
        ])
        XCTAssertTrue(challenge.output.hasPrefix("HTTP/1.1 407 "), challenge.output)
        XCTAssertTrue(
            challenge.output.contains("Proxy-Authenticate: Digest realm=\"\(squid.realm ?? "")\""), challenge.output
        )

        let digest = ["-x", squid.url, "--proxy-digest", "--proxy-user", "\(squid.user):\(squid.password)"]
        XCTAssertEqual(try curlSmallFile("http", digest).output, "200 000 1024")
        XCTAssertEqual(try curlSmallFile("https", digest).output, "200 200 1024")
        let basic = try curlSmallFile(
            "http", ["-x", squid.url, "--proxy-basic", "--proxy-user", "\(squid.user):\(squid.password)"]
        )
        XCTAssertTrue(basic.output.hasPrefix("407 "), "squid must accept Digest only: \(basic.output)")
    }

    func testSOCKS5PeersConnectWithAndWithoutUsernamePassword() throws {
        let open = try Peers.socks5()
        XCTAssertEqual(try curlSmallFile("http", ["-x", open.url]).output, "200 000 1024")
        let byName = try curlSmallFile("https", ["--socks5-hostname", "127.0.0.1:\(open.port)"], host: "localhost")
        XCTAssertEqual(byName.output, "200 000 1024")

        let auth = try Peers.socks5Auth()
        let refused = try curlSmallFile("http", ["--socks5", "127.0.0.1:\(auth.port)"])
        XCTAssertEqual(refused.status, 97, "curl exit 97 is 'SOCKS proxy handshake failed': \(refused.output)")
        let https = try curlSmallFile(
            "https", ["--socks5-hostname", "127.0.0.1:\(auth.port)", "--proxy-user", "\(auth.user):\(auth.password)"],
            host: "localhost"
        )
        XCTAssertEqual(https.output, "200 000 1024")
        let log = try String(contentsOfFile: try XCTUnwrap(auth.logFile), encoding: .utf8)
        let httpsPort = try Peers.nginx().httpsPort
        XCTAssertTrue(log.contains("user=\(auth.user) atyp=domain target=localhost:\(httpsPort) reply=0x00"), log)
    }

    /// dante speaks SOCKS4 and refuses SOCKS4a's name form (so a client test through it cannot pass by sending a
    /// name); `ssh -D` speaks SOCKS4a, and sshd logs the name it was asked for.
    func testSOCKS4PeersAnswerAsTheClientTestsAssume() throws {
        let dante = try Peers.socks4()
        XCTAssertEqual(try curlSmallFile("http", ["--socks4", "127.0.0.1:\(dante.port)"]).output, "200 000 1024")
        let nameToDante = try curlSmallFile("http", ["--socks4a", "127.0.0.1:\(dante.port)"], host: "localhost")
        XCTAssertEqual(nameToDante.status, 97, "dante refuses SOCKS4a: \(nameToDante.output)")
        let (ssh, log) = try Peers.socks4a()
        XCTAssertEqual(try curlSmallFile("https", ["--socks4a", "127.0.0.1:\(ssh.port)"], host: "localhost").output, "200 000 1024")
        let httpsPort = try Peers.nginx().httpsPort
        let text = try String(contentsOfFile: log, encoding: .utf8)
        XCTAssertTrue(text.contains("target localhost port \(httpsPort)"), text)
    }

    func testNTLMPeerAuthenticatesAConnectionAndRefusesATypeThreeMessageOnAnother() throws {
        let ntlm = try Peers.ntlm()
        let curl = try TestTLS.run("curl", [
            "-sS", "--max-time", "10", "--ntlm", "--user", "\(ntlm.qualifiedUser):\(ntlm.password)",
            ntlm.url + "/ntlm/self-test",
        ])
        XCTAssertEqual(curl.status, 0, curl.output)
        let answer = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(curl.output.utf8)) as? [String: Any], curl.output
        )
        XCTAssertEqual(answer["authenticated"] as? Bool, true)
        XCTAssertEqual(answer["user"] as? String, ntlm.qualifiedUser)
        XCTAssertEqual(answer["handshakesOnConnection"] as? Int, 1)

        // A type 3 message (signature, type, then zeros) on a connection that sent no type 1 has no context.
        let typeThreeBytes: [UInt8] = Array("NTLMSSP".utf8) + [0, 3, 0, 0, 0] + [UInt8](repeating: 0, count: 52)
        let typeThree = Data(typeThreeBytes).base64EncodedString()
        let connection = try RawConnection(port: ntlm.port)
        try connection.send("GET /ntlm/orphan HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: NTLM \(typeThree)\r\n\r\n")
        let orphan = try connection.readResponse()
        XCTAssertEqual(orphan.statusLine, "HTTP/1.1 401 Unauthorized")
        XCTAssertEqual(orphan.headers["www-authenticate"], "NTLM")
        try connection.send("GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let statsBody = try connection.readResponse().body
        let stats = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(statsBody)) as? [String: Any])
        XCTAssertGreaterThanOrEqual(stats["orphanType3"] as? Int ?? 0, 1, "\(stats)")
    }

    func testNTLMProxyPeerForwardsAndTunnelsAfterAuthentication() throws {
        let proxy = try Peers.ntlmProxy()
        let refused = try curlSmallFile("http", ["-x", proxy.url])
        XCTAssertTrue(refused.output.hasPrefix("407 "), refused.output)
        let credentials = ["-x", proxy.url, "--proxy-ntlm", "--proxy-user", "\(proxy.qualifiedUser):\(proxy.password)"]
        XCTAssertEqual(try curlSmallFile("http", credentials).output, "200 000 1024")
        XCTAssertEqual(try curlSmallFile("https", credentials).output, "200 200 1024")
    }
}

/// A blocking client socket with 10 s send/receive timeouts, so a broken peer fails a test instead of hanging it.
final class RawConnection {
    struct Response {
        var statusLine: String
        /// Lower-cased names; the last value wins.
        var headers: [String: String]
        var body: [UInt8]
        /// For chunked responses, the size of each chunk in order (without the final 0).
        var chunkSizes: [Int]
    }

    private let fd: Int32
    private var buffered: [UInt8] = []

    init(port: Int, host: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PeerError("socket failed: errno \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let error = errno
            close(fd)
            throw PeerError("connect to \(host):\(port) failed: errno \(error)")
        }
    }

    deinit { close(fd) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw PeerError("send failed: errno \(errno)") }
            offset += n
        }
    }

    /// Up to `max` bytes; `[]` means the peer closed. Throws on timeout or error.
    func receive(max: Int = 64 * 1024) throws -> [UInt8] {
        if !buffered.isEmpty {
            let n = min(max, buffered.count)
            defer { buffered.removeFirst(n) }
            return Array(buffered[0..<n])
        }
        var chunk = [UInt8](repeating: 0, count: max)
        let n = recv(fd, &chunk, max, 0)
        if n < 0 {
            if errno == ECONNRESET { return [] }
            throw PeerError("recv failed: errno \(errno)")
        }
        return Array(chunk[0..<n])
    }

    /// Everything until the peer closes.
    func receiveToEnd() throws -> [UInt8] {
        var all: [UInt8] = []
        while true {
            let part = try receive()
            if part.isEmpty { return all }
            all += part
        }
    }

    private func fill(_ count: Int) throws {
        while buffered.count < count {
            var chunk = [UInt8](repeating: 0, count: 256 * 1024)
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { throw PeerError("connection ended after \(buffered.count) of \(count) bytes (errno \(errno))") }
            buffered.append(contentsOf: chunk[0..<n])
        }
    }

    private func take(_ count: Int) throws -> [UInt8] {
        try fill(count)
        defer { buffered.removeFirst(count) }
        return Array(buffered[0..<count])
    }

    private func readLine() throws -> String {
        var line: [UInt8] = []
        while true {
            let byte = try take(1)[0]
            if byte == 10, line.last == 13 { return String(decoding: line.dropLast(), as: UTF8.self) }
            line.append(byte)
        }
    }

    /// The head up to and including the blank line.
    func readHead() throws -> String {
        var head = ""
        while true {
            let line = try readLine()
            head += line + "\r\n"
            if line.isEmpty { return head }
        }
    }

    /// One response framed by Content-Length, chunked encoding, or (neither) the connection's end.
    func readResponse() throws -> Response {
        let lines = try readHead().components(separatedBy: "\r\n").filter { !$0.isEmpty }
        var response = Response(statusLine: lines.first ?? "", headers: [:], body: [], chunkSizes: [])
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            response.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        if response.headers["transfer-encoding"] == "chunked" {
            while true {
                guard let size = Int(try readLine(), radix: 16) else { throw PeerError("bad chunk size line") }
                if size == 0 { break }
                response.chunkSizes.append(size)
                response.body += try take(size)
                _ = try readLine()
            }
            while try !readLine().isEmpty {}
        } else if let length = response.headers["content-length"].flatMap({ Int($0) }) {
            try fill(length)
            response.body = Array(buffered[0..<length])
            buffered.removeFirst(length)
        } else {
            response.body = try receiveToEnd()
        }
        return response
    }
}
