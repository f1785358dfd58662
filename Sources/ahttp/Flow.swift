// ahttp's transfer flow options, as curl spells them: --limit-rate, -#/--progress-bar and the default progress
// meter, -Z/--parallel with --parallel-max and --fail-early, --retry, --retry-delay and --retry-max-time.

import AsyncHTTP
import HTTPTypes
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct FlowOptions {
    /// --limit-rate: bytes per second for each transfer, both directions (curl's is per transfer too).
    var limitRate: Int?
    /// -#: a bar instead of the meter.
    var progressBar = false
    /// -Z: the URLs run at once, up to `parallelMax`.
    var parallel = false
    /// --parallel-max: 50, curl's default; as curl, more than 300 is 300 and less than 1 is the default.
    var parallelMax = 50
    /// --fail-early: with -Z, the first failed transfer stops the others.
    var failEarly = false
    /// --retry: how often a transient failure is retried (0, curl's default).
    var retry = 0
    /// --retry-delay: fixed seconds between retries; nil: curl's backoff (1 s, doubling up to 10 minutes).
    var retryDelay: Double?
    /// --retry-max-time: no retry starts after this many seconds since the first attempt; nil: no limit.
    var retryMaxTime: Double?
    /// --retry-connrefused: a connection that could not be made is retried too (the library does not tell a
    /// refused connection from an unreachable host: both are `connectFailed`).
    var retryConnectionRefused = false
    /// --retry-all-errors: every failed transfer is retried; with -f, every status of 400 or more too.
    var retryAllErrors = false
}

/// curl's `--limit-rate` units: a number with an optional K, M or G suffix (powers of 1024), case-insensitive.
/// nil for 0, which is curl's "no limit".
func parseRate(_ text: String) throws -> Int? {
    var digits = Substring(text)
    var multiplier = 1.0
    switch text.last?.lowercased() {
    case "k": multiplier = 1024
    case "m": multiplier = 1024 * 1024
    case "g": multiplier = 1024 * 1024 * 1024
    case "b": multiplier = 1
    default: break
    }
    if multiplier != 1 || text.last?.lowercased() == "b" { digits = digits.dropLast() }
    guard let value = Double(digits), value >= 0, value * multiplier < Double(Int.max) else {
        throw UsageError(message: "invalid --limit-rate '\(text)' (a number of bytes per second, with K, M or G)")
    }
    // curl: 0 means no limit.
    return value == 0 ? nil : max(1, Int(value * multiplier))
}

/// The longest time a flag may name, in seconds: 10⁹ (about 31 years). `Double` also reads `inf`, `nan` and
/// `1e400`, which a conversion to milliseconds would trap on.
let maxSecondsInAFlag = 1e9

/// A number of seconds for `flag`: finite, at least 0 (more than 0 with `positive`), at most ``maxSecondsInAFlag``.
func parseSeconds(_ text: String, _ flag: String, positive: Bool = false) throws -> Double {
    guard let seconds = Double(text), seconds.isFinite, positive ? seconds > 0 : seconds >= 0, seconds <= maxSecondsInAFlag else {
        throw UsageError(message: "invalid \(flag) '\(text)' (a number of seconds)")
    }
    return seconds
}

/// A `Retry-After` in delay-seconds (RFC 9110 §10.2.3: digits only; an HTTP-date is not read), at most a day.
func retryAfterSeconds(_ value: String) -> Double? {
    guard !value.isEmpty, value.utf8.count <= 12, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
          let seconds = Int(value) else { return nil }
    return Double(min(seconds, 86_400))
}

/// A whole number of `unit` for `flag`, 0 to `maximum` (curl's `str2unum`: digits only, no sign, fraction or suffix).
func parseWholeNumber(_ text: String, _ flag: String, _ unit: String, maximum: Int = .max) throws -> Int {
    guard text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let value = Int(text), value <= maximum else {
        throw UsageError(message: "invalid \(flag) '\(text)' (a whole number of \(unit))")
    }
    return value
}

func parseCount(_ text: String, _ flag: String, range: ClosedRange<Int>) throws -> Int {
    guard let count = Int(text), range.contains(count) else {
        throw UsageError(message: "invalid \(flag) '\(text)' (\(range.lowerBound)…\(range.upperBound))")
    }
    return count
}

// MARK: Per request

extension Options {
    /// The progress display, if any: `-#`, or curl's meter when the body goes to a file; never with `-s`.
    var showsProgress: Bool { !silent && !noProgressMeter && (flow.progressBar || output != nil) }

    /// Sets what --limit-rate and the progress display need on a request.
    func prepareFlow(_ request: inout HTTPClientRequest) {
        if let rate = flow.limitRate { request.maxBandwidthPerSecond = rate }
        if showsProgress, !flow.parallel {
            let meter = ProgressMeter(bar: flow.progressBar)
            request.progressHandler = HTTPProgressHandler(minimumInterval: meter.interval, minimumFraction: 0) { meter.show($0) }
        }
    }
}

// MARK: Retry

/// curl's transient failures: a timeout or a failed name lookup (curl's `RETRY_TIMEOUT` takes both), and the HTTP
/// statuses 408, 429, 500, 502, 503 and 504. A switch rather than a global `Set`: the set's lazy initialisation
/// (hashing seed, generic metadata) cost every run about 0.1 ms of a cold start, retry or not.
func isTransientStatus(_ code: Int) -> Bool {
    switch code {
    case 408, 429, 500, 502, 503, 504: true
    default: false
    }
}

/// Sends `request`, retrying transient failures as curl's `--retry` does: after 1 s, doubling up to 10 minutes, or
/// after `--retry-delay`; a `Retry-After` in seconds on the response wins. No retry starts after
/// `--retry-max-time`. A failure while the body is being written is not retried (curl would truncate the file and
/// start again; standard output cannot be taken back).
func sendRetrying(_ request: HTTPClientRequest, client: HTTPClient, options: Options) async throws -> HTTPClientResponse {
    try await retrying(options: options, status: { ($0.status.code, $0.headers[.retryAfter]) }) {
        try await client.send(request)
    }
}

/// --retry around one attempt (a send, or a download to a file): a transient status (``isTransientStatus(_:)``,
/// read by `status`) or a timeout or failed name lookup is tried again, as curl does, after `Retry-After` (in
/// delay-seconds) or --retry-delay or curl's doubling backoff, within --retry-max-time.
func retrying<Result>(
    options: Options, status: (Result) -> (code: Int, retryAfter: String?), _ attempt: () async throws -> Result
) async throws -> Result {
    var retriesLeft = options.flow.retry
    var backoff = options.flow.retryDelay ?? 1
    let start = ContinuousClock.now
    func mayRetry() -> Bool {
        guard retriesLeft > 0 else { return false }
        guard let maxTime = options.flow.retryMaxTime, maxTime > 0 else { return true }
        return elapsedSeconds(since: start) < maxTime
    }
    while true {
        let wait: Double
        do {
            let result = try await attempt()
            let (code, retryAfterValue) = status(result)
            // --retry-all-errors: with -f (or --fail-with-body) any refused status is an error to retry, as curl.
            let isError = isTransientStatus(code) || (options.flow.retryAllErrors && code >= 400 && (options.fail || options.failWithBody))
            guard isError, mayRetry() else { return result }
            if let retryAfter = retryAfterValue.flatMap(retryAfterSeconds) {
                // As curl: a Retry-After that would end past --retry-max-time stops the retries, with its warning.
                if let maxTime = options.flow.retryMaxTime, maxTime > 0, elapsedSeconds(since: start) + retryAfter > maxTime {
                    if !options.silent {
                        try? writeAll(2, Array(("Warning: The Retry-After: time would make this command line exceed the maximum "
                                                + "allowed time for retries.\n").utf8)[...])
                    }
                    return result
                }
                wait = retryAfter
            } else {
                wait = backoff
            }
            warnRetry("HTTP error", wait: wait, left: retriesLeft, options: options)
            // A response is dropped here: a small body is drained for reuse, a big one closes the connection.
        } catch let error as HTTPClientError where isRetriedFailure(error.code, options.flow) && mayRetry() {
            wait = backoff
            let problem = switch error.code {
            case .timeout: "timeout"
            case .dnsFailure: "name lookup failed"
            case .connectFailed: "connection refused"
            default: "error"
            }
            warnRetry(problem, wait: wait, left: retriesLeft, options: options)
        }
        retriesLeft -= 1
        if options.flow.retryDelay == nil { backoff = min(backoff * 2, 600) }
        try await Task.sleep(for: .milliseconds(Int64(wait * 1000)))
    }
}

/// The failures --retry tries again: a timeout and a failed name lookup (curl's transient ones), a failed connect
/// with --retry-connrefused, and anything but a cancellation with --retry-all-errors.
func isRetriedFailure(_ code: HTTPClientError.Code, _ flow: FlowOptions) -> Bool {
    switch code {
    case .timeout, .dnsFailure: true
    case .connectFailed: flow.retryConnectionRefused || flow.retryAllErrors
    case .cancelled, .shutdown: false
    default: flow.retryAllErrors
    }
}

private func warnRetry(_ problem: String, wait: Double, left: Int, options: Options) {
    guard !options.silent else { return }
    let seconds = wait == wait.rounded() ? String(Int(wait)) : String(wait)
    let retries = left == 1 ? "1 retry" : "\(left) retries"
    try? writeAll(2, Array("Warning: Problem : \(problem). Will retry in \(seconds) seconds. \(retries) left.\n".utf8)[...])
}

/// `-Z` with `--retry`: a transfer that times out or whose name lookup fails is tried again, as curl retries each
/// parallel transfer on its own. The batch sends each member once and fails it on such an error before its handler
/// runs, so this step in the client's chain does that trying (the handler in ``runParallel(_:client:sink:options:)``
/// retries a transient status, as without -Z). It is the outermost of the user steps, so each try is signed afresh
/// by `--aws-sigv4`. A body that cannot be sent again (standard input) is tried once. One difference from curl: the
/// failures and the statuses each get `--retry` tries, where curl counts both against one budget per transfer.
struct RetryTransientFailures: HTTPClientMiddleware {
    let options: Options

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        guard request.body?.isReplayable ?? true else { return try await next(request) }
        // Statuses are the handler's to retry: every response counts as final here. Each try gets -m afresh, as
        // each of curl's tries is a transfer of its own (the send's deadline would be spent by the first).
        return try await retrying(options: options, status: { _ in (code: 200, retryAfter: nil) }) {
            var attempt = request
            if let maxTime = options.maxTime { attempt[SendDeadlineOption.self] = SendDeadlineOption.after(flagDuration(maxTime)) }
            return try await next(attempt)
        }
    }
}

// MARK: Parallel

/// One URL of `-Z`: its request, where its body goes (its own -o/-O, or standard output) and its URL as shown.
struct ParallelJob {
    var request: HTTPClientRequest
    var destination: Destination
    var shownURL: String
    /// `%{urlnum}`: the URL's place on the command line, from 0.
    var urlNumber = 0
}

/// What one `-Z` transfer brought back: its head, and where its body went. A file or a device got it as it
/// arrived; standard output gets it whole, in the order the transfers end, from memory or from a spool file.
struct ParallelBody: Sendable {
    var head: ReceivedHead
    var url: String
    /// The bytes for standard output (with the head first for -i), held until the transfer ends.
    var spool: OutputSpool?
    var bodyBytes: Int
    /// -f refused the status: nothing of the body was read.
    var refused: Bool
    /// --fail-with-body (or -f with -I) refused the status after its body (or head) was written: exit 22.
    var failedAfterWriting = false
    /// An error status that was not written over the user's file (as without -Z).
    var leftFileAlone: Bool
    /// The file written, for `%{filename_effective}`.
    var outputFile: String?
    /// Writing the destination failed (curl's exit 23).
    var writeError: String?
}

/// `-Z`: every request at once, up to `--parallel-max`, through one batch. Each body goes where its URL's output
/// goes as it arrives, so memory stays small whatever the sizes: a file is written to a temporary file beside it
/// and renamed into place when complete, as without -Z; a device or FIFO (`-o /dev/null`) is written as a
/// stream. Standard output never interleaves: each transfer's bytes are held (in memory up to
/// ``OutputSpool/memoryLimit``, then in an unlinked temporary file) and written whole in the order the transfers
/// end. -w is written once per transfer as it ends. Returns the exit status: 0, or curl's code for the first
/// failure. With `--fail-early` the first failure cancels the rest.
func runParallel(_ jobs: [ParallelJob], client: HTTPClient, sink: Sink, options: Options) async -> Int32 {
    let output = SharedSink(sink)
    let meter = options.showsProgress ? ParallelMeter(bar: options.flow.progressBar, count: jobs.count) : nil
    var configuration = HTTPBatchConfiguration(maxConcurrentRequests: options.flow.parallelMax,
                                               cancelsAllOnFailure: options.flow.failEarly)
    if let meter { configuration.onEvent = { meter.event($0) } }
    let includeHead = options.includeHeaders || options.headOnly
    // -f reads no body of a status it refuses; with -I the head is written first, as without -Z.
    let refuses = options.fail && !options.failWithBody && !options.headOnly
    // --fail-early with -f: the member whose status -f refuses stops the batch from its handler, before the member
    // ends and frees its slot (stopped from the results loop, the next transfer had already started, and could
    // finish and print).
    let running = Locked<HTTPBatch<ParallelBody>?>(nil)
    let stoppedEarly = Locked(false)
    // The batch numbers its members 0, 1, 2, … in the order they are added, which is the order of `jobs`.
    let handler: @Sendable (HTTPBatchMember, HTTPClientResponse) async throws -> ParallelBody = { member, first in
        // --retry as without -Z: a transient status is sent again (the first answer came through the batch).
        var given: HTTPClientResponse? = first
        let response = options.flow.retry == 0 ? first
            : try await retrying(options: options, status: { ($0.status.code, $0.headers[.retryAfter]) }) {
                if let answer = given {
                    given = nil
                    return answer
                }
                return try await client.send(member.request)
            }
        let head = ReceivedHead(status: response.status, version: response.version, headers: response.headers)
        var result = ParallelBody(head: head, url: response.url.description, spool: nil, bodyBytes: 0,
                                  refused: refuses && response.status.code >= 400, leftFileAlone: false)
        result.failedAfterWriting = !result.refused && response.status.code >= 400 && (options.fail || options.failWithBody)
        if result.refused, options.flow.failEarly {
            stoppedEarly.withLock { $0 = true }
            running.withLock { $0 }?.cancelAll()
        }
        guard !result.refused, jobs.indices.contains(member.id) else { return result }
        let headText = includeHead ? Array(head.text.utf8) : []
        switch jobs[member.id].destination {
        case .file(let path):
            guard (200..<300).contains(response.status.code) || writesErrorResponses(options) else {
                // As without -Z: an error page or a redirect's body does not replace the user's file.
                result.leftFileAlone = true
                for try await chunk in response.body { result.bodyBytes += chunk.count }
                return result
            }
            do {
                if let refusal = refusingDirectoryOutput(path) { throw refusal }
                result.bodyBytes = try await response.body.write(toFileAtPath: path)
                if !headText.isEmpty { try await prependAtomically(headText, to: path) }
                result.outputFile = path
            } catch let error as UsageError {
                // Prepending -i's head; the library's own errors (a failed transfer, a file error) are the
                // member's failure, with the exit code they have without -Z.
                result.writeError = error.message
            }
        case .namedByServer(let directory, let fallback):
            do {
                guard let written = try await writeNamedByServer(response, directory: directory, fallback: fallback) else {
                    result.leftFileAlone = true
                    for try await chunk in response.body { result.bodyBytes += chunk.count }
                    return result
                }
                result.bodyBytes = written.size
                result.outputFile = written.path
            } catch let error as UsageError {
                result.writeError = error.message
            }
        case .stream(let path):
            do {
                let device = try Sink(path: path)
                try device.write(headText[...])
                for try await chunk in response.body {
                    try device.write(chunk[...])
                    result.bodyBytes += chunk.count
                }
                result.outputFile = path
            } catch let error as UsageError {
                result.writeError = error.message
            }
        case .stdout:
            do {
                let spool = OutputSpool()
                try spool.append(headText[...])
                for try await chunk in response.body {
                    try spool.append(chunk)
                    result.bodyBytes += chunk.count
                }
                result.spool = spool
            } catch let error as UsageError {
                result.writeError = error.message
            }
        }
        return result
    }
    let start = ContinuousClock.now
    var status: Int32 = 0
    do {
        try await client.withBatch(configuration, memberHandler: handler) { batch in
            running.withLock { $0 = batch }
            var byID: [Int: ParallelJob] = [:]
            for job in jobs { byID[batch.add(job.request)] = job }
            batch.finish()
            for await member in batch.results {
                guard let job = byID[member.id] else { continue }
                var outcome = TransferOutcome(effectiveURL: job.shownURL, method: job.request.method.rawValue, status: nil,
                                              bodyBytes: 0, exitCode: 0, errorMessage: "", outputFile: nil, verifyResult: 0)
                outcome.urlNumber = job.urlNumber
                switch member.result {
                case .success(let body):
                    outcome.status = body.head.status.code
                    outcome.finalHead = body.head
                    outcome.bodyBytes = body.bodyBytes
                    outcome.effectiveURL = HTTPURL.redacting(body.url)
                    outcome.outputFile = body.outputFile
                    if body.refused {
                        outcome.exitCode = 22
                        outcome.errorMessage = "The requested URL returned error: \(body.head.status.code)"
                    } else if body.leftFileAlone, case .file(let path) = job.destination {
                        outcome.exitCode = 22
                        outcome.outputFile = path
                        outcome.errorMessage = "The requested URL returned error: \(body.head.status.code) (\(path) left as it was)"
                    } else if body.leftFileAlone {
                        outcome.exitCode = 22
                        outcome.errorMessage = "The requested URL returned error: \(body.head.status.code) (no file written)"
                    } else if let message = body.writeError {
                        outcome.exitCode = 23
                        outcome.errorMessage = message
                    } else if let spool = body.spool {
                        do {
                            try output.write(spool)
                        } catch let error as UsageError {
                            outcome.exitCode = 23
                            outcome.errorMessage = error.message
                        } catch {
                            outcome.exitCode = 23
                            outcome.errorMessage = "\(error)"
                        }
                    }
                    if outcome.exitCode == 0, body.failedAfterWriting {
                        outcome.exitCode = 22
                        outcome.errorMessage = "The requested URL returned error: \(body.head.status.code)"
                    }
                case .failure(let error):
                    // With --fail-early the others fail as cancelled: only the first failure is reported.
                    // (They may come before the refused status that stopped them.)
                    if options.flow.failEarly, error.code == .cancelled, status != 0 || stoppedEarly.withLock({ $0 }) { continue }
                    outcome.exitCode = curlExitCode(error)
                    outcome.errorMessage = options.message(for: error)
                    if error.code == .certificateInvalid { outcome.verifyResult = 1 }
                }
                if outcome.exitCode != 0 {
                    if options.showsErrors {
                        printError(outcome.exitCode == 22 ? "(22) \(outcome.errorMessage)" : "\(HTTPURL.redacting(job.shownURL)): \(outcome.errorMessage)")
                    }
                    if status == 0 { status = outcome.exitCode }
                    // --fail-early: any failure stops the rest, a status -f refuses (22) or a write error (23) too,
                    // not only an error the batch saw (curl counts them all as the transfer's failure).
                    if options.flow.failEarly { batch.cancelAll() }
                }
                if let format = options.writeOut {
                    var record = TransferRecorder.Record()
                    record.start = start
                    record.end = start.duration(to: .now)
                    writeOut(format, outcome, record)
                }
            }
        }
    } catch let error as HTTPClientError {
        if status == 0 { status = curlExitCode(error) }
    } catch {
        if status == 0 { status = 1 }
    }
    meter?.finish()
    return status
}

/// One `-Z` transfer's bytes for standard output, held until its turn: in memory up to ``memoryLimit``, then in a
/// temporary file that is unlinked at once (so nothing is left behind, whatever happens to the process).
final class OutputSpool: @unchecked Sendable {
    // @unchecked: one owner at a time: the member's handler fills it, then hands it (in its result) to the loop
    // that writes it out; nobody touches it concurrently.
    /// What stays in memory before the bytes go to a file: 1 MiB.
    static let memoryLimit = 1 << 20
    private var memory: [UInt8] = []
    private var fd: Int32 = -1

    func append(_ bytes: ArraySlice<UInt8>) throws {
        guard !bytes.isEmpty else { return }
        if fd < 0, memory.count + bytes.count <= Self.memoryLimit {
            memory += bytes
            return
        }
        if fd < 0 {
            let directory = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
            // mkstemp's loop with O_CLOEXEC in the open itself: mkstemp then fcntl left a window in which a process
            // spawned meanwhile inherited the file (mkostemp is not in Swift's Glibc module). At most 100 tries
            // (glibc's mkstemp allows TMP_MAX, 238 328): among 62^12 names, even a second clash is unheard of.
            let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
            var path = ""
            var opened: Int32 = -1
            for _ in 0..<100 {
                path = "\(directory)/ahttp-spool-" + String(decoding: (0..<12).map { _ in letters.randomElement()! }, as: UTF8.self)
                opened = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                if opened >= 0 || errno != EEXIST { break }
            }
            guard opened >= 0 else {
                throw UsageError(message: "cannot hold a response for standard output in \(directory): \(String(cString: strerror(errno)))", exitCode: 23)
            }
            _ = unlink(path)
            fd = opened
            try writeAll(fd, memory[...])
            memory = []
        }
        try writeAll(fd, bytes[...])
    }

    /// Writes everything held to `sink`, in order.
    func copy(to sink: Sink) throws {
        try sink.write(memory[...])
        guard fd >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var offset: off_t = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw UsageError(message: "cannot read back a response held for standard output: \(String(cString: strerror(errno)))", exitCode: 23)
            }
            if count == 0 { return }
            try sink.write(buffer[0..<count])
            offset += off_t(count)
        }
    }

    deinit { if fd >= 0 { close(fd) } }
}

/// The sink, shared by the transfers of `-Z`, one whole body at a time.
final class SharedSink: @unchecked Sendable {
    // @unchecked: `sink` is used only while `lock` is held; main hands it over and does not write to it meanwhile.
    private let sink: Sink
    /// `Bool`, unused: a `Void` value makes the thread sanitizer report every two threads taking the lock.
    private let lock = Locked(false)
    init(_ sink: Sink) { self.sink = sink }
    func write(_ spool: OutputSpool) throws {
        try lock.withLock { _ in try spool.copy(to: sink) }
    }
}

// MARK: Progress display

/// Seconds as curl shows them: `H:MM:SS`, `--:--:--` when unknown.
func clockText(_ seconds: Double?) -> String {
    guard let seconds, seconds.isFinite, seconds >= 0, seconds < 360_000 else { return "--:--:--" }
    let whole = Int(seconds)
    let h = whole / 3600, m = whole / 60 % 60, s = whole % 60
    return pad(String(h), 2) + ":" + (m < 10 ? "0" : "") + String(m) + ":" + (s < 10 ? "0" : "") + String(s)
}

/// A byte count in at most five characters, as curl's meter shows it (`12345`, `8192k`, `12.3M`, `1234M`, `12.3G`).
func sizeText(_ bytes: Int) -> String {
    let k = 1024, m = 1024 * 1024, g = 1024 * 1024 * 1024
    if bytes < 100_000 { return pad(String(bytes), 5) }
    if bytes < 10_000 * k { return pad(String(bytes / k) + "k", 5) }
    if bytes < 100 * m { return pad(String(bytes / m) + "." + String(bytes % m / (m / 10)), 4) + "M" }
    if bytes < 10_000 * m { return pad(String(bytes / m), 4) + "M" }
    return pad(String(bytes / g) + "." + String(bytes % g / (g / 10)), 4) + "G"
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
}

func percentText(_ done: Int, of total: Int?) -> String {
    guard let total, total > 0 else { return pad("0", 3) }
    return pad(String(min(100, done * 100 / total)), 3)
}

func elapsedSeconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = start.duration(to: .now)
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// `a + b` for byte counts (never negative), `Int.max` where that would overflow: a `Content-Length` may be anything.
func addingSaturated(_ a: Int, _ b: Int) -> Int {
    let (sum, overflow) = a.addingReportingOverflow(b)
    return overflow ? .max : sum
}

/// The width of the terminal on stderr; 80 when unknown.
func terminalColumns() -> Int {
    var size = winsize()
    if ioctl(2, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 10 { return Int(size.ws_col) }
    if let columns = getenv("COLUMNS").flatMap({ Int(String(cString: $0)) }), columns > 10 { return columns }
    return 80
}

/// One transfer's progress on stderr: curl's meter, or its `-#` bar. On a terminal the line is redrawn in place
/// (`\r`) up to five times a second; otherwise each update is a line of its own, at most once a second.
final class ProgressMeter: Sendable {
    private struct State {
        var headerShown = false
        var lastBytes = 0
        var lastTime: ContinuousClock.Instant
        var speed = 0.0
    }
    private let bar: Bool
    private let tty: Bool
    private let start = ContinuousClock.now
    private let state: Locked<State>

    init(bar: Bool) {
        self.bar = bar
        tty = isatty(2) == 1
        state = Locked(State(lastTime: start))
    }

    var interval: Duration { tty ? .milliseconds(200) : .seconds(1) }

    func show(_ progress: HTTPTransferProgress) {
        let line = state.withLock { state -> String in
            var text = ""
            let now = ContinuousClock.now
            let moved = progress.bytesReceived + progress.bytesSent
            let dt = state.lastTime.duration(to: now)
            let dtSeconds = Double(dt.components.seconds) + Double(dt.components.attoseconds) / 1e18
            if dtSeconds > 0.05 {
                state.speed = Double(moved - state.lastBytes) / dtSeconds
                state.lastBytes = moved
                state.lastTime = now
            }
            if bar { return barLine(progress) }
            if !state.headerShown {
                state.headerShown = true
                text += "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
                text += "                                 Dload  Upload   Total   Spent    Left  Speed\n"
            }
            return text + meterLine(progress, speed: state.speed)
        }
        let end = progress.isFinal || !tty ? "\n" : ""
        try? writeAll(2, Array(((tty ? "\r" : "") + line + end).utf8)[...])
    }

    private func meterLine(_ progress: HTTPTransferProgress, speed: Double) -> String {
        let spent = elapsedSeconds(since: start)
        let down = progress.bytesReceived, up = progress.bytesSent
        let downTotal = progress.bytesExpectedToReceive, upTotal = progress.bytesExpectedToSend
        // Saturating: a server's `Content-Length` may be anything up to `Int.max`.
        let (sum, overflow) = (downTotal ?? down).addingReportingOverflow(upTotal ?? up)
        let total = overflow ? Int.max : sum
        let averageDown = spent > 0 ? Int(Double(down) / spent) : 0
        let averageUp = spent > 0 ? Int(Double(up) / spent) : 0
        var totalTime: Double? = nil
        var left: Double? = nil
        // A failed transfer keeps its estimates: its time spent is not the time the whole took.
        let completed = progress.isFinal && !progress.didFail
        if let downTotal, downTotal > 0, down > 0, !completed {
            totalTime = spent * Double(downTotal) / Double(down)
            left = totalTime! - spent
        } else if completed {
            totalTime = spent
        }
        let current = progress.isFinal ? Double(averageDown + averageUp) : speed
        // curl's format: "%3d %s  %3d %s  %3d %s  %s  %s %s %s %s %s".
        return percentText(down + up, of: total) + " " + sizeText(total) + "  "
            + percentText(down, of: downTotal) + " " + sizeText(down) + "  "
            + percentText(up, of: upTotal) + " " + sizeText(up) + "  "
            + sizeText(averageDown) + "  " + sizeText(averageUp) + " "
            + [clockText(totalTime), clockText(spent), clockText(left), sizeText(Int(current))].joined(separator: " ")
    }

    private func barLine(_ progress: HTTPTransferProgress) -> String {
        let width = max(10, terminalColumns() - 8)
        guard let total = progress.bytesExpectedToReceive, total > 0 else {
            // Unknown length: full only for a body read to its end; a failed one stays an open-ended count.
            return progress.isFinal && !progress.didFail
                ? String(repeating: "#", count: width) + " 100.0%" : "#=#=# " + sizeText(progress.bytesReceived)
        }
        // From the bytes, final or not: a transfer that failed half-way stays at its real percentage, as curl's bar.
        let fraction = min(1, Double(progress.bytesReceived) / Double(total))
        let filled = Int(Double(width) * fraction)
        let tenths = Int((fraction * 1000).rounded())
        let percent = pad(String(tenths / 10) + "." + String(tenths % 10) + "%", 6)
        return String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + " " + percent
    }
}

/// `-Z`'s one line for all transfers, as curl's parallel meter: percentages, bytes, transfers done, running and
/// queued, time and speed.
final class ParallelMeter: Sendable {
    private struct State {
        /// The newest of the batch's snapshots (``HTTPBatchProgress/sequenceNumber``): they may arrive out of order.
        var progress = HTTPBatchProgress()
        var live = 0
        /// Transfers that failed (or were cancelled).
        var failed = 0
        /// Each transfer's download as its own progress last said (bytes received, and expected: its length, or
        /// what it received while that is unknown), and their sums. Kept here rather than read from the batch's
        /// snapshots, which count a member that ended as complete whatever its length said: a download that failed
        /// part-way filled the meter once another transfer moved.
        var downloads: [Int: (received: Int, expected: Int)] = [:]
        var received = 0
        var expected = 0
        var lastShown: ContinuousClock.Instant?
        var headerShown = false
    }
    private let bar: Bool
    private let tty = isatty(2) == 1
    private let count: Int
    private let start = ContinuousClock.now
    private let state = Locked(State())

    init(bar: Bool, count: Int) {
        self.bar = bar
        self.count = count
    }

    func event(_ event: HTTPBatchEvent) {
        let line = state.withLock { state -> String? in
            switch event {
            case .started: state.live += 1
            case .finished: state.live = max(0, state.live - 1)
            case .failed:
                state.live = max(0, state.live - 1)
                state.failed += 1
            case .progress(let id, let member, let batch):
                if batch.sequenceNumber > state.progress.sequenceNumber { state.progress = batch }
                // Counts never go down (a member its handler sends again holds at its highest, as in the batch).
                let old = state.downloads[id] ?? (0, 0)
                let received = max(old.received, member.bytesReceived)
                let new = (received: received, expected: max(received, member.bytesExpectedToReceive ?? received))
                state.downloads[id] = new
                state.received = addingSaturated(state.received - old.received, new.received)
                state.expected = addingSaturated(state.expected - old.expected, new.expected)
            case .headReceived: break
            }
            let now = ContinuousClock.now
            if let last = state.lastShown, last.duration(to: now) < (tty ? .milliseconds(200) : .seconds(1)) { return nil }
            state.lastShown = now
            return render(&state, final: false)
        }
        if let line { try? writeAll(2, Array(((tty ? "\r" : "") + line + (tty ? "" : "\n")).utf8)[...]) }
    }

    func finish() {
        let line = state.withLock { state -> String in
            state.progress.requestsEnded = count
            return render(&state, final: true)
        }
        try? writeAll(2, Array(((tty ? "\r" : "") + line + "\n").utf8)[...])
    }

    /// What the meter shows: the newest batch snapshot, and the downloads' bytes received and expected. For tests.
    var shown: (progress: HTTPBatchProgress, received: Int, expected: Int) {
        state.withLock { ($0.progress, $0.received, $0.expected) }
    }

    private func render(_ state: inout State, final: Bool) -> String {
        let progress = state.progress
        let received = state.received, expected = state.expected
        if bar {
            let width = max(10, terminalColumns() - 8)
            // From the bytes when their total is known: a failed transfer does not fill the bar (curl's stays put).
            // Unknown totals: at the end, the share of the transfers that did not fail.
            let fraction = expected > 0
                ? min(1, Double(received) / Double(expected))
                : (final ? Double(max(0, count - state.failed)) / Double(max(1, count)) : progress.fractionCompleted)
            let tenths = Int((fraction * 1000).rounded())
            return String(repeating: "#", count: Int(Double(width) * fraction))
                + String(repeating: " ", count: width - Int(Double(width) * fraction)) + " "
                + pad(String(tenths / 10) + "." + String(tenths % 10) + "%", 6)
        }
        var text = ""
        if !state.headerShown {
            state.headerShown = true
            text = "DL% UL%  Dled  Uled  Xfers  Live Total     Current  Left    Speed\n"
        }
        let spent = elapsedSeconds(since: start)
        let speed = spent > 0 ? Int(Double(addingSaturated(received, progress.bytesSent)) / spent) : 0
        let down = expected > 0 ? percentText(received, of: expected) : " --"
        let up = progress.bytesExpectedToSend > 0 ? percentText(progress.bytesSent, of: progress.bytesExpectedToSend) : " --"
        return text + [
            down, up, " " + sizeText(received), sizeText(progress.bytesSent),
            pad(String(progress.requestsEnded), 6), pad(String(final ? 0 : state.live), 5),
            clockText(final ? spent : nil), clockText(spent), clockText(final ? 0 : nil), sizeText(speed),
        ].joined(separator: " ")
    }
}
