import HTTPTypes

// A door into the internal response parser for the parser micro-benchmark in Benchmarks/ (`bench-parser`),
// which compares it with nodejs http-parser on the same bytes. SPI rather than public API: it is not part of
// the library's promise, and `@_spi(Benchmarks) import AsyncHTTP` says so at the one place that uses it.

/// Runs ``HTTP1ResponseParser`` over a buffer of concatenated responses, as a connection would.
@_spi(Benchmarks)
public enum ParserBenchmark {
    /// Parses `responses` responses from `bytes`, handing the parser `readSize` bytes at a time (a connection's
    /// first socket read is 16 KiB, so a head or a chunk-size line may straddle two calls, as on the wire).
    ///
    /// Each head is materialised as the client does (status, `HTTPFields`, framing); body bytes are counted,
    /// never copied.
    ///
    /// - Parameters:
    ///   - bytes: `responses` complete responses, back to back.
    ///   - responses: how many responses `bytes` holds.
    ///   - method: the request method they answer (`"HEAD"` makes every body empty).
    ///   - readSize: bytes per `parse` call.
    /// - Returns: the number of body bytes seen plus the number of header fields seen (so the work cannot be
    ///   optimised away), or -1 if the bytes did not parse or held a different number of responses.
    public static func parse(_ bytes: [UInt8], responses: Int, method: String = "GET", readSize: Int = 16 * 1024) -> Int {
        let requestMethod = HTTPRequest.Method(method) ?? .get
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: requestMethod)
        var completed = 0
        var total = 0
        let step = max(1, readSize)
        let outcome = bytes.withUnsafeBytes { all -> Bool in
            var start = 0
            while start < all.count {
                let end = min(start + step, all.count)
                var offset = start
                reads: while true {
                    let result: (event: HTTP1ResponseParser.Event, consumed: Int)
                    do {
                        result = try parser.parse(UnsafeRawBufferPointer(rebasing: all[offset..<end]))
                    } catch {
                        return false
                    }
                    offset += result.consumed
                    switch result.event {
                    case .needMoreData:
                        break reads  // every byte of this read was consumed
                    case .head(let head):
                        total += head.headers.count
                    case .body(let range):
                        total += range.count
                    case .end:
                        completed += 1
                        parser.expectResponse(to: requestMethod)
                    }
                }
                start = end
            }
            return true
        }
        guard outcome, completed == responses else { return -1 }
        return total
    }
}
