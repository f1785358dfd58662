// A door into the internal socket and event loop for `bench-asynchttp --floor` (Benchmarks/),
// which measures what one request at a time costs the client's I/O design with no HTTP client in it: the same
// non-blocking socket, the same epoll thread and the same resumption on the cooperative pool, sending a fixed
// request and reading a response of known length. The difference between `seq` and this floor is what the
// client's own request path adds. SPI rather than public API, as `ParserBenchmark` is.

/// Keep-alive exchanges over one connection through the library's socket and event loop, without the client.
@_spi(Benchmarks)
public enum TransportFloorBenchmark {
    /// Sends `request` and reads one response, over and over, on one keep-alive connection, for `seconds`.
    ///
    /// Each read waits on the event loop first, as the client's first read of a head does, then `recv`s once;
    /// the response's length comes from its `Content-Length` (the benchmark's server always sends one).
    ///
    /// - Parameters:
    ///   - host: an IPv4 or IPv6 literal.
    ///   - port: the server's port.
    ///   - request: the request's bytes, written whole each time.
    ///   - seconds: how long to run.
    /// - Returns: the number of complete exchanges, or nil if the connection failed or a response had no
    ///   `Content-Length`.
    public static func run(host: String, port: Int, request: [UInt8], seconds: Double) async -> Int? {
        guard let address = SocketAddress(numericHost: host, port: port) else { return nil }
        let socket: Socket
        do {
            socket = try await Socket.connect(to: address, deadline: nil, notifier: IOBackend.notifier)
        } catch {
            return nil
        }
        defer { socket.close() }
        let end = ContinuousClock.now + .nanoseconds(Int64(seconds * 1e9))
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var exchanges = 0
        while ContinuousClock.now < end {
            let sent = request.withUnsafeBytes { socket.tryWrite($0) }
            guard case .done(let n) = sent, n == request.count else { return nil }
            var received = 0
            var expected: Int?
            var head: [UInt8] = []
            while expected.map({ received < $0 }) ?? true {
                do {
                    try await socket.waitUntil(.readable, deadline: nil, phase: .head)
                } catch {
                    return nil
                }
                let outcome = buffer.withUnsafeMutableBytes { socket.tryRead(into: $0) }
                switch outcome {
                case .done(0), .failed: return nil
                case .wouldBlock: continue
                case .done(let count):
                    received += count
                    if expected == nil {
                        head += buffer[..<count]
                        guard let length = responseLength(head) else { continue }
                        expected = length
                    }
                }
            }
            guard received == expected else { return nil }
            exchanges += 1
        }
        return exchanges
    }

    /// `client`'s transport alone, over and over for `seconds`: a GET of `url` through the pool, the connection,
    /// the parser and the body's iterator, without ``HTTPClient/send(_:)`` and its middleware chain.
    ///
    /// - Returns: the number of complete exchanges, or nil on the first failure or a status other than 200.
    public static func transportRoundTrips(client: HTTPClient, url: String, seconds: Double) async -> Int? {
        await roundTrips(seconds: seconds) { try await client.transport.roundTrip(HTTPClientRequest(url: url)) }
    }

    /// `exchange` and the whole body of the response it returns, over and over for `seconds`, one at a time.
    ///
    /// - Returns: the number of complete exchanges, or nil on the first failure or a status other than 200.
    public static func roundTrips(seconds: Double, _ exchange: () async throws -> HTTPClientResponse) async -> Int? {
        let end = ContinuousClock.now + .nanoseconds(Int64(seconds * 1e9))
        var exchanges = 0
        while ContinuousClock.now < end {
            do {
                let response = try await exchange()
                for try await _ in response.body {}
                guard response.status.code == 200 else { return nil }
            } catch {
                return nil
            }
            exchanges += 1
        }
        return exchanges
    }

    /// The whole response's length (head and body) once its head is complete, from `Content-Length`; nil before.
    public static func responseLength(_ bytes: [UInt8]) -> Int? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard bytes.count >= 4 else { return nil }
        var headEnd: Int?
        for index in 0...(bytes.count - 4) where bytes[index..<index + 4].elementsEqual(separator) {
            headEnd = index + 4
            break
        }
        guard let headEnd else { return nil }
        // ASCII lower case, then the first "\r\ncontent-length:" line's digits.
        let head = bytes[..<headEnd].map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
        let name = Array("\r\ncontent-length:".utf8)
        guard head.count > name.count,
              let start = (0...(head.count - name.count)).first(where: { head[$0..<$0 + name.count].elementsEqual(name) })
        else { return nil }
        var length = 0
        var sawDigit = false
        for byte in head[(start + name.count)...] {
            if byte == 32 && !sawDigit { continue }
            guard byte >= 48 && byte <= 57 else { break }
            length = length * 10 + Int(byte - 48)
            sawDigit = true
        }
        guard sawDigit else { return nil }
        return headEnd + length
    }
}
