#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The wall clock, for what is dated in calendar time (cookie expiry, NTLM timestamps); durations and
/// deadlines use `MonotonicTime` (AsyncHTTPCore) instead.
enum SystemClock {
    /// Seconds since 1970, from `clock_gettime(CLOCK_REALTIME)` (no Foundation).
    static func secondsSince1970() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}

extension MonotonicTime {
    /// `clock_gettime(CLOCK_BOOTTIME)` on Linux, the clock `ContinuousClock` reads there: time asleep (a
    /// suspended laptop) counts, so an idle connection or a deadline has run out when the machine wakes.
    static var now: MonotonicTime {
        var time = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_BOOTTIME, &time)
        #else
        clock_gettime(CLOCK_MONOTONIC, &time)
        #endif
        return MonotonicTime(nanoseconds: UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec))
    }

    /// Sleeps until this time (at once if it has passed), on `ContinuousClock`, which `Task.sleep` needs.
    func sleepUntil() async throws {
        let wait = MonotonicTime.now.duration(to: self)
        if wait > .zero { try await Task.sleep(for: wait, clock: .continuous) }
    }
}
