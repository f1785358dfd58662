// --trace-ascii FILE: curl's trace layout, from the client's observer events.
//
//   == Info: Connected to http://127.0.0.1:8080 (#1)
//   => Send header, 78 bytes (0x4e)
//   0000: GET /get HTTP/1.1
//   001d: Host: 127.0.0.1:8080
//   <= Recv header, 17 bytes (0x11)
//   0000: HTTP/1.1 200 OK
//   <= Recv data, 230 bytes (0xe6)
//
// Differences from curl, both on purpose: secrets (Authorization, Proxy-Authorization, Cookie, Set-Cookie values)
// are shown as <redacted>, as -v shows them; and data lines give the byte counts without the bytes (an observer
// sees how many body bytes crossed the socket, not their content). The received head is rebuilt from the parsed
// fields, so its byte count is that of the rebuilt text.

import AsyncHTTP
import HTTPTypes
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class TraceASCII: HTTPClientObserver {
    /// The file, written only under the lock (one event's lines stay together).
    private let fd: Locked<Int32>

    init(path: String) throws {
        if path == "-" {
            fd = Locked(1)
            return
        }
        let opened = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard opened >= 0 else {
            throw UsageError(message: "--trace-ascii: cannot write '\(path)': \(String(cString: strerror(errno)))", exitCode: 23)
        }
        fd = Locked(opened)
    }

    func observe(_ event: HTTPClientEvent) {
        var text = ""
        switch event.kind {
        case .queued(let method, let url):
            text = "== Info: \(method.rawValue) \(url)\n"
        case .connectionAcquired(let info):
            text = info.reused ? "== Info: Re-using existing connection #\(info.id) to \(info.route)\n"
                : "== Info: Connected to \(info.route) (#\(info.id))\n"
            // Through a tunnel: each CONNECT and the proxy's answer, as curl traces them.
            for round in info.tunnelResponses {
                text += block("=> Send header", lines: redactedHeadLines(round.request), count: round.request.count)
                text += received(ReceivedHead(status: round.status, version: round.version, headers: round.headers.redactingSecrets()))
            }
        case .headSent(let bytes):
            text = block("=> Send header", lines: redactedHeadLines(bytes), count: bytes.count)
        case .bodyBytesSent(let total):
            text = "=> Send data, \(total) bytes so far (0x\(String(total, radix: 16)))\n"
        case .headReceived(let status, let version, let headers):
            text = received(ReceivedHead(status: status, version: version, headers: headers.redactingSecrets()))
        case .bodyBytesReceived(let count):
            text = "<= Recv data, \(count) bytes (0x\(String(count, radix: 16)))\n"
        case .retry(let reason):
            text = "== Info: retrying: \(reason)\n"
        case .redirect(let status, let location):
            text = "== Info: following the \(status) redirect to \(location)\n"
        case .finished:
            text = "== Info: transfer complete\n"
        case .failed(let error, _):
            // A tunnel the proxy refused: each CONNECT (credentials left out) and the answer, then the error.
            for round in error.proxyRounds {
                let request = Array(round.request.utf8)
                text += block("=> Send header", lines: redactedHeadLines(request), count: request.count)
                text += received(ReceivedHead(status: round.status, version: round.version, headers: round.headers.redactingSecrets()))
            }
            text += "== Info: \(error)\n"
        }
        fd.withLock { fd in try? writeAll(fd, Array(text.utf8)[...]) }
    }

    /// A received head's block, rebuilt from its parsed fields.
    private func received(_ head: ReceivedHead) -> String {
        let text = head.text
        return block("<= Recv header", lines: text.split(separator: "\r\n", omittingEmptySubsequences: false).dropLast().map(String.init),
                     count: text.utf8.count)
    }

    /// `label, N bytes (0xN)` and then each line with the offset of its first byte, as curl's --trace-ascii.
    private func block(_ label: String, lines: [String], count: Int) -> String {
        var text = "\(label), \(count) bytes (0x\(String(count, radix: 16)))\n"
        var offset = 0
        for line in lines {
            let hex = String(offset, radix: 16)
            text += String(repeating: "0", count: max(0, 4 - hex.count)) + hex + ": " + line + "\n"
            offset += line.utf8.count + 2
        }
        return text
    }
}

/// The request head's lines with secret values replaced by `<redacted>` (as -v shows them).
func redactedHeadLines(_ bytes: [UInt8]) -> [String] {
    let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false).dropLast()
    return lines.map { line -> String in
        guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else { return String(line) }
        let field = HTTPField(name: name, value: String(line[line.index(after: colon)...].drop { $0 == " " }))
        return HTTPFields([field]).redactingSecrets().first.map { "\($0.name): \($0.value)" } ?? String(line)
    }
}
