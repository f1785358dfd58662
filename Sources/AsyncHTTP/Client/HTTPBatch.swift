import HTTPTypes

/// How a batch runs (ASINetworkQueue's settings).
public struct HTTPBatchConfiguration: Sendable {
    /// Members running at once (ASINetworkQueue's `maxConcurrentOperationCount`). 4: ASINetworkQueue's
    /// default. The pool's ``HTTPClient/Configuration/maxConnectionsPerHost`` still applies per host.
    public var maxConcurrentRequests = 4
    /// After a member fails, start nothing more and cancel the members still running
    /// (ASINetworkQueue's `shouldCancelAllRequestsOnFailure`, on by default there too). A failure is an error
    /// thrown by sending the request or by the handler that reads its response; a 404 or 500 is not one unless
    /// the handler throws for it.
    public var cancelsAllOnFailure = true
    /// How ``HTTPBatch/progress`` is summed: by request, or by bytes (ASI's `showAccurateProgress`).
    public var progressMode: HTTPBatchProgress.Mode = .simple
    /// Each member's events as they happen (ASI's per-request delegate callbacks). Called on the member's task:
    /// keep it short.
    public var onEvent: (@Sendable (HTTPBatchEvent) -> Void)?

    /// Creates a batch configuration; the defaults are ASINetworkQueue's.
    public init(maxConcurrentRequests: Int = 4, cancelsAllOnFailure: Bool = true,
                progressMode: HTTPBatchProgress.Mode = .simple, onEvent: (@Sendable (HTTPBatchEvent) -> Void)? = nil) {
        self.maxConcurrentRequests = maxConcurrentRequests
        self.cancelsAllOnFailure = cancelsAllOnFailure
        self.progressMode = progressMode
        self.onEvent = onEvent
    }
}

/// Something that happened to one member of a batch; `id` is what ``HTTPBatch/add(_:)`` returned.
/// (ASIHTTPRequest's `requestStarted:`, `request:didReceiveResponseHeaders:`, progress delegates,
/// `requestFinished:` and `requestFailed:`.)
public enum HTTPBatchEvent: Sendable {
    /// The member's request is about to be sent.
    case started(id: Int)
    /// The member's final response head arrived.
    case headReceived(id: Int, status: HTTPResponse.Status)
    /// The member's progress (throttled as ``HTTPProgressHandler``'s defaults) and the batch's sum after it.
    case progress(id: Int, HTTPTransferProgress, batch: HTTPBatchProgress)
    /// The member's handler returned.
    case finished(id: Int)
    /// The member failed, or was cancelled (`HTTPClientError.Code.cancelled`) because another failed or the
    /// batch was cancelled; members that never started are reported this way too.
    case failed(id: Int, HTTPClientError)
}

/// One member's outcome.
public struct HTTPBatchResult<Value: Sendable>: Sendable {
    /// The member's number, as ``HTTPBatch/add(_:)`` returned it.
    public var id: Int
    /// The request as it was added.
    public var request: HTTPClientRequest
    /// What the handler returned, or why the member failed.
    public var result: Result<Value, HTTPClientError>
}

/// A member as its handler sees it (``HTTPClient/withBatch(_:memberHandler:_:)``): which request this response
/// answers, so that the handler can send each body where its request says (ASIHTTPRequest's `userInfo`).
public struct HTTPBatchMember: Sendable {
    /// The member's number, as ``HTTPBatch/add(_:)`` returned it.
    public var id: Int
    /// The request as it was added, with the batch's progress handler around its own: a handler that sends it
    /// again (a retry) has the new attempt's bytes counted in ``HTTPBatch/progress`` (they hold at the first
    /// attempt's count until they pass it).
    public var request: HTTPClientRequest
}

/// Requests run together, at most ``HTTPBatchConfiguration/maxConcurrentRequests`` at once, with results as
/// they finish: ASINetworkQueue rebuilt on a task group. Made by ``HTTPClient/withBatch(_:handler:_:)``, which
/// owns its tasks: none outlives it, and cancelling the task running it cancels every member.
///
/// ```swift
/// let sizes = try await client.withBatch(handler: { response in try await response.body.collect(upTo: 1 << 20).count }) { batch in
///     for url in urls { batch.add(HTTPClientRequest(url: url)) }
///     batch.finish()
///     var sizes: [Int: Int] = [:]
///     for await member in batch.results { sizes[member.id] = try? member.result.get() }
///     return sizes
/// }
/// ```
public final class HTTPBatch<Value: Sendable>: Sendable {
    private struct State {
        var scheduler: BatchScheduler
        var progress: BatchProgressAggregator
        var requests: [Int: HTTPClientRequest] = [:]
        var nextID = 0
    }

    private enum Command: Sendable {
        case start(Int, HTTPClientRequest)
        case fetchSize(Int, HTTPClientRequest)
        case cancelRunning
        case end
    }

    private let state: Locked<State>
    private let configuration: HTTPBatchConfiguration
    /// The scheduler's decisions, carried out by the batch's task group.
    private let commands: AsyncStream<Command>
    private let commandSink: AsyncStream<Command>.Continuation
    private let resultSink: AsyncStream<HTTPBatchResult<Value>>.Continuation

    /// Each member's outcome as it ends, in the order they end; the stream ends when the batch is over (every
    /// member ended after ``finish()``, or the batch was cancelled).
    public let results: AsyncStream<HTTPBatchResult<Value>>

    init(configuration: HTTPBatchConfiguration) {
        self.configuration = configuration
        state = Locked(State(
            scheduler: BatchScheduler(limit: configuration.maxConcurrentRequests, cancelsAllOnFailure: configuration.cancelsAllOnFailure),
            progress: BatchProgressAggregator(mode: configuration.progressMode)))
        (commands, commandSink) = AsyncStream<Command>.makeStream()
        (results, resultSink) = AsyncStream<HTTPBatchResult<Value>>.makeStream()
    }

    /// Adds a request, also while the batch runs; it starts when a slot is free. Returns its id: 0 for the first
    /// request added, then 1, 2, … in the order of the calls. A request added after ``finish()`` or
    /// ``cancelAll()`` never runs: it is reported failed with `HTTPClientError.Code.cancelled` (through
    /// ``HTTPBatchConfiguration/onEvent``, and in ``results`` unless that has already ended with the batch).
    @discardableResult
    public func add(_ request: HTTPClientRequest) -> Int {
        var id = 0
        carryOut { state in
            id = state.nextID
            state.nextID += 1
            state.requests[id] = request
            state.progress.add(id, uploadTotal: request.body.map { $0.length } ?? 0)
            return state.scheduler.add(id, fetchesSize: fetchesSize(of: request))
        }
        return id
    }

    /// No more requests will be added: ``results`` ends once the members added so far have ended.
    public func finish() {
        carryOut { $0.scheduler.finishAdding() }
    }

    /// Starts nothing more and cancels the running members (they fail with `.cancelled`, as do those waiting).
    public func cancelAll() {
        carryOut { $0.scheduler.cancelAll() }
    }

    /// The batch's progress so far.
    public var progress: HTTPBatchProgress { state.withLock { $0.progress.value } }

    /// Asks the scheduler (`decide`, under the lock) and carries out what it decided. Starts and cancels go to
    /// the run loop under the same lock, so the loop sees them in the order they were decided: with the lock
    /// released in between, a member started after a failure could reach the loop after the failure's
    /// `cancelRunning`, and run although the batch cancels on failure. Yielding to the stream does not block.
    /// Dropped members are reported after the lock (`report` takes it), and the end after them, so the loop
    /// never finishes ``results`` before a dropped member's result is in it.
    private func carryOut(_ decide: (inout State) -> [BatchScheduler.Action]) {
        let (dropped, ends) = state.withLock { state -> ([Int], Bool) in
            var dropped: [Int] = []
            var ends = false
            // A work list: a fetch that cannot run adds what its end decides (bounded: each fetch ends once).
            var actions = decide(&state)
            var next = 0
            while next < actions.count {
                let action = actions[next]
                next += 1
                switch action {
                case .start(let id):
                    guard let request = state.requests[id] else { continue }
                    commandSink.yield(.start(id, request))
                case .fetchSize(let id):
                    // A member's `HEAD` goes ahead of the members waiting; it runs before its member starts. Its
                    // request is there (a member is reported only after it ran or was dropped, and a drop cancels
                    // its fetch); were it not, the fetch ends here, so that the batch can still end.
                    guard let request = state.requests[id] else {
                        actions += state.scheduler.sizeFetched(id)
                        continue
                    }
                    commandSink.yield(.fetchSize(id, request))
                case .cancelRunning:
                    commandSink.yield(.cancelRunning)
                case .drop(let id):
                    dropped.append(id)
                case .end:
                    ends = true
                }
            }
            return (dropped, ends)
        }
        for id in dropped { report(id, .failure(.cancelled), started: false) }
        if ends {
            commandSink.yield(.end)
            commandSink.finish()
        }
    }

    /// `started`: false for a member that never ran, whose own progress handler then gets its final value
    /// here (a `progressUpdates()` stream on it would never end otherwise).
    private func report(_ id: Int, _ result: Result<Value, HTTPClientError>, started: Bool = true) {
        let request = state.withLock { state -> HTTPClientRequest? in
            state.progress.ended(id)
            return state.requests.removeValue(forKey: id)
        }
        guard let request else { return }
        if !started { request.progressHandler?.report(.failedBeforeSending(request)) }
        switch result {
        case .success: configuration.onEvent?(.finished(id: id))
        case .failure(let error): configuration.onEvent?(.failed(id: id, error))
        }
        resultSink.yield(HTTPBatchResult(id: id, request: request, result: result))
    }

    /// Runs the scheduler's decisions until the batch is over or the task is cancelled; members are children of
    /// this task group, so none outlives it.
    func run(client: HTTPClient, handler: @escaping @Sendable (HTTPBatchMember, HTTPClientResponse) async throws -> Value) async {
        // Discarding: a finished member's task is freed at once (a plain group kept every one until `waitForAll`;
        // results go out through `report`).
        await withDiscardingTaskGroup { members in
            for await command in commands {
                switch command {
                case .start(let id, let request):
                    members.addTask { await self.runMember(id, request, client: client, handler: handler) }
                case .fetchSize(let id, let request):
                    members.addTask { await self.fetchSize(id, request, client: client) }
                case .cancelRunning:
                    members.cancelAll()
                case .end:
                    break
                }
            }
            // Over, or cancelled: the stream ends when the consuming task is cancelled.
            if Task.isCancelled { cancelAll() }
            members.cancelAll()
        }
        // Members that never started, if the loop ended on cancellation before their drop was carried out.
        let left = state.withLock { Array($0.requests.keys) }
        for id in left.sorted() { report(id, .failure(.cancelled), started: false) }
        resultSink.finish()
    }

    /// Whether `request` is a member whose size is fetched with a `HEAD` first (accurate progress, `GET`).
    private func fetchesSize(of request: HTTPClientRequest) -> Bool {
        guard case .accurate(fetchesSizes: true) = configuration.progressMode else { return false }
        return request.method == .get
    }

    /// A member's `HEAD`: its `Content-Length` (of a 200) counts in the batch's expected total before the member
    /// runs. A failed or cancelled `HEAD` only leaves the size unknown.
    private func fetchSize(_ id: Int, _ request: HTTPClientRequest, client: HTTPClient) async {
        var head = request
        head.method = .head
        head.progressHandler = nil
        if let response = try? await client.send(head), response.status.code == 200,
           let size = response.headers[.contentLength].flatMap({ Int($0) }), size >= 0 {
            state.withLock { $0.progress.sizeFound(id, download: size) }
        }
        carryOut { $0.scheduler.sizeFetched(id) }
    }

    private func runMember(
        _ id: Int, _ request: HTTPClientRequest, client: HTTPClient,
        handler: @escaping @Sendable (HTTPBatchMember, HTTPClientResponse) async throws -> Value
    ) async {
        configuration.onEvent?(.started(id: id))
        var request = request
        let own = request.progressHandler
        let onEvent = configuration.onEvent
        request.progressHandler = HTTPProgressHandler(
            minimumInterval: own?.minimumInterval ?? .milliseconds(100), minimumFraction: own?.minimumFraction ?? 0.01
        ) { [weak self] progress in
            own?.report(progress)
            guard let self else { return }
            let batch = self.state.withLock { state in
                state.progress.update(id, progress)
                return state.progress.value
            }
            onEvent?(.progress(id: id, progress, batch: batch))
        }
        // With the batch's progress handler: a handler that sends it again (a retry) counts into the batch.
        let member = HTTPBatchMember(id: id, request: request)
        let result: Result<Value, HTTPClientError>
        do {
            let response = try await client.send(request)
            onEvent?(.headReceived(id: id, status: response.status))
            result = .success(try await handler(member, response))
        } catch let error as HTTPClientError {
            result = .failure(error)
        } catch is CancellationError {
            result = .failure(.cancelled)
        } catch {
            result = .failure(HTTPClientError(.invalidRequest, "the batch's response handler failed: \(error)"))
        }
        if case .failure = result, Task.isCancelled {
            report(id, .failure(.cancelled))
        } else {
            report(id, result)
        }
        let failed = if case .failure = result { true } else { false }
        carryOut { $0.scheduler.ended(id, failed: failed) }
    }
}

extension HTTPClient {
    /// Runs `body` with a new batch whose members are sent by this client and read by `handler`; returns what
    /// `body` returns once every member has ended (ASINetworkQueue, as a scope).
    ///
    /// When `body` returns, no more members can be added and the batch waits for those added to end. When `body`
    /// throws, or the task is cancelled, every member is cancelled first; a cancelled batch throws
    /// `HTTPClientError.Code.cancelled` (its ``HTTPBatch/results`` ended early, as an `AsyncStream` does in a
    /// cancelled task; ``HTTPBatchConfiguration/onEvent`` still reports every member). Nothing outlives the call: members
    /// are child tasks, and a cancelled member's connection is closed, not leaked.
    ///
    /// ```swift
    /// try await client.withBatch(.init(maxConcurrentRequests: 8), handler: { try await $0.body.collect(upTo: 1 << 20) }) { batch in
    ///     for url in urls { batch.add(HTTPClientRequest(url: url)) }
    ///     batch.finish()
    ///     for await member in batch.results { print(member.id, member.result) }
    /// }
    /// ```
    public func withBatch<Value: Sendable, Output>(
        _ configuration: HTTPBatchConfiguration = .init(),
        handler: @escaping @Sendable (HTTPClientResponse) async throws -> Value,
        _ body: (HTTPBatch<Value>) async throws -> Output
    ) async throws -> Output {
        try await withBatch(configuration, memberHandler: { _, response in try await handler(response) }, body)
    }

    /// ``withBatch(_:handler:_:)`` with a handler that is also told which member the response answers, so that
    /// it can stream each body where its request's caller wants it instead of collecting it (a file per member:
    /// the ids count from 0 in the order of ``HTTPBatch/add(_:)``).
    ///
    /// ```swift
    /// let paths = ["/tmp/a.iso", "/tmp/b.iso"]
    /// try await client.withBatch(memberHandler: { member, response in
    ///     guard response.status == .ok else { return 0 }   // an error page does not become a file
    ///     return try await response.body.write(toFileAtPath: paths[member.id])
    /// }) { batch in
    ///     batch.add(HTTPClientRequest(url: "https://example.com/a.iso"))
    ///     batch.add(HTTPClientRequest(url: "https://example.com/b.iso"))
    /// }
    /// ```
    public func withBatch<Value: Sendable, Output>(
        _ configuration: HTTPBatchConfiguration = .init(),
        memberHandler: @escaping @Sendable (HTTPBatchMember, HTTPClientResponse) async throws -> Value,
        _ body: (HTTPBatch<Value>) async throws -> Output
    ) async throws -> Output {
        let batch = HTTPBatch<Value>(configuration: configuration)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await batch.run(client: self, handler: memberHandler) }
            do {
                let result = try await body(batch)
                batch.finish()
                try await group.waitForAll()
                // Cancelled: `results` ended early in `body` (an `AsyncStream` ends when its task is cancelled),
                // so whatever `body` made of it is partial.
                if Task.isCancelled { throw HTTPClientError.cancelled }
                return result
            } catch {
                batch.cancelAll()
                group.cancelAll()
                try? await group.waitForAll()
                throw error
            }
        }
    }

    /// Sends `requests` as one batch and returns every outcome, in the order of `requests`, each body collected
    /// up to `maxBodyBytes` (ASINetworkQueue's "all at once"). With ``HTTPBatchConfiguration/cancelsAllOnFailure``
    /// (the default), the first failure cancels the rest, which then fail with `.cancelled`.
    public func sendAll(
        _ requests: [HTTPClientRequest], configuration: HTTPBatchConfiguration = .init(), maxBodyBytes: Int = 16 << 20
    ) async throws -> [Swift.Result<(response: HTTPClientResponse, body: [UInt8]), HTTPClientError>] {
        typealias Collected = (response: HTTPClientResponse, body: [UInt8])
        return try await withBatch(configuration, handler: { response -> CollectedResponse in
            CollectedResponse(response: response, body: try await response.body.collect(upTo: maxBodyBytes))
        }) { batch in
            for request in requests { batch.add(request) }
            batch.finish()
            var outcomes = [Swift.Result<Collected, HTTPClientError>?](repeating: nil, count: requests.count)
            for await member in batch.results {
                outcomes[member.id] = member.result.map { (response: $0.response, body: $0.body) }
            }
            return outcomes.map { $0 ?? .failure(.cancelled) }
        }
    }
}

/// A response with its body read, as ``HTTPClient/sendAll(_:configuration:maxBodyBytes:)`` collects it.
struct CollectedResponse: Sendable {
    var response: HTTPClientResponse
    var body: [UInt8]
}
