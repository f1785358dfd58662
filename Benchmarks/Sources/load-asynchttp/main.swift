import AsyncHTTP
import BenchCore
import Glibc
import Synchronization

// Load and trust run: N GETs from C concurrent tasks through one `HTTPClient`, every failure sorted by
// `HTTPClientError.Code` (anything else is "untyped"), open descriptors counted before and after, and the
// resident set sampled every K requests. Driven by `Benchmarks/load.sh`.
//
//   load-asynchttp --url URL [--requests 100000] [--concurrency 256] [--sample-every 5000]
//                  [--timeout-ms 10000] [--label NAME] [--limit-seconds 600]
//
// Prints a human-readable summary and one JSON line (prefixed `JSON `). Exit status 0 when the run finished
// (errors are reported, not fatal), 2 when a failure was not an HTTPClientError, a request outlived its own
// deadline by more than a second, or descriptors did not return to the baseline; 3 when the whole run went
// past --limit-seconds (something hung).

struct LoadOptions {
    var url = ""
    var requests = 100_000
    var concurrency = 256
    var sampleEvery = 5_000
    var timeoutMilliseconds = 10_000
    var label = "run"
    var limitSeconds = 600

    static func parse() -> LoadOptions {
        var options = LoadOptions()
        var arguments = CommandLine.arguments.dropFirst()
        func next(_ name: String) -> String {
            guard let value = arguments.popFirst() else { fail("\(name) needs a value") }
            return value
        }
        func number(_ name: String) -> Int {
            guard let value = Int(next(name)), value > 0 else { fail("\(name) needs a positive integer") }
            return value
        }
        while let argument = arguments.popFirst() {
            switch argument {
            case "--url": options.url = next(argument)
            case "--requests": options.requests = number(argument)
            case "--concurrency": options.concurrency = number(argument)
            case "--sample-every": options.sampleEvery = number(argument)
            case "--timeout-ms": options.timeoutMilliseconds = number(argument)
            case "--label": options.label = next(argument)
            case "--limit-seconds": options.limitSeconds = number(argument)
            default: fail("unknown argument \(argument)")
            }
        }
        if options.url.isEmpty { fail("--url is required") }
        return options
    }
}

func fail(_ message: String) -> Never {
    printToStandardError("load-asynchttp: \(message)")
    exit(64)
}

/// Open descriptors of this process: the entries of /proc/self/fd, minus the one `opendir` holds.
func openDescriptorCount() -> Int {
    guard let directory = opendir("/proc/self/fd") else { return -1 }
    var count = 0
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
        if name != [UInt8(ascii: ".")] && name != [UInt8(ascii: "."), UInt8(ascii: ".")] { count += 1 }
    }
    closedir(directory)
    return count - 1
}

func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Tallies shared by the workers.
final class Tally: Sendable {
    struct State {
        var ok = 0
        var errors: [String: Int] = [:]
        var untyped: [String] = []
        var overdue = 0
        var slowestMilliseconds = 0
        var bytes = 0
        /// (requests done, RSS KiB, anonymous RSS KiB, open fds)
        var samples: [(Int, Int, Int, Int)] = []
    }
    let state = Mutex(State())
    let next = Atomic<Int>(0)
    let done = Atomic<Int>(0)
}

let options = LoadOptions.parse()
let descriptorsAtStart = openDescriptorCount()

var configuration = HTTPClient.Configuration()
// One connection per concurrent task: the pool never makes a task wait for a connection.
configuration.maxConnectionsPerHost = options.concurrency
configuration.proxy = .none
configuration.cookieJar = nil

// Warm-up client: the first request starts the process-wide event loop (its epoll and wake-up descriptors
// stay for the life of the process), so the baseline is taken after one client has come and gone.
do {
    let warmUp = HTTPClient(configuration: configuration)
    do {
        let response = try await warmUp.send(HTTPClientRequest(url: options.url))
        _ = try await response.body.collect(upTo: 1 << 20)
    } catch {
        printToStandardError("load-asynchttp: warm-up request failed: \(error)")
    }
    await warmUp.shutdown()  // does not throw
}
let baselineDescriptors = openDescriptorCount()

let tally = Tally()
let client = HTTPClient(configuration: configuration)
let deadline = Duration.milliseconds(options.timeoutMilliseconds)
let started = monotonicNanoseconds()
let limitNanoseconds = UInt64(options.limitSeconds) * 1_000_000_000
tally.state.withLock { $0.samples.append((0, Memory.currentRSSKiB(), Memory.anonymousRSSKiB(), openDescriptorCount())) }

// The watchdog: a run that goes past the limit is reported as hung and the process ends.
let watchdog = Task.detached {
    while !Task.isCancelled {
        try? await Task.sleep(for: .seconds(1))
        if monotonicNanoseconds() - started > limitNanoseconds {
            print("load-asynchttp: \(options.label): HUNG: \(tally.done.load(ordering: .relaxed)) of \(options.requests) done after \(options.limitSeconds) s")
            exit(3)
        }
    }
}

await withTaskGroup(of: Void.self) { group in
    for _ in 0..<options.concurrency {
        group.addTask {
            while true {
                let index = tally.next.add(1, ordering: .relaxed).oldValue
                if index >= options.requests { return }
                let requestStart = monotonicNanoseconds()
                var outcome: Result<Int, any Error>
                do {
                    var request = HTTPClientRequest(url: options.url)
                    request.timeout = deadline
                    let response = try await client.send(request)
                    var bytes = 0
                    for try await chunk in response.body { bytes += chunk.count }
                    outcome = response.status.code == 200 ? .success(bytes) : .failure(StatusError(code: response.status.code))
                } catch {
                    outcome = .failure(error)
                }
                let elapsedMilliseconds = Int((monotonicNanoseconds() - requestStart) / 1_000_000)
                tally.state.withLock { state in
                    state.slowestMilliseconds = max(state.slowestMilliseconds, elapsedMilliseconds)
                    if elapsedMilliseconds > options.timeoutMilliseconds + 1_000 { state.overdue += 1 }
                    switch outcome {
                    case .success(let bytes):
                        state.ok += 1
                        state.bytes += bytes
                    case .failure(let error as HTTPClientError):
                        state.errors["\(error.code)", default: 0] += 1
                    case .failure(let error as StatusError):
                        state.errors["status \(error.code)", default: 0] += 1
                    case .failure(let error):
                        state.errors["untyped", default: 0] += 1
                        if state.untyped.count < 5 { state.untyped.append("\(type(of: error)): \(error)") }
                    }
                }
                let finished = tally.done.add(1, ordering: .relaxed).newValue
                if finished % options.sampleEvery == 0 {
                    let sample = (finished, Memory.currentRSSKiB(), Memory.anonymousRSSKiB(), openDescriptorCount())
                    tally.state.withLock { $0.samples.append(sample) }
                }
            }
        }
    }
}
let seconds = Double(monotonicNanoseconds() - started) / 1e9
let descriptorsBeforeShutdown = openDescriptorCount()
await client.shutdown()
watchdog.cancel()
let descriptorsAfter = openDescriptorCount()

struct StatusError: Error { let code: Int }

let state = tally.state.withLock { $0 }
let errorCount = state.errors.values.reduce(0, +)
let errorList = state.errors.sorted { $0.key < $1.key }
print("== \(options.label): \(options.requests) GET \(options.url), \(options.concurrency) tasks, maxConnectionsPerHost \(options.concurrency), per-request timeout \(options.timeoutMilliseconds) ms")
print("   ok \(state.ok), errors \(errorCount)" + (errorList.isEmpty ? "" : " (" + errorList.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"))
for line in state.untyped { print("   untyped: \(line)") }
print("   \(String(Int(Double(options.requests) / seconds))) req/s over \(String(Int(seconds * 1000))) ms; slowest request \(state.slowestMilliseconds) ms; past its deadline by > 1 s: \(state.overdue)")
print("   fds: \(descriptorsAtStart) at start, \(baselineDescriptors) baseline (after the warm-up client), \(descriptorsBeforeShutdown) before shutdown, \(descriptorsAfter) after shutdown")
print("   RSS curve (requests: RSS KiB / anon KiB / fds):")
for (done, rss, anonymous, fds) in state.samples.sorted(by: { $0.0 < $1.0 }) {
    print("     \(done): \(rss) / \(anonymous) / \(fds)")
}
let curve = state.samples.sorted(by: { $0.0 < $1.0 }).map { "[\($0.0),\($0.1),\($0.2)]" }.joined(separator: ",")
let errorsJSON = errorList.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",")
print("JSON {\"label\":\"\(options.label)\",\"requests\":\(options.requests),\"ok\":\(state.ok),\"errors\":{\(errorsJSON)},\"seconds\":\(seconds),\"fds_start\":\(descriptorsAtStart),\"fds_baseline\":\(baselineDescriptors),\"fds_after\":\(descriptorsAfter),\"rss\":[\(curve)]}")

var status: Int32 = 0
if state.errors["untyped", default: 0] > 0 { print("   FAIL: untyped errors"); status = 2 }
if state.overdue > 0 { print("   FAIL: requests outlived their deadline"); status = 2 }
if descriptorsAfter != baselineDescriptors { print("   FAIL: descriptors did not return to the baseline"); status = 2 }
exit(status)
