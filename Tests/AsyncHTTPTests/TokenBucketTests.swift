@testable import AsyncHTTP
import XCTest

/// The token bucket, the bandwidth meter and the activity count, with the time passed in (no sleeps).
final class TokenBucketTests: XCTestCase {
    let t0 = ContinuousClock.now

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { t0 + .milliseconds(milliseconds) }
    /// The meter's clock.
    let m0 = MonotonicTime.now
    func mt(_ milliseconds: Int) -> MonotonicTime { m0 + .milliseconds(milliseconds) }

    func testAFullBucketLetsTheBurstThroughAtOnceThenPacesAtTheRate() {
        var bucket = TokenBucket(rate: 1_000_000, now: t0)   // burst 100_000, quantum 50_000
        XCTAssertEqual(bucket.reserve(upTo: 50_000, now: t0), .init(granted: 50_000, notBefore: t0))
        XCTAssertEqual(bucket.reserve(upTo: 50_000, now: t0), .init(granted: 50_000, notBefore: t0))
        // Empty now: the next 50 kB may go 50 ms later, the one after 100 ms later.
        XCTAssertEqual(bucket.reserve(upTo: 1 << 20, now: t0), .init(granted: 50_000, notBefore: at(50)))
        XCTAssertEqual(bucket.reserve(upTo: 1 << 20, now: t0), .init(granted: 50_000, notBefore: at(100)))
    }

    func testSustainedReservationsMoveBytesAtTheRate() {
        // One transfer asking for 256 KiB at a time, each read happening when its reservation allows:
        // 10 MB at 2 MB/s takes 5 s less the initial burst (0.1 s).
        var bucket = TokenBucket(rate: 2_000_000, now: t0)
        var now = t0
        var moved = 0
        var rounds = 0
        while moved < 10_000_000, rounds < 10_000 {
            let reservation = bucket.reserve(upTo: 256 * 1024, now: now)
            now = max(now, reservation.notBefore)
            moved += reservation.granted
            rounds += 1
        }
        let seconds = Double(t0.duration(to: now).components.attoseconds) / 1e18 + Double(t0.duration(to: now).components.seconds)
        XCTAssertEqual(seconds, 4.9, accuracy: 0.06)
    }

    func testReservationsAreServedInTheOrderTheyWereMadeSoNoTransferStarves() {
        // Four transfers reserving in turn: each gets the same share, and their times interleave.
        var bucket = TokenBucket(rate: 400_000, now: t0)
        var moved = [0, 0, 0, 0]
        var readyAt = [t0, t0, t0, t0]
        var now = t0
        for _ in 0..<400 {
            // The transfer whose turn comes first reserves next (as the woken tasks would).
            let next = readyAt.indices.min { readyAt[$0] < readyAt[$1] }!
            now = max(now, readyAt[next])
            let reservation = bucket.reserve(upTo: 64 * 1024, now: now)
            readyAt[next] = reservation.notBefore
            moved[next] += reservation.granted
        }
        let share = moved.reduce(0, +) / 4
        for bytes in moved { XCTAssertEqual(Double(bytes), Double(share), accuracy: Double(share) * 0.05) }
    }

    func testUnusedBytesAreRefundedAndTheBucketNeverHoldsMoreThanTheBurst() {
        var bucket = TokenBucket(rate: 1_000_000, now: t0)
        _ = bucket.reserve(upTo: 50_000, now: t0)
        bucket.refund(40_000, now: t0)
        XCTAssertEqual(bucket.tokens, 90_000, accuracy: 1)
        bucket.refund(1_000_000, now: t0)
        XCTAssertEqual(bucket.tokens, 100_000, accuracy: 1, "capped at the burst")
        bucket.refund(0, now: at(10_000))
        XCTAssertEqual(bucket.tokens, 100_000, accuracy: 1, "idle time does not pile up more than the burst")
    }

    func testAChangedRateAppliesToTheNextReservation() {
        var bucket = TokenBucket(rate: 1_000_000, now: t0)
        _ = bucket.reserve(upTo: 50_000, now: t0)
        _ = bucket.reserve(upTo: 50_000, now: t0)   // empty
        bucket.setRate(100_000, now: t0)             // quantum 5_000
        XCTAssertEqual(bucket.quantum, 5_000)
        XCTAssertEqual(bucket.reserve(upTo: 1 << 20, now: t0), .init(granted: 5_000, notBefore: at(50)))
        bucket.setRate(10_000_000, now: at(50))
        // The debt is paid at the new rate: 10 MB/s refills the 5 kB in half a millisecond.
        let next = bucket.reserve(upTo: 1 << 20, now: at(50))
        XCTAssertEqual(next.granted, 256 * 1024)
        XCTAssertLessThan(t0.duration(to: next.notBefore), .milliseconds(80))
    }

    func testLoweringTheRateForgivesDebtBeyondOneGrantOfTheNewRate() {
        // A second's worth of reservations at 4 MiB/s, then the limit lowered to 1 KiB/s: the debt was repaid at
        // the new rate, over an hour with no byte moving.
        var bucket = TokenBucket(rate: 4 << 20, now: t0)
        for _ in 0..<25 { _ = bucket.reserve(upTo: 1 << 20, now: t0) }
        XCTAssertLessThan(bucket.tokens, -Double(3 << 20))
        bucket.setRate(1024, now: t0)
        XCTAssertEqual(bucket.tokens, -Double(bucket.quantum), "one grant's worth of debt is kept")
        let next = bucket.reserve(upTo: 1 << 20, now: t0)
        XCTAssertEqual(next.granted, 51)
        XCTAssertLessThanOrEqual(t0.duration(to: next.notBefore), .milliseconds(100), "two grants at 1 KiB/s")
    }

    func testAWaitingTransferFeelsARemovedLimitWithinARecheck() async throws {
        // Real time (the pacer sleeps on the continuous clock), with wide bounds: 30 s of debt at 1 kB/s, then the
        // limit removed while a transfer waits for its grant. It waited the whole 30 s.
        let limiter = BandwidthLimiter(bytesPerSecond: 1_000)
        for _ in 0..<600 { _ = limiter.reserve(upTo: 1 << 20, now: .now) }
        let pacer = TransferPacer(limiter: limiter, own: nil, meter: Locked(BandwidthMeter(now: .now)))
        let start = ContinuousClock.now
        let waiting = Task { try await pacer.allowance(upTo: 4096, deadlines: Deadlines(inactivity: nil, total: nil)) }
        try await Task.sleep(for: .milliseconds(50))   // no event tells that the task sleeps; it only can
        limiter.setLimit(nil)
        let granted = try await waiting.value
        XCTAssertEqual(granted, 4096, "no limit: all that was asked for")
        XCTAssertLessThan(start.duration(to: .now), .seconds(5))
    }

    /// Setting the limit it already has changes nothing: the debt stays, and waiters are not told to ask again
    /// (an app assigning the limit on each settings update forgave the debt every time, running over the limit).
    func testSettingTheSameLimitAgainKeepsTheDebt() {
        let limiter = BandwidthLimiter(bytesPerSecond: 1_000, now: t0)
        for _ in 0..<600 { _ = limiter.reserve(upTo: 1 << 20, now: t0) }
        let generation = limiter.generation
        limiter.setLimit(1_000, now: t0)
        XCTAssertEqual(limiter.generation, generation)
        let next = limiter.reserve(upTo: 1 << 20, now: t0)
        XCTAssertGreaterThan(t0.duration(to: next!.notBefore), .seconds(25), "30 s of debt at 1 kB/s is still owed")
    }

    func testASmallRateGrantsSmallPieces() {
        var bucket = TokenBucket(rate: 100, now: t0)
        XCTAssertEqual(bucket.quantum, 5)
        XCTAssertEqual(bucket.burst, 1024, "at least 1 KiB of burst")
        XCTAssertEqual(bucket.reserve(upTo: 1 << 20, now: t0).granted, 5)
    }

    func testTheLimiterWithNoLimitReservesNothing() {
        let limiter = BandwidthLimiter(bytesPerSecond: nil, now: t0)
        XCTAssertNil(limiter.reserve(upTo: 100, now: t0))
        limiter.setLimit(1000, now: t0)
        XCTAssertEqual(limiter.bytesPerSecond, 1000)
        XCTAssertEqual(limiter.reserve(upTo: 100, now: t0)?.granted, 50)
        limiter.setLimit(nil, now: t0)
        XCTAssertNil(limiter.reserve(upTo: 100, now: t0))
        limiter.setLimit(-5, now: t0)
        XCTAssertNil(limiter.bytesPerSecond, "0 or less: no limit")
    }

    // MARK: The meter

    func testTheMeterAveragesTheLastFiveSeconds() {
        var meter = BandwidthMeter(now: m0)
        XCTAssertEqual(meter.average(now: m0), 0)
        for second in 0..<10 {
            meter.record(1_000_000, now: mt(second * 1000 + 100))
            meter.record(1_000_000, now: mt(second * 1000 + 600))
        }
        // 2 MB a second, steadily: the window holds the last five seconds' worth.
        XCTAssertEqual(meter.average(now: mt(9_900)), 2_000_000, accuracy: 1)
        // Silence: the average falls as slots leave the window, to 0 after five seconds.
        XCTAssertEqual(meter.average(now: mt(12_400)), 1_000_000, accuracy: 1)
        XCTAssertEqual(meter.average(now: mt(15_000)), 0)
    }

    func testAYoungMeterAveragesOverItsOwnLifeOnly() {
        var meter = BandwidthMeter(now: m0)
        meter.record(500_000, now: mt(100))
        XCTAssertEqual(meter.average(now: mt(200)), 1_000_000, "one half-second slot so far")
        meter.record(500_000, now: mt(700))
        XCTAssertEqual(meter.average(now: mt(800)), 1_000_000)
    }

    func testAnAverageAskedAtATimeReadBeforeALaterRecordTookTheLockDoesNotTrap() {
        // `averageBandwidthUsedPerSecond` reads the clock, then takes the meter's lock; a transfer's first record,
        // half a second later in the next slot, got the lock in between: the average covered zero slots and
        // `Int(+inf)` trapped.
        var meter = BandwidthMeter(now: m0)
        meter.record(1_000, now: mt(700))
        XCTAssertEqual(meter.average(now: mt(400)), 2_000, "counted as the newest slot")
        meter.record(1_000, now: mt(300))
        XCTAssertEqual(meter.average(now: mt(800)), 4_000, "a late record counts in the newest slot too")
    }

    // MARK: Activity

    func testActivityCountsTransfersUntilTheyEndOnceAndStreamsChanges() async {
        let activity = NetworkActivity()
        var updates = activity.updates().makeAsyncIterator()
        let first = await updates.next()
        XCTAssertEqual(first, 0)
        let a = activity.begin()
        var b: NetworkActivity.Transfer? = activity.begin()
        XCTAssertEqual(activity.count, 2)
        a.end()
        a.end()
        XCTAssertEqual(activity.count, 1, "ending twice counts once")
        b = nil
        XCTAssertNil(b)
        XCTAssertEqual(activity.count, 0, "a released transfer ends")
        let newest = await updates.next()
        XCTAssertEqual(newest, 0, "a slow reader sees the newest count")
    }
}
