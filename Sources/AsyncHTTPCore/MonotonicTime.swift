/// A point on the monotonic clock `ContinuousClock` reads (`CLOCK_BOOTTIME` on Linux, which counts time asleep),
/// in nanoseconds: the request path's deadlines, the event loop's timers, the pool's expiry stamps and a request's
/// observation marks. The clock is read in `Sources/AsyncHTTP/IO/SystemClock.swift` (`MonotonicTime.now`).
///
/// Not `ContinuousClock.Instant`: that type comes from the Concurrency library, which is built for library
/// evolution, and the instant has no fixed layout there. So each copy, optional, comparison and sum of one is a
/// call through its value witnesses or into the library. They cost a `seq` request about 3 µs (perf, session
/// 17), and observing progress a large part of its cost (session 10). `ContinuousClock` stays at the edges
/// that need it (`Task.sleep`, the public event times).
package struct MonotonicTime: Comparable, Hashable, Sendable {
    package var nanoseconds: UInt64

    package init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    package static func < (a: MonotonicTime, b: MonotonicTime) -> Bool { a.nanoseconds < b.nanoseconds }

    /// `duration` later (a negative one counts as none; the sum stops at the end of the clock's range).
    package static func + (time: MonotonicTime, duration: Duration) -> MonotonicTime {
        time.adding(nanoseconds: duration.wholeNanoseconds)
    }

    /// Moves `time` `duration` later.
    package static func += (time: inout MonotonicTime, duration: Duration) { time = time + duration }

    /// `nanoseconds` later, stopping at the end of the clock's range.
    package func adding(nanoseconds delta: UInt64) -> MonotonicTime {
        let (later, overflow) = nanoseconds.addingReportingOverflow(delta)
        return MonotonicTime(nanoseconds: overflow ? .max : later)
    }

    /// The time from `self` to `later` (zero if `later` is earlier).
    package func duration(to later: MonotonicTime) -> Duration {
        .nanoseconds(Int64(clamping: nanoseconds(to: later)))
    }

    /// The nanoseconds from this time to `later`; 0 if `later` is not later.
    package func nanoseconds(to later: MonotonicTime) -> UInt64 {
        later.nanoseconds > nanoseconds ? later.nanoseconds - nanoseconds : 0
    }
}

extension Duration {
    /// Whole nanoseconds, 0 for a negative duration, clamped to `UInt64.max`.
    package var wholeNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let (sum, sumOverflow) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return sumOverflow ? .max : sum
    }
}
