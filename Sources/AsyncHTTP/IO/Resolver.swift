#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Name resolution that never blocks Swift's cooperative pool.
///
/// Numeric IPv4 and IPv6 literals are parsed in place (no lookup at all, the common case for
/// loopback servers and benchmarks); names go to `getaddrinfo` on a Dispatch queue, which runs on
/// Dispatch's own threads rather than the cooperative pool. A cancelled or timed-out lookup returns
/// at once; the abandoned `getaddrinfo` call finishes in the background and its answer is dropped.
enum Resolver {
    private static let queue = DispatchQueue(label: "AsyncHTTP.resolver", attributes: .concurrent)

    static func resolve(host: String, port: Int, deadline: ContinuousClock.Instant?) async throws(HTTPClientError) -> [SocketAddress] {
        if let address = SocketAddress(numericHost: host, port: port) { return [address] }
        let once = Locked<UnsafeContinuation<Result<[SocketAddress], HTTPClientError>, Never>?>(nil)
        let finish: @Sendable (Result<[SocketAddress], HTTPClientError>) -> Void = { result in
            once.withLock { continuation in
                continuation?.resume(returning: result)
                continuation = nil
            }
        }
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<[SocketAddress], HTTPClientError>, Never>) in
                once.withLock { $0 = continuation }
                if Task.isCancelled { finish(.failure(.cancelled)) }
                queue.async { finish(lookup(host: host, port: port)) }
                if let deadline {
                    let nanos = max(0, ContinuousClock.now.duration(to: deadline).nanoseconds)
                    queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanos))) {
                        finish(.failure(.timeout(.connect, "resolving \(host) took too long")))
                    }
                }
            }
        } onCancel: {
            finish(.failure(.cancelled))
        }
        return try result.get()
    }

    private static func lookup(host: String, port: Int) -> Result<[SocketAddress], HTTPClientError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if os(Linux)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let reason = String(cString: gai_strerror(status))
            return .failure(HTTPClientError(.dnsFailure, "could not resolve '\(host)': \(reason)"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let address = current.pointee.ai_addr {
                addresses.append(SocketAddress(address, length: current.pointee.ai_addrlen))
            }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else {
            return .failure(HTTPClientError(.dnsFailure, "'\(host)' has no addresses"))
        }
        return .success(addresses)
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled + attoseconds / 1_000_000_000
    }
}
