@_spi(Benchmarks) import AsyncHTTP
import BenchCore
import HTTPTypes

#if canImport(Glibc)
import Glibc
#endif

/// AsyncHTTP as its README shows it: one `HTTPClient` with the default configuration (its built-in middleware
/// included), `send`, and the body read with `for try await`.
struct AsyncHTTPDriver: BenchDriver {
    let client: HTTPClient
    /// `--progress`: every request carries a progress handler that does nothing.
    let progress: HTTPProgressHandler?

    init(_ options: Options) throws {
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerHost = options.connectionsPerHost
        if let cacert = options.cacert {
            configuration.tls.trustRoots = .file(cacert)
        }
        if options.scenario == .cacheHit || options.scenario == .cacheRevalidate {
            // The download cache on disk (a tmpfs directory in run.sh), with its default policy.
            configuration.cache = try HTTPCache(directory: "\(options.directory)/asynchttp-cache-\(getpid())")
        }
        if options.batchThreads { HTTPClient.threadScheduling = .batch }
        client = HTTPClient(configuration: configuration)
        progress = options.progress ? HTTPProgressHandler { _ in } : nil
    }

    func get(_ url: String, newConnection: Bool) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.persistentConnection = !newConnection
        if let progress { request.progressHandler = progress }
        return try await fetch(request)
    }

    func get(_ url: String, observingProgress: Bool) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        if observingProgress { request.progressHandler = Self.noProgress }
        return try await fetch(request)
    }

    /// Sends a GET, reads its whole body and returns its size; a status other than 200 is an error.
    private func fetch(_ request: HTTPClientRequest) async throws -> Int {
        let response = try await client.send(request)
        var bytes = 0
        for try await chunk in response.body { bytes += chunk.count }
        guard response.status.code == 200 else { throw BenchError("GET \(request.url): status \(response.status.code)") }
        return bytes
    }

    /// The handler of `--alternate-progress`'s watched half: does nothing, as `--progress`'s.
    static let noProgress = HTTPProgressHandler { _ in }

    func getDecompressed(_ url: String) async throws -> Int {
        // The built-in compression middleware (on by default) sends `Accept-Encoding: gzip, deflate` and
        // inflates the body as it streams in.
        let response = try await client.send(HTTPClientRequest(url: url))
        var bytes = 0
        for try await chunk in response.body { bytes += chunk.count }
        guard response.status.code == 200 else { throw BenchError("GET \(url): status \(response.status.code)") }
        guard response.isCompressed else { throw BenchError("GET \(url): the response was not compressed") }
        return bytes
    }

    func put(_ url: String, chunk: [UInt8], total: Int) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .put
        request.body = .stream(RepeatedChunks(chunk, count: total / chunk.count), length: .known(total))
        let response = try await client.send(request)
        for try await _ in response.body {}
        guard (200..<300).contains(response.status.code) else { throw BenchError("PUT \(url): status \(response.status.code)") }
        return total
    }

    /// The file as the body (`.file`: streamed from disk, replayable, with its length), or as the one file
    /// part of a `MultipartForm` (its length computed up front, so it goes out with `Content-Length` too).
    func putFile(_ url: String, path: String, multipart: Bool) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .put
        if multipart {
            var form = MultipartForm()
            try form.appendFile("file", path: path, filename: "upload.bin", contentType: "application/octet-stream")
            try request.setForm(form)
        } else {
            request.body = try .file(path)
        }
        let size = try HTTPClientRequest.Body.file(path).length ?? 0
        let response = try await client.send(request)
        for try await _ in response.body {}
        guard (200..<300).contains(response.status.code) else { throw BenchError("PUT \(url): status \(response.status.code)") }
        return size
    }

    /// `download(_:to:)`: a temporary file beside the destination, renamed into place when the body is complete.
    func download(_ url: String, to path: String) async throws -> Int {
        let result = try await client.download(HTTPClientRequest(url: url), to: path)
        guard result.status.code == 200, result.written else { throw BenchError("GET \(url): status \(result.status.code)") }
        return result.fileSize
    }

    func shutdown() async throws {
        await client.shutdown()
    }
}

/// `bench-asynchttp --floor HOST PORT SECONDS [MODE...]`: the `seq` exchange four ways, each short of the
/// benchmark's client (all four unless modes are named; a mode named twice runs twice, so `transport send transport
/// send` interleaves two). `loop`: the library's socket and event loop (``TransportFloorBenchmark``), so each
/// response still wakes the epoll thread, which resumes the task on the cooperative pool. `transport`: the
/// client's transport without `send` and its middleware. `send`: `HTTPClient.send`, middleware included, without
/// the benchmark's runner. `blocking`: a blocking socket on one thread, as wrk or curl would read it. One JSON
/// line each, with the process's CPU time per exchange.
func floor(host: String, port: Int, seconds: Double, modes: [String]) async {
    let request = Array("GET /1k.bin HTTP/1.1\r\nHost: \(host):\(port)\r\nUser-Agent: AsyncHTTP/0.1\r\nAccept-Encoding: gzip, deflate\r\n\r\n".utf8)
    let url = "http://\(host):\(port)/1k.bin"
    func report(_ mode: String, _ exchanges: Int?, _ cpu: Double) {
        guard let exchanges, exchanges > 0 else { return print("{\"mode\":\"\(mode)\",\"errors\":1}") }
        let rate = Double(exchanges) / seconds
        print("{\"mode\":\"\(mode)\",\"requests\":\(exchanges),\"req_per_s\":\(Int(rate)),\"cpu_us_per_request\":\(Int(cpu / Double(exchanges) * 1e6))}")
    }
    let client = HTTPClient()
    for mode in modes {
        let before = Memory.cpuSeconds()
        let exchanges: Int?
        switch mode {
        case "loop": exchanges = await TransportFloorBenchmark.run(host: host, port: port, request: request, seconds: seconds)
        case "transport": exchanges = await TransportFloorBenchmark.transportRoundTrips(client: client, url: url, seconds: seconds)
        case "send":
            exchanges = await TransportFloorBenchmark.roundTrips(seconds: seconds) { try await client.send(HTTPClientRequest(url: url)) }
        case "blocking": exchanges = blockingExchanges(host: host, port: port, request: request, seconds: seconds)
        default: exchanges = nil
        }
        report(mode, exchanges, Memory.cpuSeconds() - before)
    }
    await client.shutdown()
}

/// `bench-asynchttp --chain N`: the built-in middleware's own CPU time per request, with no I/O
/// (``ChainBenchmark``): N requests through no step, all of them, and each alone, in five interleaved rounds;
/// prints the median and the fastest round of each, in nanoseconds per request. Two builds compared this way
/// run at the same time (one per core), so the machine's drift weighs on both alike.
func chain(iterations: Int) async throws {
    let names = ChainBenchmark.stepNames
    var variants: [(name: String, steps: [Int]?)] = [("none", []), ("all", nil)]
    for (index, name) in names.enumerated() { variants.append((name, [index])) }
    var results: [String: [Double]] = [:]
    for _ in 0..<5 {
        for variant in variants {
            let nanoseconds = try await ChainBenchmark.run(url: "http://127.0.0.1:18080/1k.bin", steps: variant.steps, iterations: iterations)
            results[variant.name, default: []].append(nanoseconds)
        }
    }
    for variant in variants {
        let sorted = results[variant.name]!.sorted()
        print(variant.name, "median", Int(sorted[2]), "ns; min", Int(sorted[0]))
    }
}

/// Keep-alive exchanges on a blocking IPv4 socket, each response read until its `Content-Length` is complete.
func blockingExchanges(host: String, port: Int, request: [UInt8], seconds: Double) -> Int? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var one: Int32 = 1
    _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return nil }
    let end = ContinuousClock.now + .nanoseconds(Int64(seconds * 1e9))
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    var exchanges = 0
    while ContinuousClock.now < end {
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return nil }
        var received = 0
        var expected: Int?
        var head: [UInt8] = []
        while expected.map({ received < $0 }) ?? true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return nil }
            received += n
            if expected == nil {
                head += buffer[..<n]
                expected = TransportFloorBenchmark.responseLength(head)
            }
        }
        exchanges += 1
    }
    return exchanges
}

if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--chain", let iterations = Int(CommandLine.arguments[2]) {
    try await chain(iterations: iterations)
} else if CommandLine.arguments.count >= 5, CommandLine.arguments[1] == "--floor",
   let port = Int(CommandLine.arguments[3]), let seconds = Double(CommandLine.arguments[4]) {
    let modes = Array(CommandLine.arguments.dropFirst(5))
    await floor(host: CommandLine.arguments[2], port: port, seconds: seconds,
                modes: modes.isEmpty ? ["loop", "transport", "send", "blocking"] : modes)
} else {
    // `--batch-threads` runs report as their own client, so that run.sh keeps them apart from the default's.
    let name = CommandLine.arguments.contains("--batch-threads") ? "asynchttp-batch" : "asynchttp"
    await Bench.main(client: name) { options in try AsyncHTTPDriver(options) }
}
