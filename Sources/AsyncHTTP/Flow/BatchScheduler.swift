/// Which members of a batch run when: FIFO, at most `limit` at once; after a failure (when the batch cancels
/// all on failure) or a cancel, nothing more starts and the waiting members are dropped. A value returning
/// actions, tested without requests or tasks.
///
/// Size fetches (the `HEAD` requests of ``HTTPBatchProgress/Mode/accurate(fetchesSizes:)``) share the limit
/// and go ahead of every waiting member, as ASINetworkQueue queued them first, and a member starts only after
/// its own: the sizes are known before the downloads begin, so the batch's fraction does not fall as members
/// start. (FIFO: a member whose size is still being fetched holds up those behind it.)
///
/// Valid sequences: any mix of `add`, `ended` (for a started member, once), `sizeFetched` (for a started
/// fetch, once), `finishAdding` and `cancelAll`; once `.end` has been returned, nothing more.
struct BatchScheduler: Sendable {
    enum Action: Equatable, Sendable {
        /// Start this member now.
        case start(Int)
        /// Fetch this member's size now (its `HEAD`); answer with `sizeFetched`.
        case fetchSize(Int)
        /// Cancel every running member (they end with a cancellation error).
        case cancelRunning
        /// This member will never run: report it cancelled.
        case drop(Int)
        /// Nothing runs or waits, and no more will be added: the batch is over.
        case end
    }

    let limit: Int
    let cancelsAllOnFailure: Bool
    private var waiting: [Int] = []
    private var waitingStart = 0
    private(set) var running: Set<Int> = []
    /// Size fetches queued (from `sizesStart` on) and running.
    private var sizes: [Int] = []
    private var sizesStart = 0
    private(set) var fetching: Set<Int> = []
    /// Members whose size fetch is queued or running: each waits for its own (ASIHTTPRequest made each `GET`
    /// depend on its `HEAD`).
    private var sizePending: Set<Int> = []
    private var addingFinished = false
    private(set) var isCancelled = false
    private var ended = false

    init(limit: Int, cancelsAllOnFailure: Bool) {
        self.limit = max(1, limit)
        self.cancelsAllOnFailure = cancelsAllOnFailure
    }

    var waitingCount: Int { waiting.count - waitingStart }

    /// A new member: it waits for a slot. After `finishAdding` or a cancel it is dropped, as ``HTTPBatch/add(_:)``
    /// documents (it used to start while earlier members still ran, and once the batch had ended its result
    /// came after `results` had finished). `fetchesSize`: its size is fetched first, ahead of the waiting members,
    /// and it starts after that.
    mutating func add(_ id: Int, fetchesSize: Bool = false) -> [Action] {
        guard !ended, !addingFinished, !isCancelled else { return [.drop(id)] }
        if fetchesSize {
            sizes.append(id)
            sizePending.insert(id)
        }
        waiting.append(id)
        return startWhatFits()
    }

    /// A size fetch ended, with a size or not (it is never a member's failure).
    mutating func sizeFetched(_ id: Int) -> [Action] {
        guard fetching.remove(id) != nil else { return [] }
        sizePending.remove(id)
        return startWhatFits() + endIfDone()
    }

    /// A started member ended, well or not.
    mutating func ended(_ id: Int, failed: Bool) -> [Action] {
        guard running.remove(id) != nil else { return [] }
        var actions: [Action] = []
        if failed, cancelsAllOnFailure, !isCancelled { actions += cancel() }
        return actions + startWhatFits() + endIfDone()
    }

    /// No more members will be added.
    mutating func finishAdding() -> [Action] {
        addingFinished = true
        return endIfDone()
    }

    /// Stop: drop the waiting members and cancel the running ones.
    mutating func cancelAll() -> [Action] {
        guard !isCancelled, !ended else { return [] }
        return cancel() + endIfDone()
    }

    private mutating func cancel() -> [Action] {
        isCancelled = true
        addingFinished = true
        var actions: [Action] = waiting[waitingStart...].map { .drop($0) }
        waiting = []
        waitingStart = 0
        sizes = []
        sizesStart = 0
        sizePending = []
        if !running.isEmpty || !fetching.isEmpty { actions.insert(.cancelRunning, at: 0) }
        return actions
    }

    private mutating func startWhatFits() -> [Action] {
        var actions: [Action] = []
        while !isCancelled, running.count + fetching.count < limit, sizesStart < sizes.count {
            let id = sizes[sizesStart]
            sizesStart += 1
            fetching.insert(id)
            actions.append(.fetchSize(id))
        }
        if sizesStart == sizes.count {
            sizes = []
            sizesStart = 0
        }
        while !isCancelled, running.count + fetching.count < limit, waitingStart < waiting.count,
              !sizePending.contains(waiting[waitingStart]) {
            let id = waiting[waitingStart]
            waitingStart += 1
            running.insert(id)
            actions.append(.start(id))
        }
        if waitingStart > 64, waitingStart * 2 > waiting.count {
            waiting.removeFirst(waitingStart)
            waitingStart = 0
        }
        return actions
    }

    private mutating func endIfDone() -> [Action] {
        guard !ended, addingFinished, running.isEmpty, fetching.isEmpty, waitingStart >= waiting.count else { return [] }
        ended = true
        return [.end]
    }
}
