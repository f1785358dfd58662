// -w / --write-out, -D / --dump-header and the heads -i shows: what one transfer did, recorded by an observer
// (docs/observers.md) and written in curl's formats.
//
// Timings come from the client's observer events, measured from the moment ahttp started the transfer:
//   time_connect, time_appconnect  the connection was leased (new or reused). The library reports one mark for
//                                  "connected" — after TCP and, for https, after the TLS handshake — so
//                                  time_connect includes the handshake on https, where curl's stops after TCP.
//                                  time_appconnect is that mark for https and 0 for http, as curl.
//   time_pretransfer               the request head was written
//   time_starttransfer             the response head arrived (curl: the first byte)
//   time_redirect                  the last redirect was decided (curl: the final transfer started)
//   time_total                     the body ended (or the transfer failed)
// time_namelookup has no event of its own: it is reported as 0 (see docs/cli.md).

import AsyncHTTP
import HTTPTypes
import Synchronization

/// One response head as it arrived.
struct ReceivedHead: Sendable {
    var status: HTTPResponse.Status
    var version: HTTPVersion
    var headers: HTTPFields
    /// A proxy's answer to CONNECT, which curl's -i and -D show before the origin's head.
    var isTunnel = false

    /// The head as curl writes it for -i and -D: status line, fields, blank line, CRLF line ends.
    var text: String {
        "HTTP/\(version.major).\(version.minor) \(status.code) \(status.reasonPhrase)\r\n"
            + headers.map { "\($0.name): \($0.value)\r\n" }.joined() + "\r\n"
    }
}

/// What the events of one transfer said. ahttp runs its URLs one after the other, so one recorder serves every
/// transfer: `reset` starts the next.
final class TransferRecorder: HTTPClientObserver {
    struct Record: Sendable {
        var start = ContinuousClock.now
        var connected: Duration?
        var headSent: Duration?
        var headReceived: Duration?
        var lastRedirect: Duration?
        var end: Duration?
        var newConnections = 0
        var redirects = 0
        var tls = false
        var route = ""
        /// Every head, in the order they came: the proxy's answers to CONNECT among the origin's.
        var heads: [ReceivedHead] = []
        /// The origin's last head.
        var lastHead: ReceivedHead? { heads.last { !$0.isTunnel } }
        var requestBytes = 0
        var uploaded = 0
        var wireBytesReceived = 0
        /// The body bytes of the last response head's hop as they crossed the wire (before decoding), as curl's
        /// %{size_download} counts them: reset by each head, so a redirect's drained body is not counted.
        var hopWireBytesReceived = 0
        /// The method of the last request head sent (a POST turned into a GET by a redirect is a GET), for %{method}.
        var lastMethod: String?
        /// The URL the last redirect followed led to, for %{url_effective} when the transfer then failed.
        var lastRedirectURL: String?
    }
    private let state = Locked(Record())

    func reset() { state.withLock { $0 = Record() } }
    var record: Record { state.withLock { $0 } }

    func observe(_ event: HTTPClientEvent) {
        state.withLock { record in
            let since = record.start.duration(to: event.time)
            switch event.kind {
            case .connectionAcquired(let info):
                record.connected = since
                if !info.reused { record.newConnections += 1 }
                record.tls = info.route.hasPrefix("https")
                record.route = info.route
                for answer in info.tunnelResponses {
                    record.heads.append(ReceivedHead(status: answer.status, version: answer.version, headers: answer.headers,
                                                     isTunnel: true))
                }
            case .headSent(let bytes):
                record.headSent = since
                record.requestBytes += bytes.count
                if let space = bytes.firstIndex(of: UInt8(ascii: " ")) {
                    record.lastMethod = String(decoding: bytes[..<space], as: UTF8.self)
                }
            case .bodyBytesSent(let total):
                record.uploaded = max(record.uploaded, total)
            case .headReceived(let status, let version, let headers):
                record.headReceived = since
                record.heads.append(ReceivedHead(status: status, version: version, headers: headers))
                record.hopWireBytesReceived = 0
            case .bodyBytesReceived(let count):
                record.wireBytesReceived += count
                record.hopWireBytesReceived += count
            case .redirect(_, let location):
                record.lastRedirectURL = location
                record.redirects += 1
                record.lastRedirect = since
            case .finished:
                record.end = since
            case .failed(let error, _):
                record.end = since
                // A tunnel the proxy refused: its answers, which curl's -i and -D show (there is no origin head).
                for round in error.proxyRounds {
                    record.heads.append(ReceivedHead(status: round.status, version: round.version, headers: round.headers,
                                                     isTunnel: true))
                }
            case .queued, .retry:
                break
            }
        }
    }
}

/// A -w value: curl writes numbers bare in %{json}, strings quoted, and a string it does not have as null.
enum WriteOutValue {
    case string(String)
    /// A string curl has no value for (no error message, no output file, no Content-Type, no redirect): nothing
    /// in a format, `null` in %{json} (tool_writeout.c's writeString).
    case unset
    case integer(Int)
    /// A status code: three digits in a format (`000` for none), a number in %{json} (`0` for none), as curl's
    /// writeLong writes %{http_code} and %{response_code}.
    case statusCode(Int?)
    case seconds(Duration)

    /// As curl writes it in a format: times with six decimals (`0.001234`).
    var text: String {
        switch self {
        case .string(let text): text
        case .unset: ""
        case .integer(let number): String(number)
        case .statusCode(let code): code.map(threeDigits) ?? "000"
        case .seconds(let duration): secondsText(duration)
        }
    }

    var json: String {
        switch self {
        case .string(let text): jsonString(text)
        case .unset: "null"
        case .integer(let number): String(number)
        case .statusCode(let code): String(code ?? 0)
        case .seconds(let duration): secondsText(duration)
        }
    }
}

func secondsText(_ duration: Duration) -> String {
    let micros = max(0, duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000)
    let fraction = String(micros % 1_000_000)
    return String(micros / 1_000_000) + "." + String(repeating: "0", count: 6 - fraction.count) + fraction
}

func jsonString(_ text: String) -> String {
    var result = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": result += "\\\""
        case "\\": result += "\\\\"
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: result.unicodeScalars.append(scalar)
        }
    }
    return result + "\""
}

/// What -w needs to know about one transfer beyond the recorder.
struct TransferOutcome {
    /// The URL the transfer ended at, without its password.
    var effectiveURL: String
    var method: String
    var status: Int?
    var bodyBytes: Int
    var exitCode: Int32
    var errorMessage: String
    var outputFile: String?
    /// `%{ssl_verify_result}`: 0 when the certificate was verified (or not asked for), 1 when it failed.
    var verifyResult: Int
    /// `%{cache_status}` (ahttp's own): hit, miss, revalidated or stale; empty without --cache.
    var cacheStatus = ""
    /// The response's head, for a response no event reported (a cache hit).
    var finalHead: ReceivedHead?
    /// `%{urlnum}`: the URL's place on the command line, from 0.
    var urlNumber = 0
    /// The proxy's status to a CONNECT it refused (the transfer failed before any head came).
    var refusedConnect: Int?
}

/// The variables -w knows, for one transfer.
func writeOutValues(_ outcome: TransferOutcome, _ record: TransferRecorder.Record) -> [(String, WriteOutValue)] {
    let zero = Duration.zero
    let total = record.end ?? record.start.duration(to: .now)
    let seconds = Double(total.components.seconds) + Double(total.components.attoseconds) / 1e18
    // As curl: the bytes of the last hop's body as they came (compressed ones under --compressed, those of a body
    // cut short too); a response no event reported (a cache hit) counts what was read.
    let downloaded = record.lastHead != nil ? record.hopWireBytesReceived : outcome.bodyBytes
    let speed = seconds > 0 ? Int(Double(downloaded) / seconds) : 0
    // A transfer that failed after a head came (a timeout in the body, a redirect limit) shows that head's status.
    let status = outcome.status ?? record.lastHead?.status.code
    let uploadSpeed = seconds > 0 ? Int(Double(record.uploaded) / seconds) : 0
    let head = record.lastHead ?? outcome.finalHead
    let url = try? HTTPURL(outcome.effectiveURL)
    let redirectURL = head.flatMap { head in
        (300..<400).contains(head.status.code) ? head.headers[.location].flatMap { try? url?.resolving($0) } : nil
    }
    let (remoteHost, remotePort) = routeAddress(record.route)
    // From the text when the URL shown is the user's own and does not parse as it is (non-ASCII bytes, JSON in the
    // query: what was sent is its encoding); none for a URL refused (3), as curl, which never parsed it.
    let shownScheme = outcome.exitCode == 3 ? nil
        : outcome.effectiveURL.firstRange(of: "://").map { String(outcome.effectiveURL[..<$0.lowerBound]) }
    func optional(_ text: String?) -> WriteOutValue { text.map { .string($0) } ?? .unset }
    var values: [(String, WriteOutValue)] = [
        ("cache_status", .string(outcome.cacheStatus)),
        ("content_type", optional(head?.headers[.contentType])),
        ("errormsg", outcome.exitCode == 0 ? .unset : .string(outcome.errorMessage)),
        ("exitcode", .integer(Int(outcome.exitCode))),
        ("filename_effective", optional(outcome.outputFile)),
        ("http_code", .statusCode(status)),
        ("http_connect", .statusCode(outcome.refusedConnect ?? record.heads.last(where: \.isTunnel)?.status.code)),
        ("http_version", .string(head.map { $0.version.minor == 0 && $0.version.major == 1 ? "1.0" : "\($0.version.major).\($0.version.minor)" } ?? "0")),
        ("method", .string(record.lastMethod ?? outcome.method)),
        ("num_connects", .integer(record.newConnections)),
        ("num_headers", .integer(head?.headers.count ?? 0)),
        ("num_redirects", .integer(record.redirects)),
        ("redirect_url", optional(redirectURL.map { HTTPURL.redacting($0.description) })),
        ("remote_ip", .string(remoteHost)),
        ("remote_port", .integer(remotePort)),
        ("response_code", .statusCode(status)),
        ("scheme", .string((url?.scheme ?? shownScheme ?? "").uppercased())),
        ("size_download", .integer(downloaded)),
        ("size_header", .integer(record.heads.reduce(0) { $0 + $1.text.utf8.count })),
        ("size_request", .integer(record.requestBytes)),
        ("size_upload", .integer(record.uploaded)),
        ("speed_download", .integer(speed)),
        ("speed_upload", .integer(uploadSpeed)),
        ("ssl_verify_result", .integer(outcome.verifyResult)),
        ("time_appconnect", .seconds(record.tls ? record.connected ?? zero : zero)),
        ("time_connect", .seconds(record.connected ?? zero)),
        ("time_namelookup", .seconds(zero)),
        ("time_pretransfer", .seconds(record.headSent ?? zero)),
        ("time_redirect", .seconds(record.lastRedirect ?? zero)),
        ("time_starttransfer", .seconds(record.headReceived ?? zero)),
        ("time_total", .seconds(total)),
        ("url", .string(outcome.effectiveURL)),
        ("url_effective", .string(outcome.effectiveURL)),
        ("urlnum", .integer(outcome.urlNumber)),
    ]
    values.append(("json", .string("")))  // placeholder so %{json} is known; rendered in `formatWriteOut`
    values.append(("header_json", .string("")))
    return values
}

private func threeDigits(_ code: Int) -> String {
    let text = String(code)
    return String(repeating: "0", count: max(0, 3 - text.count)) + text
}

/// `scheme://host:port` (the origin part of a route) → host and port (0 when there was no connection, as curl's
/// CURLINFO_PRIMARY_PORT).
private func routeAddress(_ route: String) -> (String, Int) {
    let origin = route.split(separator: " ").first.map(String.init) ?? route
    guard let url = try? HTTPURL(origin) else { return ("", 0) }
    return (url.host, url.port)
}

/// `%{header_json}`: the last response head's fields, names lowercased, each name once with all its values in an
/// array, in the order they came (curl's layout).
func headerJSON(_ head: ReceivedHead?) -> String {
    guard let head else { return "{}" }
    var order: [String] = []
    var values: [String: [String]] = [:]
    for field in head.headers {
        let name = field.name.canonicalName
        if values[name] == nil { order.append(name) }
        values[name, default: []].append(field.value)
    }
    return "{" + order.map { name in
        jsonString(name) + ":[" + values[name]!.map(jsonString).joined(separator: ",") + "]"
    }.joined(separator: ",\n") + "\n}"
}

/// Where -w writes: standard output until `%{stderr}` switches it (and `%{stdout}` back).
enum WriteOutStream { case stdout, stderr }

/// Expands a -w format: `%{name}`, `%header{name}`, `%{json}`, `%{header_json}`, `%%`, and the escapes `\n`,
/// `\r`, `\t`, `\\`; `%{onerror}` ends the format there unless the transfer failed (a non-zero `exitcode`). An
/// unknown variable is left out with a warning on stderr, as curl does. Returns the pieces with the stream each
/// goes to.
func formatWriteOut(_ format: String, values: [(String, WriteOutValue)], head: ReceivedHead?) -> [(WriteOutStream, String)] {
    var pieces: [(WriteOutStream, String)] = []
    var stream = WriteOutStream.stdout
    var current = ""
    let table = Dictionary(values, uniquingKeysWith: { first, _ in first })
    var characters = Substring(format)
    func flush() {
        if !current.isEmpty { pieces.append((stream, current)) }
        current = ""
    }
    while let character = characters.first {
        characters = characters.dropFirst()
        if character == "\\", let next = characters.first {
            switch next {
            case "n": current += "\n"
            case "r": current += "\r"
            case "t": current += "\t"
            case "\\": current += "\\"
            default: current += "\\" + String(next)
            }
            characters = characters.dropFirst()
            continue
        }
        guard character == "%" else {
            current.append(character)
            continue
        }
        if characters.first == "%" {
            current += "%"
            characters = characters.dropFirst()
        } else if characters.hasPrefix("{"), let end = characters.firstIndex(of: "}") {
            let name = String(characters[characters.index(after: characters.startIndex)..<end])
            characters = characters[characters.index(after: end)...]
            switch name {
            case "stderr": flush(); stream = .stderr
            case "stdout": flush(); stream = .stdout
            case "onerror":
                // curl: the rest of the format is written only when the transfer failed.
                if case .integer(let code) = table["exitcode"], code != 0 { break }
                flush()
                return pieces
            case "json":
                current += "{" + values.filter { $0.0 != "json" && $0.0 != "header_json" }
                    .map { jsonString($0.0) + ":" + $0.1.json }.joined(separator: ",") + "}"
            case "header_json": current += headerJSON(head)
            default:
                if let value = table[name] {
                    current += value.text
                } else {
                    printError("unknown --write-out variable: '\(name)'")
                }
            }
        } else if characters.hasPrefix("header{"), let end = characters.firstIndex(of: "}") {
            let name = String(characters[characters.index(characters.startIndex, offsetBy: 7)..<end])
            characters = characters[characters.index(after: end)...]
            if let fieldName = HTTPField.Name(name), let head {
                current += head.headers[values: fieldName].joined(separator: ", ")
            }
        } else {
            current += "%"
        }
    }
    flush()
    return pieces
}

/// -w: the format's pieces written to standard output and standard error.
func writeOut(_ format: String, _ outcome: TransferOutcome, _ record: TransferRecorder.Record) {
    for (stream, text) in formatWriteOut(format, values: writeOutValues(outcome, record), head: record.lastHead ?? outcome.finalHead) {
        try? writeAll(stream == .stdout ? 1 : 2, Array(text.utf8)[...])
    }
}
