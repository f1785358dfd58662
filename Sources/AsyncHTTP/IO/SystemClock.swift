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

/// A point on the monotonic clock, in nanoseconds: what a request's observation keeps (its timing marks, the
/// progress throttle's last report).
///
/// Not `ContinuousClock.Instant`: that type comes from another module without a fixed layout, so each copy,
/// optional and comparison of one goes through value-witness calls. In the profile of `conc` with a progress
/// handler on every request those calls were a large part of what observing cost.
struct MonotonicTime: Comparable, Hashable, Sendable {
    var nanoseconds: UInt64

    /// `clock_gettime(CLOCK_MONOTONIC)`.
    static var now: MonotonicTime {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return MonotonicTime(nanoseconds: UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec))
    }

    static func < (a: MonotonicTime, b: MonotonicTime) -> Bool { a.nanoseconds < b.nanoseconds }

    /// `duration` later (a negative one counts as none).
    static func + (time: MonotonicTime, duration: Duration) -> MonotonicTime {
        MonotonicTime(nanoseconds: time.nanoseconds &+ duration.wholeNanoseconds)
    }

    /// The time from `self` to `later` (zero if `later` is earlier).
    func duration(to later: MonotonicTime) -> Duration {
        later.nanoseconds > nanoseconds ? .nanoseconds(Int64(later.nanoseconds - nanoseconds)) : .zero
    }
}

extension Duration {
    /// Whole nanoseconds, 0 for a negative duration, clamped to `UInt64.max`.
    var wholeNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole &+ UInt64(attoseconds / 1_000_000_000)
    }
}
