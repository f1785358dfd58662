/// A token bucket over bytes: `rate` bytes a second, with a short burst, as a value with the time passed in
/// (so its tests never sleep).
///
/// Transfers *reserve* what they are about to read or write (Go's `rate.Limiter.ReserveN`): the tokens are
/// taken at once, possibly running the bucket into debt, and the reservation says when its bytes may cross
/// the socket. Reservations are served in the order they were made, so transfers sharing a bucket each get
/// their turn and none starves. What a reservation did not use (the socket had fewer bytes than granted) is
/// refunded.
///
/// A grant is at most ``quantum`` bytes, a twentieth of a second's worth: a transfer never runs far ahead of
/// the rate, and a changed rate is felt within one grant.
///
/// Valid sequences: `reserve` then, after the I/O, `refund` of the unused part; `setRate` at any time.
struct TokenBucket: Sendable {
    /// Bytes per second; always at least 1.
    private(set) var rate: Int
    /// May be negative: the debt of reservations waiting for their time.
    private(set) var tokens: Double
    private var updated: ContinuousClock.Instant

    /// A tenth of a second's worth (at least 1 KiB): enough to absorb scheduling jitter without letting a
    /// transfer that was idle rush ahead. (ASIHTTPRequest throttled per second, letting a whole second's
    /// worth through at once; curl's `--limit-rate` averages over a few seconds.)
    var burst: Double { Double(max(rate / 10, 1024)) }

    /// The most one reservation is granted: a twentieth of a second's worth, at least 1 byte, at most 256 KiB
    /// (the connection's largest read).
    var quantum: Int { min(max(rate / 20, 1), 256 * 1024) }

    /// A full bucket: the first burst goes through at once.
    init(rate: Int, now: ContinuousClock.Instant) {
        self.rate = max(1, rate)
        self.updated = now
        self.tokens = 0
        self.tokens = burst
    }

    /// One reservation: how many bytes (1 up to `wanted`, at most ``quantum``) and when they may go.
    struct Reservation: Sendable, Equatable {
        var granted: Int
        var notBefore: ContinuousClock.Instant
    }

    private mutating func refill(now: ContinuousClock.Instant) {
        guard now > updated else { return }
        let elapsed = updated.duration(to: now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        tokens = min(burst, tokens + seconds * Double(rate))
        updated = now
    }

    /// Takes up to `wanted` bytes' worth (`wanted` ≥ 1). When the bucket holds fewer tokens than granted, the
    /// reservation waits for the difference at the current rate.
    mutating func reserve(upTo wanted: Int, now: ContinuousClock.Instant) -> Reservation {
        refill(now: now)
        let granted = max(1, min(wanted, quantum))
        let missing = Double(granted) - tokens
        tokens -= Double(granted)
        guard missing > 0 else { return Reservation(granted: granted, notBefore: now) }
        return Reservation(granted: granted, notBefore: now + .nanoseconds(Int64((missing / Double(rate) * 1e9).rounded(.up))))
    }

    /// Gives back what a reservation did not use.
    mutating func refund(_ bytes: Int, now: ContinuousClock.Instant) {
        guard bytes > 0 else { return }
        refill(now: now)
        tokens = min(burst, tokens + Double(bytes))
    }

    /// A new rate, from `now` on. A fuller bucket than the new burst allows is cut down to it, and debt beyond
    /// one ``quantum`` of the new rate is forgiven: repaid at the new rate, the debt of a fast rate stalled every
    /// transfer for minutes (4 MiB/s of reservations lowered to 1 KiB/s: about 200 s without a byte). The
    /// reservations that made it keep their times, so what was already granted at the old rate still goes at
    /// it, and the next grant waits at most about two quanta's time.
    mutating func setRate(_ newRate: Int, now: ContinuousClock.Instant) {
        refill(now: now)
        rate = max(1, newRate)
        tokens = min(max(tokens, -Double(quantum)), burst)
    }
}
