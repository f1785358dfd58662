/// The deadlines one request runs under: an inactivity timeout between bytes (ASIHTTPRequest's
/// `timeOutSeconds`) and an optional total deadline.
struct Deadlines: Sendable {
    let inactivity: Duration?
    let total: MonotonicTime?
    /// ``inactivity`` as the clock counts, worked out once: `next` runs before every wait.
    private let inactivityNanoseconds: UInt64?

    init(inactivity: Duration?, total: MonotonicTime?) {
        self.inactivity = inactivity
        self.total = total
        inactivityNanoseconds = inactivity?.wholeNanoseconds
    }

    /// The deadline for the next wait, and which phase a timeout should name.
    func next(_ phase: HTTPClientError.TimeoutPhase) -> (MonotonicTime?, HTTPClientError.TimeoutPhase) {
        guard let inactivityNanoseconds else { return (total, .total) }
        let idle = MonotonicTime.now.adding(nanoseconds: inactivityNanoseconds)
        if let total, total <= idle { return (total, .total) }
        return (idle, phase)
    }
}

/// The earlier of a deadline and an optional one.
func earliest(_ a: MonotonicTime, _ b: MonotonicTime?) -> MonotonicTime {
    guard let b else { return a }
    return min(a, b)
}
