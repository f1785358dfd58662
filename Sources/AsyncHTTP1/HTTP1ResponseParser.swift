import HTTPTypes

// An incremental, sans-IO HTTP/1.0 and HTTP/1.1 response parser: bytes in, events out (h11's
// `receive_data` / `next_event` / `NEED_DATA`). The caller owns the socket; the parser never copies a body
// byte, it hands back ranges of the caller's buffer.
//
// Leniency (decided, and tested):
// - Bare LF line endings are accepted wherever CRLF is expected (RFC 9112 §2.2 allows it: "a recipient MAY
//   recognize a single LF as a line terminator"); curl, Go and browsers do the same.
// - A missing reason phrase is accepted, with or without the space before it (`HTTP/1.1 200\r\n`,
//   `HTTP/1.1 200 \r\n`); RFC 9112 §4 makes the reason phrase optional, and old servers drop the space.
// - obs-fold (a field line continued on the next line by leading whitespace) is replaced by a single SP, as
//   RFC 9112 §5.2 permits a user agent to do.
// - Empty list elements in Connection / Transfer-Encoding are ignored (RFC 9110 §5.6.1).
// Everything else that RFC 9112 lets a recipient reject is rejected, because a lenient framing decision is
// how responses get desynchronised on a keep-alive connection: header names that are not tokens,
// whitespace between a field name and its colon (§5.1), control characters other than HTAB in values,
// conflicting Content-Length values (RFC 9110 §8.6), Transfer-Encoding in an HTTP/1.0 response (§6.1),
// chunk data not followed by CRLF (§7.1).
// docs/framing.md holds the framing rules with their reasons: transfer codings (gzip, x-gzip and deflate under
// chunked are reported in the head for the transport to inflate; any other coding, a final coding other than
// chunked and stacked codings are refused), HTTP/1.2–1.9 read as HTTP/1.1 (RFC 9110 §2.5), status codes
// 100–599 only (RFC 9110 §15), the chunk-size line grammar (RFC 9112 §7.1.1, plus trailing whitespace), and a
// body delimited by close that ends without TLS close_notify (`endOfInput(unclean:)`, RFC 9112 §9.8).

/// The head of one final (non-1xx) HTTP/1.x response.
package struct HTTP1ResponseHead: Sendable, Equatable {
    package var version: HTTPVersion
    /// The status code and the reason phrase as received (`""` if the server sent none).
    package var status: HTTPResponse.Status
    package var headers: HTTPFields
    /// May the connection be reused after this response? `false` for HTTP/1.0 without
    /// `Connection: keep-alive`, for `Connection: close`, for a body read until the server closes, for a
    /// response that carried both Transfer-Encoding and Content-Length (RFC 9112 §6.3: "the connection MUST
    /// be closed after the response"), and after a successful CONNECT (the connection is now a tunnel).
    package var keepAlive: Bool
    /// `timeout=N` from a `Keep-Alive` header: how many seconds the server keeps an idle connection.
    package var keepAliveTimeout: Int?
    /// `max=M` from a `Keep-Alive` header: how many more requests the server will accept on the connection.
    package var keepAliveMax: Int?
    /// The transfer coding applied before `chunked` (`Transfer-Encoding: gzip, chunked`), which the
    /// transport must undo; nil for plain chunked, for other framings and for a response without a body.
    /// At most one: unknown, stacked and non-final codings are refused by the parser (docs/framing.md).
    package var transferCoding: HTTP1TransferCoding? = nil
    /// The body's length as the framing announced it: 0 for a response that has none (HEAD, 204, 304, 2xx to
    /// CONNECT), the Content-Length, or nil (chunked, or read until the server closes). Progress reads it
    /// here instead of looking the fields up again.
    package var announcedBodyLength: Int? = nil

    // `HTTPResponse.Status ==` compares only the code; a parser test also wants to see the reason phrase.
    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.version == rhs.version && lhs.status.code == rhs.status.code
            && lhs.status.reasonPhrase == rhs.status.reasonPhrase && lhs.headers == rhs.headers
            && lhs.keepAlive == rhs.keepAlive && lhs.keepAliveTimeout == rhs.keepAliveTimeout
            && lhs.keepAliveMax == rhs.keepAliveMax && lhs.transferCoding == rhs.transferCoding
    }
}

/// Parses HTTP/1.x responses from a byte stream, one event per call.
///
/// ```swift
/// var parser = HTTP1ResponseParser()
/// parser.expectResponse(to: .get)
/// var offset = 0   // into `buffer`, which holds what the socket delivered
/// loop: while true {
///     let (event, consumed) = try buffer.withUnsafeBytes { try parser.parse(.init(rebasing: $0[offset...])) }
///     defer { offset += consumed }
///     switch event {
///     case .needMoreData: break loop                 // read more from the socket, then call again
///     case .head(let head): deliver(head)
///     case .body(let range): deliver(buffer[offset + range.lowerBound ..< offset + range.upperBound])
///     case .end(let trailers): finish(trailers); break loop   // later bytes belong to the next response
///     }
/// }
/// ```
package struct HTTP1ResponseParser {
    package struct Limits: Sendable {
        /// The largest response head (status line, fields and the empty line), and separately the largest
        /// trailer section. 64 KiB: Python's http.client caps a line at 65536 bytes, C http-parser caps a head
        /// at 80 KiB; real heads are well under 8 KiB (nginx's default buffer for an upstream head is 4–8 KiB).
        package var maxHeadBytes: Int = 64 * 1024
        /// The most fields in a head (or a trailer section). 100: hyper's `DEFAULT_MAX_HEADERS`, Python's
        /// http.client `_MAXHEADERS`, Apache's `LimitRequestFields`.
        package var maxHeaderCount: Int = 100

        package init(maxHeadBytes: Int = 64 * 1024, maxHeaderCount: Int = 100) {
            self.maxHeadBytes = maxHeadBytes
            self.maxHeaderCount = maxHeaderCount
        }
    }

    package enum Event: Equatable {
        /// Every given byte was consumed; call again with more.
        case needMoreData
        /// The head of the final response (interim 1xx responses are skipped).
        case head(HTTP1ResponseHead)
        /// Body bytes: offsets within the buffer given to this `parse` call.
        case body(Range<Int>)
        /// The response is complete. Trailers are non-nil only for a chunked body that had some.
        case end(trailers: HTTPFields?)
    }

    /// Where the parser is within one response. Each case has one function that handles it.
    private enum State {
        /// Waiting for the status line and fields. Partial heads are kept in `carry`.
        /// Valid transitions to: .head (after an interim 1xx), .noBody, .contentLength, .chunkSize, .untilClose, .failed
        case head
        /// The response has no body (HEAD, 204, 304, CONNECT 2xx). Valid transitions to: .complete
        case noBody
        /// A Content-Length body with `remaining` bytes to go; at 0 the next call ends the response.
        /// Valid transitions to: .complete
        case contentLength(remaining: Int)
        /// Waiting for a chunk-size line (partial lines are kept in `carry`).
        /// Valid transitions to: .chunkData, .trailers, .failed
        case chunkSize
        /// Inside a chunk with `remaining` data bytes to go. Valid transitions to: .chunkDataEnd
        case chunkData(remaining: Int)
        /// After a chunk's data: expecting CRLF (or a bare LF); `sawCR` once the CR has arrived.
        /// Valid transitions to: .chunkSize, .failed
        case chunkDataEnd(sawCR: Bool)
        /// After the last chunk: waiting for the trailer section and its empty line.
        /// Valid transitions to: .complete, .failed
        case trailers
        /// The body runs until the server closes the connection (RFC 9112 §6.3 rule 8).
        /// Valid transitions to: .complete (by `endOfInput`)
        case untilClose
        /// `.end` was returned. Valid transitions to: .head (by `expectResponse`)
        case complete
        /// A parse error was thrown; it (`failure`) is thrown again until `expectResponse` resets the parser.
        case failed
    }

    /// Interim responses before the final one are bounded by their bytes together, at most this many heads'
    /// worth of ``Limits/maxHeadBytes``: a long WebDAV operation may send `102 Processing` every few seconds
    /// (RFC 9110 §15.2 has a client parse one or more 1xx; curl counts none), while an endless stream of them
    /// still ends. (Go's net/http stops at 5, which fails such an operation.)
    private static let interimHeadBudget = 4
    /// The longest chunk-size line, extensions included: Go's `maxLineLength` in net/http/internal/chunked.go.
    /// Extensions are ignored, but must not make the parser buffer without bound.
    package static let maxChunkLineBytes = 4096

    package let limits: Limits
    private var state: State = .head
    /// The error of `.failed`, kept outside `State` so that the state is a trivial value, cheap to switch on.
    private var failure: HTTP1Error?
    private var method: HTTPRequest.Method = .get
    /// Bytes of an incomplete head, trailer section or chunk-size line, carried to the next call. Never body bytes.
    private var carry: [UInt8] = []
    /// For the field-section scanner: the length of the section's current, unterminated line (bytes in `carry`).
    private var carriedLineLength = 0
    private var interimBytes = 0
    /// A `100 Continue` arrived for the current request (RFC 9110 §15.2.1): the go-ahead a request sent with
    /// `Expect: 100-continue` waits for before its body. Other 1xx (102, 103) are not one.
    package private(set) var receivedContinue = false
    private var bodyBytes = 0
    /// The previous head on this connection, kept to be reused: a server sends mostly the same fields in the
    /// same order on every response (nginx: Server, Date, Content-Type, Content-Length, Last-Modified,
    /// Connection, ETag, Accept-Ranges), so a field whose name and value bytes equal the previous head's field
    /// at the same position is taken from it as is, and the new head's `HTTPFields` starts as a copy-on-write
    /// copy of the old one: no `String`, no validation, and at most one array allocation per head. What HPACK
    /// does with its dynamic table, for HTTP/1. Costs the previous head's few hundred bytes per connection.
    private var previousHead = PreviousHead()
    private var declaredContentLength = 0

    /// Total bytes of the current response (interim responses included) consumed so far.
    package private(set) var bytesReceived = 0

    /// A parser ready for the response to a GET; call ``expectResponse(to:)`` before each response to say
    /// which method it answers.
    package init(limits: Limits = .init()) {
        self.limits = limits
    }

    /// Call before each response: the parser is reused across responses on one keep-alive connection.
    /// The method decides whether a body can follow: none for HEAD, none for a 2xx to CONNECT.
    /// Resets everything, including a failed state.
    package mutating func expectResponse(to method: HTTPRequest.Method) {
        self.method = method
        state = .head
        failure = nil
        carry.removeAll(keepingCapacity: true)
        carriedLineLength = 0
        interimBytes = 0
        receivedContinue = false
        bodyBytes = 0
        declaredContentLength = 0
        bytesReceived = 0
    }

    /// Nothing of the current response has been received yet (not even an interim 1xx): a failure now means
    /// the server never answered, which is what the stale-connection retry rule asks.
    package var isAwaitingHead: Bool {
        if case .head = state { return bytesReceived == 0 }
        return false
    }

    /// Whether the current body is delimited by the connection's close (no Content-Length, not chunked).
    package var readsBodyUntilClose: Bool {
        if case .untilClose = state { return true }
        return false
    }

    /// Bytes left of a Content-Length body, `nil` for any other state or framing.
    package var remainingContentLength: Int? {
        if case .contentLength(let remaining) = state { return remaining }
        return nil
    }

    /// `.end` was returned for the current response.
    package var isComplete: Bool {
        if case .complete = state { return true }
        return false
    }

    /// What one state function did with the input.
    private enum Step {
        /// Consumed framing up to `offset` and changed state; no event yet, keep going.
        case advanced(to: Int)
        /// An event to return, and the offset in the input just after the bytes it consumed.
        case event(Event, consumedTo: Int)
    }

    /// Parses from `bytes` and returns one event and how many bytes of `bytes` it consumed.
    ///
    /// - `.needMoreData`: every given byte was consumed (a partial head or chunk-size line is copied into a
    ///   small internal buffer; body bytes never are).
    /// - `.body(range)`: `range` holds offsets within `bytes`, and `consumed == range.upperBound` (any chunk
    ///   framing before the data is consumed with it).
    /// - `.head` for a response without a body is followed by `.end(trailers: nil)` on the next call,
    ///   consuming 0 bytes; so is the last `.body` of a Content-Length body.
    /// - After `.end`, nothing is consumed until ``expectResponse(to:)`` is called: in that idle state this
    ///   returns `(.needMoreData, 0)`, and the unconsumed bytes belong to the next response (or, after a
    ///   CONNECT, to the tunnel).
    package mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(HTTP1Error) -> (event: Event, consumed: Int) {
        var offset = 0
        do throws(HTTP1Error) {
            while true {
                let step: Step
                switch state {
                case .head: step = try parseHead(bytes, from: offset)
                case .noBody: step = endResponse(trailers: nil, at: offset)
                case .contentLength(let remaining): step = parseContentLengthBody(bytes, from: offset, remaining: remaining)
                case .chunkSize: step = try parseChunkSize(bytes, from: offset)
                case .chunkData(let remaining): step = parseChunkData(bytes, from: offset, remaining: remaining)
                case .chunkDataEnd(let sawCR): step = try parseChunkDataEnd(bytes, from: offset, sawCR: sawCR)
                case .trailers: step = try parseTrailers(bytes, from: offset)
                case .untilClose: step = parseUntilCloseBody(bytes, from: offset)
                case .complete: return (.needMoreData, 0)
                case .failed: throw failure ?? HTTP1Error(.malformedResponse, "the parser failed")
                }
                switch step {
                case .advanced(let newOffset):
                    offset = newOffset
                case .event(let event, let consumedTo):
                    bytesReceived += consumedTo
                    return (event, consumedTo)
                }
            }
        } catch {
            failure = error
            state = .failed
            throw error
        }
    }

    /// The peer closed the stream. A body read until close ends here (`.end(trailers: nil)`), as does a
    /// response whose bytes had all arrived; otherwise this throws `.connectionClosed` saying what was
    /// incomplete, with ``bytesReceived``. After `.end` it returns `.needMoreData`: nothing was pending.
    ///
    /// `unclean`: the stream ended without proof that the peer meant to end it — over TLS, a TCP close or
    /// reset without close_notify. A body delimited by the close is then a truncation, not a complete body
    /// (RFC 9112 §9.8: "a client ... MUST NOT consider the response complete" without the closure alert);
    /// framing that proves completeness (Content-Length, chunked, no body) ends as usual.
    package mutating func endOfInput(unclean: Bool = false) throws(HTTP1Error) -> Event {
        let message: String
        switch state {
        case .complete:
            return .needMoreData
        case .untilClose where unclean:
            message = "connection closed without TLS close_notify after \(bodyBytes) body bytes of a body delimited by the"
                + " connection's close: the body may be truncated (RFC 9112 §9.8)"
        case .noBody, .untilClose, .contentLength(remaining: 0):
            state = .complete
            return .end(trailers: nil)
        case .failed:
            throw failure ?? HTTP1Error(.malformedResponse, "the parser failed")
        case .head:
            if bytesReceived == 0 {
                message = "connection closed before the response head"
            } else if carry.isEmpty {
                message = "connection closed after an interim 1xx response, before the final response head"
            } else {
                message = "connection closed after \(carry.count) bytes of an incomplete response head"
            }
        case .contentLength(let remaining):
            message = "connection closed after \(declaredContentLength - remaining) of \(declaredContentLength) body bytes"
        case .chunkSize, .chunkData, .chunkDataEnd:
            message = "connection closed inside a chunked body after \(bodyBytes) body bytes (before the last chunk)"
        case .trailers:
            message = "connection closed inside the trailer section of a chunked body"
        }
        let error = HTTP1Error.connectionClosed(message, bytesReceived: bytesReceived)
        failure = error
        state = .failed
        throw error
    }

    // MARK: - One function per state

    private mutating func endResponse(trailers: HTTPFields?, at offset: Int) -> Step {
        state = .complete
        return .event(.end(trailers: trailers), consumedTo: offset)
    }

    private mutating func parseHead(_ bytes: UnsafeRawBufferPointer, from offset: Int) throws(HTTP1Error) -> Step {
        let parsed: ParsedHead
        let sectionEnd: Int
        let sectionBytes: Int
        if carry.isEmpty, let inPlace = parseHeadInPlace(bytes, from: offset) {
            // The common case: the whole head is in the caller's buffer, parsed where it lies in one pass.
            (parsed, sectionEnd) = inPlace
            sectionBytes = sectionEnd - offset
        } else {
            if carry.count == carriedLineLength {
                // No line of this head has ended yet: its status line may end in these bytes.
                try checkStatusLine(bytes, from: offset)
            }
            guard let end = try scanFieldSection(bytes, from: offset, what: "response head") else {
                return .event(.needMoreData, consumedTo: bytes.count)
            }
            sectionEnd = end
            let section: [UInt8]
            if carry.isEmpty {
                section = Array(UnsafeRawBufferPointer(rebasing: bytes[offset..<sectionEnd]))
            } else {
                carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<sectionEnd]))
                section = carry
                carry.removeAll(keepingCapacity: true)
            }
            sectionBytes = section.count
            let limits = self.limits
            let complete = try section.withBytes { buffer throws(HTTP1Error) in
                try Self.parseHeadSection(buffer, limits: limits, previous: &previousHead)
            }
            // The scanner found the empty line, so the section is complete.
            guard let complete else { throw .malformedResponse("incomplete response head") }
            parsed = complete.head
        }
        let code = parsed.head.status.code
        if code < 200 {
            if code == 101 {
                throw .malformedResponse("unexpected 101 Switching Protocols: no upgrade was requested")
            }
            // RFC 9110 §15.2: a client must parse 1xx responses it did not expect and may ignore them
            // (100 Continue, 102 Processing, 103 Early Hints). They never have a body.
            interimBytes += sectionBytes
            if code == 100 { receivedContinue = true }
            // Saturating: `maxHeadBytes` may be set as high as `Int.max` to mean "no limit".
            let (budget, overflow) = limits.maxHeadBytes.multipliedReportingOverflow(by: Self.interimHeadBudget)
            if !overflow, interimBytes > budget {
                throw .malformedResponse("interim 1xx responses went on for more than \(budget) bytes")
            }
            return .advanced(to: sectionEnd)
        }
        var head = parsed.head
        let framing = parsed.framing
        // RFC 9112 §6.3: HEAD, 204 and 304 responses (and 2xx to CONNECT) end at the head, whatever their
        // framing fields say.
        if method == .head || code == 204 || code == 304 {
            state = .noBody
            head.announcedBodyLength = 0
        } else if method == .connect && code < 300 {
            state = .noBody
            head.announcedBodyLength = 0
            head.keepAlive = false  // the connection is a tunnel now, not an HTTP connection to reuse
        } else if framing.transferEncoding != .absent {
            head.transferCoding = try Self.checkTransferCodings(framing, headers: head.headers)
            state = .chunkSize
        } else if let length = framing.contentLength {
            declaredContentLength = length
            head.announcedBodyLength = length
            state = .contentLength(remaining: length)
            if length < bytes.count - sectionEnd {
                // The next response's head, most likely as long as this one.
                ByteScanner.prefetch(bytes, from: sectionEnd + length, count: previousHead.bytes.count)
            }
        } else {
            state = .untilClose
            head.keepAlive = false
        }
        return .event(.head(head), consumedTo: sectionEnd)
    }

    /// The codings of a response whose body is framed by Transfer-Encoding, checked (docs/framing.md):
    /// - a coding other than chunked, gzip, x-gzip and deflate is refused by name (RFC 9112 §6.1: "A
    ///   recipient ... that does not understand ... MUST respond with 501"; a client cannot answer, it refuses);
    /// - a final coding other than chunked is refused: RFC 9112 §6.3 rule 4 would read such a body until
    ///   close, but nothing then marks its end (over TLS a truncation is undetectable), and Go refuses it too;
    /// - more than one compression coding ("gzip, gzip, chunked") is refused: each layer multiplies a
    ///   decompression bomb's ratio, and no server is known to send it.
    /// Returns the one compression coding under chunked, if any. Messages are built from the fields only here,
    /// on the error path.
    private static func checkTransferCodings(_ framing: FramingFields, headers: HTTPFields) throws(HTTP1Error) -> HTTP1TransferCoding? {
        if framing.hasUnknownCoding || framing.transferEncoding != .chunked || framing.compressionCodings > 1 {
            let values = headers[values: .transferEncoding]
            func isWhitespace(_ character: Character) -> Bool { character == " " || character == "\t" }
            // The coding names, as `FieldValueParser.parseTransferEncoding` saw them: parameters and OWS removed.
            let codings = values.flatMap { $0.split(separator: ",") }.compactMap { element -> String? in
                let name = element.prefix { $0 != ";" }.drop(while: isWhitespace)
                let trimmed = String(name.reversed().drop(while: isWhitespace).reversed())
                return trimmed.isEmpty ? nil : trimmed
            }
            let listed = codings.joined(separator: ", ")
            if framing.hasUnknownCoding, let unknown = codings.first(where: { HTTP1TransferCoding.named($0) == nil && $0.lowercased() != "chunked" }) {
                throw .malformedResponse(
                    "unsupported transfer coding '\(unknown)' in Transfer-Encoding '\(listed)' (RFC 9112 §6.1: only chunked,"
                        + " gzip, x-gzip and deflate are understood)")
            }
            if framing.transferEncoding != .chunked {
                throw .malformedResponse(
                    "Transfer-Encoding '\(listed)' does not end in chunked: the body's end could only be the connection's"
                        + " close, which is refused (RFC 9112 §6.3 rule 4)")
            }
            throw .malformedResponse("stacked transfer codings '\(listed)': at most one of gzip or deflate is decoded under chunked")
        }
        return framing.transferCoding
    }

    private mutating func parseContentLengthBody(_ bytes: UnsafeRawBufferPointer, from offset: Int, remaining: Int) -> Step {
        if remaining == 0 {
            return endResponse(trailers: nil, at: offset)
        }
        let available = bytes.count - offset
        if available == 0 {
            return .event(.needMoreData, consumedTo: offset)
        }
        let take = min(available, remaining)
        state = .contentLength(remaining: remaining - take)
        bodyBytes += take
        return .event(.body(offset..<offset + take), consumedTo: offset + take)
    }

    private mutating func parseUntilCloseBody(_ bytes: UnsafeRawBufferPointer, from offset: Int) -> Step {
        if offset == bytes.count {
            return .event(.needMoreData, consumedTo: offset)
        }
        bodyBytes += bytes.count - offset
        return .event(.body(offset..<bytes.count), consumedTo: bytes.count)
    }

    private mutating func parseChunkSize(_ bytes: UnsafeRawBufferPointer, from offset: Int) throws(HTTP1Error) -> Step {
        if carry.isEmpty, let (size, lineEnd) = Self.plainChunkSizeLine(bytes, from: offset) {
            return startChunk(bytes, size: size, dataStart: lineEnd)
        }
        guard let lineFeed = ByteScanner.firstIndex(of: ByteScanner.lf, in: bytes, from: offset) else {
            guard carry.count + (bytes.count - offset) <= Self.maxChunkLineBytes else {
                throw .malformedResponse("chunk size line longer than \(Self.maxChunkLineBytes) bytes")
            }
            carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            return .event(.needMoreData, consumedTo: bytes.count)
        }
        guard carry.count + (lineFeed - offset) <= Self.maxChunkLineBytes else {
            throw .malformedResponse("chunk size line longer than \(Self.maxChunkLineBytes) bytes")
        }
        let size: Int
        if carry.isEmpty {
            size = try Self.parseChunkSizeLine(UnsafeRawBufferPointer(rebasing: bytes[offset..<lineFeed]))
        } else {
            carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<lineFeed]))
            size = try carry.withBytes { line throws(HTTP1Error) in try Self.parseChunkSizeLine(line) }
            carry.removeAll(keepingCapacity: true)
        }
        return startChunk(bytes, size: size, dataStart: lineFeed + 1)
    }

    /// After a chunk-size line: the chunk's data (or, for the last chunk, the trailer section) starts at `dataStart`.
    @inline(__always)
    private mutating func startChunk(_ bytes: UnsafeRawBufferPointer, size: Int, dataStart: Int) -> Step {
        if size == 0 {
            state = .trailers
            // The next response's head most likely follows the empty trailer section.
            ByteScanner.prefetch(bytes, from: dataStart, count: previousHead.bytes.count + 2)
        } else {
            state = .chunkData(remaining: size)
            // The next chunk-size line, which the next call reads after handing back this chunk's data.
            ByteScanner.prefetch(bytes, from: dataStart &+ size, count: 8)
        }
        return .advanced(to: dataStart)
    }

    /// The common chunk-size line, whole in `bytes`: 1 to 15 hex digits and CRLF, no extension. Returns the
    /// size and the offset after the LF, or nil for anything else (which ``parseChunkSizeLine(_:)`` handles,
    /// rejecting what it must). Fifteen digits cannot overflow.
    @inline(__always)
    private static func plainChunkSizeLine(_ bytes: UnsafeRawBufferPointer, from offset: Int) -> (size: Int, lineEnd: Int)? {
        var position = offset
        var size = 0
        let digitsEnd = min(bytes.count, offset + 15)
        while position < digitsEnd, let digit = ByteScanner.hexValue(bytes[position]) {
            size = size << 4 | digit
            position += 1
        }
        guard position > offset, position + 1 < bytes.count, bytes[position] == ByteScanner.cr,
            bytes[position + 1] == ByteScanner.lf
        else { return nil }
        return (size, position + 2)
    }

    private mutating func parseChunkData(_ bytes: UnsafeRawBufferPointer, from offset: Int, remaining: Int) -> Step {
        let available = bytes.count - offset
        if available == 0 {
            return .event(.needMoreData, consumedTo: offset)
        }
        let take = min(available, remaining)
        state = take == remaining ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - take)
        bodyBytes += take
        return .event(.body(offset..<offset + take), consumedTo: offset + take)
    }

    private mutating func parseChunkDataEnd(_ bytes: UnsafeRawBufferPointer, from offset: Int, sawCR: Bool) throws(HTTP1Error) -> Step {
        if !sawCR, offset + 1 < bytes.count, bytes[offset] == ByteScanner.cr, bytes[offset + 1] == ByteScanner.lf {
            state = .chunkSize
            return .advanced(to: offset + 2)
        }
        var position = offset
        var sawCR = sawCR
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if byte == ByteScanner.cr && !sawCR {
                sawCR = true
            } else if byte == ByteScanner.lf {
                state = .chunkSize
                return .advanced(to: position)
            } else {
                throw .malformedResponse("missing CRLF after chunk data (found \(ByteScanner.describe(byte)))")
            }
        }
        state = .chunkDataEnd(sawCR: sawCR)
        return .event(.needMoreData, consumedTo: position)
    }

    private mutating func parseTrailers(_ bytes: UnsafeRawBufferPointer, from offset: Int) throws(HTTP1Error) -> Step {
        guard let sectionEnd = try scanFieldSection(bytes, from: offset, what: "trailer section") else {
            return .event(.needMoreData, consumedTo: bytes.count)
        }
        var trailers = HTTPFields()
        var ignoredFraming = FramingFields()
        // The scanner found the empty line, so these sections are complete (the result is never nil).
        if carry.isEmpty {
            _ = try Self.parseFieldLines(
                UnsafeRawBufferPointer(rebasing: bytes[offset..<sectionEnd]), from: 0, kind: "trailer",
                interpretsFraming: false, limits: limits, into: &trailers, framing: &ignoredFraming)
        } else {
            carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<sectionEnd]))
            _ = try carry.withBytes { section throws(HTTP1Error) in
                try Self.parseFieldLines(
                    section, from: 0, kind: "trailer", interpretsFraming: false, limits: limits, into: &trailers,
                    framing: &ignoredFraming)
            }
            carry.removeAll(keepingCapacity: true)
        }
        return endResponse(trailers: trailers.isEmpty ? nil : trailers, at: sectionEnd)
    }

    /// Checks the status line once its line feed is in `bytes` (after what `carry` holds of it), so that a peer
    /// that is no HTTP server (an SSH or SMTP banner, a TLS server's alert read as text) is refused at its first
    /// line, not at the blank line that would end a head, the inactivity timeout or the close.
    private func checkStatusLine(_ bytes: UnsafeRawBufferPointer, from offset: Int) throws(HTTP1Error) {
        let limit = offset + min(bytes.count - offset, max(limits.maxHeadBytes - carry.count, 0))
        guard let lineFeed = ByteScanner.firstIndex(of: ByteScanner.lf, in: UnsafeRawBufferPointer(rebasing: bytes[..<limit]), from: offset)
        else { return }
        if carry.isEmpty {
            _ = try Self.parseStatusLine(ByteScanner.trimmingCR(bytes, offset, lineFeed), previous: nil)
            return
        }
        var line = carry
        line.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<lineFeed]))
        try line.withBytes { buffer throws(HTTP1Error) in
            _ = try Self.parseStatusLine(ByteScanner.trimmingCR(buffer, 0, buffer.count), previous: nil)
        }
    }

    /// Parses a head that lies whole in `bytes` without first scanning for its end. Returns nil when the
    /// bytes (or the head size limit) end before the head does, and also when a line is invalid: the caller
    /// then takes the general path, which finds the end of the head first and, once it is complete, parses
    /// it again and throws, so errors and limits are reported exactly as before this shortcut existed.
    private mutating func parseHeadInPlace(_ bytes: UnsafeRawBufferPointer, from offset: Int) -> (ParsedHead, sectionEnd: Int)? {
        let window = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + min(bytes.count - offset, limits.maxHeadBytes))])
        do {
            guard let complete = try Self.parseHeadSection(window, limits: limits, previous: &previousHead) else { return nil }
            return (complete.head, offset + complete.length)
        } catch {
            return nil
        }
    }

    // MARK: - Field sections

    /// Looks for the empty line that ends a field section (a head or trailers), continuing a section begun in
    /// `carry`. Returns the offset just past that line, or `nil` after copying the rest of `bytes` into `carry`.
    /// Enforces `maxHeadBytes` without scanning further than the limit.
    private mutating func scanFieldSection(_ bytes: UnsafeRawBufferPointer, from offset: Int, what: String) throws(HTTP1Error) -> Int? {
        let budget = limits.maxHeadBytes - carry.count
        let scanEnd = offset + min(bytes.count - offset, max(budget, 0))
        let window = UnsafeRawBufferPointer(rebasing: bytes[..<scanEnd])
        var lineStart = offset
        var carriedLength = carriedLineLength
        while let lineFeed = ByteScanner.firstIndex(of: ByteScanner.lf, in: window, from: lineStart) {
            let lineLength = carriedLength + (lineFeed - lineStart)
            if lineLength == 0 {
                carriedLineLength = 0
                return lineFeed + 1
            }
            if lineLength == 1 {
                let previous = lineFeed > offset ? bytes[lineFeed - 1] : carry[carry.count - 1]
                if previous == ByteScanner.cr {
                    carriedLineLength = 0
                    return lineFeed + 1
                }
            }
            carriedLength = 0
            lineStart = lineFeed + 1
        }
        if scanEnd < bytes.count {
            throw .headerLimitExceeded("\(what) exceeds the limit of \(limits.maxHeadBytes) bytes")
        }
        carriedLineLength = carriedLength + (scanEnd - lineStart)
        carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
        return nil
    }

    private struct ParsedHead {
        var head: HTTP1ResponseHead
        var framing: FramingFields
    }

    /// The status and fields of the previous head, reused where the next head repeats them, with the head's
    /// bytes and where each field came from in them: comparing bytes with bytes costs no retain or release.
    package struct PreviousHead {
        package var status: HTTPResponse.Status?
        package var fields = HTTPFields()
        package var bytes: [UInt8] = []
        /// `spans[i]` is where `fields[i]` came from in `bytes`.
        package var spans: [FieldSpan] = []
        /// The span array of the head before, kept for its capacity (two arrays take turns).
        package var spareSpans: [FieldSpan] = []

        /// After a head that was incomplete or invalid: takes back `fields`, the previous head's fields as
        /// that head's parsing left them, and forgets the spans of those it replaced (`newSpans[i].replaced`),
        /// so that `fields[i]` still is what `spans[i]` says wherever a span can match.
        package mutating func restore(_ fields: HTTPFields, changedBy newSpans: [FieldSpan]) {
            var fields = fields
            if fields.count > spans.count {
                fields.removeSubrange(spans.count...)
            }
            for index in 0..<min(newSpans.count, spans.count) where newSpans[index].replaced {
                spans[index] = .folded
            }
            self.fields = fields
            spareSpans = newSpans
        }
    }

    /// Where a field's line lies in its section's bytes, and what it says for framing. A line of the next head
    /// with the same bytes (its line ending included) is the same field: its name is a token, its value is
    /// valid, and it means the same for framing, so none of that is checked again.
    package struct FieldSpan {
        package var lineStart: Int32
        /// The line's length with its CRLF or LF; 0 for a folded field (never reused as a line).
        package var lineLength: Int32
        /// 0 for a folded field: no name bytes compare equal.
        package var nameLength: Int32
        /// -1 for a folded value.
        package var valueStart: Int32
        package var valueEnd: Int32
        package var role: FieldRole
        /// Whether parsing this span's head put a new field at its position (rather than keeping the previous
        /// head's): what must be undone if that head turns out to be incomplete or invalid.
        package var replaced: Bool
        /// The parsed value of a Content-Length field.
        package var contentLength: Int

        /// Matches no line and no name.
        package static let folded = FieldSpan(
            lineStart: 0, lineLength: 0, nameLength: 0, valueStart: -1, valueEnd: -1, role: .other, replaced: false,
            contentLength: 0)
    }

    /// The previous section's bytes and field spans, while a new section is compared with them.
    package struct ReuseSource {
        package var bytes: UnsafeRawBufferPointer
        package var spans: UnsafeBufferPointer<FieldSpan>

        @inline(__always)
        package func line(_ span: FieldSpan) -> UnsafeRawBufferPointer {
            let start = Int(span.lineStart)
            return UnsafeRawBufferPointer(rebasing: bytes[start..<start + Int(span.lineLength)])
        }

        @inline(__always)
        package func name(_ span: FieldSpan) -> UnsafeRawBufferPointer {
            let start = Int(span.lineStart)
            return UnsafeRawBufferPointer(rebasing: bytes[start..<start + Int(span.nameLength)])
        }

        @inline(__always)
        package func value(_ span: FieldSpan) -> UnsafeRawBufferPointer? {
            guard span.valueStart >= 0 else { return nil }
            return UnsafeRawBufferPointer(rebasing: bytes[Int(span.valueStart)..<Int(span.valueEnd)])
        }
    }

    /// What the framing-related fields of a head said; collected while the fields are parsed, from their bytes.
    package struct FramingFields {
        package enum TransferEncoding: Equatable { case absent, chunked, other }
        package var contentLength: Int?
        package var transferEncoding = TransferEncoding.absent
        package var chunkedCount = 0
        /// The compression coding listed before chunked, and how many such codings were listed.
        package var transferCoding: HTTP1TransferCoding?
        package var compressionCodings = 0
        /// A coding other than chunked, gzip, x-gzip or deflate was listed (named in the error, if it matters).
        package var hasUnknownCoding = false
        package var connectionClose = false
        package var connectionKeepAlive = false
        package var keepAliveTimeout: Int?
        package var keepAliveMax: Int?
    }

    /// Parses a head from the status line to the empty line that ends it, and returns it with its length in
    /// `section`; nil if `section` ends first. Reuses what `previous` holds and replaces it by this head.
    private static func parseHeadSection(
        _ section: UnsafeRawBufferPointer, limits: Limits, previous: inout PreviousHead
    ) throws(HTTP1Error) -> (head: ParsedHead, length: Int)? {
        guard let lineFeed = ByteScanner.firstIndex(of: ByteScanner.lf, in: section, from: 0) else { return nil }
        let (version, status) = try parseStatusLine(ByteScanner.trimmingCR(section, 0, lineFeed), previous: previous.status)
        var framing = FramingFields()
        var spans: [FieldSpan] = []
        swap(&spans, &previous.spareSpans)
        spans.removeAll(keepingCapacity: true)
        // The previous head's fields, changed in place where this head differs: taken out of `previous` first,
        // so that unless the previous head is still held elsewhere, its array is not copied.
        var headers = HTTPFields()
        swap(&headers, &previous.fields)
        let outcome = previous.bytes.withUnsafeBytes { bytes in
            previous.spans.withUnsafeBufferPointer { previousSpans in
                Result { () throws(HTTP1Error) -> (end: Int, count: Int)? in
                    try parseHeadFields(
                        section, from: lineFeed + 1, limits: limits, fields: &headers,
                        reusing: ReuseSource(bytes: bytes, spans: previousSpans), framing: &framing, spans: &spans)
                }
            }
        }
        let parsed: (end: Int, count: Int)?
        switch outcome {
        case .success(let result): parsed = result
        case .failure(let error):
            previous.restore(headers, changedBy: spans)
            throw error
        }
        guard let (length, count) = parsed else {
            previous.restore(headers, changedBy: spans)
            return nil
        }
        if count < headers.count {
            headers.removeSubrange(count...)
        }
        previous.status = status
        previous.fields = headers
        previous.spareSpans = previous.spans
        previous.spans = spans
        if previous.bytes.count == length {
            // Heads on one connection often have the same length (same fields, fixed-width dates and ids).
            previous.bytes.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: section[..<length])) }
        } else {
            previous.bytes.removeAll(keepingCapacity: true)
            previous.bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: section[..<length]))
        }

        if framing.transferEncoding != .absent && version == .http1_0 {
            throw .malformedResponse("Transfer-Encoding in an HTTP/1.0 response (RFC 9112 §6.1: its framing is faulty)")
        }
        if framing.chunkedCount > 1 {
            throw .malformedResponse("Transfer-Encoding applies chunked more than once")
        }
        var keepAlive: Bool
        if version == .http1_0 {
            keepAlive = framing.connectionKeepAlive && !framing.connectionClose
        } else {
            keepAlive = !framing.connectionClose
        }
        if framing.transferEncoding != .absent && framing.contentLength != nil {
            // RFC 9112 §6.3 rule 3: Transfer-Encoding overrides Content-Length; such a message may be an attempt
            // at request smuggling, so the connection must not be reused.
            framing.contentLength = nil
            keepAlive = false
        }
        let head = HTTP1ResponseHead(
            version: version, status: status, headers: headers, keepAlive: keepAlive,
            keepAliveTimeout: framing.keepAliveTimeout, keepAliveMax: framing.keepAliveMax)
        return (ParsedHead(head: head, framing: framing), length)
    }

    /// `HTTP/1.1 200 OK`: "HTTP/" DIGIT "." DIGIT SP 3DIGIT [SP reason-phrase] (RFC 9112 §4).
    ///
    /// HTTP/1.2 … HTTP/1.9 are handled as HTTP/1.1 and reported so (RFC 9110 §2.5: a recipient "SHOULD process
    /// the message as if it were in the highest minor version within that major version to which the recipient
    /// is conformant"); other major versions are refused. The code is exactly three digits, and its first digit
    /// must be a class RFC 9110 §15 defines, 1 to 5: a client must treat an unknown code as the x00 of its
    /// class, and 600–999 have none (docs/framing.md).
    private static func parseStatusLine(
        _ line: UnsafeRawBufferPointer, previous: HTTPResponse.Status?
    ) throws(HTTP1Error) -> (HTTPVersion, HTTPResponse.Status) {
        let prefix: StaticString = "HTTP/"
        guard line.count >= 8, ByteScanner.hasPrefix(line, prefix), ByteScanner.isDigit(line[5]), line[6] == UInt8(ascii: "."), ByteScanner.isDigit(line[7]) else {
            if line.isEmpty {
                throw .malformedResponse("empty status line")
            }
            throw .malformedResponse("invalid status line \(ByteScanner.quote(line))")
        }
        var version = HTTPVersion(major: Int(line[5] &- 0x30), minor: Int(line[7] &- 0x30))
        if version.major == 1 && version.minor > 1 {
            version = .http1_1
        }
        guard version == .http1_1 || version == .http1_0 else {
            throw .malformedResponse("unsupported HTTP version \(version) in status line \(ByteScanner.quote(line))")
        }
        guard line.count >= 12, line[8] == ByteScanner.sp, ByteScanner.isDigit(line[9]), ByteScanner.isDigit(line[10]),
            ByteScanner.isDigit(line[11]), line.count == 12 || line[12] == ByteScanner.sp
        else {
            throw .malformedResponse("invalid status code in status line \(ByteScanner.quote(line)) (three digits required)")
        }
        let code = Int(line[9] &- 0x30) * 100 + Int(line[10] &- 0x30) * 10 + Int(line[11] &- 0x30)
        guard code >= 100 && code <= 599 else {
            throw .malformedResponse("invalid status code \(code) (RFC 9110 §15 defines the classes 1xx to 5xx only)")
        }
        let reason = line.count > 13 ? UnsafeRawBufferPointer(rebasing: line[13...]) : UnsafeRawBufferPointer(start: nil, count: 0)
        if let previous, previous.code == code, ByteScanner.equals(previous.reasonPhrase, reason) {
            // Same status line as the previous response: already checked, and no new String.
            return (version, previous)
        }
        var reasonPhrase = ""
        if !reason.isEmpty {
            if let bad = ByteScanner.firstControlCharacter(in: reason) {
                throw .malformedResponse("control character \(ByteScanner.describe(reason[bad])) in reason phrase")
            }
            reasonPhrase = ByteScanner.latin1String(reason)
        }
        return (version, HTTPResponse.Status(code: code, reasonPhrase: reasonPhrase))
    }

    /// What ``nextFieldLine`` found.
    private enum FieldLineResult {
        /// The section ends before the line does (or before the line after it, which might continue it).
        case incomplete
        /// The empty line that ends the section; the offset just past it.
        case endOfSection(Int)
        /// A field line, checked, with its obs-fold continuations replaced by single SPs in `folded`
        /// (nil if it had none), and the offset of the line after it.
        case field(FieldLine, folded: [UInt8]?, isASCII: Bool, next: Int)
    }

    /// Parses the field line at `lineStart`, the section's `(count + 1)`th field if it is one.
    @inline(__always)
    private static func nextFieldLine(
        _ section: UnsafeRawBufferPointer, at lineStart: Int, count: Int, kind: String, limits: Limits
    ) throws(HTTP1Error) -> FieldLineResult {
        guard let lineFeed = ByteScanner.firstIndex(of: ByteScanner.lf, in: section, from: lineStart) else { return .incomplete }
        let line = ByteScanner.trimmingCR(section, lineStart, lineFeed)
        var next = lineFeed + 1
        if line.isEmpty { return .endOfSection(next) }
        // Whether the next line continues this one (obs-fold) is unknown until it has arrived.
        guard next < section.count else { return .incomplete }
        if line[0] == ByteScanner.sp || line[0] == ByteScanner.htab {
            // Continuation lines are consumed with their field below, so this is the section's first line.
            // RFC 9112 §2.2: whitespace before the first field line must be rejected (or the line ignored).
            throw .malformedResponse("\(kind) section starts with a whitespace-prefixed line \(ByteScanner.quote(line))")
        }
        if count + 1 > limits.maxHeaderCount {
            throw .headerLimitExceeded("more than \(limits.maxHeaderCount) \(kind) fields")
        }
        let field = try FieldLine(line, kind: kind)
        // Looking one line ahead for an obs-fold continuation (a line starting with SP or HTAB) is one byte compare.
        guard section[next] == ByteScanner.sp || section[next] == ByteScanner.htab else {
            return .field(field, folded: nil, isASCII: field.isASCII, next: next)
        }
        var folded = Array(field.value)
        var isASCII = field.isASCII
        while next < section.count && (section[next] == ByteScanner.sp || section[next] == ByteScanner.htab),
            let continuationEnd = ByteScanner.firstIndex(of: ByteScanner.lf, in: section, from: next)
        {
            // RFC 9112 §5.2: replace each obs-fold (the line break and the whitespace around it) by one SP.
            let continuation = ByteScanner.trimmingWhitespace(ByteScanner.trimmingCR(section, next, continuationEnd))
            isASCII = try checkValue(continuation, name: field.name, kind: kind) && isASCII
            if !continuation.isEmpty {
                if !folded.isEmpty { folded.append(ByteScanner.sp) }
                folded.append(contentsOf: continuation)
            }
            next = continuationEnd + 1
        }
        // A continuation line without its LF yet: the next call finds no LF there and says `.incomplete`.
        guard next < section.count else { return .incomplete }
        return .field(field, folded: folded, isASCII: isASCII, next: next)
    }

    /// Parses field lines from `offset` up to and including the empty line that ends the section into
    /// `fields` (empty on entry), noting what the framing-related ones say in `framing` if `interpretsFraming`,
    /// and returns the offset just past that empty line, or nil if `section` ends before it. `kind`
    /// ("header" or "trailer") names them in errors.
    package static func parseFieldLines(
        _ section: UnsafeRawBufferPointer, from offset: Int, kind: String, interpretsFraming: Bool, limits: Limits,
        into fields: inout HTTPFields, framing: inout FramingFields
    ) throws(HTTP1Error) -> Int? {
        var lineStart = offset
        var count = 0
        while true {
            switch try nextFieldLine(section, at: lineStart, count: count, kind: kind, limits: limits) {
            case .incomplete:
                return nil
            case .endOfSection(let end):
                return end
            case .field(let field, let folded, let isASCII, let next):
                count += 1
                lineStart = next
                func makeAndNote(_ value: UnsafeRawBufferPointer) throws(HTTP1Error) {
                    fields.append(try makeField(name: makeName(field.name), value: value, isASCII: isASCII))
                    // Framing fields in trailers are meaningless (RFC 9110 §6.5.1); they are kept as plain fields.
                    if interpretsFraming {
                        _ = try noteFraming(field.role, value: value, into: &framing)
                    }
                }
                if let folded {
                    try folded.withBytes(makeAndNote)
                } else {
                    try makeAndNote(field.value)
                }
            }
        }
    }

    /// Parses the field lines of a head from `offset` up to and including the empty line that ends it,
    /// comparing each with the previous head's field at its position: `fields` holds the previous head's
    /// fields on entry, which came from `previous`, and this head's on return (from position `count` on, the
    /// previous head's remain, for the caller to remove). A line with the same bytes as the previous head's
    /// is that field, kept as it is; a field whose name bytes are the same keeps its `HTTPField.Name`.
    /// `spans` says where each field lies in `section`, and which positions of `fields` were replaced.
    /// Returns the offset just past the empty line and the number of fields, or nil if `section` ends first.
    package static func parseHeadFields(
        _ section: UnsafeRawBufferPointer, from offset: Int, limits: Limits, fields: inout HTTPFields,
        reusing previous: ReuseSource, framing: inout FramingFields, spans: inout [FieldSpan]
    ) throws(HTTP1Error) -> (end: Int, count: Int)? {
        if fields.isEmpty {
            // One allocation for the fields array instead of several while it grows; 32 bytes per field is
            // about what real heads average (hyper guesses 30: `AVERAGE_HEADER_SIZE`).
            fields.reserveCapacity(min((section.count - offset) / 32 + 1, 24))
        }
        var lineStart = offset
        var count = 0
        while true {
            if count < previous.spans.count {
                // The common case on a keep-alive connection: the same line as in the previous head. The byte
                // after it must be here (it could start an obs-fold continuation) and must not be SP or HTAB.
                let span = previous.spans[count]
                let lineEnd = lineStart + Int(span.lineLength)
                if span.lineLength > 0, lineEnd < section.count,
                    section[lineEnd] != ByteScanner.sp && section[lineEnd] != ByteScanner.htab,
                    ByteScanner.equals(UnsafeRawBufferPointer(rebasing: section[lineStart..<lineEnd]), previous.line(span))
                {
                    count += 1
                    if count > limits.maxHeaderCount {
                        throw .headerLimitExceeded("more than \(limits.maxHeaderCount) header fields")
                    }
                    // Where the same line lies in this section.
                    let shift = Int32(truncatingIfNeeded: lineStart) &- span.lineStart
                    var moved = span
                    moved.lineStart &+= shift
                    moved.valueStart &+= shift
                    moved.valueEnd &+= shift
                    moved.replaced = false
                    if span.role == .contentLength {
                        try noteContentLength(span.contentLength, into: &framing)
                    } else if span.role != .other {
                        let value = UnsafeRawBufferPointer(rebasing: section[Int(moved.valueStart)..<Int(moved.valueEnd)])
                        _ = try noteFraming(span.role, value: value, into: &framing)
                    }
                    spans.append(moved)
                    lineStart = lineEnd
                    continue
                }
            }
            switch try nextFieldLine(section, at: lineStart, count: count, kind: "header", limits: limits) {
            case .incomplete:
                return nil
            case .endOfSection(let end):
                return (end, count)
            case .field(let field, let folded, let isASCII, let next):
                let index = count
                count += 1
                // Everything that can throw comes before `fields` changes, and the span noting the change is
                // appended right after: if the head fails, `spans` names every position that was replaced.
                func place(_ value: UnsafeRawBufferPointer) throws(HTTP1Error) -> (replaced: Bool, contentLength: Int) {
                    let contentLength = try noteFraming(field.role, value: value, into: &framing)
                    guard index < fields.count else {
                        fields.append(try makeField(name: makeName(field.name), value: value, isASCII: isASCII))
                        return (true, contentLength)
                    }
                    guard index < previous.spans.count, ByteScanner.equals(previous.name(previous.spans[index]), field.name) else {
                        // Not the subscript setter: it ignores a new field that is `==` to the old one, and names
                        // compare case-insensitively, so `server` would keep the previous head's spelling `Server`.
                        let replacement = try makeField(name: makeName(field.name), value: value, isASCII: isASCII)
                        fields.replaceSubrange(index..<(index + 1), with: CollectionOfOne(replacement))
                        return (true, contentLength)
                    }
                    if let previousValue = previous.value(previous.spans[index]), ByteScanner.equals(previousValue, value) {
                        // The same name and value bytes as the previous head's field here: keep that field.
                        return (false, contentLength)
                    }
                    fields[index] = makeField(name: fields[index].name, value: value, isASCII: isASCII)
                    return (true, contentLength)
                }
                let (replaced, contentLength) = if let folded { try folded.withBytes(place) } else { try place(field.value) }
                if folded == nil, let base = section.baseAddress, let valueBase = field.value.baseAddress {
                    let valueStart = valueBase - base
                    spans.append(FieldSpan(
                        lineStart: Int32(truncatingIfNeeded: lineStart), lineLength: Int32(truncatingIfNeeded: next - lineStart),
                        nameLength: Int32(truncatingIfNeeded: field.name.count), valueStart: Int32(truncatingIfNeeded: valueStart),
                        valueEnd: Int32(truncatingIfNeeded: valueStart + field.value.count), role: field.role,
                        replaced: replaced, contentLength: contentLength))
                } else {
                    // A folded field (or an empty value, which has no address): never reused as a line, and its
                    // name never matches.
                    var span = FieldSpan.folded
                    span.replaced = replaced
                    spans.append(span)
                }
                lineStart = next
            }
        }
    }

    /// Notes what a framing field's value says; returns the length a Content-Length field gives (else 0).
    @inline(__always)
    private static func noteFraming(_ role: FieldRole, value: UnsafeRawBufferPointer, into framing: inout FramingFields) throws(HTTP1Error) -> Int {
        switch role {
        case .other:
            return 0
        case .connection:
            FieldValueParser.forEachListElement(value) { token in
                if ByteScanner.equalsIgnoringCase(token, "close") { framing.connectionClose = true }
                if ByteScanner.equalsIgnoringCase(token, "keep-alive") { framing.connectionKeepAlive = true }
            }
        case .keepAlive:
            FieldValueParser.parseKeepAlive(value, into: &framing)
        case .contentLength:
            let length = try FieldValueParser.parseContentLength(value)
            try noteContentLength(length, into: &framing)
            return length
        case .transferEncoding:
            try FieldValueParser.parseTransferEncoding(value, into: &framing)
        }
        return 0
    }

    @inline(__always)
    private static func noteContentLength(_ length: Int, into framing: inout FramingFields) throws(HTTP1Error) {
        if let previous = framing.contentLength, previous != length {
            throw .malformedResponse("conflicting Content-Length values \(previous) and \(length)")
        }
        framing.contentLength = length
    }

    /// Field values may hold HTAB, SP, VCHAR and obs-text (RFC 9110 §5.5); any other control byte is an error.
    /// Returns whether the value is ASCII (then a `String` can be made from it without UTF-8 validation).
    private static func checkValue(_ value: UnsafeRawBufferPointer, name: UnsafeRawBufferPointer, kind: String) throws(HTTP1Error) -> Bool {
        guard let bad = ByteScanner.firstNonPrintableASCII(in: value, from: 0) else { return true }
        var isASCII = true
        var index = bad
        while true {
            let byte = value[index]
            if byte >= 0x80 {
                isASCII = false
            } else if byte != ByteScanner.htab {
                throw .malformedResponse("\(kind) '\(String(decoding: name, as: UTF8.self))' value contains control character \(ByteScanner.describe(byte))")
            }
            guard let next = ByteScanner.firstNonPrintableASCII(in: value, from: index + 1) else { return isASCII }
            index = next
        }
    }

    @inline(__always)
    private static func makeField(name: HTTPField.Name, value: UnsafeRawBufferPointer, isASCII: Bool) -> HTTPField {
        if isASCII {
            // ASCII is valid UTF-8: skip the generic validating initializer (its metadata lookups show up in
            // profiles).
            return HTTPField(name: name, value: String(decoding: value, as: UTF8.self))
        }
        // obs-text: swift-http-types keeps a value that is not UTF-8 as bytes.
        return HTTPField(name: name, value: value)
    }

    /// The name for token bytes (checked by ``FieldLine``).
    private static func makeName(_ bytes: UnsafeRawBufferPointer) throws(HTTP1Error) -> HTTPField.Name {
        // Already checked to be a token, so `HTTPField.Name.init` cannot fail.
        guard let name = commonName(bytes) ?? HTTPField.Name(String(decoding: bytes, as: UTF8.self)) else {
            throw .malformedResponse("invalid field name \(ByteScanner.quote(bytes))")
        }
        return name
    }

    /// The fields whose values decide framing and connection reuse.
    package enum FieldRole: UInt8 {
        case other, contentLength, transferEncoding, connection, keepAlive

        package init(name: UnsafeRawBufferPointer) {
            switch name.count {
            case 10:
                if ByteScanner.equalsIgnoringCase(name, "connection") { self = .connection; return }
                if ByteScanner.equalsIgnoringCase(name, "keep-alive") { self = .keepAlive; return }
            case 14:
                if ByteScanner.equalsIgnoringCase(name, "content-length") { self = .contentLength; return }
            case 17:
                if ByteScanner.equalsIgnoringCase(name, "transfer-encoding") { self = .transferEncoding; return }
            default:
                break
            }
            self = .other
        }
    }

    /// The predefined name for common response fields received in their usual spelling: it skips building,
    /// validating and lowercasing a `String`. The received spelling is kept either way, since only an exact
    /// match is replaced.
    private static func commonName(_ bytes: UnsafeRawBufferPointer) -> HTTPField.Name? {
        @inline(__always) func matches(_ spelling: StaticString) -> Bool {
            ByteScanner.hasPrefix(bytes, spelling)
        }
        switch bytes.count {
        case 3: return matches("Age") ? .age : matches("Via") ? .via : nil
        case 4: return matches("Date") ? .date : matches("ETag") ? .eTag : matches("Vary") ? .vary : nil
        case 6: return matches("Server") ? .server : nil
        case 7: return matches("Expires") ? .expires : matches("Trailer") ? .trailer : matches("Upgrade") ? .upgrade : nil
        case 8: return matches("Location") ? .location : nil
        case 10: return matches("Connection") ? .connection : matches("Set-Cookie") ? .setCookie : nil
        case 11: return matches("Retry-After") ? .retryAfter : nil
        case 12: return matches("Content-Type") ? .contentType : nil
        case 13:
            return matches("Cache-Control") ? .cacheControl : matches("Last-Modified") ? .lastModified
                : matches("Accept-Ranges") ? .acceptRanges : matches("Content-Range") ? .contentRange : nil
        case 14: return matches("Content-Length") ? .contentLength : nil
        case 16:
            return matches("Content-Encoding") ? .contentEncoding : matches("WWW-Authenticate") ? .wwwAuthenticate
                : matches("Content-Language") ? .contentLanguage : matches("Content-Location") ? .contentLocation : nil
        case 17: return matches("Transfer-Encoding") ? .transferEncoding : nil
        default: return nil
        }
    }

    /// One `name: value` line (RFC 9112 §5), split and checked; the value is OWS-trimmed.
    private struct FieldLine {
        /// The name's bytes, a checked token.
        var name: UnsafeRawBufferPointer
        var role: FieldRole
        var value: UnsafeRawBufferPointer
        var isASCII: Bool

        init(_ line: UnsafeRawBufferPointer, kind: String) throws(HTTP1Error) {
            var colon = 0
            while colon < line.count && ByteScanner.isTokenCharacter(line[colon]) {
                colon += 1
            }
            guard colon < line.count, line[colon] == UInt8(ascii: ":") else {
                var afterWhitespace = colon
                while afterWhitespace < line.count && (line[afterWhitespace] == ByteScanner.sp || line[afterWhitespace] == ByteScanner.htab) {
                    afterWhitespace += 1
                }
                if colon > 0 && afterWhitespace > colon && afterWhitespace < line.count && line[afterWhitespace] == UInt8(ascii: ":") {
                    // RFC 9112 §5.1: must be rejected; proxies have disagreed on such names (smuggling).
                    throw .malformedResponse("whitespace between \(kind) name \(ByteScanner.quote(UnsafeRawBufferPointer(rebasing: line[..<colon]))) and its colon")
                }
                if colon == line.count {
                    throw .malformedResponse("\(kind) line without a colon: \(ByteScanner.quote(line))")
                }
                throw .malformedResponse("invalid character \(ByteScanner.describe(line[colon])) in \(kind) name \(ByteScanner.quote(UnsafeRawBufferPointer(rebasing: line[...colon]))))")
            }
            guard colon > 0 else {
                throw .malformedResponse("empty \(kind) name in line \(ByteScanner.quote(line))")
            }
            let nameBytes = UnsafeRawBufferPointer(rebasing: line[..<colon])
            self.name = nameBytes
            self.role = FieldRole(name: nameBytes)
            self.value = ByteScanner.trimmingWhitespace(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...]))
            self.isASCII = try HTTP1ResponseParser.checkValue(value, name: name, kind: kind)
        }
    }

    // MARK: - Chunk size

    /// `chunk-size [ chunk-ext ]` (RFC 9112 §7.1), the line without its LF; a bare CR at the end is the CRLF's.
    /// Only lines that are not plain hex digits and CRLF come here (``plainChunkSizeLine(_:from:)`` takes those).
    ///
    /// Accepted (docs/framing.md): 1*HEXDIG, then the extensions of RFC 9112 §7.1.1,
    /// `*( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )` with a token name and a token or
    /// quoted-string value, then optional SP / HTAB before the line end (h11 accepts that trailing whitespace
    /// too). Extensions are checked and ignored. Refused: whitespace before the size, anything else after it
    /// (llhttp's strict mode and h11 refuse `3 3` and `3x` alike), empty or malformed extensions, and control
    /// characters other than HTAB anywhere.
    package static func parseChunkSizeLine(_ rawLine: UnsafeRawBufferPointer) throws(HTTP1Error) -> Int {
        let line = ByteScanner.trimmingCR(rawLine, 0, rawLine.count)
        var size = 0
        var position = 0
        while position < line.count, let digit = ByteScanner.hexValue(line[position]) {
            guard size <= Int.max >> 4 else {
                throw .malformedResponse("chunk size \(ByteScanner.quote(sizeToken(line))) is too large")
            }
            size = size << 4 | digit
            position += 1
        }
        let digits = position
        @inline(__always) func skipWhitespace() {
            while position < line.count && (line[position] == ByteScanner.sp || line[position] == ByteScanner.htab) {
                position += 1
            }
        }
        // BWS before the first extension, or trailing whitespace.
        skipWhitespace()
        guard digits > 0, position == line.count || line[position] == UInt8(ascii: ";") else {
            throw .malformedResponse("invalid chunk size \(ByteScanner.quote(sizeToken(line)))")
        }
        guard position < line.count else { return size }
        let extensions = UnsafeRawBufferPointer(rebasing: line[position...])
        if let bad = ByteScanner.firstControlCharacter(in: extensions) {
            throw .malformedResponse("control character \(ByteScanner.describe(extensions[bad])) in chunk extension")
        }
        func invalid() -> HTTP1Error {
            .malformedResponse("invalid chunk extension \(ByteScanner.quote(extensions)) (RFC 9112 §7.1.1)")
        }
        @inline(__always) func skipToken() -> Bool {
            let start = position
            while position < line.count && ByteScanner.isTokenCharacter(line[position]) { position += 1 }
            return position > start
        }
        while position < line.count {
            // At a ";" (checked above for the first, below for the others).
            position += 1
            skipWhitespace()
            guard skipToken() else { throw invalid() }
            skipWhitespace()
            if position < line.count && line[position] == UInt8(ascii: "=") {
                position += 1
                skipWhitespace()
                if position < line.count && line[position] == UInt8(ascii: "\"") {
                    // quoted-string (RFC 9110 §5.6.4): qdtext and quoted-pairs; control characters are gone already.
                    position += 1
                    var closed = false
                    while position < line.count {
                        let byte = line[position]
                        position += 1
                        if byte == UInt8(ascii: "\"") {
                            closed = true
                            break
                        }
                        if byte == UInt8(ascii: "\\") {
                            guard position < line.count else { throw invalid() }
                            position += 1
                        }
                    }
                    guard closed else { throw invalid() }
                } else {
                    guard skipToken() else { throw invalid() }
                }
                skipWhitespace()
            }
            guard position == line.count || line[position] == UInt8(ascii: ";") else { throw invalid() }
        }
        return size
    }

    /// The part of a chunk-size line before any extension, for error messages.
    private static func sizeToken(_ line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let end = ByteScanner.firstIndex(of: UInt8(ascii: ";"), in: line, from: 0) ?? line.count
        return ByteScanner.trimmingWhitespace(UnsafeRawBufferPointer(rebasing: line[..<end]))
    }
}

// MARK: - Field values

/// Parsers for the values of the fields that decide framing and connection reuse, straight from bytes.
package enum FieldValueParser {
    /// Calls `body` with each non-empty element of a comma-separated list, OWS trimmed (RFC 9110 §5.6.1).
    package static func forEachListElement<Failure: Error>(
        _ value: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(Failure) -> Void
    ) throws(Failure) {
        var start = 0
        while start <= value.count {
            let end = ByteScanner.firstIndex(of: UInt8(ascii: ","), in: value, from: start) ?? value.count
            let element = ByteScanner.trimmingWhitespace(UnsafeRawBufferPointer(rebasing: value[start..<end]))
            if !element.isEmpty {
                try body(element)
            }
            start = end + 1
        }
    }

    /// `Content-Length: 1*DIGIT`, also accepting a list of identical values ("5, 5"), which RFC 9110 §8.6
    /// lets a recipient treat as one value.
    package static func parseContentLength(_ value: UnsafeRawBufferPointer) throws(HTTP1Error) -> Int {
        var result: Int?
        var start = 0
        while start <= value.count {
            let end = ByteScanner.firstIndex(of: UInt8(ascii: ","), in: value, from: start) ?? value.count
            let element = ByteScanner.trimmingWhitespace(UnsafeRawBufferPointer(rebasing: value[start..<end]))
            guard !element.isEmpty, element.allSatisfy(ByteScanner.isDigit) else {
                throw .malformedResponse("invalid Content-Length \(ByteScanner.quote(value))")
            }
            var length = 0
            for digit in element {
                let (times10, overflow1) = length.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(Int(digit &- 0x30))
                guard !overflow1 && !overflow2 else {
                    throw .malformedResponse("Content-Length \(ByteScanner.quote(element)) is too large")
                }
                length = sum
            }
            if let previous = result, previous != length {
                throw .malformedResponse("conflicting Content-Length values \(previous) and \(length)")
            }
            result = length
            start = end + 1
        }
        return result!  // the loop runs at least once and either sets it or throws
    }

    /// Notes the codings of a Transfer-Encoding field; the last coding of the last field is the final one.
    package static func parseTransferEncoding(_ value: UnsafeRawBufferPointer, into framing: inout HTTP1ResponseParser.FramingFields) throws(HTTP1Error) {
        var sawCoding = false
        try forEachListElement(value) { coding throws(HTTP1Error) in
            // A coding may carry parameters ("gzip;q=1" is not valid here, but be exact about the name).
            let nameEnd = ByteScanner.firstIndex(of: UInt8(ascii: ";"), in: coding, from: 0) ?? coding.count
            let name = ByteScanner.trimmingWhitespace(UnsafeRawBufferPointer(rebasing: coding[..<nameEnd]))
            guard !name.isEmpty, name.allSatisfy(ByteScanner.isTokenCharacter) else {
                throw .malformedResponse("invalid Transfer-Encoding \(ByteScanner.quote(value))")
            }
            sawCoding = true
            if ByteScanner.equalsIgnoringCase(name, "chunked") {
                framing.chunkedCount += 1
                framing.transferEncoding = .chunked
            } else {
                framing.transferEncoding = .other
                if let coding = HTTP1TransferCoding(name: name) {
                    framing.transferCoding = coding
                    framing.compressionCodings += 1
                } else {
                    framing.hasUnknownCoding = true
                }
            }
        }
        guard sawCoding else {
            throw .malformedResponse("empty Transfer-Encoding")
        }
    }

    /// `Keep-Alive: timeout=5, max=100` (RFC 2068 §19.7.1.1, never standardised further). Unknown or
    /// malformed parameters are ignored: the header is advisory.
    package static func parseKeepAlive(_ value: UnsafeRawBufferPointer, into framing: inout HTTP1ResponseParser.FramingFields) {
        forEachListElement(value) { parameter in
            guard let equals = ByteScanner.firstIndex(of: UInt8(ascii: "="), in: parameter, from: 0) else { return }
            let name = ByteScanner.trimmingWhitespace(UnsafeRawBufferPointer(rebasing: parameter[..<equals]))
            var number = ByteScanner.trimmingWhitespace(UnsafeRawBufferPointer(rebasing: parameter[(equals + 1)...]))
            if number.count >= 2 && number.first == UInt8(ascii: "\"") && number.last == UInt8(ascii: "\"") {
                number = UnsafeRawBufferPointer(rebasing: number[1..<number.count - 1])
            }
            // Nine digits at most: no overflow, and nobody means a timeout of more than 31 years.
            guard !number.isEmpty, number.count <= 9, number.allSatisfy(ByteScanner.isDigit) else { return }
            let parsed = number.reduce(0) { $0 * 10 + Int($1 &- 0x30) }
            if ByteScanner.equalsIgnoringCase(name, "timeout") {
                framing.keepAliveTimeout = parsed
            } else if ByteScanner.equalsIgnoringCase(name, "max") {
                framing.keepAliveMax = parsed
            }
        }
    }
}

// MARK: - Bytes

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` keeping the typed error (the standard library's version is `rethrows`).
    fileprivate func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws(HTTP1Error) -> Result) throws(HTTP1Error) -> Result {
        let result = withUnsafeBytes { buffer in
            Swift.Result { () throws(HTTP1Error) in try body(buffer) }
        }
        return try result.get()
    }
}
