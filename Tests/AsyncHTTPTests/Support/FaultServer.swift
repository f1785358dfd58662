@testable import AsyncHTTP
import Dispatch
import Foundation
import Glibc
import Synchronization

/// One step a ``FaultServer`` takes on a connection.
enum FaultAction: Sendable {
    /// Write these bytes (waits until the socket takes them all).
    case send([UInt8])
    /// Do nothing on this connection for `ms` milliseconds.
    case sleep(ms: Int)
    /// Close gracefully (FIN). Unread input is drained first, because closing a socket with unread
    /// data makes Linux send RST instead, which would turn a "clean close" test into a reset test.
    case close
    /// Read one more request (head, plus a Content-Length or chunked body) before the next action.
    case readRequest
    /// Abort the connection with RST (`SO_LINGER` 0 then close).
    case resetConnection
    /// Write `bytes` one at a time, `delayMs` milliseconds apart (the first byte is sent at once).
    case drip([UInt8], delayMs: Int)
    /// Half-close: shut down the write direction (the peer reads FIN) and keep the socket open, still
    /// reading whatever the peer sends. Follow with `.hold` to keep it half-open.
    case shutdownWrite
    /// Keep the connection open without reading or writing until the peer closes it, the server
    /// stops, or ``FaultServer/holdLimitMilliseconds`` pass. For "never responds" / "never reads".
    case hold

    /// Write the UTF-8 bytes of `text`.
    static func send(_ text: String) -> FaultAction { .send(Array(text.utf8)) }

    /// Write `text` one byte at a time, `delayMs` milliseconds apart.
    static func drip(_ text: String, delayMs: Int) -> FaultAction { .drip(Array(text.utf8), delayMs: delayMs) }

    /// A complete, well-formed `HTTP/1.1` response with Content-Length framing.
    static func response(_ body: String, status: String = "200 OK", headers: [String] = []) -> FaultAction {
        .send(FaultScript.responseText(body, status: status, headers: headers))
    }
}

/// What a ``FaultServer`` does on each connection.
///
/// A connection runs `onAccept(connection)` first (usually nothing), then loops: read a request,
/// run `onRequest(connection, request)`, and read the next request if the connection is still open.
/// Indexes count from 0; `request` is the index of the request on that connection.
/// An empty action list answers nothing and goes on to read the next request.
struct FaultScript: Sendable {
    var onAccept: @Sendable (_ connection: Int) -> [FaultAction]
    var onRequest: @Sendable (_ connection: Int, _ request: Int) -> [FaultAction]

    init(
        onAccept: @escaping @Sendable (_ connection: Int) -> [FaultAction] = { _ in [] },
        onRequest: @escaping @Sendable (_ connection: Int, _ request: Int) -> [FaultAction]
    ) {
        self.onAccept = onAccept
        self.onRequest = onRequest
    }

    /// Connection i reads its first request, runs `perConnection[i]` and is then closed.
    /// Connections beyond the list repeat its last entry. Use `.readRequest` for further requests.
    init(_ perConnection: [[FaultAction]]) {
        precondition(!perConnection.isEmpty, "FaultScript needs at least one connection's actions")
        self.init { connection, _ in
            perConnection[min(connection, perConnection.count - 1)] + [.close]
        }
    }

    static func responseText(_ body: String, status: String = "200 OK", headers: [String] = []) -> String {
        let extra = headers.map { $0 + "\r\n" }.joined()
        return "HTTP/1.1 \(status)\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)"
    }

    // MARK: Canned faults

    /// Promises 100 bytes, sends none, closes.
    static let closeAfterHead = FaultScript([[.send("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"), .close]])

    /// Promises 100 bytes, sends 40 (`"x"`), closes.
    static let closeMidBody = FaultScript([
        [.send("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + String(repeating: "x", count: 40)), .close]
    ])

    /// A chunked body that stops inside its second chunk, without the terminating `0` chunk.
    static let truncatedChunkedBody = FaultScript([
        [.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n5\r\nab"), .close]
    ])

    /// A status line that is not HTTP at all, then close.
    static let garbageStatusLine = FaultScript([[.send("THIS IS NOT HTTP\r\nContent-Length: 0\r\n\r\n"), .close]])

    /// A valid response (`body` with Content-Length) written one byte every `everyMs` milliseconds.
    static func slowDrip(everyMs: Int, body: String = "hello") -> FaultScript {
        FaultScript([[.drip(responseText(body), delayMs: everyMs)]])
    }

    /// The server closes an idle keep-alive connection just as the client reuses it: on connection 0
    /// request 0 is answered (`hello`, keep-alive), request 1 is read and the connection is closed
    /// without an answer. Every other connection answers every request with `hello` and stays open.
    static let staleKeepAlive = FaultScript { connection, request in
        connection == 0 && request >= 1 ? [.close] : [.response("hello")]
    }

    /// Reads the request and never answers (head timeout tests).
    static let neverResponds = FaultScript { _, _ in [.hold] }

    /// Accepts and never reads a byte (the client's send buffer fills; write timeout tests).
    static let neverReads = FaultScript(onAccept: { _ in [.hold] }, onRequest: { _, _ in [.close] })

    // MARK: Resets (RST: `SO_LINGER` 0, then close)

    /// Every connection is reset as soon as it is accepted, before a byte is read.
    static let resetOnAccept = FaultScript(onAccept: { _ in [.resetConnection] }, onRequest: { _, _ in [] })

    /// Reads the whole request, answers nothing, resets.
    static let resetAfterRequest = FaultScript { _, _ in [.resetConnection] }

    /// Sends part of a status line and head, then resets.
    static let resetMidHead = FaultScript { _, _ in [.send("HTTP/1.1 200 OK\r\nContent-Le"), .resetConnection] }

    /// Sends the head promising 100 bytes and 40 of them, then resets.
    static let resetMidBody = FaultScript { _, _ in
        [.send("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + String(repeating: "x", count: 40)), .resetConnection]
    }

    /// Like ``staleKeepAlive``, but connection 0 resets (RST) instead of closing when its second request arrives.
    static let staleKeepAliveReset = FaultScript { connection, request in
        connection == 0 && request >= 1 ? [.resetConnection] : [.response("hello")]
    }

    /// Connection 0 answers its first request (`hello`, keep-alive); its next request gets what a server that
    /// timed the idle connection out sends as it closes, `408 Request Timeout`. Every other connection answers every
    /// request with `hello`.
    static let requestTimeoutOnReuse = FaultScript { connection, request in
        connection == 0 && request >= 1
            ? [.response("", status: "408 Request Timeout", headers: ["Connection: close"]), .close]
            : [.response("hello")]
    }

    /// Every request on every connection gets `408 Request Timeout` and the connection closes.
    static let requestTimeoutAlways = FaultScript { _, _ in
        [.response("", status: "408 Request Timeout", headers: ["Connection: close"]), .close]
    }

    /// Connection 0 answers its first request (`hello`, keep-alive), then resets while idle, before any
    /// second request; every other connection answers every request with `hello`.
    static let resetWhileIdle = FaultScript { connection, request in
        connection == 0 ? [.response("hello"), .resetConnection] : [.response("hello")]
    }

    // MARK: Half-closed

    /// Sends a head promising 100 bytes and 40 of them, then shuts down its write side and keeps reading
    /// (half-closed) until the client closes.
    static let halfCloseMidBody = FaultScript { _, _ in
        [.send("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + String(repeating: "x", count: 40)), .shutdownWrite, .hold]
    }

    /// Sends nothing at all for the request: shuts down its write side at once and holds the socket open.
    static let halfCloseBeforeHead = FaultScript { _, _ in [.shutdownWrite, .hold] }

    /// A head promising 1000 bytes, then the body one byte every `everyMs` milliseconds.
    static func dripBody(everyMs: Int) -> FaultScript {
        FaultScript([[.send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"), .drip(String(repeating: "y", count: 1000), delayMs: everyMs)]])
    }

    // MARK: A CONNECT proxy that drops the tunnel

    /// Reads the `CONNECT` request and closes without an answer.
    static let proxyClosesOnConnect = FaultScript([[]])

    /// Reads the `CONNECT` request and resets.
    static let proxyResetsOnConnect = FaultScript { _, _ in [.resetConnection] }

    /// Answers `CONNECT` with `200 Connection established`, then closes the tunnel before the TLS handshake.
    static let proxyDropsTunnelAfterEstablished = FaultScript([[.send("HTTP/1.1 200 Connection established\r\n\r\n")]])

    /// Answers `CONNECT` with `200 Connection established` and resets right after (the ClientHello, if it
    /// was sent by then, is never answered).
    static let proxyResetsTunnelAfterEstablished = FaultScript { _, _ in
        [.send("HTTP/1.1 200 Connection established\r\n\r\n"), .resetConnection]
    }
}

/// A raw-socket server for what no proper server does: closing mid-response, garbage, dripping,
/// closing a keep-alive connection as it is reused, never answering.
///
/// Plain POSIX sockets on one background thread that multiplexes every connection with `poll`,
/// so a test can hold several connections at once. Binds 127.0.0.1 (or `host`) on an ephemeral port.
///
/// ```swift
/// let server = try FaultServer(script: .closeAfterHead)
/// defer { server.stop() }
/// // GET http://127.0.0.1:\(server.port)/ → expect a "connection closed before the body" error
/// ```
final class FaultServer: Sendable {
    /// `.hold` never lasts longer than this, so a forgotten test cannot pin a connection forever.
    static let holdLimitMilliseconds = 30_000
    /// At most this many open connections; further clients wait in the listen backlog.
    static let maxConnections = 64
    /// A request head larger than this closes the connection (no test needs more).
    static let maxHeadBytes = 64 * 1024

    let port: Int
    /// Connections accepted so far.
    var connectionsAccepted: Int { shared.state.withLock { $0.connections } }
    /// Connections the server has closed, reset or seen closed so far (a test's signal that a fault happened).
    var connectionsClosed: Int { shared.state.withLock { $0.closed } }
    /// Complete requests read so far (implicit reads and `.readRequest`).
    var requestsReceived: Int { shared.state.withLock { $0.requests } }
    /// The heads (text up to the blank line) of the requests read so far, oldest first; the last 100 are kept.
    var requestHeads: [String] { shared.state.withLock { $0.heads } }

    private let shared: FaultServerShared
    private let wakeWriteFD: Int32
    private let stopped = Locked(false)

    init(script: FaultScript, host: String = "127.0.0.1") throws {
        let (listenFD, port) = try Self.listen(host: host)
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else {
            close(listenFD)
            throw PeerError("FaultServer: pipe failed: errno \(errno)")
        }
        // pipe2/accept4 are GNU extensions Glibc's Swift module does not export; set the flags by hand.
        for fd in pipeFDs { Self.makeNonBlockingAndCloseOnExec(fd) }
        self.port = port
        self.wakeWriteFD = pipeFDs[1]
        let shared = FaultServerShared()
        self.shared = shared
        let wakeReadFD = pipeFDs[0]
        let thread = Thread {
            var loop = FaultServerLoop(listenFD: listenFD, wakeFD: wakeReadFD, script: script, shared: shared)
            loop.run()
            close(wakeReadFD)
            shared.finished.signal()
        }
        thread.name = "FaultServer:\(port)"
        thread.start()
    }

    /// Stops the thread, closing the listening socket and every connection; returns once the thread
    /// has exited. Calling it again does nothing.
    func stop() {
        let alreadyStopped = stopped.withLock { done in
            defer { done = true }
            return done
        }
        if alreadyStopped { return }
        shared.state.withLock { $0.stopRequested = true }
        var byte: UInt8 = 1
        _ = write(wakeWriteFD, &byte, 1)
        shared.finished.wait()
        close(wakeWriteFD)
    }

    deinit { stop() }

    static func makeNonBlockingAndCloseOnExec(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
    }

    private static func listen(host: String) throws -> (fd: Int32, port: Int) {
        let isIPv6 = host.contains(":")
        let family = isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw PeerError("FaultServer: socket failed: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var result: Int32
        var port = 0
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
                close(fd)
                throw PeerError("FaultServer: bad IPv6 address \(host)")
            }
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
            if result == 0 {
                var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
                result = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
                }
                port = Int(UInt16(bigEndian: address.sin6_port))
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                close(fd)
                throw PeerError("FaultServer: bad IPv4 address \(host)")
            }
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if result == 0 {
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                result = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
                }
                port = Int(UInt16(bigEndian: address.sin_port))
            }
        }
        guard result == 0, Glibc.listen(fd, 128) == 0 else {
            let error = errno
            close(fd)
            throw PeerError("FaultServer: bind/listen on \(host) failed: errno \(error)")
        }
        return (fd, port)
    }
}

/// What the server object and its thread share; everything mutable is behind the mutex.
private final class FaultServerShared: Sendable {
    struct State {
        var connections = 0
        var requests = 0
        var closed = 0
        var heads: [String] = []
        var stopRequested = false
    }
    let state = Locked(State())
    /// Signalled once when the thread has closed every socket and is about to exit.
    let finished = DispatchSemaphore(value: 0)
}

/// The server thread's state. Owned by that thread alone: created, run and dropped inside its closure.
private struct FaultServerLoop {
    private struct Connection {
        enum Phase {
            /// Start the next queued action (or read the next request when the queue is empty).
            case ready
            /// Waiting for a complete request; `explicit` is a `.readRequest` (no new actions fetched).
            case reading(explicit: Bool)
            case sending([UInt8], offset: Int)
            case sleeping(until: UInt64)
            case dripping([UInt8], offset: Int, delayNanoseconds: UInt64, nextAt: UInt64)
            case holding(until: UInt64)
            case closed
        }

        let fd: Int32
        let index: Int
        var requestIndex = 0
        var input: [UInt8] = []
        var actions: ArraySlice<FaultAction> = []
        var phase = Phase.ready
    }

    let listenFD: Int32
    let wakeFD: Int32
    let script: FaultScript
    let shared: FaultServerShared
    private var connections: [Connection] = []
    private var accepted = 0

    init(listenFD: Int32, wakeFD: Int32, script: FaultScript, shared: FaultServerShared) {
        self.listenFD = listenFD
        self.wakeFD = wakeFD
        self.script = script
        self.shared = shared
    }

    /// Linux's "peer shut down writing" poll flag (0x2000); Glibc's Swift module hides it behind _GNU_SOURCE.
    private static let pollReadHangUp: Int32 = 0x2000

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    mutating func run() {
        defer {
            for connection in connections where connection.fd >= 0 { close(connection.fd) }
            connections = []
            close(listenFD)
        }
        while !shared.state.withLock({ $0.stopRequested }) {
            // Advance every connection as far as it goes without waiting.
            for i in connections.indices { advance(&connections[i]) }
            let open = connections.count
            connections.removeAll { if case .closed = $0.phase { true } else { false } }
            if connections.count < open {
                let closedNow = open - connections.count
                shared.state.withLock { $0.closed += closedNow }
            }

            var fds: [pollfd] = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            let acceptsMore = connections.count < FaultServer.maxConnections
            if acceptsMore { fds.append(pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)) }
            let now = Self.now()
            // 100 ms at most, so a lost wake-up can delay stop() by no more than that.
            var timeout: UInt64 = 100_000_000
            for connection in connections {
                var events: Int32 = 0
                switch connection.phase {
                case .reading: events = Int32(POLLIN)
                case .sending: events = Int32(POLLOUT)
                case .holding(let until):
                    events = Self.pollReadHangUp
                    timeout = min(timeout, until > now ? until - now : 0)
                case .sleeping(let until), .dripping(_, _, _, let until):
                    timeout = min(timeout, until > now ? until - now : 0)
                case .ready, .closed: timeout = 0
                }
                fds.append(pollfd(fd: connection.fd, events: Int16(truncatingIfNeeded: events), revents: 0))
            }
            let milliseconds = Int32((timeout + 999_999) / 1_000_000)
            let ready = poll(&fds, nfds_t(fds.count), milliseconds)
            if ready < 0 && errno != EINTR { break }
            if fds[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                _ = read(wakeFD, &drain, drain.count)
            }
            let offset = acceptsMore ? 2 : 1
            for i in connections.indices where fds[offset + i].revents != 0 {
                handleEvents(Int32(fds[offset + i].revents), on: &connections[i])
            }
            // Accept after handling events: new connections are appended and have no pollfd yet.
            if acceptsMore && fds[1].revents != 0 { acceptNew() }
        }
    }

    private mutating func acceptNew() {
        while connections.count < FaultServer.maxConnections {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 { return }
            FaultServer.makeNonBlockingAndCloseOnExec(fd)
            var one: Int32 = 1
            // Without TCP_NODELAY, Nagle holds back each dripped byte until the previous one is acked.
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let index = accepted
            accepted += 1
            shared.state.withLock { $0.connections += 1 }
            var connection = Connection(fd: fd, index: index)
            connection.actions = ArraySlice(script.onAccept(index))
            connections.append(connection)
        }
    }

    private func handleEvents(_ revents: Int32, on connection: inout Connection) {
        switch connection.phase {
        case .reading:
            // The peer closing before a complete request is an ordinary end of a keep-alive connection.
            if !readAvailable(&connection) { abort(&connection) }
        case .holding:
            if revents & Self.pollReadHangUp | Int32(POLLHUP | POLLERR) != 0 {
                abort(&connection)
            }
        default:
            if revents & Int32(POLLERR | POLLHUP) != 0 { abort(&connection) }
        }
    }

    /// Runs actions until one has to wait. Called every loop turn for every connection.
    private func advance(_ connection: inout Connection) {
        while true {
            let now = Self.now()
            switch connection.phase {
            case .closed:
                return
            case .reading(let explicit):
                guard let (length, head) = Self.completeRequestLength(connection.input) else {
                    if connection.input.count > FaultServer.maxHeadBytes, !Self.hasHeadEnd(connection.input) {
                        abort(&connection)
                    }
                    return
                }
                connection.input.removeFirst(length)
                let requestIndex = connection.requestIndex
                connection.requestIndex += 1
                shared.state.withLock {
                    $0.requests += 1
                    $0.heads.append(head)
                    if $0.heads.count > 100 { $0.heads.removeFirst() }
                }
                if !explicit {
                    connection.actions = ArraySlice(script.onRequest(connection.index, requestIndex))
                }
                connection.phase = .ready
            case .sending(let bytes, let offset):
                let written = bytes.withUnsafeBytes { buffer in
                    send(connection.fd, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                }
                if written < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
                    abort(&connection)
                    return
                }
                let next = offset + written
                connection.phase = next == bytes.count ? .ready : .sending(bytes, offset: next)
                if next < bytes.count { return }
            case .sleeping(let until):
                if now < until { return }
                connection.phase = .ready
            case .dripping(let bytes, let offset, let delay, let nextAt):
                if now < nextAt { return }
                if offset == bytes.count {
                    connection.phase = .ready
                    continue
                }
                let written = bytes.withUnsafeBytes { send(connection.fd, $0.baseAddress! + offset, 1, Int32(MSG_NOSIGNAL)) }
                if written < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
                    abort(&connection)
                    return
                }
                let next = offset + 1
                connection.phase = next == bytes.count ? .ready : .dripping(bytes, offset: next, delayNanoseconds: delay, nextAt: now + delay)
            case .holding(let until):
                if now < until { return }
                connection.phase = .closed
                closeGracefully(connection.fd)
                return
            case .ready:
                guard let action = connection.actions.popFirst() else {
                    connection.phase = .reading(explicit: false)
                    continue
                }
                switch action {
                case .send(let bytes):
                    connection.phase = bytes.isEmpty ? .ready : .sending(bytes, offset: 0)
                case .sleep(let ms):
                    connection.phase = .sleeping(until: now + UInt64(max(0, ms)) * 1_000_000)
                case .close:
                    connection.phase = .closed
                    closeGracefully(connection.fd)
                    return
                case .readRequest:
                    connection.phase = .reading(explicit: true)
                case .resetConnection:
                    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                    setsockopt(connection.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                    close(connection.fd)
                    connection.phase = .closed
                    return
                case .shutdownWrite:
                    shutdown(connection.fd, Int32(SHUT_WR))
                case .drip(let bytes, let delayMs):
                    connection.phase = .dripping(bytes, offset: 0, delayNanoseconds: UInt64(max(0, delayMs)) * 1_000_000, nextAt: now)
                case .hold:
                    connection.phase = .holding(until: now + UInt64(FaultServer.holdLimitMilliseconds) * 1_000_000)
                }
            }
        }
    }

    /// Reads what is available into `connection.input`. Returns false when the peer closed or failed.
    private func readAvailable(_ connection: inout Connection) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = recv(connection.fd, &buffer, buffer.count, 0)
            if n > 0 {
                connection.input.append(contentsOf: buffer[0..<n])
                if connection.input.count > FaultServer.maxHeadBytes * 64 { return true }  // let advance() judge
                continue
            }
            if n == 0 { return false }
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
        }
    }

    private func abort(_ connection: inout Connection) {
        close(connection.fd)
        connection.phase = .closed
    }

    /// Drains unread input, then closes, so the peer sees FIN rather than RST.
    private func closeGracefully(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
        shutdown(fd, Int32(SHUT_WR))
        close(fd)
    }

    // MARK: Request framing

    private static let headEnd: [UInt8] = Array("\r\n\r\n".utf8)

    private static func hasHeadEnd(_ input: [UInt8]) -> Bool { find(headEnd, in: input, from: 0) != nil }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        var i = start
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0] && Array(haystack[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }

    /// If `input` starts with a complete request, its length in bytes and its head as text.
    /// Bodies are framed by Content-Length or `Transfer-Encoding: chunked` (trailers allowed).
    private static func completeRequestLength(_ input: [UInt8]) -> (Int, String)? {
        guard let end = find(headEnd, in: input, from: 0) else { return nil }
        let head = String(decoding: input[0..<end], as: UTF8.self)
        var contentLength = 0
        var chunked = false
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "content-length" { contentLength = Int(value) ?? 0 }
            if name == "transfer-encoding" && value.lowercased().contains("chunked") { chunked = true }
        }
        let bodyStart = end + 4
        if !chunked {
            return input.count >= bodyStart + contentLength ? (bodyStart + contentLength, head) : nil
        }
        var position = bodyStart
        let crlf: [UInt8] = [13, 10]
        while true {
            guard let lineEnd = find(crlf, in: input, from: position) else { return nil }
            let sizeText = String(decoding: input[position..<lineEnd], as: UTF8.self)
                .split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                return (input.count, head)  // unparseable: treat everything received as the request
            }
            position = lineEnd + 2
            if size == 0 {
                // Trailers: lines up to an empty line.
                while true {
                    guard let trailerEnd = find(crlf, in: input, from: position) else { return nil }
                    let empty = trailerEnd == position
                    position = trailerEnd + 2
                    if empty { return (position, head) }
                }
            }
            position += size + 2
            if position > input.count { return nil }
        }
    }
}
