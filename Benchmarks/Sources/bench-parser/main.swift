// The parser micro-benchmark: AsyncHTTP's HTTP/1 response parser over a corpus of concatenated responses,
// fed 16 KiB at a time as a connection reads them. parser-c/bench_http_parser.c runs nodejs http-parser
// over the same corpus files in the same slices.
//
//   bench-parser --write-corpus DIR          writes DIR/heads.bin and DIR/chunked.bin, prints their counts
//   bench-parser --corpus FILE --responses N [--seconds S] [--name heads|chunked]

@_spi(Benchmarks) import AsyncHTTP
import BenchCore

#if canImport(Glibc)
import Glibc
#endif

enum Corpus {
    static let responses = 5000

    /// Responses as nginx sends a small static file: ten header fields and a 1 KiB body.
    static func heads() -> [UInt8] {
        var bytes: [UInt8] = []
        let body = [UInt8](repeating: UInt8(ascii: "a"), count: 1024)
        for index in 0..<responses {
            let head = "HTTP/1.1 200 OK\r\n"
                + "Server: nginx/1.22.1\r\n"
                + "Date: Tue, 04 Mar 2025 10:00:00 GMT\r\n"
                + "Content-Type: application/octet-stream\r\n"
                + "Content-Length: 1024\r\n"
                + "Last-Modified: Mon, 03 Mar 2025 09:00:00 GMT\r\n"
                + "Connection: keep-alive\r\n"
                + "ETag: \"67c5707c-400\"\r\n"
                + "Accept-Ranges: bytes\r\n"
                + "Cache-Control: max-age=3600\r\n"
                + "X-Request-Id: 4f1c2a9e-7b3d-4c8e-9a1f-\(100000 + index)\r\n"
                + "\r\n"
            bytes += Array(head.utf8)
            bytes += body
        }
        return bytes
    }

    /// Chunked responses: a head of eight fields, then eight chunks of 100 to 1,500 bytes and the last chunk.
    static func chunked() -> [UInt8] {
        var bytes: [UInt8] = []
        for index in 0..<responses {
            let head = "HTTP/1.1 200 OK\r\n"
                + "Server: nginx/1.22.1\r\n"
                + "Date: Tue, 04 Mar 2025 10:00:00 GMT\r\n"
                + "Content-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\n"
                + "Connection: keep-alive\r\n"
                + "Vary: Accept-Encoding\r\n"
                + "Cache-Control: no-cache\r\n"
                + "X-Request-Id: 4f1c2a9e-7b3d-4c8e-9a1f-\(100000 + index)\r\n"
                + "\r\n"
            bytes += Array(head.utf8)
            for chunk in 0..<8 {
                let size = 100 + (index * 7 + chunk * 173) % 1400
                bytes += Array((String(size, radix: 16) + "\r\n").utf8)
                bytes += [UInt8](repeating: UInt8(ascii: "{"), count: size)
                bytes += Array("\r\n".utf8)
            }
            bytes += Array("0\r\n\r\n".utf8)
        }
        return bytes
    }
}

func fail(_ message: String) -> Never {
    printToStandardError("bench-parser: \(message)")
    exit(2)
}

var arguments = CommandLine.arguments.dropFirst()
var corpusPath: String?
var writeDirectory: String?
var responses = Corpus.responses
var seconds = 2.0
var name = "parser"
while let argument = arguments.popFirst() {
    guard let value = arguments.popFirst() else { fail("missing value for \(argument)") }
    switch argument {
    case "--corpus": corpusPath = value
    case "--write-corpus": writeDirectory = value
    case "--responses": responses = Int(value) ?? responses
    case "--seconds": seconds = Double(value) ?? seconds
    case "--name": name = value
    default: fail("unknown argument \(argument)")
    }
}

if let writeDirectory {
    do {
        try Files.write(Corpus.heads(), to: writeDirectory + "/heads.bin")
        try Files.write(Corpus.chunked(), to: writeDirectory + "/chunked.bin")
    } catch {
        fail("\(error)")
    }
    print(Corpus.responses)
    exit(0)
}

guard let corpusPath else { fail("usage: bench-parser --corpus FILE --responses N [--seconds S] [--name NAME] | --write-corpus DIR") }
let corpus: [UInt8]
do { corpus = try Files.read(corpusPath) } catch { fail("\(error)") }

let clock = ContinuousClock()
// One untimed pass checks that the corpus parses and warms caches.
var checksum = ParserBenchmark.parse(corpus, responses: responses)
guard checksum >= 0 else { fail("\(corpusPath) did not parse as \(responses) responses") }
var passes = 0
let start = clock.now
let deadline = start + .seconds(seconds)
repeat {
    checksum &+= ParserBenchmark.parse(corpus, responses: responses)
    passes += 1
} while clock.now < deadline
let elapsed = clock.now - start
let elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let perSecond = Double(passes * responses) / elapsedSeconds
let megabytes = Double(passes * corpus.count) / elapsedSeconds / 1e6
print("{\"client\":\"asynchttp\",\"scenario\":\"\(name)\",\"responses\":\(passes * responses),"
    + "\"seconds\":\(elapsedSeconds),\"responses_per_s\":\(perSecond.rounded()),\"mb_per_s\":\(megabytes),"
    + "\"checksum\":\(checksum)}")
