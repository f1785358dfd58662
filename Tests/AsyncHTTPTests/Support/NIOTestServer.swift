@testable import AsyncHTTP
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// An independent in-process HTTP/1.1 server on SwiftNIO, the well-behaved peer for client tests.
///
/// Independent on purpose: it shares no code with AsyncHTTP, so a bug in our parser cannot be
/// mirrored by the server and pass unnoticed. Binds `127.0.0.1` (or the given host) on an ephemeral
/// port, runs on its own one-thread event loop group, and must be stopped with ``shutdown()``.
///
/// ```swift
/// let server = try await NIOTestServer()
/// defer { Task { try await server.shutdown() } }   // or: try await server.shutdown() at the end
/// // GET server.baseURL + "/bytes?n=1048576"
/// XCTAssertEqual(server.connectionsAccepted, 1)
/// ```
///
/// Routes (query parameters parsed; `HEAD` works on every `GET` route and sends the head only):
/// - `GET /hello` → `hello` with Content-Length. Over TLS with a required client certificate it also
///   sends `X-Client-Cert-Subject: <CN of the verified client certificate>`.
/// - `GET /bytes?n=N` → N bytes, byte i = `UInt8(i % 251)`, Content-Length, written with backpressure.
/// - `GET /stream?n=N&chunk=C` → the same N bytes, chunked, each chunk C bytes (last may be shorter).
/// - `POST|PUT /echo` → the request body (Content-Length), plus `X-Request-Method`,
///   `X-Request-Transfer-Encoding` / `X-Request-Content-Length` (each only if the request had that header)
///   and `X-Request-Body-Length` (bytes actually received). The body is buffered: keep it to tens of MiB.
/// - `POST|PUT /discard` → reads and drops the body; responds with its length in decimal (and in
///   `X-Request-Body-Length`). For uploads of hundreds of MiB.
/// - `ANY /headers` → `text/plain`: `method: M`, `target: /headers…` and `version: HTTP/1.x` lines, an empty
///   line, then one `name: value` line per received request header, in the order and spelling received.
/// - `GET /status/N[?location=L]` → status N (200…599), empty body, `Location: L` if given.
/// - `GET /close` → `bye` with `Connection: close`, then the server closes the connection.
/// - `GET /slow-head?ms=M` → waits M ms, then responds `slow`.
/// - `GET /slow-body?ms=M` → head and `part1-` (Content-Length 11), waits M ms, then `part2`.
/// - `GET /keepalive-timeout?s=N` → `ok` with `Keep-Alive: timeout=N` (the server does not enforce it).
/// - `GET /big-head?n=N` → `ok` with a response head of at least N bytes (`X-Padding-i` headers of ≤ 1000 bytes).
/// - `ANY /auth/digest-nextnonce` → `200` to a Digest `Authorization` with nonce `nK` and `nc=00000001`, naming
///   `n(K+1)` in `Authentication-Info: nextnonce`; otherwise `401` with a Digest challenge for `n1` (`stale=true`
///   when Digest credentials came), counted in ``challengesSent``.
/// - `ANY /auth/basic?user=U&pass=P` → `200` with `user=U cookie=<Cookie header>` when `Authorization` is Basic
///   for U:P; otherwise `401` with `WWW-Authenticate: Basic realm="nio"` and `Set-Cookie: challenge=seen; Path=/`
///   (counted in ``challengesSent``). The body of an upload is read and ignored.
/// - Any other path → 404; a known path with the wrong method → 405.
/// `Expect: 100-continue` on `/echo` and `/discard` is answered with `100 Continue`.
/// A request without keep-alive (`Connection: close`, or HTTP/1.0 without keep-alive) gets
/// `Connection: close` and the connection is closed after the response.
final class NIOTestServer: Sendable {
    /// The ephemeral port the server listens on.
    let port: Int
    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT` (IPv6 hosts in brackets), no trailing slash.
    let baseURL: String

    /// TCP connections accepted so far (counted by the server, before any TLS handshake).
    var connectionsAccepted: Int { stats.counters.withLock { $0.connections } }
    /// Responses completed so far (counted when the last byte of a response is handed to the channel).
    var requestsServed: Int { stats.counters.withLock { $0.requests } }
    /// Server-side connections currently open. The server lives in the test process, so its sockets
    /// count in `/proc/self/fd` too: wait for this to reach 0 before comparing descriptor counts.
    var connectionsOpen: Int { stats.counters.withLock { $0.open } }
    /// `401` challenges sent by `/auth/basic` and `/auth/digest-nextnonce` so far.
    var challengesSent: Int { stats.counters.withLock { $0.challenges } }

    /// Returns once every accepted connection has been closed on the server side; throws after `timeout`.
    func waitUntilAllConnectionsClosed(timeout: Duration = .seconds(5)) async throws {
        let deadline = ContinuousClock.now + timeout
        // Polling every 2 ms: a close is noticed by the event loop within microseconds, so this is
        // simpler than a continuation registry and just as deterministic for a test.
        while connectionsOpen > 0 {
            guard ContinuousClock.now < deadline else {
                throw PeerError("NIOTestServer: \(connectionsOpen) connection(s) still open after \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    private let group: MultiThreadedEventLoopGroup
    private let serverChannel: any Channel
    private let stats: Stats
    private let isShutDown = Locked(false)

    /// Starts a server; `tls` makes it HTTPS with the given certificate (see ``TestTLS/ServerConfig``).
    /// `handshakeDelay` holds each connection's first bytes (a TLS client's hello) that long before they reach
    /// the TLS handler: a server slow to compute its handshake, behind a connect that is as fast as ever.
    init(tls: TestTLS.ServerConfig? = nil, host: String = "127.0.0.1", handshakeDelay: Duration? = nil) async throws {
        let sslContext = try tls.map(Self.makeSSLContext)
        let requireClientCertificate = tls?.requireClientCertificate ?? false
        let stats = Stats()
        // One thread: the server's load in tests is small, and the machine is shared.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                stats.counters.withLock {
                    $0.connections += 1
                    $0.open += 1
                }
                channel.closeFuture.whenComplete { _ in stats.counters.withLock { $0.open -= 1 } }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let sslContext {
                        if let handshakeDelay {
                            try pipeline.addHandler(FirstReadDelay(delay: handshakeDelay))
                        }
                        try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
                    }
                    try pipeline.configureHTTPServerPipeline()
                    try pipeline.addHandler(
                        TestServerHandler(stats: stats, reportsClientCertificate: requireClientCertificate)
                    )
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: host, port: 0).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            try? await group.shutdownGracefully()
            throw PeerError("NIOTestServer: bound channel has no local port")
        }
        self.group = group
        self.serverChannel = channel
        self.stats = stats
        self.port = port
        let scheme = tls == nil ? "http" : "https"
        let hostPart = host.contains(":") ? "[\(host)]" : host
        self.baseURL = "\(scheme)://\(hostPart):\(port)"
    }

    /// `baseURL + path`, e.g. `server.url("/bytes?n=10")`.
    func url(_ path: String) -> String { baseURL + path }

    /// Closes the listening socket and every open connection, and joins the event loop thread.
    /// Calling it again does nothing.
    func shutdown() async throws {
        let alreadyDone = isShutDown.withLock { done in
            defer { done = true }
            return done
        }
        if alreadyDone { return }
        try? await serverChannel.close()
        try await group.shutdownGracefully()
    }

    deinit {
        // Safety net for a test that forgot shutdown(): release the thread without blocking.
        if !isShutDown.withLock({ $0 }) {
            group.shutdownGracefully { _ in }
        }
    }

    private static func makeSSLContext(_ config: TestTLS.ServerConfig) throws -> NIOSSLContext {
        let chain = try NIOSSLCertificate.fromPEMFile(config.certificateFile).map { NIOSSLCertificateSource.certificate($0) }
        let key = try NIOSSLPrivateKey(file: config.keyFile, format: .pem)
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
        if config.requireClientCertificate {
            // A server never checks a client's host name; it only requires a chain to the test CA.
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = .file(TestTLS.shared.caFile)
        }
        return try NIOSSLContext(configuration: tls)
    }
}

/// Counters shared between the server object and its connection handlers.
private final class Stats: Sendable {
    struct Counters {
        var connections = 0
        var requests = 0
        var open = 0
        /// 401 responses sent by `/auth/basic` and `/auth/digest-nextnonce`.
        var challenges = 0
    }
    let counters = Locked(Counters())
}

/// The deterministic body of `/bytes` and `/stream`: byte i is `UInt8(i % 251)`.
/// 251 is prime, so the pattern never lines up with power-of-two buffer or chunk sizes and a
/// dropped, repeated or reordered block shows up as a mismatch.
enum TestPattern {
    static let period = 251
    /// The largest slice `append` copies at once.
    static let maxSlice = 64 * 1024
    /// Enough whole periods to serve any slice of up to `maxSlice` bytes starting anywhere in a period.
    static let bytes: [UInt8] = (0..<(period * (maxSlice / period + 2))).map { UInt8($0 % period) }

    /// The byte at `index` of the pattern.
    static func byte(at index: Int) -> UInt8 { UInt8(index % period) }

    /// `count` pattern bytes starting at stream offset `offset`.
    static func slice(offset: Int, count: Int) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        var offset = offset, remaining = count
        while remaining > 0 {
            let n = min(remaining, maxSlice)
            let start = offset % period
            result.append(contentsOf: bytes[start..<(start + n)])
            offset += n
            remaining -= n
        }
        return result
    }

    /// The index (counted from the start of `bytes`) of the first byte that differs from the pattern
    /// continued from `offset`, or nil if all match. Compares with `memcmp` a slice at a time, because
    /// an element-wise loop over hundreds of MiB takes seconds in a debug build.
    static func firstMismatch(in bytes: UnsafeRawBufferPointer, patternOffset offset: Int = 0) -> Int? {
        var position = 0
        while position < bytes.count {
            let n = min(maxSlice, bytes.count - position)
            let start = (offset + position) % period
            let equal = self.bytes.withUnsafeBytes { pattern in
                memcmp(pattern.baseAddress! + start, bytes.baseAddress! + position, n) == 0
            }
            if !equal {
                for i in position..<(position + n) where bytes[i] != byte(at: offset + i) { return i }
            }
            position += n
        }
        return nil
    }

    static func firstMismatch(in bytes: [UInt8], patternOffset offset: Int = 0) -> Int? {
        bytes.withUnsafeBytes { firstMismatch(in: $0, patternOffset: offset) }
    }

    static func append(to buffer: inout ByteBuffer, offset: Int, count: Int) {
        var offset = offset, remaining = count
        while remaining > 0 {
            let n = min(remaining, maxSlice)
            let start = offset % period
            buffer.writeBytes(bytes[start..<(start + n)])
            offset += n
            remaining -= n
        }
    }
}

/// One connection's request handling. All state is touched on the channel's event loop only.
private final class TestServerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Upper bounds that keep a typo in a test from hanging or exhausting the machine.
    private static let maxDelayMilliseconds = 60_000
    private static let maxChunkSize = 16 * 1024 * 1024
    /// Flush at least this often while streaming so TLS (which holds writes until flush) feels backpressure.
    private static let flushEvery = 64 * 1024

    /// A response body being produced as the channel becomes writable.
    private struct BodyStream {
        var offset = 0
        var remaining: Int
        /// Bytes per body part; with chunked framing each part becomes one chunk.
        let pieceSize: Int
    }

    private let stats: Stats
    private let reportsClientCertificate: Bool

    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    private var bodyLength = 0
    private var collectsBody = false
    private var stream: BodyStream?
    private var isPumping = false
    private var pumpAgain = false
    private var closeAfterResponse = false
    private var timer: Scheduled<Void>?

    init(stats: Stats, reportsClientCertificate: Bool) {
        self.stats = stats
        self.reportsClientCertificate = reportsClientCertificate
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = nil
            bodyLength = 0
            let path = Self.split(head.uri).path
            collectsBody = path == "/echo"
            if (path == "/echo" || path == "/discard"),
                head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" })
            {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))), promise: nil)
            }
        case .body(var part):
            bodyLength += part.readableBytes
            if collectsBody {
                if body == nil {
                    body = part
                } else {
                    body!.writeBuffer(&part)
                }
            }
        case .end:
            guard let head else { return }
            respond(to: head, context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { pump(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelWork()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelWork()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // TLS handshake failures (a client rejecting our certificate) and parse errors end up here.
        cancelWork()
        context.close(promise: nil)
    }

    private func cancelWork() {
        timer?.cancel()
        timer = nil
        stream = nil
    }

    // MARK: Routing

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let (path, query) = Self.split(head.uri)
        closeAfterResponse = !head.isKeepAlive
        let isGET = head.method == .GET || head.method == .HEAD
        let isUpload = head.method == .POST || head.method == .PUT

        switch path {
        case "/hello" where isGET:
            var headers = HTTPHeaders()
            if reportsClientCertificate,
                let certificate = try? context.pipeline.syncOperations.nioSSL_peerCertificate(),
                let commonName = certificate.subjectName.first(where: { $0.type == .commonName })
            {
                headers.add(name: "X-Client-Cert-Subject", value: commonName.value)
            }
            sendWhole(head, status: .ok, headers: headers, body: "hello", context: context)

        case "/bytes" where isGET:
            let n = Self.intParameter(query["n"], default: 0, max: Int.max)
            startStream(head, length: n, pieceSize: Self.flushEvery, chunked: false, context: context)

        case "/stream" where isGET:
            let n = Self.intParameter(query["n"], default: 0, max: Int.max)
            let chunk = max(1, Self.intParameter(query["chunk"], default: 1024, max: Self.maxChunkSize))
            startStream(head, length: n, pieceSize: chunk, chunked: true, context: context)

        case "/echo" where isUpload:
            var headers = uploadReportHeaders(head)
            headers.add(name: "Content-Type", value: "application/octet-stream")
            sendWhole(head, status: .ok, headers: headers, body: body ?? ByteBuffer(), context: context)

        case "/discard" where isUpload:
            sendWhole(head, status: .ok, headers: uploadReportHeaders(head), body: "\(bodyLength)", context: context)

        case "/headers":
            var text = "method: \(head.method.rawValue)\ntarget: \(head.uri)\nversion: \(head.version)\n\n"
            for (name, value) in head.headers { text += "\(name): \(value)\n" }
            sendWhole(head, status: .ok, headers: ["Content-Type": "text/plain"], body: text, context: context)

        case _ where path.hasPrefix("/status/") && isGET:
            guard let code = Int(path.dropFirst("/status/".count)), (200...599).contains(code) else {
                sendWhole(head, status: .badRequest, body: "status must be 200...599", context: context)
                return
            }
            let status = HTTPResponseStatus(statusCode: code)
            var headers = HTTPHeaders()
            if let location = query["location"] { headers.add(name: "Location", value: location) }
            sendWhole(head, status: status, headers: headers, body: "", context: context)

        case "/auth/basic":
            let expected = "Basic " + Data("\(query["user"] ?? ""):\(query["pass"] ?? "")".utf8).base64EncodedString()
            if head.headers["Authorization"].first == expected {
                let cookie = head.headers["Cookie"].joined(separator: "; ")
                sendWhole(head, status: .ok, body: "user=\(query["user"] ?? "") cookie=\(cookie)", context: context)
            } else {
                stats.counters.withLock { $0.challenges += 1 }
                sendWhole(head, status: .unauthorized, headers: [
                    "WWW-Authenticate": #"Basic realm="nio""#, "Set-Cookie": "challenge=seen; Path=/",
                ], body: "who are you?", context: context)
            }

        case "/auth/digest-nextnonce":
            // A server that rotates Digest nonces through `Authentication-Info: nextnonce` (RFC 7616 §3.5): nonce
            // nK is good for one request (nc=00000001) and its answer names n(K+1); any other use is stale. The
            // response hash is not checked here (httpbin's Digest routes check it): only which nonce and count came.
            let authorization = head.headers["Authorization"].first ?? ""
            func parameter(_ name: String) -> String? {
                guard let start = authorization.range(of: name + "=") else { return nil }
                let rest = authorization[start.upperBound...].drop(while: { $0 == "\"" })
                return String(rest.prefix(while: { $0 != "\"" && $0 != "," }))
            }
            if authorization.hasPrefix("Digest "), let nonce = parameter("nonce"), nonce.hasPrefix("n"),
               let k = Int(nonce.dropFirst()), k < 1_000, parameter("nc") == "00000001" {
                sendWhole(head, status: .ok, headers: ["Authentication-Info": "qop=auth, nextnonce=\"n\(k + 1)\""],
                          body: "nonce=\(nonce)", context: context)
            } else {
                stats.counters.withLock { $0.challenges += 1 }
                let stale = authorization.hasPrefix("Digest ") ? ", stale=true" : ""
                sendWhole(head, status: .unauthorized, headers: [
                    "WWW-Authenticate": #"Digest realm="nio", nonce="n1", qop="auth", algorithm=MD5"# + stale,
                ], body: "who are you?", context: context)
            }

        case "/close" where isGET:
            closeAfterResponse = true
            sendWhole(head, status: .ok, body: "bye", context: context)

        case "/slow-head" where isGET:
            let delay = Self.intParameter(query["ms"], default: 1000, max: Self.maxDelayMilliseconds)
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(delay))) {
                self.timer = nil
                self.sendWhole(head, status: .ok, body: "slow", context: context)
            }

        case "/slow-body" where isGET:
            let delay = Self.intParameter(query["ms"], default: 1000, max: Self.maxDelayMilliseconds)
            writeHead(head, status: .ok, headers: ["Content-Length": "11"], context: context)
            if head.method == .HEAD {
                finish(context: context)
                return
            }
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "part1-")))), promise: nil)
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(delay))) {
                self.timer = nil
                context.write(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "part2")))), promise: nil)
                self.finish(context: context)
            }

        case "/big-head" where isGET:
            let size = Self.intParameter(query["n"], default: 8192, max: 1 << 20)
            var headers = HTTPHeaders()
            var padded = 0
            while padded < size {
                let line = String(repeating: "a", count: min(1000, size - padded))
                headers.add(name: "X-Padding-\(headers.count)", value: line)
                padded += line.count + 16  // "X-Padding-NN: " and CRLF
            }
            sendWhole(head, status: .ok, headers: headers, body: "ok", context: context)

        case "/keepalive-timeout" where isGET:
            let seconds = Self.intParameter(query["s"], default: 5, max: 3600)
            sendWhole(head, status: .ok, headers: ["Keep-Alive": "timeout=\(seconds)"], body: "ok", context: context)

        case "/hello", "/bytes", "/stream", "/echo", "/discard", "/close", "/slow-head", "/slow-body",
            "/keepalive-timeout", "/big-head":
            sendWhole(head, status: .methodNotAllowed, body: "", context: context)

        default:
            sendWhole(head, status: .notFound, body: "no route for \(path)", context: context)
        }
    }

    /// What `/echo` and `/discard` report about how the request body arrived.
    private func uploadReportHeaders(_ head: HTTPRequestHead) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "X-Request-Method", value: head.method.rawValue)
        for value in head.headers["Transfer-Encoding"] { headers.add(name: "X-Request-Transfer-Encoding", value: value) }
        for value in head.headers["Content-Length"] { headers.add(name: "X-Request-Content-Length", value: value) }
        headers.add(name: "X-Request-Body-Length", value: String(bodyLength))
        return headers
    }

    // MARK: Writing

    private func writeHead(_ request: HTTPRequestHead, status: HTTPResponseStatus, headers: HTTPHeaders, context: ChannelHandlerContext) {
        var headers = headers
        if closeAfterResponse { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: request.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
    }

    private func sendWhole(_ request: HTTPRequestHead, status: HTTPResponseStatus, headers: HTTPHeaders = [:], body: String, context: ChannelHandlerContext) {
        sendWhole(request, status: status, headers: headers, body: ByteBuffer(string: body), context: context)
    }

    private func sendWhole(_ request: HTTPRequestHead, status: HTTPResponseStatus, headers: HTTPHeaders = [:], body: ByteBuffer, context: ChannelHandlerContext) {
        var headers = headers
        // 204 and 304 must not carry Content-Length framing for a body (RFC 9110 §8.6).
        if status != .noContent && status != .notModified {
            headers.replaceOrAdd(name: "Content-Length", value: String(body.readableBytes))
        }
        writeHead(request, status: status, headers: headers, context: context)
        if request.method != .HEAD && body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        finish(context: context)
    }

    private func startStream(_ request: HTTPRequestHead, length: Int, pieceSize: Int, chunked: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        if chunked {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        } else {
            headers.add(name: "Content-Length", value: String(length))
        }
        writeHead(request, status: .ok, headers: headers, context: context)
        if request.method == .HEAD {
            finish(context: context)
            return
        }
        stream = BodyStream(remaining: length, pieceSize: pieceSize)
        pump(context: context)
    }

    /// Writes body parts while the channel is writable; `channelWritabilityChanged` resumes it.
    /// This is what keeps a multi-hundred-MiB body from being queued in memory at once.
    /// A flush can turn the channel writable again and call back in here synchronously, hence
    /// `isPumping`: the outer loop simply carries on.
    private func pump(context: ChannelHandlerContext) {
        guard !isPumping else {
            // Re-entered from a flush that made the channel writable again: the outer call goes round once more.
            pumpAgain = true
            return
        }
        isPumping = true
        defer { isPumping = false }
        repeat {
            pumpAgain = false
            pumpOnce(context: context)
        } while pumpAgain && stream != nil
    }

    private func pumpOnce(context: ChannelHandlerContext) {
        var unflushed = 0
        while let current = stream, current.remaining > 0, context.channel.isWritable {
            let n = min(current.pieceSize, current.remaining)
            var buffer = context.channel.allocator.buffer(capacity: n)
            TestPattern.append(to: &buffer, offset: current.offset, count: n)
            stream = BodyStream(offset: current.offset + n, remaining: current.remaining - n, pieceSize: current.pieceSize)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            unflushed += n
            if unflushed >= Self.flushEvery {
                unflushed = 0
                context.flush()
            }
        }
        // `stream` is nil here if the channel closed meanwhile (channelInactive cancels it).
        if let current = stream, current.remaining == 0 {
            stream = nil
            finish(context: context)
        } else if unflushed > 0 {
            context.flush()
        }
    }

    /// Ends the response, counts it, and closes the connection afterwards if this response said so.
    private func finish(context: ChannelHandlerContext) {
        stats.counters.withLock { $0.requests += 1 }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if closeAfterResponse {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    // MARK: Parsing

    static func split(_ uri: String) -> (path: String, query: [String: String]) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, [:]) }
        var query: [String: String] = [:]
        for pair in uri[uri.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
            query[name] = value
        }
        return (String(uri[..<mark]), query)
    }

    private static func intParameter(_ text: String?, default defaultValue: Int, max: Int) -> Int {
        guard let text, let value = Int(text), value >= 0 else { return defaultValue }
        return Swift.min(value, max)
    }
}

/// Holds the bytes of a connection's first read for a while, then passes them and everything after them on in
/// order (reads that come meanwhile queue behind them).
private final class FirstReadDelay: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private enum State {
        case waitingForFirstRead
        case holding([NIOAny])
        case passing
    }

    private let delay: Duration
    private var state = State.waitingForFirstRead
    private var timer: Scheduled<Void>?

    init(delay: Duration) { self.delay = delay }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state {
        case .passing:
            context.fireChannelRead(data)
        case .holding(var held):
            held.append(data)
            state = .holding(held)
        case .waitingForFirstRead:
            state = .holding([data])
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(delay.wholeNanoseconds))) {
                self.timer = nil
                guard case .holding(let held) = self.state else { return }
                self.state = .passing
                for data in held { context.fireChannelRead(data) }
                context.fireChannelReadComplete()
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .passing = state { context.fireChannelReadComplete() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }
}
