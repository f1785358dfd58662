#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Exact-length reads and whole writes on a raw socket, for handshakes that are not HTTP.
struct SocketByteStream {
    let socket: Socket
    let deadline: MonotonicTime

    func write(_ bytes: [UInt8]) async throws(HTTPClientError) {
        var offset = 0
        while offset < bytes.count {
            let outcome = bytes.withUnsafeBytes { socket.tryWrite(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch outcome {
            case .done(let n): offset += n
            case .wouldBlock: try await socket.waitUntil(.writable, deadline: deadline, phase: .connect)
            case .failed(let code): throw HTTPClientError(.ioFailure, "writing to the proxy failed: \(errnoText(code))", errno: code)
            }
        }
    }

    /// Exactly `count` bytes; the proxy closing first is an error.
    func read(_ count: Int) async throws(HTTPClientError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let outcome = bytes.withUnsafeMutableBytes { socket.tryRead(into: UnsafeMutableRawBufferPointer(rebasing: $0[offset...])) }
            switch outcome {
            case .done(0):
                throw HTTPClientError(.proxyFailed, "the proxy closed the connection during the handshake")
            case .done(let n): offset += n
            case .wouldBlock: try await socket.waitUntil(.readable, deadline: deadline, phase: .connect)
            case .failed(let code): throw HTTPClientError(.ioFailure, "reading from the proxy failed: \(errnoText(code))", errno: code)
            }
        }
        return bytes
    }
}

extension SocketAddress {
    /// The raw IPv4 (4 bytes) or IPv6 (16 bytes) address, as SOCKS5 sends it.
    var addressBytes: [UInt8]? {
        var storage = self.storage
        return withUnsafeBytes(of: &storage) { raw -> [UInt8]? in
            switch family {
            case Int32(AF_INET):
                let offset = MemoryLayout<sockaddr_in>.offset(of: \sockaddr_in.sin_addr)!
                return Array(raw[offset..<(offset + 4)])
            case Int32(AF_INET6):
                let offset = MemoryLayout<sockaddr_in6>.offset(of: \sockaddr_in6.sin6_addr)!
                return Array(raw[offset..<(offset + 16)])
            default:
                return nil
            }
        }
    }
}
