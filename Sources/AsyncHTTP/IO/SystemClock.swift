#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The wall clock, for what is dated in calendar time (cookie expiry, NTLM timestamps); durations and
/// deadlines use `ContinuousClock` instead.
enum SystemClock {
    /// Seconds since 1970, from `clock_gettime(CLOCK_REALTIME)` (no Foundation).
    static func secondsSince1970() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
