import Synchronization

/// The count of transfers in flight (ASIHTTPRequest's `+isNetworkInUse`), readable at any time and watchable
/// as an `AsyncStream` of counts.
///
/// A transfer is one exchange on the wire: it begins when the transport takes the request and ends when its
/// response body has been read to the end, failed, or been dropped. A redirect's hops and an authentication
/// round are exchanges of their own, one after the other.
final class NetworkActivity: Sendable {
    private struct State {
        var count = 0
        var watchers: [Int: AsyncStream<Int>.Continuation] = [:]
        var nextWatcher = 0
    }

    private let state = Locked(State())

    var count: Int { state.withLock { $0.count } }

    /// Counts one transfer until the returned token ends (``Transfer/end()``, or when it is released).
    func begin() -> Transfer {
        change(by: 1)
        return Transfer(activity: self)
    }

    fileprivate func change(by delta: Int) {
        let (count, watchers) = state.withLock { state in
            state.count += delta
            return (state.count, state.watchers.isEmpty ? [] : Array(state.watchers.values))
        }
        for watcher in watchers { watcher.yield(count) }
    }

    /// The count now, then every change; ends when the consumer stops listening. Keeps only the newest count
    /// for a slow consumer.
    func updates() -> AsyncStream<Int> {
        let (stream, continuation) = AsyncStream<Int>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            defer { state.nextWatcher += 1 }
            state.watchers[state.nextWatcher] = continuation
            continuation.yield(state.count)
            return state.nextWatcher
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
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
