import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a client must do for the benchmark. Each client's executable implements it in that client's most
/// direct way (the way its documentation shows), and ``Bench/main(client:makeDriver:)`` does the rest.
public protocol BenchDriver: Sendable {
    /// GETs `url`, reads the whole body and discards it; returns the number of body bytes. With
    /// `newConnection` the request must go out on a connection of its own that is closed afterwards.
    /// Throws for a status other than 200.
    func get(_ url: String, newConnection: Bool) async throws -> Int
    /// GETs `url` asking for a compressed response in the client's own way, and returns the number of
    /// decompressed body bytes.
    func getDecompressed(_ url: String) async throws -> Int
    /// PUTs `total` bytes (a multiple of `chunk.count`), streamed as `chunk` repeated, with a `Content-Length`.
    /// Returns the bytes sent. Throws for a status other than 2xx.
    func put(_ url: String, chunk: [UInt8], total: Int) async throws -> Int
    /// PUTs the file at `path`, streamed from disk with a `Content-Length` — as is, or (`multipart`) as the one
    /// file part (`name="file"`) of a `multipart/form-data` body. Returns the file's size.
    func putFile(_ url: String, path: String, multipart: Bool) async throws -> Int
    /// GETs `url` into a new file at `path` in the client's own way of downloading to disk; returns the bytes
    /// written. Throws for a status other than 200.
    func download(_ url: String, to path: String) async throws -> Int
    func shutdown() async throws
    /// As `get(_:newConnection:)` on a kept-alive connection, with a do-nothing progress handler when `observingProgress`
    /// (clients that have progress handlers; the others throw).
    func get(_ url: String, observingProgress: Bool) async throws -> Int
}

extension BenchDriver {
    public func putFile(_ url: String, path: String, multipart: Bool) async throws -> Int {
        throw BenchError("this client has no way to upload a file")
    }
    public func download(_ url: String, to path: String) async throws -> Int {
        throw BenchError("this client has no way to download to a file")
    }
    public func get(_ url: String, observingProgress: Bool) async throws -> Int {
        throw BenchError("this client has no progress handlers")
    }
}

/// A benchmark failure with a message that says what went wrong.
public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

public enum Bench {
    /// Parses the command line, builds the driver, runs the scenario and prints one JSON line.
    /// Exits with status 1 if every request failed, so run.sh notices a broken client.
    public static func main<Driver: BenchDriver>(client: String, makeDriver: (Options) throws -> Driver) async {
        let options = Options.parse()
        // A run that observes progress is reported as a client of its own, beside the plain one.
        let client = options.progress ? client + "+progress" : client
        var report = Report(client: client, scenario: options.scenario.rawValue)
        do {
            let driver = try makeDriver(options)
            report = await run(driver, client: client, options: options)
            try await driver.shutdown()
        } catch {
            report.errors += 1
            report.firstError = report.firstError ?? "\(error)"
        }
        report.peakRSSKiB = Memory.peakRSSKiB()
        report.print()
        if report.requests == 0 { exit(1) }
    }

    /// `tasks` tasks send GETs on kept-alive connections until `limit` requests were issued or `deadline` passed,
    /// the n-th request (whichever task sends it) to `urls[n % urls.count]`.
    static func roundRobin<Driver: BenchDriver>(
        _ driver: Driver, _ urls: [String], tasks: Int, limit: Int, until deadline: ContinuousClock.Instant?
    ) async -> Tally {
        let issued = Atomic<Int>(0)
        return await concurrently(tasks) { _ in
            var tally = Tally()
            while deadline.map({ ContinuousClock.now < $0 }) ?? true,
                  case let index = issued.add(1, ordering: .relaxed).oldValue, index < limit {
                await tally.record { try await driver.get(urls[index % urls.count], newConnection: false) }
            }
            return tally
        }
    }

    static func run<Driver: BenchDriver>(_ driver: Driver, client: String, options: Options) async -> Report {
        var report = Report(client: client, scenario: options.scenario.rawValue)
        let url = options.url(client: client)
        if let phase = options.alternateProgressMilliseconds {
            return await alternatingProgress(driver, url: url, phase: phase, report: report, options: options)
        }
        let clock = ContinuousClock()
        var tally = Tally()
        switch options.scenario {
        case .seq, .tlsSeq, .tlsNew, .cacheHit, .cacheRevalidate:
            let fresh = options.scenario == .tlsNew
            // Warm-up: open the connection (and fault in code paths) before the clock starts, except where
            // opening connections is what is measured.
            if !fresh { await tally.record { try await driver.get(url, newConnection: false) } }
            tally = Tally(firstError: tally.firstError)
            let start = clock.now
            let deadline = start + .seconds(options.seconds)
            while tally.attempts < options.requests && clock.now < deadline {
                await tally.record { try await driver.get(url, newConnection: fresh) }
            }
            report.seconds = seconds(clock.now - start)
        case .conc, .conc256, .hosts100:
            // conc: every request to the one URL. hosts100: round-robin, the n-th request of the run (whichever task
            // sends it) to host n % hosts.
            let urls = options.scenario == .hosts100 ? options.hostURLs(client: client) : [url]
            let tasks = options.concurrency
            // Warm-up, `tasks` at a time, so each pool holds its connections before timing: one request per task
            // (conc), or every host twice (hosts100).
            let warmCount = options.scenario == .hosts100 ? 2 * urls.count : tasks
            let warm = await roundRobin(driver, urls, tasks: tasks, limit: warmCount, until: nil)
            let start = clock.now
            tally = await roundRobin(driver, urls, tasks: tasks, limit: options.requests, until: start + .seconds(options.seconds))
            report.seconds = seconds(clock.now - start)
            tally.firstError = tally.firstError ?? warm.firstError
        case .download:
            let start = clock.now
            for _ in 0..<options.requests {
                await tally.record { try await driver.get(url, newConnection: false) }
            }
            report.seconds = seconds(clock.now - start)
        case .gzip:
            let start = clock.now
            for _ in 0..<options.requests {
                await tally.record { try await driver.getDecompressed(url) }
            }
            report.seconds = seconds(clock.now - start)
        case .upload:
            let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: options.uploadChunkBytes)
            let total = options.uploadBytes / chunk.count * chunk.count
            let start = clock.now
            for _ in 0..<options.requests {
                await tally.record { try await driver.put(url, chunk: chunk, total: total) }
            }
            report.seconds = seconds(clock.now - start)
        case .uploadFile, .uploadMultipart:
            guard let file = options.file else {
                report.errors = 1
                report.firstError = "--file is required for \(options.scenario.rawValue)"
                return report
            }
            let multipart = options.scenario == .uploadMultipart
            let start = clock.now
            for _ in 0..<options.requests {
                await tally.record { try await driver.putFile(url, path: file, multipart: multipart) }
            }
            report.seconds = seconds(clock.now - start)
        case .downloadFile:
            let start = clock.now
            for index in 0..<options.requests {
                let path = "\(options.directory)/\(client)-download-\(getpid())-\(index).bin"
                await tally.record {
                    defer { unlink(path) }
                    let bytes = try await driver.download(url, to: path)
                    var info = stat()
                    guard stat(path, &info) == 0, Int(info.st_size) == bytes else {
                        throw BenchError("\(path): not a file of \(bytes) bytes after the download")
                    }
                    return bytes
                }
            }
            report.seconds = seconds(clock.now - start)
        case .memory:
            // Sequential new TLS connections; resident memory is sampled after 100 and after the last. Bounded by
            // `--seconds` too, for a client whose handshakes are slow (`requests` then says how far it got).
            let checkpoint = min(100, options.requests)
            let start = clock.now
            let deadline = start + .seconds(options.seconds)
            for index in 1...options.requests {
                await tally.record { try await driver.get(url, newConnection: true) }
                if index == checkpoint { report.rssAfter100KiB = Memory.currentRSSKiB() }
                if index > checkpoint && clock.now >= deadline { break }
            }
            report.seconds = seconds(clock.now - start)
            report.rssAfter4000KiB = Memory.currentRSSKiB()
        }
        // Before shutdown: what the client holds while it is in use.
        report.anonymousRSSKiB = Memory.anonymousRSSKiB()
        // For the peak RSS rows' breakdown by mapping (Benchmarks/tools/rss-by-mapping.py).
        if let path = getenv("BENCH_SMAPS").map({ String(cString: $0) }),
           let smaps = try? Files.read("/proc/self/smaps") {
            try? Files.write(smaps, to: path)
        }
        report.requests = tally.succeeded
        report.bytes = tally.bytes
        report.errors = tally.failed
        report.firstError = tally.firstError
        return report
    }

    /// The cost of observing progress, measured in one process: the run switches a do-nothing progress handler on
    /// and off, every `phase` milliseconds in `conc` (each request counts in the phase it started in) or every
    /// other request in `download`, and compares the two halves: their rates, and the process's CPU time
    /// (`getrusage`, read at each switch) per request or per MB. A drift of the machine's speed lasting longer
    /// than a phase weighs on both halves alike; separate runs of each kind, even in alternating pairs, differ by
    /// more than the cost on this machine.
    static func alternatingProgress<Driver: BenchDriver>(
        _ driver: Driver, url: String, phase: Int, report: Report, options: Options
    ) async -> Report {
        var report = report
        report.scenario += "-alternating-progress"
        let meter = PhaseMeter()
        var tally = Tally()
        switch options.scenario {
        case .conc:
            let tasks = options.concurrency
            _ = await roundRobin(driver, [url], tasks: tasks, limit: tasks, until: nil)  // warm-up
            let phaseNanos = UInt64(phase) * 1_000_000
            let start = ContinuousClock.now
            let deadline = start + .seconds(options.seconds)
            meter.begin()
            let startNanos = PhaseMeter.monotonicNanoseconds()
            tally = await concurrently(tasks) { _ in
                var tally = Tally()
                while ContinuousClock.now < deadline {
                    let index = (PhaseMeter.monotonicNanoseconds() - startNanos) / phaseNanos
                    meter.enter(phase: index)
                    let watched = index % 2 == 1
                    var one = Tally()
                    await one.record { try await driver.get(url, observingProgress: watched) }
                    meter.count(phase: index, requests: one.succeeded, bytes: one.bytes)
                    tally.add(one)
                }
                return tally
            }
            meter.end()
            report.seconds = seconds(ContinuousClock.now - start)
        case .download:
            meter.begin()
            let start = ContinuousClock.now
            for index in 0..<options.requests {
                meter.enter(phase: UInt64(index))
                var one = Tally()
                await one.record { try await driver.get(url, observingProgress: index % 2 == 1) }
                meter.count(phase: UInt64(index), requests: one.succeeded, bytes: one.bytes)
                tally.add(one)
            }
            meter.end()
            report.seconds = seconds(ContinuousClock.now - start)
        default:
            report.errors = 1
            report.firstError = "--alternate-progress is for conc and download"
            return report
        }
        let halves = meter.halves()
        let perUnit = options.scenario == .conc ? "request" : "mb"
        func rate(_ half: PhaseMeter.Half) -> Double {
            let seconds = Double(half.nanoseconds) / 1e9
            return options.scenario == .conc ? Double(half.requests) / seconds : Double(half.bytes) / 1e6 / seconds
        }
        func cpu(_ half: PhaseMeter.Half) -> Double {  // µs per request, or ms per MB
            options.scenario == .conc ? half.cpuSeconds / Double(half.requests) * 1e6 : half.cpuSeconds / (Double(half.bytes) / 1e6) * 1e3
        }
        let (plain, watched) = (halves[0], halves[1])
        if plain.requests > 0, watched.requests > 0 {
            report.extra = [
                ("phases", "\(meter.phases)"),
                ("plain_rate", fixed(rate(plain), 2)), ("progress_rate", fixed(rate(watched), 2)),
                ("plain_cpu_per_\(perUnit)", fixed(cpu(plain), 3)), ("progress_cpu_per_\(perUnit)", fixed(cpu(watched), 3)),
                ("throughput_cost_pct", fixed((1 - rate(watched) / rate(plain)) * 100, 3)),
                ("cpu_cost_pct", fixed((cpu(watched) / cpu(plain) - 1) * 100, 3)),
            ]
            // Each watched phase against its two plain neighbours: the median, and how many there were.
            let neighbours = meter.neighbourCosts(rate: rate, cpu: cpu)
            if !neighbours.throughput.isEmpty {
                report.extra += [
                    ("neighbour_phases", "\(neighbours.throughput.count)"),
                    ("neighbour_throughput_cost_pct", fixed(median(neighbours.throughput), 3)),
                    ("neighbour_cpu_cost_pct", fixed(median(neighbours.cpu), 3)),
                ]
            }
        }
        report.requests = tally.succeeded
        report.bytes = tally.bytes
        report.errors = tally.failed
        report.firstError = tally.firstError
        return report
    }

    /// Runs `count` copies of `body` as child tasks and sums their tallies.
    static func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) async -> Tally) async -> Tally {
        await withTaskGroup(of: Tally.self) { group in
            for index in 0..<count { group.addTask { await body(index) } }
            var total = Tally()
            for await tally in group { total.add(tally) }
            return total
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (whole, attoseconds) = duration.components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}

/// Counts of one task's requests.
struct Tally: Sendable {
    var succeeded = 0
    var failed = 0
    var bytes = 0
    var firstError: String?
    var attempts: Int { succeeded + failed }

    mutating func record(_ request: () async throws -> Int) async {
        do {
            bytes += try await request()
            succeeded += 1
        } catch {
            failed += 1
            if firstError == nil { firstError = "\(error)" }
        }
    }

    mutating func add(_ other: Tally) {
        succeeded += other.succeeded
        failed += other.failed
        bytes += other.bytes
        firstError = firstError ?? other.firstError
    }
}

/// `count` copies of one chunk as an async sequence: a streamed request body whose producer costs nothing,
/// so an upload measures the client, not the source. The same storage is yielded each time (no copy).
public struct RepeatedChunks<Chunk: Sendable>: AsyncSequence, Sendable {
    public typealias Element = Chunk
    let chunk: Chunk
    let count: Int

    public init(_ chunk: Chunk, count: Int) {
        self.chunk = chunk
        self.count = count
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let chunk: Chunk
        var left: Int
        public mutating func next() async -> Chunk? {
            guard left > 0 else { return nil }
            left -= 1
            return chunk
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunk: chunk, left: count) }
}

/// The two halves of an alternating run: each phase's wall time and CPU time go to the half of its parity (even:
/// plain, odd: with progress), and each request to the half of the phase it started in. Each phase is also kept on
/// its own, for the neighbour estimate (`neighbourCosts`).
final class PhaseMeter: Sendable {
    struct Half {
        var nanoseconds: UInt64 = 0
        var cpuSeconds = 0.0
        var requests = 0
        var bytes = 0
    }
    private struct State {
        var phase: UInt64 = 0
        var phaseStart: UInt64 = 0
        var cpuAtPhaseStart = 0.0
        var halves = [Half(), Half()]
        /// Phase index → its own figures.
        var each: [UInt64: Half] = [:]
        var phases = 0
    }
    private let state = Mutex(State())

    static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    func begin() {
        let now = Self.monotonicNanoseconds(), cpu = Memory.cpuSeconds()
        state.withLock { $0.phaseStart = now; $0.cpuAtPhaseStart = cpu; $0.phases = 1 }
    }

    /// A request starts in `phase`: if that is a new phase, the last one's time and CPU are booked.
    func enter(phase: UInt64) {
        state.withLock { state in
            guard phase != state.phase else { return }
            close(&state)
            state.phase = phase
            state.phases += 1
        }
    }

    func count(phase: UInt64, requests: Int, bytes: Int) {
        state.withLock { state in
            state.halves[Int(phase % 2)].requests += requests
            state.halves[Int(phase % 2)].bytes += bytes
            state.each[phase, default: Half()].requests += requests
            state.each[phase, default: Half()].bytes += bytes
        }
    }

    func end() { state.withLock { close(&$0) } }

    var phases: Int { state.withLock { $0.phases } }

    func halves() -> [Half] { state.withLock { $0.halves } }

    /// For each watched (odd) phase with both neighbours: its cost against the mean of the plain phases before and
    /// after it, which cancels a drift of the machine's speed that is steady over three phases. `rate` and `cpu`
    /// make a phase's throughput and CPU per unit. The first and last phases are left out (warm-up, the tail).
    func neighbourCosts(rate: (Half) -> Double, cpu: (Half) -> Double) -> (throughput: [Double], cpu: [Double]) {
        let each = state.withLock { $0.each }
        var throughput: [Double] = [], cpuCosts: [Double] = []
        let last = each.keys.max() ?? 0
        for (index, watched) in each where index % 2 == 1 && index > 1 && index + 2 < last {
            guard let before = each[index - 1], let after = each[index + 1],
                  watched.requests > 0, before.requests > 0, after.requests > 0 else { continue }
            let plainRate = (rate(before) + rate(after)) / 2
            let plainCPU = (cpu(before) + cpu(after)) / 2
            throughput.append((1 - rate(watched) / plainRate) * 100)
            cpuCosts.append((cpu(watched) / plainCPU - 1) * 100)
        }
        return (throughput, cpuCosts)
    }

    private func close(_ state: inout State) {
        let now = Self.monotonicNanoseconds(), cpu = Memory.cpuSeconds()
        let index = Int(state.phase % 2)
        state.halves[index].nanoseconds += now - state.phaseStart
        state.halves[index].cpuSeconds += cpu - state.cpuAtPhaseStart
        state.each[state.phase, default: Half()].nanoseconds += now - state.phaseStart
        state.each[state.phase, default: Half()].cpuSeconds += cpu - state.cpuAtPhaseStart
        state.phaseStart = now
        state.cpuAtPhaseStart = cpu
    }
}
