/// A batch's progress, summed over its members (ASINetworkQueue's upload and download progress delegates).
public struct HTTPBatchProgress: Sendable, Hashable {
    /// How the batch's ``fractionCompleted`` is worked out (ASINetworkQueue's `showAccurateProgress`).
    public enum Mode: Sendable, Hashable {
        /// Each request is one unit, done when it ends (ASI's default).
        case simple
        /// By bytes: request body lengths and response `Content-Length`s, the sizes found with a `HEAD` request
        /// before each `GET` when `fetchesSizes` is true (ASI's accurate progress). A response of unknown
        /// length counts as much as it has received.
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

    /// An empty batch's progress: nothing counted yet.
    public init() {}
}

/// Sums members' ``HTTPTransferProgress`` into ``HTTPBatchProgress``. A value; the batch keeps it behind its lock.
struct BatchProgressAggregator: Sendable {
    let mode: HTTPBatchProgress.Mode
    private var members: [Int: Member] = [:]
    private(set) var value = HTTPBatchProgress()

    private struct Member {
        var progress = HTTPTransferProgress()
        /// A size found by `HEAD` before the request ran.
        var knownDownload: Int?
        var ended = false
    }

    init(mode: HTTPBatchProgress.Mode) { self.mode = mode }

    mutating func add(_ id: Int, uploadTotal: Int?) {
        members[id] = Member(progress: HTTPTransferProgress(bytesExpectedToSend: uploadTotal))
        recompute()
    }

    mutating func sizeFound(_ id: Int, download: Int?) {
        members[id]?.knownDownload = download
        recompute()
    }

    mutating func update(_ id: Int, _ progress: HTTPTransferProgress) {
        guard members[id] != nil else { return }
        members[id]!.progress = progress
        recompute()
    }

    mutating func ended(_ id: Int) {
        members[id]?.ended = true
        recompute()
    }

    private mutating func recompute() {
        var value = HTTPBatchProgress()
        value.requestCount = members.count
        for member in members.values {
            let progress = member.progress
            if member.ended { value.requestsEnded += 1 }
            // Saturating: the totals come from the servers' `Content-Length`s, which may be anything up to
            // `Int.max`, and two such must not trap the process.
            value.bytesSent = saturatingSum(value.bytesSent, progress.bytesSent)
            value.bytesExpectedToSend = saturatingSum(value.bytesExpectedToSend,
                                                      max(progress.bytesExpectedToSend ?? progress.bytesSent, progress.bytesSent))
            value.bytesReceived = saturatingSum(value.bytesReceived, progress.bytesReceived)
            let expected = progress.bytesExpectedToReceive ?? member.knownDownload ?? progress.bytesReceived
            // An ended member is complete whatever its total said (a failed one too: it will move no more bytes).
            value.bytesExpectedToReceive = saturatingSum(value.bytesExpectedToReceive,
                                                         member.ended ? progress.bytesReceived : max(expected, progress.bytesReceived))
        }
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

/// `a + b`, or `Int.max` where that would overflow (both are byte counts, never negative).
func saturatingSum(_ a: Int, _ b: Int) -> Int {
    let (sum, overflow) = a.addingReportingOverflow(b)
    return overflow ? .max : sum
}
