#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The process environment, read through `environ` so that the library needs no Foundation for it.
enum ProcessEnvironment {
    static func current() -> [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        var count = 0
        while let entry = pointer.pointee, count < 100_000 {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
            count += 1
        }
        return result
    }
}

/// Numeric IP addresses, parsed by the C library (`inet_pton`).
enum NumericAddress {
    /// The bytes of a numeric IPv4 (4) or IPv6 (16) address; nil for anything else.
    static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}
