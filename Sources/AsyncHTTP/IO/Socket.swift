#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(Glibc)
private let libcConnect = Glibc.connect
private let libcClose = Glibc.close
#elseif canImport(Darwin)
private let libcConnect = Darwin.connect
private let libcClose = Darwin.close
#endif

/// A resolved socket address (IPv4, IPv6 or a Unix domain socket), stored inline.
struct SocketAddress: Sendable, CustomStringConvertible {
    var storage: sockaddr_storage
    var length: socklen_t

    var family: Int32 { Int32(storage.ss_family) }
    /// Whether this is an IPv4 address; false for IPv6 and Unix sockets.
    var isIPv4: Bool { family == Int32(AF_INET) }
    /// Whether this is an IPv6 address.
    var isIPv6: Bool { family == Int32(AF_INET6) }

    /// Parses a numeric IPv4 or IPv6 literal; nil for a name that needs resolving, or a port outside 0…65535 (which
    /// the lookup refuses with an error of its own).
    init?(numericHost host: String, port: Int) {
        guard (0...65_535).contains(port) else { return nil }
        var storage = sockaddr_storage()
        var parsed = false
        var length = socklen_t(0)
        withUnsafeMutableBytes(of: &storage) { raw in
            if host.contains(":") {
                var address = sockaddr_in6()
                guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return }
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = in_port_t(UInt16(port).bigEndian)
                raw.storeBytes(of: address, as: sockaddr_in6.self)
                length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            } else {
                var address = sockaddr_in()
                guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return }
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(UInt16(port).bigEndian)
                raw.storeBytes(of: address, as: sockaddr_in.self)
                length = socklen_t(MemoryLayout<sockaddr_in>.size)
            }
            parsed = true
        }
        guard parsed else { return nil }
        self.storage = storage
        self.length = length
    }

    /// A Unix domain socket: a path, or (Linux) a name in the abstract namespace. Throws
    /// `HTTPClientError.Code.invalidRequest` for a path that does not fit `sun_path` or contains a NUL.
    init(unix socket: UnixSocketAddress) throws(HTTPClientError) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array(socket.path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        // A path needs its terminating NUL; an abstract name has a leading NUL instead, and no terminator.
        let room = capacity - 1
        guard !name.isEmpty else { throw .invalidRequest("the Unix socket path is empty") }
        guard !name.contains(0) else { throw .invalidRequest("the Unix socket path contains a NUL byte") }
        guard name.count <= room else {
            throw .invalidRequest("the Unix socket path is \(name.count) bytes long; at most \(room) fit in sun_path")
        }
        let offset = socket.isAbstract ? 1 : 0
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in name.enumerated() { raw[offset + index] = byte }
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2
        // Abstract names are exactly as long as the address says (no terminator); paths include the NUL.
        let length = socklen_t(pathOffset + offset + name.count + (socket.isAbstract ? 0 : 1))
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            withUnsafeBytes(of: address) { raw.copyMemory(from: $0) }
        }
        self.storage = storage
        self.length = length
    }

    init(_ pointer: UnsafePointer<sockaddr>, length: socklen_t) {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.copyMemory(from: UnsafeRawBufferPointer(start: pointer, count: Int(length)))
        }
        self.storage = storage
        self.length = length
    }

    var description: String {
        var storage = self.storage
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        return withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                if family == AF_UNIX {
                    return address.withMemoryRebound(to: sockaddr_un.self, capacity: 1) { unix in
                        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2
                        var bytes = withUnsafeBytes(of: unix.pointee.sun_path) { Array($0.prefix(max(0, Int(length) - pathOffset))) }
                        if bytes.first == 0 { return "unix:@" + String(decoding: bytes.dropFirst(), as: UTF8.self) }
                        if let end = bytes.firstIndex(of: 0) { bytes.removeSubrange(end...) }
                        return "unix:" + String(decoding: bytes, as: UTF8.self)
                    }
                }
                if family == AF_INET6 {
                    return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var addr = v6.pointee.sin6_addr
                        inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count))
                        return "[\(cString(buffer))]:\(UInt16(bigEndian: v6.pointee.sin6_port))"
                    }
                }
                return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    var addr = v4.pointee.sin_addr
                    inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
                    return "\(cString(buffer)):\(UInt16(bigEndian: v4.pointee.sin_port))"
                }
            }
        }
    }
}

/// What one non-blocking syscall did.
enum SyscallOutcome {
    case done(Int)
    case wouldBlock
    case failed(Int32)
}

/// A non-blocking TCP socket. The only type that holds a file descriptor.
///
/// Ownership: a socket belongs to one connection, and a connection is used by one task at a time (the
/// task holding its pool lease), so the descriptor is never read or written concurrently. `close()` is
/// idempotent and guarded by a lock because a cancelled or dropped body may close from a cleanup task.
final class Socket: @unchecked Sendable {
    // @unchecked: `fd` is immutable; `closed` is protected by `closeLock`; reads and writes happen only
    // from the single task that leases the owning connection (see the type's comment).
    let fd: Int32
    let notifier: any IOEventNotifier
    let remote: SocketAddress
    private let closeLock = Locked(false)

    private init(fd: Int32, remote: SocketAddress, notifier: any IOEventNotifier) {
        self.fd = fd
        self.remote = remote
        self.notifier = notifier
    }

    deinit { close() }

    /// Connects to `address` without blocking, within `deadline`. A cancelled task gets `.cancelled` before a
    /// descriptor is made: nothing is dialled for it (a cancelled Happy Eyeballs race starts its attempts in
    /// cancelled tasks, and each used to send its SYN before the wait noticed).
    static func connect(
        to address: SocketAddress, deadline: MonotonicTime?, notifier: any IOEventNotifier
    ) async throws(HTTPClientError) -> Socket {
        if Task.isCancelled { throw .cancelled }
        #if os(Linux)
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(address.family, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else {
            throw HTTPClientError(.connectFailed, "socket() failed for \(address)", errno: errno)
        }
        #if canImport(Darwin)
        // Darwin's socket() takes no SOCK_CLOEXEC: close-on-exec as soon as the descriptor exists, so a process
        // spawned later (by the app, on any thread) does not inherit the connection. A spawn between the two
        // calls still can; there is no atomic way here.
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        #endif
        let socket = Socket(fd: fd, remote: address, notifier: notifier)
        var one: Int32 = 1
        // Requests are written whole; Nagle's delay would only hold back the last segment. (TCP only.)
        if address.family != AF_UNIX {
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        #if canImport(Darwin)
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var storage = address.storage
        let result = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { libcConnect(fd, $0, address.length) }
        }
        if result == 0 { return socket }
        let connectErrno = errno
        guard connectErrno == EINPROGRESS || connectErrno == EINTR else {
            throw HTTPClientError(.connectFailed, "connect to \(address) failed: \(errnoText(connectErrno))", errno: connectErrno)
        }
        // On loopback (and to any peer that answers within the system call) the handshake has already
        // completed when `connect` returns EINPROGRESS: a zero-timeout poll sees it without a round trip
        // through the event loop and a hop back to this task.
        var probe = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        if poll(&probe, 1, 0) != 1 {
            switch await notifier.wait(fd: fd, for: .writable, deadline: deadline) {
            case .ready: break
            case .timedOut: throw .timeout(.connect, "no connection to \(address) in time")
            case .cancelled: throw .cancelled
            }
        }
        var socketError: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &socketError, &length)
        guard socketError == 0 else {
            throw HTTPClientError(.connectFailed, "connect to \(address) failed: \(errnoText(socketError))", errno: socketError)
        }
        return socket
    }

    /// One `recv` into `buffer`; `.done(0)` is the peer's end of stream.
    @inline(__always)
    func tryRead(into buffer: UnsafeMutableRawBufferPointer) -> SyscallOutcome {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n >= 0 { return .done(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(code)
            }
        }
    }

    /// One `send` of `buffer`; may write less than all of it.
    @inline(__always)
    func tryWrite(_ buffer: UnsafeRawBufferPointer) -> SyscallOutcome {
        Self.sendOutcome { send(fd, buffer.baseAddress, buffer.count, Self.sendFlags) }
    }

    /// No `SIGPIPE` for a peer that has gone: Linux says so per call, Darwin per socket (`SO_NOSIGPIPE`).
    #if os(Linux)
    private static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
    private static let sendFlags: Int32 = 0
    #endif

    /// Repeats a `send`-like call while a signal interrupts it, and sorts its result.
    @inline(__always)
    private static func sendOutcome(_ call: () -> Int) -> SyscallOutcome {
        while true {
            let n = call()
            if n >= 0 { return .done(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(code)
            }
        }
    }

    /// One `sendmsg` of two buffers (a head and a body, or a chunk header and its data).
    func tryWrite(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> SyscallOutcome {
        var vectors = (
            iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count),
            iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count)
        )
        return withUnsafeMutableBytes(of: &vectors) { raw in
            tryWrite(UnsafeMutableBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: iovec.self), count: 2))
        }
    }

    /// The most buffers passed to one `sendmsg` (Linux's and Darwin's `IOV_MAX` is 1024).
    static let maxVectors = 1024

    /// One `sendmsg` of up to ``maxVectors`` buffers, in order.
    func tryWrite(_ vectors: UnsafeMutableBufferPointer<iovec>) -> SyscallOutcome {
        precondition(vectors.count <= Self.maxVectors, "more buffers than one sendmsg takes")
        var message = msghdr()
        message.msg_iov = vectors.baseAddress
        message.msg_iovlen = numericCast(vectors.count)
        return Self.sendOutcome { sendmsg(fd, &message, Self.sendFlags) }
    }

    /// One `sendmsg` of `parts` (at most ``maxVectors``), the first starting `skippingFirst` bytes in. Each
    /// `iovec` points into its part's own storage; such a pointer is valid only inside that part's
    /// `withUnsafeBytes`, hence the nesting by recursion instead of a copy.
    func tryWrite(_ parts: ArraySlice<ArraySlice<UInt8>>, skippingFirst: Int) -> SyscallOutcome {
        let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: parts.count)
        defer { vectors.deallocate() }
        func gather(_ position: Int) -> SyscallOutcome {
            guard position < parts.endIndex else { return tryWrite(vectors) }
            return parts[position].withUnsafeBytes { raw in
                let skip = position == parts.startIndex ? skippingFirst : 0
                vectors[position - parts.startIndex] = iovec(
                    iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress.map { $0 + skip }), iov_len: raw.count - skip)
                return gather(position + 1)
            }
        }
        return gather(parts.startIndex)
    }

    /// Suspends until the socket is ready, mapping a timeout to `phase`.
    nonisolated(nonsending) func waitUntil(
        _ interest: IOInterest, deadline: MonotonicTime?, phase: HTTPClientError.TimeoutPhase
    ) async throws(HTTPClientError) {
        switch await notifier.wait(fd: fd, for: interest, deadline: deadline) {
        case .ready: return
        case .timedOut: throw .timeout(phase, "no progress from \(remote) before the deadline")
        case .cancelled: throw .cancelled
        }
    }

    /// Whether an idle keep-alive socket still looks usable: no end of stream, no unsolicited bytes, no error.
    /// One `recv(MSG_PEEK)`; the stale-connection retry covers a close that races with reuse.
    func looksReusable() -> Bool {
        pendingInput() == .nothing
    }

    /// Whether the event loop has seen nothing arrive for reading since the last wait for it ended (see
    /// ``IOEventNotifier/readSideIsQuiet(fd:)``). With a last `recv` that left the socket empty, that answers
    /// ``looksReusable()`` without a system call.
    var readSideIsQuiet: Bool { notifier.readSideIsQuiet(fd: fd) }

    /// What waits to be read, without reading it: nothing, bytes, or the peer's close (or an error).
    enum PendingInput: Equatable {
        case nothing, bytes, closed
    }

    func pendingInput() -> PendingInput {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        if n > 0 { return .bytes }
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return .nothing }
        return .closed
    }

    /// Closes the descriptor once; later calls do nothing.
    func close() {
        let first = closeLock.withLock { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        notifier.deregister(fd: fd)
        _ = libcClose(fd)
    }
}

/// The text of a NUL-terminated C buffer.
func cString(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func errnoText(_ code: Int32) -> String {
    String(cString: strerror(code))
}
