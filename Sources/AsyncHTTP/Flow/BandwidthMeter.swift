/// Bytes moved in both directions over the last few seconds, as a moving average (ASIHTTPRequest's
/// `+averageBandwidthUsedPerSecond`, which averaged the last five one-second measurements).
///
/// Half-second slots over a five-second window: old traffic falls out of the average half a second at a
/// time instead of a whole second at once. A value with the time passed in.
struct BandwidthMeter: Sendable {
    static let slotCount = 10
    static let slot: Duration = .milliseconds(500)
    private static let slotNanoseconds: UInt64 = 500_000_000

    /// On the request path's clock: every read and write records, and `ContinuousClock`'s instants cost calls
    /// into another module (see `MonotonicTime`).
    private let origin: MonotonicTime
    private var slots = [Int](repeating: 0, count: BandwidthMeter.slotCount)
    /// The slot number (counted from `origin`) that `slots[number % slotCount]` last held.
    private var current: Int64 = 0
    /// The slot of the first byte recorded: the average of a meter younger than its window covers only the
    /// time since then.
    private var first: Int64?

    init(now: MonotonicTime) { origin = now }

    /// The slot `now` falls in, never one before the newest slot seen: the meter is shared by tasks that read
    /// the clock before taking its lock, so a time read earlier may arrive after a later one has moved the
    /// window on (it then counts in the newest slot; a few microseconds' difference).
    private func slotNumber(_ now: MonotonicTime) -> Int64 {
        guard now > origin else { return current }
        return max(current, Int64((now.nanoseconds - origin.nanoseconds) / Self.slotNanoseconds))
    }

    /// Moves the window to `number`, emptying the slots it passed.
    private mutating func advance(to number: Int64) {
        guard number > current else { return }
        let passed = min(number - current, Int64(Self.slotCount))
        for step in 1...passed {
            slots[Int((current + step) % Int64(Self.slotCount))] = 0
        }
        current = number
    }

    mutating func record(_ bytes: Int, now: MonotonicTime) {
        guard bytes > 0 else { return }
        let number = slotNumber(now)
        advance(to: number)
        if first == nil { first = number }
        slots[Int(number % Int64(Self.slotCount))] += bytes
    }

    /// Bytes per second over the window (or over the time since the first byte, if that is shorter, counting
    /// the slot in progress as a whole one); 0 when nothing moved in the window.
    mutating func average(now: MonotonicTime) -> Int {
        let number = slotNumber(now)
        advance(to: number)
        guard let first else { return 0 }
        // At least one slot: `first` is never after `number` (slot numbers never go back), and a zero here
        // divided into +inf and trapped in `Int(_:)`.
        let slotsCovered = max(1, min(Int64(Self.slotCount), number - first + 1))
        let total = slots.reduce(0, +)
        return Int(Double(total) / (Double(slotsCovered) * 0.5))
    }
}
