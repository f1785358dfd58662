import AsyncHTTP1
import HTTPTypes

/// What a parser run reports, normalised so that two feedings of the same bytes can be compared: body bytes
/// are concatenated per response, errors are compared by code (their messages may name offsets).
package enum ParserOutcome: Equatable, CustomStringConvertible {
    case head(HTTP1ResponseHead)
    case body([UInt8])
    case end(trailers: HTTPFields?)
    case error(HTTP1Error.Code)
    /// The input ran out while the parser wanted more (and the run did not signal end of input).
    case stalled(bytesReceived: Int, awaitingHead: Bool)

    package var description: String {
        switch self {
        case .head(let head):
            return "head(\(head.version) \(head.status.code) '\(head.status.reasonPhrase)' \(head.headers.map { "\($0.name)=\($0.value)" }) keepAlive=\(head.keepAlive) timeout=\(String(describing: head.keepAliveTimeout)) max=\(String(describing: head.keepAliveMax)))"
        case .body(let bytes): return "body(\(bytes.count) bytes: \(hex(bytes, limit: 64)))"
        case .end(let trailers): return "end(\(trailers.map { "\($0.map { "\($0.name)=\($0.value)" })" } ?? "nil"))"
        case .error(let code): return "error(\(code))"
        case .stalled(let received, let awaiting): return "stalled(bytesReceived=\(received), awaitingHead=\(awaiting))"
        }
    }
}

/// Runs HTTP1ResponseParser over `wire` as one keep-alive connection: after each `.end` the parser is told to
/// expect the next response (up to `maxResponses`), exactly as `HTTP1Connection` reuses it.
///
/// - `pieces`: the lengths in which the bytes arrive (nil: all at once).
/// - `closeAtEnd`: after the last byte, the peer closes (`endOfInput()`).
/// - `freshParserPerResponse`: a new parser for each response, so nothing of the previous head is reused.
///
/// Checks the API contract of `parse` on every call (it traps on a violation): `consumed` within the
/// buffer, `.needMoreData` consumes everything given, `.body` ranges are non-empty, lie within the buffer
/// and end at `consumed`, one head per response.
package func runParser(
    _ wire: [UInt8], method: HTTPRequest.Method, closeAtEnd: Bool, limits: HTTP1ResponseParser.Limits,
    pieces: [Int]?, freshParserPerResponse: Bool = false, maxResponses: Int = 6
) -> [ParserOutcome] {
    var parser = HTTP1ResponseParser(limits: limits)
    parser.expectResponse(to: method)
    var outcomes: [ParserOutcome] = []
    var body: [UInt8] = []
    var pending: [UInt8] = []
    var fed = 0
    var pieceIndex = 0
    var responses = 0
    var sawHead = false

    func flushBody() {
        if !body.isEmpty {
            outcomes.append(.body(body))
            body = []
        }
    }

    feeding: while true {
        if fed < wire.count {
            let length = pieces.map { $0[pieceIndex] } ?? (wire.count - fed)
            pieceIndex += 1
            pending += wire[fed..<(fed + length)]
            fed += length
        } else {
            flushBody()
            if closeAtEnd {
                do {
                    let event = try parser.endOfInput()
                    switch event {
                    case .end(let trailers):
                        fuzzCheck(sawHead, "endOfInput ended a response without a head")
                        outcomes.append(.end(trailers: trailers))
                    case .needMoreData:
                        fuzzCheck(false, "endOfInput returned needMoreData for an incomplete response")
                    default:
                        fuzzCheck(false, "endOfInput returned \(event)")
                    }
                } catch {
                    outcomes.append(.error(error.code))
                }
            } else {
                outcomes.append(.stalled(bytesReceived: parser.bytesReceived, awaitingHead: parser.isAwaitingHead))
            }
            break feeding
        }

        while true {
            var result: Result<(event: HTTP1ResponseParser.Event, consumed: Int), HTTP1Error>!
            pending.withUnsafeBytes { buffer in
                result = Result { () throws(HTTP1Error) in try parser.parse(buffer) }
            }
            let event: HTTP1ResponseParser.Event
            let consumed: Int
            switch result! {
            case .success(let value):
                (event, consumed) = (value.event, value.consumed)
            case .failure(let error):
                flushBody()
                outcomes.append(.error(error.code))
                break feeding
            }
            fuzzCheck(consumed >= 0 && consumed <= pending.count, "consumed \(consumed) of \(pending.count)")
            switch event {
            case .needMoreData:
                fuzzCheck(consumed == pending.count, "needMoreData consumed \(consumed) of \(pending.count)")
            case .head(let head):
                fuzzCheck(!sawHead, "a second head in one response")
                sawHead = true
                outcomes.append(.head(head))
            case .body(let range):
                fuzzCheck(sawHead, "body before the head")
                fuzzCheck(!range.isEmpty, "empty body range \(range)")
                fuzzCheck(range.lowerBound >= 0 && range.upperBound <= pending.count, "body range \(range) outside \(pending.count) bytes")
                fuzzCheck(range.upperBound == consumed, "body range \(range) does not end at consumed \(consumed)")
                body += pending[range]
            case .end(let trailers):
                fuzzCheck(sawHead, "end before a head")
                fuzzCheck(parser.isComplete, "end but not isComplete")
                flushBody()
                outcomes.append(.end(trailers: trailers))
                responses += 1
                pending.removeFirst(consumed)
                // Idle after the end: nothing more is consumed until the next expectResponse.
                var idle: (event: HTTP1ResponseParser.Event, consumed: Int)?
                pending.withUnsafeBytes { buffer in idle = try? parser.parse(buffer) }
                fuzzCheck(idle?.event == .needMoreData && idle?.consumed == 0, "a complete parser consumed bytes")
                if responses >= maxResponses { break feeding }
                if freshParserPerResponse { parser = HTTP1ResponseParser(limits: limits) }
                parser.expectResponse(to: method)
                sawHead = false
                continue
            }
            pending.removeFirst(consumed)
            if event == .needMoreData { break }
        }
    }
    return outcomes
}

/// The differential check shared by the response and chunked targets: `wire` parsed whole, in pieces derived
/// from the input, and whole with a fresh parser per response must report the same outcomes.
package func checkParserDifferential(
    _ wire: [UInt8], method: HTTPRequest.Method, closeAtEnd: Bool, limits: HTTP1ResponseParser.Limits,
    random: inout InputRandom
) {
    let whole = runParser(wire, method: method, closeAtEnd: closeAtEnd, limits: limits, pieces: nil)
    let pieces = random.pieces(total: wire.count)
    let split = runParser(wire, method: method, closeAtEnd: closeAtEnd, limits: limits, pieces: pieces)
    fuzzCheck(
        whole == split,
        "whole vs split differ\n method=\(method) closeAtEnd=\(closeAtEnd) limits=(\(limits.maxHeadBytes), \(limits.maxHeaderCount))\n pieces=\(pieces)\n whole: \(whole)\n split: \(split)\n wire=\(hex(wire, limit: 4096))")
    let fresh = runParser(wire, method: method, closeAtEnd: closeAtEnd, limits: limits, pieces: nil, freshParserPerResponse: true)
    fuzzCheck(
        whole == fresh,
        "reused vs fresh parser differ\n method=\(method) closeAtEnd=\(closeAtEnd) limits=(\(limits.maxHeadBytes), \(limits.maxHeaderCount))\n reused: \(whole)\n fresh:  \(fresh)\n wire=\(hex(wire, limit: 4096))")
}

/// Reads the run's settings from one configuration byte.
package func parserSettings(_ config: UInt8) -> (method: HTTPRequest.Method, closeAtEnd: Bool, limits: HTTP1ResponseParser.Limits) {
    let methods: [HTTPRequest.Method] = [.get, .head, .connect, .post]
    let method = methods[Int(config & 3)]
    let closeAtEnd = config & 4 != 0
    let limits: HTTP1ResponseParser.Limits
    switch (config >> 3) & 3 {
    case 1: limits = .init(maxHeadBytes: 256, maxHeaderCount: 100)
    case 2: limits = .init(maxHeadBytes: 64 * 1024, maxHeaderCount: 3)
    case 3: limits = .init(maxHeadBytes: 1024, maxHeaderCount: 8)
    default: limits = .init()
    }
    return (method, closeAtEnd, limits)
}
