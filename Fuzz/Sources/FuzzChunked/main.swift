// libFuzzer target: the chunked decoder of HTTP1ResponseParser (docs/fuzzing.md).
// Input: one configuration byte (as the response-parser target; the method is always GET), then a chunked
// body: chunk-size lines, extensions, data, the last chunk and trailers, perhaps followed by a next response.
// The head is fixed: `HTTP/1.1 200 OK` with `Transfer-Encoding: chunked`. Same differential check as the
// response-parser target (whole / split / fresh parser), plus: the decoded body is never longer than the
// input.
import AsyncHTTP1
import FuzzSupport

nonisolated(unsafe) let chunkedHead = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChunked(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard let config = bytes.first else { return 0 }
    let body = bytes.dropFirst()
    let wire = chunkedHead + body
    let settings = parserSettings(config & ~3)
    var random = InputRandom(seed: bytes)
    checkParserDifferential(wire, method: .get, closeAtEnd: settings.closeAtEnd, limits: .init(), random: &random)

    // The first response's decoded body is a subsequence of the chunk data: never longer than the input.
    let outcomes = runParser(wire, method: .get, closeAtEnd: settings.closeAtEnd, limits: .init(), pieces: nil, maxResponses: 1)
    if outcomes.count > 1, case .body(let decoded) = outcomes[1] {
        fuzzCheck(decoded.count <= body.count, "decoded \(decoded.count) bytes from \(body.count)")
    }
    return 0
}

runLibFuzzer(fuzzChunked)
