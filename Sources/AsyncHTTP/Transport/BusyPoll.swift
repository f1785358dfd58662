import Synchronization

/// Whether a connection polls its socket for the response head before parking on the event loop, and for how
/// long (``HTTPClient/Configuration/busyPollLimit``). Sans-IO: the caller reads the clock, counts the transfers
/// in flight and polls; this decides.
///
/// Parking costs two thread wake-ups per response: the event loop thread's, when the head arrives, then a
/// cooperative-pool thread's, to run the task again. On a loopback or LAN server that answers within tens of
/// microseconds those wake-ups are most of a request's latency (`futex` and `epoll_wait` alone were a third of a
/// `tls-seq` request's CPU in its profile), and a task that polls the socket for that long instead gets the
/// answer without either. Polling holds a cooperative thread, so it is only worth it, and only done, when:
/// - the limit is not zero;
/// - this is the only transfer in flight in the process (another would need the thread);
/// - the process may run on at least two processors (on one, the poll would keep the server or the rest of the
///   process from running);
/// - this connection's recent heads arrived within the limit. The estimate is a moving average of the
///   observed waits, halving the weight of each older one, so one slow answer stops polling for a few
///   requests and a server that is fast again earns it back (waits that parked are observed too, but only
///   those of a transfer alone in flight: with others, a wait measures the queue behind them). It starts
///   at the time the TCP connection took to open (name lookup and connect, through any proxy): a distant
///   server's round trip then keeps its first requests from polling in vain. A TLS handshake's time is left
///   out: it measures the server's key exchange and signature, which the requests do not repeat.
struct BusyPollPolicy: Sendable {
    /// The longest poll in nanoseconds; 0 turns polling off.
    let limit: UInt64
    /// How long this connection's recent heads took to arrive once the request was out, in nanoseconds: half
    /// the last observation plus half the estimate before it.
    private(set) var estimate: UInt64

    /// - Parameters:
    ///   - limit: the longest poll; zero or less turns polling off.
    ///   - opening: how long the TCP connection took to open (without any TLS handshake), in nanoseconds: the
    ///     first estimate.
    init(limit: Duration, opening: UInt64 = 0) {
        self.limit = limit > .zero ? limit.wholeNanoseconds : 0
        estimate = opening
    }

    /// How long to poll before the next head wait parks, or nil to park at once.
    func budget(transfersInFlight: Int, processors: Int) -> UInt64? {
        guard limit > 0, transfersInFlight <= 1, processors >= 2, estimate <= limit else { return nil }
        return limit
    }

    /// A head wait ended after `nanoseconds`, polled or parked.
    mutating func observe(wait nanoseconds: UInt64) {
        estimate = estimate / 2 + nanoseconds / 2
    }
}

/// How often a client's connections polled for a head and how often the head came while they did (for tests
/// and diagnostics: the path is otherwise invisible).
final class BusyPollCounters: Sendable {
    private let pollCount = Atomic<Int>(0)
    private let hitCount = Atomic<Int>(0)

    var polls: Int { pollCount.load(ordering: .relaxed) }
    var hits: Int { hitCount.load(ordering: .relaxed) }
    func countPoll() { pollCount.add(1, ordering: .relaxed) }
    func countHit() { hitCount.add(1, ordering: .relaxed) }
}
