import Foundation
import Glibc

/// A raw server for `Expect: 100-continue` tests that records exactly what each connection received, so a
/// test can prove that a body was, or was not, sent.
///
/// One background thread, one connection at a time (blocking sockets with timeouts). Per connection it reads
/// a request head, then does what `reply(connectionIndex, head)` says. Binds 127.0.0.1 on an ephemeral port.
final class ExpectContinueServer: @unchecked Sendable {
    // @unchecked: `records` is behind `lock`; the rest is immutable after init.
    enum Reply: Sendable {
        /// Answer at once with this final response, before reading any body; then read what else arrives
        /// until the client closes (or 2 s pass), and close.
        case finalBeforeBody(String)
        /// Send `100 Continue`, read the body (Content-Length), answer `200` with the byte count.
        case continueThenOK
        /// Send nothing until the body (Content-Length) has arrived, then `200` with the byte count.
        case silentThenOK
        /// Send nothing until the body (Content-Length) has arrived, then this final response, and close.
        case silentThenFinal(String)
    }

    struct Record: Sendable {
        var head: String
        /// Bytes received after the head, on that connection.
        var bytesAfterHead: Int
    }

    let port: Int
    private let listenFD: Int32
    private let lock = NSLock()
    private var _records: [Record] = []
    private var stopped = false
    private let thread: Thread
    private let done = DispatchSemaphore(value: 0)

    var records: [Record] { lock.withLock { _records } }

    init(reply: @escaping @Sendable (_ connection: Int, _ head: String) -> Reply) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PeerError("ExpectContinueServer: socket failed") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound, listen(fd, 16) == 0 else {
            close(fd)
            throw PeerError("ExpectContinueServer: bind/listen failed: errno \(errno)")
        }
        listenFD = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let box = Box()
        thread = Thread { box.server?.run(reply: reply) }
        box.server = self
        thread.start()
    }

    private final class Box: @unchecked Sendable { weak var server: ExpectContinueServer? }

    func stop() {
        let already = lock.withLock { () -> Bool in
            defer { stopped = true }
            return stopped
        }
        if already { return }
        shutdown(listenFD, Int32(SHUT_RDWR))
        done.wait()
        close(listenFD)
    }

    deinit { stop() }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func run(reply: (Int, String) -> Reply) {
        defer { done.signal() }
        var index = 0
        // Bounded by stop(): accept fails once the listening socket is shut down.
        while !isStopped {
            var pollFD = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            guard poll(&pollFD, 1, 100) >= 0 else { return }
            if pollFD.revents == 0 { continue }
            let connection = accept(listenFD, nil, nil)
            if connection < 0 { return }
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            serve(connection, index: index, reply: reply)
            close(connection)
            index += 1
        }
    }

    private func serve(_ fd: Int32, index: Int, reply: (Int, String) -> Reply) {
        var input: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var headEnd: Int?
        // Bounded: 64 KiB of head at most, and each read waits 2 s at most.
        while headEnd == nil && input.count < 65536 {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { return }
            input += buffer[..<n]
            if let range = input.firstRange(of: Array("\r\n\r\n".utf8)) { headEnd = range.upperBound }
        }
        guard let headEnd else { return }
        let head = String(decoding: input[..<headEnd], as: UTF8.self)
        var after = input.count - headEnd
        lock.withLock { _records.append(Record(head: head, bytesAfterHead: after)) }
        func record() { let total = after; lock.withLock { _records[_records.count - 1].bytesAfterHead = total } }
        func send(_ text: String) { _ = text.withCString { write(fd, $0, strlen($0)) } }
        let contentLength = head.split(separator: "\r\n").compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].trimmingCharacters(in: .whitespaces))
        }.first ?? 0
        func readBody() {
            while after < contentLength {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { break }
                after += n
                record()
            }
        }
        switch reply(index, head) {
        case .finalBeforeBody(let response):
            send(response)
            // Whatever the client still sends on this connection, until it closes or 2 s of silence.
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { break }
                after += n
                record()
            }
        case .continueThenOK:
            send("HTTP/1.1 100 Continue\r\n\r\n")
            readBody()
            let body = "\(after)"
            send("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        case .silentThenFinal(let response):
            readBody()
            send(response)
        case .silentThenOK:
            readBody()
            let body = "\(after)"
            send("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        }
    }
}
