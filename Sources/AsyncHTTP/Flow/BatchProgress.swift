/// A batch's progress, summed over its members (ASINetworkQueue's upload and download progress delegates).
public struct HTTPBatchProgress: Sendable, Hashable {
    /// How the batch's ``fractionCompleted`` is worked out (ASINetworkQueue's `showAccurateProgress`).
    public enum Mode: Sendable, Hashable {
        /// Each request is one unit, done when it ends (ASI's default).
        case simple
        /// By bytes: request body lengths and response `Content-Length`s, the sizes found with a `HEAD` request
        /// before each `GET` when `fetchesSizes` is true (ASI's accurate progress: the `HEAD`s are queued as
        /// members are added, ahead of the members waiting, and each member starts after its own). A response of
        /// unknown length counts as much as it has received.
        case accurate(fetchesSizes: Bool)
    }

    /// How many requests the batch holds so far.
    public var requestCount = 0
    /// Requests that ended, successfully or not.
    public var requestsEnded = 0
    /// Request body bytes sent, summed over the members.
    public var bytesSent = 0
    /// The members' request body lengths, summed over those that are known.
    public var bytesExpectedToSend = 0
    /// Response body bytes received, summed over the members.
    public var bytesReceived = 0
    /// The members' response lengths (`Content-Length`, or a `HEAD`'s in accurate mode), summed over those known.
    public var bytesExpectedToReceive = 0
    /// 0…1: by request (simple) or by bytes (accurate).
    public var fractionCompleted: Double = 0
    /// Counts the batch's progress changes: each snapshot has a higher number than the ones before it. Snapshots
    /// reach ``HTTPBatchConfiguration/onEvent`` from the members' tasks, outside the batch's lock, so two of them
    /// may arrive out of order: keep the one with the highest number (as a progress bar drawn from them should).
    public var sequenceNumber = 0

    /// An empty batch's progress: nothing counted yet.
    public init() {}
}

/// Sums members' ``HTTPTransferProgress`` into ``HTTPBatchProgress``. A value; the batch keeps it behind its lock.
///
/// Running sums: each event takes the member's old share out of the totals and puts its new one in, so an event
/// costs the same in a batch of five members as in one of fifty thousand (the totals were summed again over every
/// member ever added, under the batch's lock, on every event). A member that ended is forgotten, its share kept.
struct BatchProgressAggregator: Sendable {
    let mode: HTTPBatchProgress.Mode
    /// The members that have not ended.
    private var members: [Int: Member] = [:]
    private var requestCount = 0
    private var requestsEnded = 0
    private var bytesSent = ByteSum()
    private var bytesExpectedToSend = ByteSum()
    private var bytesReceived = ByteSum()
    private var bytesExpectedToReceive = ByteSum()
    private(set) var value = HTTPBatchProgress()

    private struct Member {
        var progress = HTTPTransferProgress()
        /// A size found by `HEAD` before the request ran.
        var knownDownload: Int?
        var ended = false

        /// What the member adds to each total (never negative).
        var share: (sent: Int, expectedSend: Int, received: Int, expectedReceive: Int) {
            let sent = max(0, progress.bytesSent)
            let received = max(0, progress.bytesReceived)
            let expected = max(0, progress.bytesExpectedToReceive ?? knownDownload ?? received)
            // An ended member is complete whatever its total said (a failed one too: it will move no more bytes).
            return (sent, max(0, progress.bytesExpectedToSend ?? sent, sent), received,
                    ended ? received : max(expected, received))
        }
    }

    init(mode: HTTPBatchProgress.Mode) { self.mode = mode }

    mutating func add(_ id: Int, uploadTotal: Int?) {
        let member = Member(progress: HTTPTransferProgress(bytesExpectedToSend: uploadTotal))
        if let old = members.updateValue(member, forKey: id) { take(old) } else { requestCount += 1 }
        put(member)
        refresh()
    }

    mutating func sizeFound(_ id: Int, download: Int?) {
        change(id) { $0.knownDownload = download }
    }

    /// A member's progress. Its counts never go down: a member sent again (a retry by its handler, which resends
    /// ``HTTPBatchMember/request`` with the batch's progress handler) counts from 0 again, and holds at its highest
    /// point until the resend passes it, as ``HTTPTransferProgress`` does for a resent request.
    mutating func update(_ id: Int, _ progress: HTTPTransferProgress) {
        change(id) { member in
            let before = member.progress
            member.progress = progress
            member.progress.bytesSent = max(before.bytesSent, progress.bytesSent)
            member.progress.bytesReceived = max(before.bytesReceived, progress.bytesReceived)
        }
    }

    mutating func ended(_ id: Int) {
        guard var member = members.removeValue(forKey: id) else { return }
        take(member)
        member.ended = true
        put(member)
        requestsEnded += 1
        refresh()
    }

    private mutating func change(_ id: Int, _ body: (inout Member) -> Void) {
        guard var member = members[id] else { return }
        take(member)
        body(&member)
        members[id] = member
        put(member)
        refresh()
    }

    private mutating func put(_ member: Member) {
        let share = member.share
        bytesSent.add(share.sent)
        bytesExpectedToSend.add(share.expectedSend)
        bytesReceived.add(share.received)
        bytesExpectedToReceive.add(share.expectedReceive)
    }

    private mutating func take(_ member: Member) {
        let share = member.share
        bytesSent.subtract(share.sent)
        bytesExpectedToSend.subtract(share.expectedSend)
        bytesReceived.subtract(share.received)
        bytesExpectedToReceive.subtract(share.expectedReceive)
    }

    private mutating func refresh() {
        var value = HTTPBatchProgress()
        value.sequenceNumber = self.value.sequenceNumber &+ 1
        value.requestCount = requestCount
        value.requestsEnded = requestsEnded
        // Saturating: the totals come from the servers' `Content-Length`s, which may be anything up to `Int.max`.
        value.bytesSent = bytesSent.saturated
        value.bytesExpectedToSend = bytesExpectedToSend.saturated
        value.bytesReceived = bytesReceived.saturated
        value.bytesExpectedToReceive = bytesExpectedToReceive.saturated
        switch mode {
        case .simple:
            value.fractionCompleted = value.requestCount == 0 ? 0 : Double(value.requestsEnded) / Double(value.requestCount)
        case .accurate:
            let expected = saturatingSum(value.bytesExpectedToSend, value.bytesExpectedToReceive)
            let done = saturatingSum(value.bytesSent, value.bytesReceived)
            if value.requestCount > 0, value.requestsEnded == value.requestCount {
                value.fractionCompleted = 1
            } else {
                value.fractionCompleted = expected == 0 ? 0 : min(1, Double(done) / Double(expected))
            }
        }
        self.value = value
    }
}

/// A running sum of byte counts (each 0…`Int.max`) that may pass `Int.max` and be taken from again exactly:
/// 128 bits in two words, read saturated at `Int.max`.
struct ByteSum: Sendable, Hashable {
    private var high: UInt64 = 0
    private var low: UInt64 = 0

    mutating func add(_ bytes: Int) {
        let (sum, carry) = low.addingReportingOverflow(UInt64(max(0, bytes)))
        low = sum
        if carry { high += 1 }
    }

    /// Takes back what ``add(_:)`` put in (never more).
    mutating func subtract(_ bytes: Int) {
        let (difference, borrow) = low.subtractingReportingOverflow(UInt64(max(0, bytes)))
        low = difference
        if borrow { high -= 1 }
    }

    var saturated: Int { high > 0 || low > UInt64(Int.max) ? .max : Int(low) }
}

/// `a + b`, or `Int.max` where that would overflow (both are byte counts, never negative).
func saturatingSum(_ a: Int, _ b: Int) -> Int {
    let (sum, overflow) = a.addingReportingOverflow(b)
    return overflow ? .max : sum
}
