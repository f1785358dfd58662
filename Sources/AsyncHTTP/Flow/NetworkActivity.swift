import Synchronization

/// The count of transfers in flight (ASIHTTPRequest's `+isNetworkInUse`), readable at any time and watchable
/// as an `AsyncStream` of counts.
///
/// A transfer is one exchange on the wire: it begins when the transport takes the request and ends when its
/// response body has been read to the end, failed, or been dropped. A redirect's hops and an authentication
/// round are exchanges of their own, one after the other.
final class NetworkActivity: Sendable {
    private struct State {
        var watchers: [Int: AsyncStream<Int>.Continuation] = [:]
        var nextWatcher = 0
    }

    private let state = Locked(State())
    /// The count, outside the lock: every request changes it twice, and usually nobody watches. A change adds
    /// first and then looks for watchers; a watcher registers first and then reads the count (all sequentially
    /// consistent), so one of the two always sees the other and no change goes unreported.
    private let current = Atomic<Int>(0)
    private let watching = Atomic<Int>(0)

    var count: Int { current.load(ordering: .sequentiallyConsistent) }

    /// Transfers in flight in the whole process, every client's: a connection busy-polls for a response head
    /// only while its own is the only one (``BusyPollPolicy``).
    static var inProcess: Int { processWide.load(ordering: .relaxed) }
    private static let processWide = Atomic<Int>(0)

    /// Counts one transfer until the returned token ends (``Transfer/end()``, or when it is released).
    func begin() -> Transfer {
        change(by: 1)
        return Transfer(activity: self)
    }

    fileprivate func change(by delta: Int) {
        Self.processWide.add(delta, ordering: .relaxed)
        current.add(delta, ordering: .sequentiallyConsistent)
        guard watching.load(ordering: .sequentiallyConsistent) > 0 else { return }
        // Under the lock, the count as it is now: the last to take the lock reports the latest count.
        state.withLock { state in
            let count = current.load(ordering: .sequentiallyConsistent)
            for watcher in state.watchers.values { watcher.yield(count) }
        }
    }

    /// The count now, then every change; ends when the consumer stops listening. Keeps only the newest count
    /// for a slow consumer.
    func updates() -> AsyncStream<Int> {
        let (stream, continuation) = AsyncStream<Int>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            defer { state.nextWatcher += 1 }
            state.watchers[state.nextWatcher] = continuation
            watching.add(1, ordering: .sequentiallyConsistent)
            continuation.yield(current.load(ordering: .sequentiallyConsistent))
            return state.nextWatcher
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            state.withLock { state in
                if state.watchers.removeValue(forKey: id) != nil { watching.subtract(1, ordering: .sequentiallyConsistent) }
            }
        }
        return stream
    }

    /// One transfer in flight; ends once, by ``end()`` or on release, whichever comes first.
    final class Transfer: Sendable {
        private let activity: NetworkActivity
        private let ended = Atomic<Bool>(false)

        fileprivate init(activity: NetworkActivity) { self.activity = activity }

        func end() {
            if !ended.exchange(true, ordering: .acquiringAndReleasing) { activity.change(by: -1) }
        }

        deinit { end() }
    }
}
