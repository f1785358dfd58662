#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(Glibc)
// Glibc imports RUSAGE_SELF as an enum case; getrusage wants its raw value.
private let RUSAGE_SELF_WHO = __rusage_who_t(RUSAGE_SELF.rawValue)
#else
private let RUSAGE_SELF_WHO = RUSAGE_SELF
#endif

/// Process memory, as the kernel counts it.
public enum Memory {
    /// The peak resident set size in KiB (`getrusage(RUSAGE_SELF).ru_maxrss`, which Linux reports in KiB).
    public static func peakRSSKiB() -> Int {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF_WHO, &usage) == 0 else { return -1 }
        #if canImport(Darwin)
        return Int(usage.ru_maxrss) / 1024  // bytes on Darwin
        #else
        return Int(usage.ru_maxrss)
        #endif
    }

    /// The CPU time this process has used so far, user plus system, in seconds (`getrusage(RUSAGE_SELF)`).
    public static func cpuSeconds() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF_WHO, &usage) == 0 else { return -1 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// The current anonymous resident memory in KiB (`RssAnon` in `/proc/self/status`): the heap, stacks and
    /// buffers the process itself dirtied, without the shared-library pages that dominate a small process's
    /// RSS. -1 where there is no procfs.
    public static func anonymousRSSKiB() -> Int {
        guard let status = try? Files.read("/proc/self/status") else { return -1 }
        for line in status.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("RssAnon:".utf8)) {
            let digits = line.filter { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            return Int(String(decoding: digits, as: UTF8.self)) ?? -1
        }
        return -1
    }

    /// The current resident set size in KiB: the second field of `/proc/self/statm` (pages), times the page
    /// size. -1 where there is no procfs.
    public static func currentRSSKiB() -> Int {
        let fd = open("/proc/self/statm", O_RDONLY)
        guard fd >= 0 else { return -1 }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return -1 }
        let fields = buffer[..<n].split(separator: UInt8(ascii: " "))
        guard fields.count >= 2, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return -1 }
        return pages * sysconf(Int32(_SC_PAGESIZE)) / 1024
    }
}

/// One run's figures, printed as one JSON line.
public struct Report: Sendable {
    public var client: String
    public var scenario: String
    public var requests = 0
    public var seconds = 0.0
    /// Body bytes received (decompressed for `gzip`) or, for `upload`, sent.
    public var bytes = 0
    public var errors = 0
    public var peakRSSKiB = -1
    /// Anonymous resident memory at the end of the run (see ``Memory/anonymousRSSKiB()``).
    public var anonymousRSSKiB = -1
    public var rssAfter100KiB: Int?
    public var rssAfter4000KiB: Int?
    /// The first error, to stderr, so a failing client is visible without changing the JSON.
    public var firstError: String?
    /// Scenario-specific fields, appended to the JSON line as they are (numbers).
    public var extra: [(String, String)] = []

    public init(client: String, scenario: String) {
        self.client = client
        self.scenario = scenario
    }

    /// MB/s in decimal megabytes (10^6 bytes), as curl's `%{speed_download}` / 10^6.
    public var megabytesPerSecond: Double { seconds > 0 ? Double(bytes) / seconds / 1e6 : 0 }
    public var requestsPerSecond: Double { seconds > 0 ? Double(requests) / seconds : 0 }

    public var jsonLine: String {
        var fields: [(String, String)] = [
            ("client", quoted(client)), ("scenario", quoted(scenario)), ("requests", "\(requests)"),
            ("seconds", fixed(seconds, 4)), ("req_per_s", fixed(requestsPerSecond, 1)), ("bytes", "\(bytes)"),
            ("mb_per_s", fixed(megabytesPerSecond, 2)), ("errors", "\(errors)"), ("peak_rss_kb", "\(peakRSSKiB)"),
            ("rss_anon_kb", "\(anonymousRSSKiB)"), ("cpu_s", fixed(Memory.cpuSeconds(), 4)),
        ]
        if let rssAfter100KiB { fields.append(("rss_after_100_kb", "\(rssAfter100KiB)")) }
        if let rssAfter4000KiB { fields.append(("rss_after_4000_kb", "\(rssAfter4000KiB)")) }
        fields += extra
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    public func print() {
        if let firstError { printToStandardError("\(client) \(scenario): \(errors) error(s), first: \(firstError)") }
        Swift.print(jsonLine)
    }
}

/// Writes one line to standard error (file descriptor 2, without touching C's shared `stderr` variable).
public func printToStandardError(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
}

/// A JSON string literal (the few characters JSON requires escaped).
func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case _ where scalar.value < 0x20: out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

/// `value` with `digits` decimals, without Foundation's `String(format:)`.
func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "0" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (value * scale).rounded()
    let integer = Int(scaled / scale)
    var fraction = Int(abs(scaled) - abs(Double(integer)) * scale)
    var text = ""
    for _ in 0..<digits {
        text = String(fraction % 10) + text
        fraction /= 10
    }
    return (value < 0 && integer == 0 ? "-" : "") + String(integer) + (digits > 0 ? "." + text : "")
}

/// The median of `values` (the mean of the middle two for an even count); 0 for none.
func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
