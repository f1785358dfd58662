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

/// The slowest a transfer may move its bytes before it is given up: fewer than ``bytesPerSecond`` on average over
/// ``duration`` fails the request with `HTTPClientError.Code.timeout`, phase
/// `HTTPClientError.TimeoutPhase.lowSpeed`. curl's `--speed-limit` and `--speed-time`
/// (`CURLOPT_LOW_SPEED_LIMIT`, `CURLOPT_LOW_SPEED_TIME`).
///
/// The inactivity timeout (``HTTPClient/Configuration/inactivityTimeout``) ends a transfer only when nothing at
/// all arrives; a server that trickles one byte a second keeps it alive for ever. This limit does not:
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// // Give up when less than 1 KB/s moved over 30 s.
/// configuration.lowSpeedLimit = try LowSpeedLimit(bytesPerSecond: 1_000, duration: .seconds(30))
///
/// var request = HTTPClientRequest(url: "https://example.com/big.iso")
/// request.lowSpeedLimit = try LowSpeedLimit(bytesPerSecond: 10_000, duration: .seconds(10))  // this one is stricter
/// ```
///
/// What counts: the bytes the connection moves for the request in either direction (head and body, sent and
/// received, as they cross the socket), over the time it spends waiting for the socket. A window starts with the
/// request's first wait; it ends when ``bytesPerSecond`` × ``duration`` bytes have moved (a new one starts) or when
/// the waits in it add up to ``duration`` with fewer, which fails the request. A wait for a silent server ends
/// then too, so a transfer that stalls completely fails after ``duration``.
///
/// What does not count, as a paused transfer does not in curl: time the response body waits for the caller to read
/// it, time the request body waits for its stream to produce bytes, and time the client's own bandwidth limit
/// (``HTTPClient/Configuration/maxBandwidthPerSecond``, ``HTTPClientRequest/maxBandwidthPerSecond``) holds the
/// transfer back. Unlike curl's, a transfer throttled below the limit by its own client does not fail: the
/// client's limit is shared by all its transfers, and many of them at once would each fall below it.
///
/// Each attempt of the request (a retry, a redirect's next request) starts over. A timeout retry
/// (``HTTPClient/Configuration/retriesOnTimeout``) applies to this timeout as to the inactivity timeout.
public struct LowSpeedLimit: Sendable, Hashable, CustomStringConvertible {
    /// The lowest average rate, in bytes per second.
    public let bytesPerSecond: Int
    /// How long the rate may stay below ``bytesPerSecond`` before the transfer fails.
    public let duration: Duration
    /// ``duration`` on the clock the waits use.
    let windowNanoseconds: UInt64
    /// The bytes one window must move: ``bytesPerSecond`` × ``duration``, rounded up, at most `Int.max`.
    let bytesPerWindow: Int

    /// A limit of `bytesPerSecond` over `duration`. 30 s: curl's `--speed-time` when only `--speed-limit` is given.
    ///
    /// - Throws: `HTTPClientError.Code.invalidConfiguration` when `bytesPerSecond` is not positive or `duration`
    ///   is shorter than a nanosecond.
    public init(bytesPerSecond: Int, duration: Duration = .seconds(30)) throws(HTTPClientError) {
        guard bytesPerSecond > 0 else {
            throw HTTPClientError(.invalidConfiguration, "LowSpeedLimit.bytesPerSecond is \(bytesPerSecond); it must be positive")
        }
        let nanoseconds = duration.wholeNanoseconds
        guard nanoseconds > 0 else {
            throw HTTPClientError(.invalidConfiguration,
                                  "LowSpeedLimit.duration is \(duration); it must be positive (at least a nanosecond)")
        }
        self.bytesPerSecond = bytesPerSecond
        self.duration = duration
        windowNanoseconds = nanoseconds
        let bytes = (Double(bytesPerSecond) * Double(nanoseconds) / 1e9).rounded(.up)
        bytesPerWindow = bytes >= 9.2e18 ? .max : max(1, Int(bytes))
    }

    /// "1000 bytes/s over 30 s".
    public var description: String { "\(bytesPerSecond) bytes/s over \(Self.seconds(duration))" }

    /// The error of a transfer that moved too few bytes.
    var tooSlow: HTTPClientError {
        .timeout(.lowSpeed, "operation too slow: less than \(bytesPerSecond) bytes/s transferred over the last \(Self.seconds(duration))")
    }

    /// "30 s", "1.5 s".
    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        guard attoseconds != 0 else { return "\(seconds) s" }
        return "\(Double(seconds) + Double(attoseconds) / 1e18) s"
    }
}

/// The current window of a ``LowSpeedLimit`` on one attempt's connection: the bytes moved when it began and the
/// time spent waiting since. Sans-IO: the byte count and the times are parameters. The connection asks it before
/// each wait (``beforeWait(bytesMoved:)``) and tells it how long the wait lasted (``waited(nanoseconds:)``).
struct LowSpeedWatch {
    let limit: LowSpeedLimit
    private var started = false
    private var bytesAtStart = 0
    private var waitedInWindow: UInt64 = 0

    init(_ limit: LowSpeedLimit) {
        self.limit = limit
    }

    /// Before a wait, with the connection's count of bytes moved for this request: a window that has moved its
    /// bytes gives way to a new one; a window whose waits reached the duration with fewer fails the transfer.
    /// Returns how long this wait may last, in nanoseconds, before the window must be looked at again.
    mutating func beforeWait(bytesMoved: Int) throws(HTTPClientError) -> UInt64 {
        if !started || bytesMoved < bytesAtStart || bytesMoved - bytesAtStart >= limit.bytesPerWindow {
            started = true
            bytesAtStart = bytesMoved
            waitedInWindow = 0
        } else if waitedInWindow >= limit.windowNanoseconds {
            throw limit.tooSlow
        }
        return limit.windowNanoseconds - waitedInWindow
    }

    /// A wait lasted `nanoseconds`.
    mutating func waited(nanoseconds: UInt64) {
        let (sum, overflow) = waitedInWindow.addingReportingOverflow(nanoseconds)
        waitedInWindow = overflow ? .max : sum
    }
}

/// The total deadline of one ``HTTPClient/send(_:)``, fixed when the send begins (from the request's
/// ``HTTPClientRequest/timeout`` or the client's ``HTTPClient/Configuration/totalTimeout``), so that every redirect
/// hop and authentication round of the send counts against it: each round trip used to start the time again.
package enum SendDeadlineOption: HTTPRequestOption {
    package static let defaultValue: MonotonicTime? = nil

    /// The deadline `timeout` from now (for a step that starts a send's time again, as `ahttp -Z --retry` does).
    package static func after(_ timeout: Duration) -> MonotonicTime { MonotonicTime.now + timeout }
}
