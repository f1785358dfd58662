import Synchronization

/// A ``TokenBucket`` shared by transfers running on several tasks, with its limit changeable at any time.
///
/// With no limit it holds no bucket, and asking costs one atomic load.
final class BandwidthLimiter: Sendable {
    /// Bytes per second; 0 for no limit. Read without the lock on every I/O to skip the bucket.
    private let limit = Atomic<Int>(0)
    private let bucket = Locked<TokenBucket?>(nil)
    /// Counts the changes of the limit: a transfer waiting for a grant made under an older limit asks again.
    private let changes = Atomic<Int>(0)

    init(bytesPerSecond: Int?, now: ContinuousClock.Instant = .now) {
        setLimit(bytesPerSecond, now: now)
    }

    /// The limit in bytes per second, nil for none.
    var bytesPerSecond: Int? {
        let value = limit.load(ordering: .relaxed)
        return value > 0 ? value : nil
    }

    var isLimited: Bool { limit.load(ordering: .relaxed) > 0 }

    /// A new limit, felt by running transfers from their next grant on (nil or ≤ 0: none).
    func setLimit(_ bytesPerSecond: Int?, now: ContinuousClock.Instant = .now) {
        let value = max(0, bytesPerSecond ?? 0)
        bucket.withLock { bucket in
            // The same limit again changes nothing: forgiving the debt and waking the waiters on every assignment
            // (an app that sets the limit on each settings update) let transfers run several times over it.
            guard value != limit.load(ordering: .relaxed) else { return }
            if value == 0 {
                bucket = nil
            } else if bucket == nil {
                bucket = TokenBucket(rate: value, now: now)
            } else {
                bucket!.setRate(value, now: now)
            }
            limit.store(value, ordering: .relaxed)
            changes.add(1, ordering: .releasing)
        }
    }

    /// Changes so far (``setLimit(_:now:)``); read before reserving, compared while waiting.
    var generation: Int { changes.load(ordering: .acquiring) }

    /// A reservation, or nil when there is no limit.
    func reserve(upTo wanted: Int, now: ContinuousClock.Instant) -> TokenBucket.Reservation? {
        guard isLimited else { return nil }
        return bucket.withLock { $0?.reserve(upTo: wanted, now: now) }
    }

    func refund(_ bytes: Int, now: ContinuousClock.Instant) {
        guard bytes > 0 else { return }
        bucket.withLock { $0?.refund(bytes, now: now) }
    }
}

/// What a client keeps about the traffic of all its requests: the shared bandwidth limit (ASIHTTPRequest's
/// `+setMaxBandwidthPerSecond:`), the moving average of bytes moved (`+averageBandwidthUsedPerSecond`), and the
/// transfers in flight (`+isNetworkInUse`).
final class NetworkFlow: Sendable {
    let limiter: BandwidthLimiter
    let activity = NetworkActivity()
    private let meter: Locked<BandwidthMeter>
    /// The pacer of requests without a limit of their own, made once.
    let sharedPacer: TransferPacer

    init(bytesPerSecond: Int?, now: ContinuousClock.Instant = .now) {
        limiter = BandwidthLimiter(bytesPerSecond: bytesPerSecond, now: now)
        meter = Locked(BandwidthMeter(now: .now))
        sharedPacer = TransferPacer(limiter: limiter, own: nil, meter: meter)
    }

    /// The pacer for a request's bytes: the client's limit, and the request's own if it has one.
    func pacer(requestLimit: Int?) -> TransferPacer {
        guard let requestLimit, requestLimit > 0 else { return sharedPacer }
        return TransferPacer(limiter: limiter, own: BandwidthLimiter(bytesPerSecond: requestLimit), meter: meter)
    }

    /// Bytes per second over the last five seconds, both directions.
    func averageBytesPerSecond(now: MonotonicTime = .now) -> Int {
        meter.withLock { $0.average(now: now) }
    }
}

/// Paces the bytes of one request (each attempt's connection consults it) against the client's limit and the
/// request's own, and counts them into the client's meter.
///
/// The connection asks for an allowance before each read or write and reports what it moved; reads are paced
/// by not reading, so a throttled download leaves its bytes in the kernel and TCP's window pushes back on the
/// server (no unread data is buffered here).
final class TransferPacer: Sendable {
    private let limiter: BandwidthLimiter
    private let own: BandwidthLimiter?
    private let meter: Locked<BandwidthMeter>

    init(limiter: BandwidthLimiter, own: BandwidthLimiter?, meter: Locked<BandwidthMeter>) {
        self.limiter = limiter
        self.own = own
        self.meter = meter
    }

    /// Whether any limit applies now; when none does, the connection keeps its unpaced paths (`sendmsg`
    /// batches, 256 KiB reads) and only reports what it moved.
    var isLimited: Bool { limiter.isLimited || own?.isLimited == true }

    /// How many of `wanted` bytes may cross the socket now (at least 1), after waiting for their turn.
    /// Waits no longer than the total deadline; a cancelled task stops waiting at once. A limit changed while it
    /// waits (raised, removed, lowered) is felt within ``recheckInterval``: the grant is given back and asked for
    /// again under the new limit, instead of waiting out a time worked out at the old rate.
    func allowance(upTo wanted: Int, deadlines: Deadlines) async throws(HTTPClientError) -> Int {
        // Bounded: each new round follows a change of the limit; after 8 (a limit changed continuously) the
        // last grant is waited out whatever happens.
        for _ in 0..<8 {
            if let granted = try await reserveAndWait(upTo: wanted, deadlines: deadlines, recheck: true) { return granted }
        }
        return try await reserveAndWait(upTo: wanted, deadlines: deadlines, recheck: false) ?? 1
    }

    /// The longest a waiting transfer sleeps before looking at the limit again: 250 ms, a quarter of curl's
    /// one-second meter.
    static let recheckInterval: Duration = .milliseconds(250)

    /// One reservation and the wait for it; nil when the limit changed meanwhile (`recheck`) and the grant was
    /// given back.
    private func reserveAndWait(
        upTo wanted: Int, deadlines: Deadlines, recheck: Bool
    ) async throws(HTTPClientError) -> Int? {
        let generations = (limiter.generation, own?.generation)
        let now = ContinuousClock.now
        var granted = wanted
        var notBefore = now
        var ownGranted = 0
        if let own, let reservation = own.reserve(upTo: granted, now: now) {
            granted = reservation.granted
            ownGranted = reservation.granted
            notBefore = reservation.notBefore
        }
        var sharedGranted = 0
        if let reservation = limiter.reserve(upTo: granted, now: now) {
            if ownGranted > 0 { own?.refund(ownGranted - reservation.granted, now: now) }
            granted = reservation.granted
            sharedGranted = granted
            if ownGranted > 0 { ownGranted = granted }
            notBefore = max(notBefore, reservation.notBefore)
        }
        guard notBefore > now else { return granted }
        do {
            // The total deadline is on the request path's clock, the buckets on `ContinuousClock`: compared as waits.
            if let total = deadlines.total, MonotonicTime.now.duration(to: total) < ContinuousClock.now.duration(to: notBefore) {
                try await total.sleepUntil()
                throw HTTPClientError.timeout(.total, "the total deadline passed while the transfer was throttled")
            }
            // In steps, each ending at `notBefore` or a recheck: a loop that ends as time passes.
            var limitChanged = false
            while !limitChanged {
                let step = recheck ? min(notBefore, ContinuousClock.now + Self.recheckInterval) : notBefore
                try await Task.sleep(until: step, clock: .continuous)
                if step >= notBefore { break }
                limitChanged = limiter.generation != generations.0 || own?.generation != generations.1
            }
            if limitChanged {
                let now = ContinuousClock.now
                own?.refund(ownGranted, now: now)
                limiter.refund(sharedGranted, now: now)
                return nil
            }
        } catch {
            let now = ContinuousClock.now
            own?.refund(ownGranted, now: now)
            limiter.refund(sharedGranted, now: now)
            if let error = error as? HTTPClientError { throw error }
            throw .cancelled
        }
        return granted
    }

    /// Gives back `bytes` of a grant that will not be used (the connection's lease ended, or it closed).
    func refund(_ bytes: Int) {
        guard bytes > 0 else { return }
        let now = ContinuousClock.now
        own?.refund(bytes, now: now)
        limiter.refund(bytes, now: now)
    }

    /// Bytes that crossed the socket, paced or not: counted for the average.
    func record(_ moved: Int) {
        guard moved > 0 else { return }
        let now = MonotonicTime.now
        meter.withLock { $0.record(moved, now: now) }
    }
}
