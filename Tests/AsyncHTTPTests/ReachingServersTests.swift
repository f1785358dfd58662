import Dispatch
import Foundation
import XCTest

@testable import AsyncHTTP

/// Reaching servers the way users do, against real peers: Happy Eyeballs past a black-holed address (a
/// listener whose accept queue is full drops further SYNs, as a firewall would), `--resolve` and
/// `--connect-to` against nginx and the NIO server, nginx on Unix sockets (plain and TLS), an abstract Unix
/// socket served by a small Python server, and the name-lookup cache and coalescing with an injected lookup.
final class ReachingServersTests: XCTestCase {
    // MARK: Happy Eyeballs

    func testABlackHoledFirstAddressCostsTheAttemptDelayNotTheConnectTimeout() async throws {
        let server = try await NIOTestServer()
        let hole = try BlackHole(ipv6LoopbackPort: server.port)
        defer { hole.close() }
        // A first client and request, so that what the process opens once (the event loop's descriptors) is
        // open before counting.
        let warmUp = HTTPClient()
        _ = try await warmUp.send(HTTPClientRequest(url: server.url("/hello"))).body.collect(upTo: 1 << 20)
        await warmUp.shutdown()
        try await server.waitUntilAllConnectionsClosed()
        let descriptorsBefore = openDescriptorCount()
        var configuration = HTTPClient.Configuration()
        configuration.connectTimeout = .seconds(20)
        configuration.resolve = [try ResolveOverride("dual.test:\(server.port):[::1],127.0.0.1")]
        let client = HTTPClient(configuration: configuration)
        let started = ContinuousClock.now
        let response = try await client.send(HTTPClientRequest(url: "http://dual.test:\(server.port)/hello"))
        let elapsed = ContinuousClock.now - started
        XCTAssertEqual(response.status.code, 200)
        _ = try await response.body.collect(upTo: 1 << 20)
        // Sequential tries would have waited for the 20 s connect timeout on [::1] (and then failed, since the
        // deadline is shared). The race starts 127.0.0.1 after 250 ms. The bound is loose on purpose: this
        // checks the behaviour, not the speed.
        XCTAssertLessThan(elapsed, .seconds(10), "connected after \(elapsed)")
        XCTAssertEqual(server.connectionsAccepted, 2, "the warm-up's and this one")
        await client.shutdown()
        try await server.waitUntilAllConnectionsClosed()
        XCTAssertEqual(openDescriptorCount(), descriptorsBefore, "the losing attempt's descriptor was closed")
        try await server.shutdown()
    }

    func testARefusedFirstAddressStartsTheNextAtOnce() async throws {
        let server = try await NIOTestServer()
        // Nothing listens on [::1]:port: refused at once, and the next address is tried without the delay.
        var configuration = HTTPClient.Configuration()
        configuration.connectionAttemptDelay = .seconds(30)
        configuration.connectTimeout = .seconds(20)
        configuration.resolve = [try ResolveOverride("dual.test:\(server.port):[::1],127.0.0.1")]
        let client = HTTPClient(configuration: configuration)
        let started = ContinuousClock.now
        let response = try await client.send(HTTPClientRequest(url: "http://dual.test:\(server.port)/hello"))
        XCTAssertEqual(response.status.code, 200)
        _ = try await response.body.collect(upTo: 1 << 20)
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(10), "not after the 30 s attempt delay")
        await client.shutdown()
        try await server.shutdown()
    }

    func testEveryAddressBlackHoledIsAConnectTimeout() async throws {
        let hole = try BlackHole(ipv6LoopbackPort: 0)
        var configuration = HTTPClient.Configuration()
        configuration.connectTimeout = .milliseconds(600)
        configuration.connectionAttemptDelay = .milliseconds(100)
        configuration.resolve = [try ResolveOverride("hole.test:\(hole.port):[::1],[::1]")]
        let client = HTTPClient(configuration: configuration)
        let error = await assertThrowsHTTPError(.timeout) {
            _ = try await client.send(HTTPClientRequest(url: "http://hole.test:\(hole.port)/"))
        }
        XCTAssertEqual(error?.timeoutPhase, .connect)
        await client.shutdown()
        hole.close()
    }

    // MARK: --resolve and --connect-to

    func testResolveOverrideSendsTheURLsHostToTheGivenAddress() async throws {
        let server = try await NIOTestServer()
        var configuration = HTTPClient.Configuration()
        configuration.resolve = [try ResolveOverride("api.example.test:\(server.port):127.0.0.1")]
        let client = HTTPClient(configuration: configuration)
        let text = try await client.send(HTTPClientRequest(url: "http://api.example.test:\(server.port)/headers")).text(upTo: 1 << 16)
        XCTAssertTrue(text.lowercased().contains("host: api.example.test:\(server.port)"), text)
        // A second request reuses the overridden connection.
        _ = try await client.send(HTTPClientRequest(url: "http://api.example.test:\(server.port)/hello")).body.collect(upTo: 1 << 16)
        XCTAssertEqual(server.connectionsAccepted, 1)
        await client.shutdown()
        try await server.shutdown()
    }

    func testConnectToDialsAnotherPortAndAPerRequestOverrideReplacesTheClients() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        var request = HTTPClientRequest(url: "http://127.0.0.1:1/headers")
        request.connectTo = [try ConnectToOverride("127.0.0.1:1:127.0.0.1:\(server.port)")]
        let text = try await client.send(request).text(upTo: 1 << 16)
        XCTAssertTrue(text.lowercased().contains("host: 127.0.0.1:1\n"), "the URL's authority is still the Host:\n\(text)")
        await client.shutdown()
        try await server.shutdown()
    }

    func testTLSStillVerifiesTheURLsHostUnderAnOverride() async throws {
        let nginx = try Peers.nginx()
        var configuration = HTTPClient.Configuration()
        configuration.tls.trustRoots = .file(nginx.caFile)
        configuration.resolve = [try ResolveOverride("localhost:\(nginx.httpsPort):127.0.0.1"),
                                 try ResolveOverride("impostor.test:\(nginx.httpsPort):127.0.0.1")]
        let client = HTTPClient(configuration: configuration)
        let response = try await client.send(HTTPClientRequest(url: "https://localhost:\(nginx.httpsPort)/small.txt"))
        XCTAssertEqual(response.status.code, 200)
        let body = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body.count, 1024)
        await assertThrowsHTTPError(.certificateInvalid) {
            _ = try await client.send(HTTPClientRequest(url: "https://impostor.test:\(nginx.httpsPort)/small.txt"))
        }
        await client.shutdown()
    }

    // MARK: Unix domain sockets (nginx listens on both, see scripts/test.sh)

    func testNginxOverAUnixSocketKeepsTheConnectionAlive() async throws {
        let socket = try unixPeer("ASYNCHTTP_NGINX_UNIX_HTTP")
        var configuration = HTTPClient.Configuration()
        configuration.unixSocket = .path(socket)
        let client = HTTPClient(configuration: configuration)
        let first = try await client.send(HTTPClientRequest(url: "http://localhost/connection")).text(upTo: 256)
        let second = try await client.send(HTTPClientRequest(url: "http://localhost/connection")).text(upTo: 256)
        let (firstConnection, firstCount) = try connectionLine(first)
        let (secondConnection, secondCount) = try connectionLine(second)
        XCTAssertEqual(firstConnection, secondConnection, "nginx saw one connection")
        XCTAssertEqual(firstCount, 1)
        XCTAssertEqual(secondCount, 2, "the second request was the connection's second")
        let small = try await client.send(HTTPClientRequest(url: "http://localhost/small.txt")).body.collect(upTo: 1 << 20)
        XCTAssertEqual(small.count, 1024)
        XCTAssertEqual(client.connectionsOpened, 1)
        await client.shutdown()
    }

    func testTLSOverAUnixSocketVerifiesTheURLsHost() async throws {
        let socket = try unixPeer("ASYNCHTTP_NGINX_UNIX_HTTPS")
        var configuration = HTTPClient.Configuration()
        configuration.tls.trustRoots = .file(try Peers.nginx().caFile)
        let client = HTTPClient(configuration: configuration)
        var request = HTTPClientRequest(url: "https://localhost/small.txt")
        request.unixSocket = .path(socket)
        let response = try await client.send(request)
        XCTAssertEqual(response.status.code, 200)
        let body = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body.count, 1024)
        var wrongName = HTTPClientRequest(url: "https://impostor.test/small.txt")
        wrongName.unixSocket = .path(socket)
        await assertThrowsHTTPError(.certificateInvalid) { _ = try await client.send(wrongName) }
        await client.shutdown()
    }

    func testHTTPPlusUnixURLsNameTheSocket() async throws {
        let socket = try unixPeer("ASYNCHTTP_NGINX_UNIX_HTTP")
        let tlsSocket = try unixPeer("ASYNCHTTP_NGINX_UNIX_HTTPS")
        var configuration = HTTPClient.Configuration()
        configuration.tls.trustRoots = .file(try Peers.nginx().caFile)
        let client = HTTPClient(configuration: configuration)
        let base = "http+unix://" + URIReference.percentEncodeSocketPath(socket)
        let first = try await client.send(HTTPClientRequest(url: base + "/connection")).text(upTo: 256)
        let second = try await client.send(HTTPClientRequest(url: base + "/connection")).text(upTo: 256)
        XCTAssertEqual(try connectionLine(first).0, try connectionLine(second).0, "kept alive")
        XCTAssertEqual(try connectionLine(second).1, 2)
        let secure = try await client.send(HTTPClientRequest(url: "https+unix://" + URIReference.percentEncodeSocketPath(tlsSocket) + "/small.txt"))
        XCTAssertEqual(secure.status.code, 200)
        let body = try await secure.body.collect(upTo: 1 << 20)
        XCTAssertEqual(body.count, 1024)
        await client.shutdown()
    }

    func testAMissingSocketAndAPathTooLongAreClearErrors() async throws {
        let client = HTTPClient()
        var missing = HTTPClientRequest(url: "http://localhost/")
        missing.unixSocket = .path("/nonexistent/asynchttp.sock")
        let error = await assertThrowsHTTPError(.connectFailed) { _ = try await client.send(missing) }
        XCTAssertTrue(error?.message.contains("unix:/nonexistent/asynchttp.sock") == true, "\(String(describing: error))")
        XCTAssertTrue(error?.message.contains("No such file or directory") == true, "\(String(describing: error))")

        var long = HTTPClientRequest(url: "http://localhost/")
        long.unixSocket = .path("/" + String(repeating: "d", count: 200))
        let tooLong = await assertThrowsHTTPError(.invalidRequest) { _ = try await client.send(long) }
        XCTAssertTrue(tooLong?.message.contains("sun_path") == true, "\(String(describing: tooLong))")
        await client.shutdown()
    }

    func testAnAbstractUnixSocket() async throws {
        let name = "asynchttp-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let server = try AbstractSocketServer(name: name)
        defer { server.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.unixSocket = .abstract(name)
        let client = HTTPClient(configuration: configuration)
        let text = try await client.send(HTTPClientRequest(url: "http://localhost/path?q=1")).text(upTo: 1 << 16)
        XCTAssertEqual(text, "abstract GET /path?q=1 localhost")
        await client.shutdown()
    }

    func testTheCommandLineTakesCurlsFlags() async throws {
        let nginx = try Peers.nginx()
        let socket = try unixPeer("ASYNCHTTP_NGINX_UNIX_HTTP")
        let format = "%{http_code} %{size_download}"
        let resolved = try runAhttp(["-s", "-o", "/dev/null", "-w", format, "--resolve",
                                     "named.test:\(nginx.httpPort):127.0.0.1", "http://named.test:\(nginx.httpPort)/small.txt"])
        XCTAssertEqual(resolved.stdout, "200 1024", resolved.stderr)
        let moved = try runAhttp(["-s", "-o", "/dev/null", "-w", format, "--connect-to",
                                  "named.test:80:127.0.0.1:\(nginx.httpPort)", "http://named.test/small.txt"])
        XCTAssertEqual(moved.stdout, "200 1024", moved.stderr)
        let unix = try runAhttp(["-s", "-o", "/dev/null", "-w", format, "--unix-socket", socket, "http://localhost/small.txt"])
        XCTAssertEqual(unix.stdout, "200 1024", unix.stderr)
        let missing = try runAhttp(["-s", "--unix-socket", "/nonexistent.sock", "http://localhost/"])
        XCTAssertEqual(missing.status, 7, "curl's CURLE_COULDNT_CONNECT")
        let malformed = try runAhttp(["--resolve", "no-port", "http://localhost/"])
        XCTAssertEqual(malformed.status, 49, "curl's CURLE_SETOPT_OPTION_SYNTAX")
        XCTAssertTrue(malformed.stderr.contains("expected HOST:PORT:ADDRESS"), malformed.stderr)
    }

    // MARK: Name lookups: cache and coalescing (injected lookup, no network)

    func testConcurrentLookupsOfOneNameAreOneCallAndTheAnswerIsCached() async throws {
        let calls = Locked(0)
        let gate = DispatchSemaphore(value: 0)
        let lookups = NameLookups(limit: 4) { _, port in
            calls.withLock { $0 += 1 }
            gate.wait()
            return .success([SocketAddress(numericHost: "127.0.0.1", port: port)!])
        }
        let deadline = MonotonicTime.now + .seconds(20)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<10 {
                group.addTask { try await lookups.resolve(host: "one.test", port: 80, deadline: deadline, cacheFor: .seconds(60)).count }
            }
            // Every caller has joined the one lookup once it is running and nobody else started one.
            while calls.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(1)) }
            gate.signal()
            for try await count in group { XCTAssertEqual(count, 1) }
        }
        XCTAssertEqual(calls.withLock { $0 }, 1, "ten callers, one getaddrinfo")
        XCTAssertEqual(lookups.load.running, 0)

        // Within the time to live: no call. Without a cache (nil) or past it: a new call.
        _ = try await lookups.resolve(host: "one.test", port: 80, deadline: deadline, cacheFor: .seconds(60))
        XCTAssertEqual(calls.withLock { $0 }, 1)
        gate.signal()
        _ = try await lookups.resolve(host: "one.test", port: 80, deadline: deadline, cacheFor: nil)
        XCTAssertEqual(calls.withLock { $0 }, 2)
        gate.signal()
        _ = try await lookups.resolve(host: "one.test", port: 80, deadline: deadline, cacheFor: .nanoseconds(1))
        XCTAssertEqual(calls.withLock { $0 }, 3)
        // Another port is another name.
        gate.signal()
        _ = try await lookups.resolve(host: "one.test", port: 443, deadline: deadline, cacheFor: .seconds(60))
        XCTAssertEqual(calls.withLock { $0 }, 4)
    }

    func testFailuresAreNotCachedAndAGivenUpCallerDoesNotStopTheOthers() async throws {
        let calls = Locked(0)
        let gate = DispatchSemaphore(value: 0)
        let lookups = NameLookups(limit: 4) { host, port in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            gate.wait()
            if call == 1 { return .failure(HTTPClientError(.dnsFailure, "could not resolve '\(host)'")) }
            return .success([SocketAddress(numericHost: "127.0.0.1", port: port)!])
        }
        gate.signal()
        await assertThrowsHTTPError(.dnsFailure) {
            _ = try await lookups.resolve(host: "flaky.test", port: 80, deadline: MonotonicTime.now + .seconds(20), cacheFor: .seconds(60))
        }
        // The failure was not remembered: the next caller looks again. One caller gives up (a short deadline)
        // while the lookup runs; the other still gets the answer.
        let patient = Task { try await lookups.resolve(host: "flaky.test", port: 80, deadline: MonotonicTime.now + .seconds(20), cacheFor: .seconds(60)) }
        while calls.withLock({ $0 }) < 2 { try await Task.sleep(for: .milliseconds(1)) }
        await assertThrowsHTTPError(.timeout) {
            _ = try await lookups.resolve(host: "flaky.test", port: 80, deadline: MonotonicTime.now + .milliseconds(20), cacheFor: .seconds(60))
        }
        gate.signal()
        let addresses = try await patient.value
        XCTAssertEqual(addresses.count, 1)
        XCTAssertEqual(calls.withLock { $0 }, 2)
    }

    func testACallerWhoseCacheLookMissedAnAnswerArrivingTakesItAndStartsNoSecondCall() async throws {
        // The race CI hit once: a caller found the cache empty, the one lookup then answered (filling the cache
        // and closing its flight), and the caller, seeing no flight, started a second call. Rounds of callers
        // against a lookup that answers at once make that window wide; each round must still be one call.
        let calls = Locked(0)
        let lookups = NameLookups(limit: 4) { _, port in
            calls.withLock { $0 += 1 }
            return .success([SocketAddress(numericHost: "127.0.0.1", port: port)!])
        }
        let deadline = MonotonicTime.now + .seconds(20)
        let rounds = 300
        for round in 0..<rounds {
            let host = "round\(round).test"
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await lookups.resolve(host: host, port: 80, deadline: deadline, cacheFor: .seconds(60)).count }
                }
                for try await count in group { XCTAssertEqual(count, 1) }
            }
            XCTAssertEqual(calls.withLock { $0 }, round + 1, "round \(round): eight callers within the time to live, one call")
            if calls.withLock({ $0 }) != round + 1 { break }
        }
        XCTAssertEqual(lookups.load.running, 0)
    }

    // MARK: Helpers

    private func unixPeer(_ variable: String) throws -> String {
        guard let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty else {
            throw PeerError("nginx's Unix socket is not announced: run ./scripts/test.sh (\(variable) is not set)")
        }
        return path
    }

    /// nginx's `/connection` answer: `<connection number> <requests on it>`.
    private func connectionLine(_ text: String) throws -> (Int, Int) {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
        guard parts.count == 2 else { throw PeerError("unexpected /connection answer: \(text)") }
        return (parts[0], parts[1])
    }
}

/// A listener on [::1] whose accept queue is full, so the kernel drops every further SYN: connecting to it
/// hangs as it would behind a firewall that drops packets. Loopback only.
final class BlackHole: Sendable {
    let port: Int
    private let descriptors: [Int32]

    init(ipv6LoopbackPort requested: Int) throws {
        let listener = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw PeerError("BlackHole: socket() failed") }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        address.sin6_port = in_port_t(UInt16(requested).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        guard bound == 0, listen(listener, 0) == 0 else {
            Glibc.close(listener)
            throw PeerError("BlackHole: cannot listen on [::1]:\(requested): \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin6_port))
        // Fill the queue (backlog 0 admits one or two) with connections nobody accepts.
        var fillers: [Int32] = []
        for _ in 0..<4 {
            let filler = socket(AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
            fillers.append(filler)
        }
        usleep(100_000)  // the handshakes of the fillers complete on loopback within microseconds
        descriptors = [listener] + fillers
    }

    func close() {
        for fd in descriptors { Glibc.close(fd) }
    }
}

/// A tiny HTTP server on a Linux abstract Unix socket (Python's socketserver; neither nginx nor SwiftNIO listen
/// on one): answers one request with `abstract <method> <target> <host>` and exits; it gives up after 30 seconds.
final class AbstractSocketServer {
    private let process: Process

    init(name: String) throws {
        self.process = Process()
        let script = """
        import socket, sys, threading, time
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind("\\0" + sys.argv[1]); s.listen(8)
        print("ready", flush=True)
        timer = threading.Timer(30, lambda: __import__("os")._exit(0))
        timer.daemon = True
        timer.start()
        for _ in range(1):
            c, _ = s.accept()
            data = b""
            while b"\\r\\n\\r\\n" not in data:
                chunk = c.recv(4096)
                if not chunk: break
                data += chunk
            lines = data.decode("latin-1").split("\\r\\n")
            method, target = lines[0].split(" ")[:2]
            host = next((l.split(":", 1)[1].strip() for l in lines[1:] if l.lower().startswith("host:")), "")
            body = f"abstract {method} {target} {host}".encode()
            c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n" % len(body) + body)
            c.close()
        """
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, name]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let ready = output.fileHandleForReading.availableData
        guard String(decoding: ready, as: UTF8.self).hasPrefix("ready") else {
            process.terminate()
            throw PeerError("AbstractSocketServer did not start")
        }
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
