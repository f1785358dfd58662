/// The deadlines one request runs under: an inactivity timeout between bytes (ASIHTTPRequest's
/// `timeOutSeconds`) and an optional total deadline.
package struct Deadlines: Sendable {
    package var inactivity: Duration?
    package var total: ContinuousClock.Instant?

    package init(inactivity: Duration?, total: ContinuousClock.Instant?) {
        self.inactivity = inactivity
        self.total = total
    }

    /// The deadline for the next wait, and which phase a timeout should name.
    @inlinable
    package func next(_ phase: HTTPClientError.TimeoutPhase) -> (ContinuousClock.Instant?, HTTPClientError.TimeoutPhase) {
        guard let inactivity else { return (total, .total) }
        let idle = ContinuousClock.now + inactivity
        if let total, total <= idle { return (total, .total) }
        return (idle, phase)
    }
}

/// The earlier of a deadline and an optional one.
@inlinable
package func earliest(_ a: ContinuousClock.Instant, _ b: ContinuousClock.Instant?) -> ContinuousClock.Instant {
    guard let b else { return a }
    return min(a, b)
}
