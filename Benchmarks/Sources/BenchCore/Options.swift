// The command line every benchmark client shares, so run.sh can call them interchangeably:
//
//   bench-<client> --scenario seq|conc|conc256|hosts100|download|gzip|upload|tls-seq|tls-new|memory|upload-file|
//                             upload-multipart|download-file|cache-hit|cache-revalidate --url BASE
//                  [--requests N] [--concurrency C] [--connections-per-host P] [--hosts H] [--cacert FILE]
//                  [--seconds S] [--file PATH] [--directory DIR]

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one run measures. Paths on the server are fixed per scenario (see ``Scenario/path(client:)``).
public enum Scenario: String, Sendable, CaseIterable {
    /// One connection, sequential GETs of a 1 KiB file, for `--seconds`.
    case seq
    /// `--concurrency` tasks (32 in run.sh) sharing a pool of as many connections, for `--seconds`.
    case conc
    /// As `conc`, with 256 tasks and a pool of 256 connections in run.sh: a crawler's or a gateway's fan-out to
    /// one host.
    case conc256
    /// `--concurrency` tasks (32 in run.sh) taking turns over `--hosts` virtual hosts (100 in run.sh), each request
    /// to the next host in turn, each host its own pool of at most `--connections-per-host` connections, for
    /// `--seconds`. The hosts are `h000.`, `h001.`, … prefixed to the host of `--url` (run.sh resolves them to
    /// 127.0.0.1 in a private `/etc/hosts`).
    case hosts100
    /// `--requests` sequential GETs of a 256 MiB file, streamed and discarded.
    case download
    /// `--requests` sequential GETs of a 16 MiB JSON served gzipped, decompressed and discarded.
    case gzip
    /// `--requests` sequential 64 MiB streamed PUTs.
    case upload
    /// As `seq`, over TLS.
    case tlsSeq = "tls-seq"
    /// A new TLS connection per sequential 1 KiB GET, for `--seconds`.
    case tlsNew = "tls-new"
    /// `--requests` (4,000 in run.sh) new TLS connections, or as many as `--seconds` allow (at least 100);
    /// resident memory after 100 and at the end.
    case memory
    /// `--requests` sequential PUTs of the file `--file` (256 MiB in run.sh), streamed from disk.
    case uploadFile = "upload-file"
    /// As `upload-file`, the file sent as the one file part of a `multipart/form-data` body (PUT, so that
    /// nginx's dav location stores it; curl `-X PUT -F`).
    case uploadMultipart = "upload-multipart"
    /// `--requests` sequential GETs of the 256 MiB file, each written to a file under `--directory`.
    case downloadFile = "download-file"
    /// Sequential GETs of a fresh (`max-age`) 1 KiB file through the client's cache, for `--seconds`; the
    /// first request fills the cache before the clock starts.
    case cacheHit = "cache-hit"
    /// Sequential GETs of a 1 KiB file served with `Cache-Control: no-cache` and an ETag, through the client's
    /// cache: each is a conditional request answered 304 and served from the stored body.
    case cacheRevalidate = "cache-revalidate"

    /// The path requested, relative to `--url`.
    public func path(client: String) -> String {
        switch self {
        case .seq, .conc, .conc256, .tlsSeq, .tlsNew, .memory: "/1k.bin"
        // Served by the virtual hosts only: a request that reached the default server (a wrong Host) gets a 404.
        case .hosts100: "/hosts/1k.bin"
        case .download, .downloadFile: "/256m.bin"
        case .uploadFile: "/dav/\(client)-file.bin"
        case .uploadMultipart: "/dav/\(client)-multipart.bin"
        case .cacheHit: "/cache/fresh/1k.bin"
        case .cacheRevalidate: "/cache/no-cache/1k.bin"
        case .gzip: "/gz/data.json"
        case .upload: "/dav/\(client).bin"
        }
    }

    /// Scenarios that loop until `--seconds` have passed (or `--requests` are done, whichever comes first).
    public var isTimed: Bool {
        switch self {
        case .seq, .conc, .conc256, .hosts100, .tlsSeq, .tlsNew, .cacheHit, .cacheRevalidate: true
        case .download, .gzip, .upload, .memory, .uploadFile, .uploadMultipart, .downloadFile: false
        }
    }
}

/// The parsed command line.
public struct Options: Sendable {
    public var scenario: Scenario = .seq
    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`, without a trailing slash.
    public var baseURL = "http://127.0.0.1:8080"
    /// For timed scenarios an upper bound; for the others the exact count.
    public var requests = 1_000_000
    /// Concurrent tasks (and, for `conc` and `conc256`, connections); 1 elsewhere.
    public var concurrency = 1
    /// The pool's connections per host: `--connections-per-host`, or `concurrency` when not given.
    public var connectionsPerHost: Int { connectionsPerHostOption ?? concurrency }
    public var connectionsPerHostOption: Int?
    /// `hosts100`: how many virtual hosts the requests go round.
    public var hosts = 100
    /// The PEM certificate (self-signed by run.sh) that TLS scenarios trust; verification stays on.
    public var cacert: String?
    /// The duration of timed scenarios.
    public var seconds = 5.0
    /// Upload size per request (64 MiB) and the chunk it is streamed in (64 KiB, nginx's and curl's order of size).
    public var uploadBytes = 64 << 20
    public var uploadChunkBytes = 64 << 10
    /// The file `upload-file` and `upload-multipart` send.
    public var file: String?
    /// Where `download-file` writes (a tmpfs directory in run.sh); each download's file is removed after it.
    public var directory = "/tmp"
    /// Watch each request's progress with a handler that does nothing (clients that have progress handlers):
    /// the cost of observing progress, against the same run without it.
    public var progress = false
    /// `--alternate-progress MS`: one run that switches a do-nothing progress handler on and off every MS
    /// milliseconds (`conc`) or every request (`download`) and reports both halves and the cost (see
    /// `Bench.alternatingProgress`). Nil: off.
    public var alternateProgressMilliseconds: Int?
    /// `--batch-threads` (AsyncHTTP only): `HTTPClient.threadScheduling = .batch`, the opt-in that puts the
    /// threads requests resume on under `SCHED_BATCH`. Off by default, as in the library.
    public var batchThreads = false

    /// The full URL for this scenario.
    public func url(client: String) -> String { baseURL + scenario.path(client: client) }

    /// `hosts100`: the URL on each virtual host, `hNNN.` put in front of the host of `--url`
    /// (`http://bench.test:18080` gives `http://h000.bench.test:18080/hosts/1k.bin`, …).
    public func hostURLs(client: String) -> [String] {
        guard let schemeEnd = baseURL.firstRange(of: "://") else { return [url(client: client)] }
        let scheme = baseURL[..<schemeEnd.upperBound], rest = baseURL[schemeEnd.upperBound...]
        return (0..<hosts).map { index in
            let digits = String(index)
            let name = "h" + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
            return scheme + name + "." + rest + scenario.path(client: client)
        }
    }

    /// Parses `CommandLine.arguments`; prints usage and exits with status 2 on anything unknown.
    public static func parse(_ arguments: [String] = CommandLine.arguments) -> Options {
        var options = Options()
        var index = 1
        func value() -> String {
            index += 1
            guard index < arguments.count else { usage("missing value for \(arguments[index - 1])") }
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--scenario":
                let name = value()
                guard let scenario = Scenario(rawValue: name) else { usage("unknown scenario '\(name)'") }
                options.scenario = scenario
            case "--url":
                var url = value()
                while url.hasSuffix("/") { url.removeLast() }
                options.baseURL = url
            case "--requests": options.requests = positiveInt(value(), "--requests")
            case "--concurrency": options.concurrency = positiveInt(value(), "--concurrency")
            case "--connections-per-host": options.connectionsPerHostOption = positiveInt(value(), "--connections-per-host")
            case "--hosts": options.hosts = positiveInt(value(), "--hosts")
            case "--cacert": options.cacert = value()
            case "--seconds":
                let text = value()
                guard let seconds = Double(text), seconds > 0 else { usage("--seconds wants a positive number, not '\(text)'") }
                options.seconds = seconds
            case "--upload-mib": options.uploadBytes = positiveInt(value(), "--upload-mib") << 20
            case "--file": options.file = value()
            case "--directory": options.directory = value()
            case "--progress": options.progress = true
            case "--alternate-progress": options.alternateProgressMilliseconds = positiveInt(value(), "--alternate-progress")
            case "--batch-threads": options.batchThreads = true
            case "-h", "--help": usage(nil)
            default: usage("unknown argument '\(arguments[index])'")
            }
            index += 1
        }
        return options
    }

    private static func positiveInt(_ text: String, _ name: String) -> Int {
        guard let number = Int(text), number > 0 else { usage("\(name) wants a positive integer, not '\(text)'") }
        return number
    }

    static func usage(_ problem: String?) -> Never {
        let text = """
        usage: \(CommandLine.arguments.first ?? "bench") --scenario \(Scenario.allCases.map(\.rawValue).joined(separator: "|")) \
        --url BASE [--requests N] [--concurrency C] [--connections-per-host P] [--hosts H] [--cacert FILE] [--seconds S] [--upload-mib M] \
        [--file PATH] [--directory DIR] [--progress] [--alternate-progress MS] [--batch-threads]

        """
        if let problem {
            printToStandardError("error: \(problem)\n\(text)")
            exit(2)
        }
        print(text, terminator: "")
        exit(0)
    }
}
