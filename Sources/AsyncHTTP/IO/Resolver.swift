#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Name resolution that never blocks Swift's cooperative pool.
///
/// Numeric IPv4 and IPv6 literals are parsed in place (no lookup at all, the common case for
/// loopback servers and benchmarks); names go to `getaddrinfo` on threads of their own (``LookupThreads``),
/// neither the cooperative pool nor Dispatch's shared one. A cancelled or timed-out lookup returns
/// at once; the abandoned `getaddrinfo` call finishes in the background and its answer is dropped.
///
/// Bounded: at most ``NameLookups/defaultLimit`` `getaddrinfo` calls run at once in the process, abandoned
/// ones included, so a resolver that hangs under a stream of timeouts cannot pile up threads. Further lookups
/// wait their turn in FIFO order, within their own deadline and cancellation (a waiter that gives up leaves
/// the queue at once).
enum Resolver {
    /// The process's lookups.
    static let shared = NameLookups(limit: NameLookups.defaultLimit, lookup: Resolver.lookup(host:port:))

    /// The addresses of `host:port`; with `cacheFor`, an answer at most that old may be reused (see
    /// ``NameLookups/resolve(host:port:deadline:cacheFor:)``).
    static func resolve(
        host: String, port: Int, deadline: MonotonicTime?, cacheFor timeToLive: Duration? = nil
    ) async throws(HTTPClientError) -> [SocketAddress] {
        try await shared.resolve(host: host, port: port, deadline: deadline, cacheFor: timeToLive)
    }

    static func lookup(host: String, port: Int) -> Result<[SocketAddress], HTTPClientError> {
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
