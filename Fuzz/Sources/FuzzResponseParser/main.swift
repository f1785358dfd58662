// libFuzzer target: HTTP1ResponseParser, differential (docs/fuzzing.md).
// Input: one configuration byte (method, close at end, limits; see parserSettings), then the bytes a server
// sent on one connection (one or more responses). Checks: parsed whole, parsed in pieces derived from the
// input, and parsed with a fresh parser per response all give the same heads, body bytes, ends/trailers or
// error code; and the parse() API contract on every call.
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard let config = bytes.first else { return 0 }
    let wire = Array(bytes.dropFirst())
    let settings = parserSettings(config)
    var random = InputRandom(seed: bytes)
    checkParserDifferential(wire, method: settings.method, closeAtEnd: settings.closeAtEnd, limits: settings.limits, random: &random)
    return 0
}

runLibFuzzer(fuzzResponseParser)
