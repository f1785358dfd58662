import HTTPTypes

/// One HTTP/1.x connection: a socket (with TLS when the key says so) driving the sans-IO parser.
///
/// Ownership: the pool leases a connection to one task at a time; everything mutable here is used only by
/// that task (the request's executor, then the response body it hands the connection to).
final class HTTP1Connection: @unchecked Sendable {
    // @unchecked: mutable state is touched only by the single task holding the pool lease (see above).
    let id: Int
    let key: ConnectionKey
    let socket: Socket
    let tls: TLSStream?

    private var parser: HTTP1ResponseParser
    /// The bytes of the last read. Body chunks are slices of it, handed to the user without copying;
    /// the next read allocates a new array instead of overwriting this one.
    private var buffer: [UInt8] = []
    private var bufferOffset = 0
    /// Read size adapts: small for small responses, growing to 256 KiB while reads keep filling it
    /// (a large download then costs one syscall per 256 KiB).
    private var readSize = 16 * 1024
    private static let maxReadSize = 256 * 1024
    /// Plain TCP: the last `recv` left the socket empty (it returned less than asked, or `EAGAIN`). With the
    /// event loop's word that no read edge came since, ``looksReusable(retryable:)`` needs no system call.
    private var socketDrained = false
    /// Whether to poll the socket for a response head before parking (the client's
    /// ``HTTPClient/Configuration/busyPollLimit``; set by the connector) and this connection's record of how
    /// soon its heads came.
    var busyPoll = BusyPollPolicy(limit: .zero)
    /// The client's counts of polls and of heads that came during one; nil counts nothing.
    var busyPollCounters: BusyPollCounters?

    /// Where the connection is in its life (idle, writing, awaiting the head, body, done, must close, closed),
    /// with the keep-alive budget and the counters the stale-connection retry reads. Sans-IO; see
    /// `HTTP1ConnectionStateMachine`.
    private var machine = HTTP1ConnectionStateMachine()

    /// Undoes the current response's transfer coding (`Transfer-Encoding: gzip, chunked`), if it has one.
    private var transferDecoder: TransferCodingDecoder?
    /// The decompression-bomb limits for transfer codings: the compression middleware's defaults
    /// (``CompressionPolicy``), which whoever makes the connection may replace with the client's.
    var transferDecodingLimits = DecompressionLimits()
    /// Paces and counts the bytes of the current lease's request (the client's bandwidth limit, the request's
    /// own, the client's meter); set by the transport for each attempt.
    var pacer: TransferPacer? {
        didSet { if pacedCredit > 0 { oldValue?.refund(pacedCredit); pacedCredit = 0 } }
    }
    /// The `CONNECT`s and the proxy's answers when this connection was opened through a tunnel (a `407`
    /// answered, then the `2xx`); empty otherwise. Reported to observers with the connection's first request.
    var tunnelRounds: [TunnelRound] = []
    /// The low-speed limit of the current lease's request and its window, nil for none; set by the transport for
    /// each attempt. Looked at only when the connection waits for the socket (``waitUntil(_:deadline:phase:)``).
    var lowSpeed: LowSpeedWatch?
    /// What is left of the pacer's last grant. It is used up, over as many reads or writes as it takes, before
    /// the next reservation: each transfer sharing a limit moves a whole grant per turn, whatever its socket
    /// buffer holds at the moment (refunding a short read's rest let the transfer with the fullest buffer win).
    private var pacedCredit = 0

    /// How many of `wanted` bytes may cross the socket now, waiting for a new grant when the last one is used up.
    private func pacedAllowance(_ pacer: TransferPacer, upTo wanted: Int, deadlines: Deadlines) async throws(HTTPClientError) -> Int {
        if pacedCredit <= 0 { pacedCredit = try await pacer.allowance(upTo: Int.max, deadlines: deadlines) }
        return min(wanted, pacedCredit)
    }

    /// The answers on this connection come from an HTTP proxy (a request in absolute form, or `CONNECT`): its
    /// `Proxy-Connection` counts as `Connection` does (``HTTP1ResponseHead/proxyKeepsAlive``).
    var answersAsProxy: Bool

    init(id: Int, key: ConnectionKey, socket: Socket, tls: TLSStream?, limits: HTTP1ResponseParser.Limits) {
        self.id = id
        self.key = key
        self.socket = socket
        self.tls = tls
        self.parser = HTTP1ResponseParser(limits: limits)
        answersAsProxy = key.proxy?.isHTTP == true && !key.tunnelsThroughProxy
    }

    var wasReused: Bool { machine.wasReused }
    var requestBytesWritten: Int { machine.requestBytesWritten }
    var responseBytesReceived: Int { parser.bytesReceived }
    var remainingContentLength: Int? { parser.remainingContentLength }
    /// The server's `Keep-Alive: timeout=N`, if it gave one.
    var keepAliveTimeout: Duration? { machine.keepAliveTimeout.map { .seconds($0) } }

    /// Whether the connection can carry another request: the response ended, both sides keep the connection,
    /// the server's `Keep-Alive: max` budget is not used up, and no bytes came after the response (a body on a
    /// 204, 304 or HEAD response, or more than Content-Length said: the framing no longer lines up).
    var isReusable: Bool { machine.isReusable && !hasBufferedInput }

    /// While a body is read: whether the connection can carry another request once the body has ended (see
    /// ``isReusable``). False for a body delimited by the close.
    var isReusableAfterBody: Bool { machine.isReusableAfterBody && !parser.readsBodyUntilClose }

    // MARK: Writing

    /// Writes all of `bytes`, suspending while the socket is full.
    nonisolated(nonsending) func write(_ bytes: [UInt8], deadlines: Deadlines) async throws(HTTPClientError) {
        try await write(bytes[...], deadlines: deadlines)
    }

    nonisolated(nonsending) func write(_ bytes: ArraySlice<UInt8>, deadlines: Deadlines) async throws(HTTPClientError) {
        if let pacer, pacer.isLimited { return try await writePaced(bytes, pacer: pacer, deadlines: deadlines) }
        var offset = 0
        while offset < bytes.count {
            let outcome = bytes.withUnsafeBytes { raw in attemptWrite(UnsafeRawBufferPointer(rebasing: raw[offset...])) }
            offset += try await settle(outcome, deadlines: deadlines)
        }
    }

    /// Throttled: no more than the allowance goes to the socket at once. Apart from ``write(_:deadlines:)``, whose
    /// frame every request carries while its head goes out (an async function's frame holds all its paths' locals).
    @inline(never)
    private func writePaced(_ bytes: ArraySlice<UInt8>, pacer: TransferPacer, deadlines: Deadlines) async throws(HTTPClientError) {
        var offset = 0
        while offset < bytes.count {
            let allowed = try await pacedAllowance(pacer, upTo: bytes.count - offset, deadlines: deadlines)
            let end = offset + allowed
            let outcome = bytes.withUnsafeBytes { raw in attemptWrite(UnsafeRawBufferPointer(rebasing: raw[offset..<end])) }
            let written = try await settle(outcome, deadlines: deadlines)
            pacedCredit -= written
            offset += written
        }
    }

    /// Writes `first` then `second` with as few syscalls as possible: one `sendmsg` for plain TCP,
    /// one copy into a single buffer when `second` is small.
    nonisolated(nonsending) func write(_ first: [UInt8], _ second: ArraySlice<UInt8>, deadlines: Deadlines) async throws(HTTPClientError) {
        if second.count <= 4096 {
            try await write(first + second, deadlines: deadlines)
            return
        }
        if tls != nil || first.isEmpty || pacer?.isLimited == true {
            // TLS encrypts record by record anyway; two writes cost no extra round trip.
            try await write(first, deadlines: deadlines)
            try await write(second, deadlines: deadlines)
            return
        }
        var offset = 0
        let total = first.count + second.count
        while offset < total {
            let outcome: WriteOutcome
            if offset < first.count {
                outcome = first.withUnsafeBytes { head in
                    second.withUnsafeBytes { body in
                        WriteOutcome(socket.tryWrite(UnsafeRawBufferPointer(rebasing: head[offset...]), body))
                    }
                }
            } else {
                let bodyOffset = offset - first.count
                outcome = second.withUnsafeBytes { body in
                    WriteOutcome(socket.tryWrite(UnsafeRawBufferPointer(rebasing: body[bodyOffset...])))
                }
            }
            offset += try await settle(outcome, deadlines: deadlines)
        }
    }

    /// Writes `parts` in order: one `sendmsg` for all of them on plain TCP (a batch of body chunks), one
    /// `SSL_write` each under TLS, which cuts records of at most 16 KiB anyway.
    nonisolated(nonsending) func write(_ parts: [ArraySlice<UInt8>], deadlines: Deadlines) async throws(HTTPClientError) {
        if parts.count <= 1 || tls != nil || pacer?.isLimited == true {
            for part in parts { try await write(part, deadlines: deadlines) }
            return
        }
        // Where the next byte to send is: a part, and an offset in it.
        var index = 0
        var offset = 0
        while index < parts.count {
            let end = min(parts.count, index + Socket.maxVectors)
            let outcome = WriteOutcome(socket.tryWrite(parts[index..<end], skippingFirst: offset))
            var written = try await settle(outcome, deadlines: deadlines)
            while written > 0 {
                let left = parts[index].count - offset
                if written < left {
                    offset += written
                    written = 0
                } else {
                    written -= left
                    index += 1
                    offset = 0
                }
            }
            while index < parts.count && parts[index].count == offset {
                index += 1
                offset = 0
            }
        }
    }

    private func attemptWrite(_ bytes: UnsafeRawBufferPointer) -> WriteOutcome {
        if let tls { return WriteOutcome(tls.tryWrite(bytes)) }
        return WriteOutcome(socket.tryWrite(bytes))
    }

    /// Turns a write attempt into bytes written, waiting for readiness when it could not proceed.
    nonisolated(nonsending) private func settle(_ outcome: WriteOutcome, deadlines: Deadlines) async throws(HTTPClientError) -> Int {
        switch outcome {
        case .wrote(let n):
            machine.wrote(n)
            pacer?.record(n)
            return n
        case .wait(let interest):
            let (deadline, phase) = deadlines.next(.write)
            if interest == .writable {
                try await waitToWrite(until: deadline, phase: phase)
            } else {
                try await waitUntil(interest, deadline: deadline, phase: phase)
            }
            return 0
        case .failed(let error):
            throw error
        }
    }

    /// How long a write waits for room before it looks whether the server has answered already.
    private static let earlyResponseCheck = Duration.seconds(1)

    /// Waits until the socket takes more bytes. A server may answer before it has read the whole request (a
    /// `413`, a `401` to an upload) and stop reading: RFC 9112 §9.5 has the client watch for that while it sends.
    /// Every ``earlyResponseCheck`` the wait looks for input; a complete final head there ends the write (it is
    /// kept for ``takeEarlyResponse(after:)``), anything less goes on waiting. Costs nothing while the socket
    /// takes bytes within a second.
    nonisolated(nonsending) private func waitToWrite(until deadline: MonotonicTime?, phase: HTTPClientError.TimeoutPhase) async throws(HTTPClientError) {
        while true {
            let check = MonotonicTime.now + Self.earlyResponseCheck
            if let deadline, deadline <= check {
                try await waitUntil(.writable, deadline: deadline, phase: phase)
                return
            }
            do {
                try await waitUntil(.writable, deadline: check, phase: phase)
                return
            } catch where error.code == .timeout && error.timeoutPhase != .lowSpeed {
                guard earlyHead == nil, socket.pendingInput() == .bytes, let head = parseEarlyHead() else { continue }
                earlyHead = head
                throw HTTPClientError(.ioFailure, "stopped sending the request body: the server answered before reading it")
            }
        }
    }

    /// A final response head that came while the request was still being written; see ``takeEarlyResponse(after:)``.
    private var earlyHead: HTTP1ResponseHead?

    /// After writing the request failed: the server's final response head, if one came before the request was
    /// whole (RFC 9112 §9.5). A server that refuses an upload (`413`) often answers at once, stops reading and
    /// closes; the write then fails with a reset or a broken pipe, or stalls, while the answer sits unread. With
    /// a head, the body is not sent further and the connection closes after this response
    /// (``HTTP1ConnectionStateMachine/bodyWithheld()``). Nil for other failures, and when no whole head is there.
    func takeEarlyResponse(after error: HTTPClientError) -> HTTP1ResponseHead? {
        if let earlyHead {
            self.earlyHead = nil
            return earlyHead
        }
        switch error.code {
        case .connectionClosed, .ioFailure: return parseEarlyHead()
        case .timeout where error.timeoutPhase != .total: return parseEarlyHead()
        default: return nil
        }
    }

    /// Parses what is buffered and what the socket holds, without waiting, for a final response head (interim 1xx
    /// responses are skipped). Bounded: at most 16 reads.
    private func parseEarlyHead() -> HTTP1ResponseHead? {
        for _ in 0..<16 {
            while bufferOffset < buffer.count {
                guard let (event, consumed) = try? parseAtOffset() else { return nil }
                bufferOffset += consumed
                switch event {
                case .head(let head):
                    guard (try? accept(head)) != nil else { return nil }
                    machine.bodyWithheld()
                    return head
                case .needMoreData:
                    continue
                case .body, .end:
                    return nil
                }
            }
            guard case .data? = try? readAvailable() else { return nil }
        }
        return nil
    }

    /// Whether a file body can go out with ``sendFile(_:offset:count:deadlines:sent:)``: plain TCP (TLS must
    /// encrypt in user space) and no bandwidth limit (the pacer hands out allowances per write).
    var canSendFile: Bool { Socket.canSendFile && tls == nil && pacer?.isLimited != true }

    /// The most one `sendfile` is asked for: it returns once the socket buffer is full anyway; the cap only
    /// bounds how far one call runs ahead of the progress reports.
    private static let sendFileSlice = 8 * 1024 * 1024

    /// Writes `count` bytes of `file` from `offset` with `sendfile`, suspending while the socket is full, and
    /// calls `sent` with the running total after each call that moved bytes. Only when ``canSendFile``.
    /// A file that ends before `count` bytes fails with ``HTTPClientError/Code/invalidRequest``: the body is
    /// never cut short silently (the connection is then unusable, and the caller closes it).
    func sendFile(
        _ file: LocalFile, offset: Int, count: Int, deadlines: Deadlines, sent: (Int) -> Void
    ) async throws(HTTPClientError) {
        var done = 0
        while done < count {
            let wanted = min(count - done, Self.sendFileSlice)
            let outcome = socket.trySendFile(from: file, offset: offset + done, count: wanted)
            if case .done(0) = outcome {
                throw .invalidRequest(
                    "request body file \(file.path) ended after \(done) of its \(count) bytes (it shrank while being sent)")
            }
            let written = try await settle(WriteOutcome(outcome), deadlines: deadlines)
            if written > 0 {
                done += written
                sent(done)
            }
        }
    }

    // MARK: Reading

    /// Starts a request with `method`; `persistent` is false when it goes out with `Connection: close`.
    /// Throws if the connection is not ready for one (a bug, reported rather than trapped).
    func startRequest(method: HTTPRequest.Method, persistent: Bool = true) throws(HTTPClientError) {
        if case .refuse(let reason) = machine.requestStarted(persistent: persistent) {
            throw HTTPClientError(.invalidRequest, "connection \(id): \(reason)")
        }
        parser.expectResponse(to: method)
        transferDecoder = nil
    }

    /// The whole request went out.
    func requestWritten() {
        _ = machine.requestWritten()
    }

    /// A final response head arrived: the state machine learns its keep-alive terms (and may refuse it), and a
    /// transfer coding under chunked is set up to be undone as the body is read (RFC 9112 §7: it is hop-by-hop).
    private func accept(_ head: HTTP1ResponseHead) throws(HTTPClientError) {
        if case .refuse(let reason) = machine.headReceived(
            keepAlive: answersAsProxy ? head.proxyKeepsAlive : head.keepAlive, keepAliveMax: head.keepAliveMax, keepAliveTimeout: head.keepAliveTimeout) {
            throw .malformedResponse(reason)
        }
        transferDecoder = head.transferCoding.map { TransferCodingDecoder(coding: $0, limits: transferDecodingLimits) }
    }

    /// Reads until the response head is complete. Interim 1xx responses are skipped by the parser.
    nonisolated(nonsending) func readHead(deadlines: Deadlines) async throws(HTTPClientError) -> HTTP1ResponseHead {
        var firstRead = true
        while true {
            if bufferOffset < buffer.count {
                let (event, consumed) = try parseAtOffset()
                bufferOffset += consumed
                switch event {
                case .head(let head):
                    try accept(head)
                    return head
                case .needMoreData:
                    continue
                case .body, .end:
                    throw .malformedResponse("the parser produced body bytes before the response head")
                }
            }
            // Right after the request went out the answer is almost never there yet: wait before the first
            // read instead of spending a `recv` on EAGAIN (a third of all reads with 32 concurrent GETs).
            // Not under TLS: waiting first there cost more than the failed `SSL_read` it saves (tls-seq, six
            // interleaved rounds: 9,027–10,301 against 10,115–12,394 requests/s trying first).
            let waitFirst = firstRead && tls == nil
            firstRead = false
            if case .end(let clean) = try await fill(deadlines: deadlines, phase: .head, waitFirst: waitFirst) {
                let event = try HTTPClientError.mapping { () throws(HTTP1Error) in try parser.endOfInput(unclean: !clean) }
                if case .head(let head) = event { return head }
                throw .connectionClosed("the connection closed before the response head", bytesReceived: parser.bytesReceived)
            }
        }
    }

    /// The next body chunk, or nil when the body is complete. Reads from the socket only when the
    /// buffered bytes are used up, so a consumer that stops asking stops the reading (backpressure).
    nonisolated(nonsending) func nextBodyChunk(deadlines: Deadlines) async throws(HTTPClientError) -> ArraySlice<UInt8>? {
        while true {
            if let step = try parseBuffered() {
                switch step {
                case .chunk(let chunk): return chunk
                case .end:
                    responseEnded()
                    return nil
                }
            }
            if case .end(let clean) = try await fill(deadlines: deadlines, phase: .body) {
                // Unclean (TLS without close_notify): a body delimited by the close is a truncation (RFC 9112 §9.8).
                switch try HTTPClientError.mapping({ () throws(HTTP1Error) in try parser.endOfInput(unclean: !clean) }) {
                case .end:
                    try transferDecoder?.finish()
                    responseEnded()
                    return nil
                default:
                    throw .connectionClosed("the connection closed before the body was complete", bytesReceived: parser.bytesReceived)
                }
            }
        }
    }

    /// What of the body is already buffered (a small response often arrives with its head), taken with no I/O.
    enum BufferedBody {
        /// The whole body: the connection's response has ended.
        case complete(BufferedChunks)
        /// The start of the body; the rest is still to be read with ``nextBodyChunk(deadlines:)``.
        case partial(BufferedChunks)
    }

    /// Body chunks parsed from the read buffer. Most responses that came whole have one; it is kept without
    /// an array (an allocation per request).
    struct BufferedChunks {
        private(set) var first: ArraySlice<UInt8>?
        private(set) var more: [ArraySlice<UInt8>] = []

        mutating func append(_ chunk: ArraySlice<UInt8>) {
            if first == nil { first = chunk } else { more.append(chunk) }
        }

        /// All of them, in order.
        var all: [ArraySlice<UInt8>] { first.map { [$0] + more } ?? [] }
    }

    /// The body bytes already buffered: all of them if the response ended there, else what there is.
    func takeBufferedBody() throws(HTTPClientError) -> BufferedBody {
        var chunks = BufferedChunks()
        while true {
            guard let step = try parseBuffered() else { return .partial(chunks) }
            switch step {
            case .chunk(let chunk): chunks.append(chunk)
            case .end:
                responseEnded()
                return .complete(chunks)
            }
        }
    }

    /// An idle connection keeps no read buffer: chunks the user still holds keep their own storage alive.
    private func responseEnded() {
        transferDecoder = nil
        _ = machine.bodyEnded()
        if bufferOffset >= buffer.count {
            buffer = []
            bufferOffset = 0
        }
        readSize = 16 * 1024
    }

    private enum Step {
        case chunk(ArraySlice<UInt8>)
        case end
    }

    /// Feeds the unparsed rest of the buffer to the parser.
    @inline(__always)
    private func parseAtOffset() throws(HTTPClientError) -> (event: HTTP1ResponseParser.Event, consumed: Int) {
        let offset = bufferOffset
        let result = buffer.withUnsafeBytes { raw in
            Result { () throws(HTTP1Error) in try parser.parse(UnsafeRawBufferPointer(rebasing: raw[offset...])) }
        }
        switch result {
        case .success(let step): return step
        case .failure(let error): throw HTTPClientError(error)
        }
    }

    /// Parses buffered bytes, undoing the transfer coding if there is one; nil when they are used up and more
    /// must be read. A decoded chunk is a new array (zlib's output), not a slice of the read buffer.
    private func parseBuffered() throws(HTTPClientError) -> Step? {
        guard let transferDecoder else { return try parseBufferedChunks() }
        while true {
            if let decoded = try transferDecoder.next() { return .chunk(decoded) }
            switch try parseBufferedChunks() {
            case nil:
                return nil
            case .chunk(let coded):
                transferDecoder.feed(coded)
            case .end:
                try transferDecoder.finish()  // a coded stream cut short by the last chunk fails here
                return .end
            }
        }
    }

    /// Parses buffered bytes as the parser frames them; nil when they are used up and more must be read.
    private func parseBufferedChunks() throws(HTTPClientError) -> Step? {
        while true {
            let (event, consumed) = try parseAtOffset()
            let base = bufferOffset
            bufferOffset += consumed
            switch event {
            case .body(let range):
                if range.isEmpty { continue }
                return .chunk(buffer[(base + range.lowerBound)..<(base + range.upperBound)])
            case .end:
                return .end
            case .needMoreData:
                return nil
            case .head:
                throw .malformedResponse("a second response head arrived inside a body")
            }
        }
    }

    /// What one ``fill(deadlines:phase:waitFirst:)`` got.
    private enum Fill {
        /// Bytes, in `buffer`.
        case data
        /// The end of the stream; `clean` unless TLS ended without close_notify (a TCP close or reset).
        case end(clean: Bool)
    }

    /// One read into a fresh buffer.
    ///
    /// `waitFirst` waits for readability before the first attempt. Only for a plain socket: TLS may hold
    /// decrypted bytes the socket no longer shows. Safe with the edge-triggered loop, which remembers an edge
    /// that came before the wait and reports a descriptor that is already readable when it is (re)armed.
    nonisolated(nonsending) private func fill(
        deadlines: Deadlines, phase: HTTPClientError.TimeoutPhase, waitFirst: Bool = false
    ) async throws(HTTPClientError) -> Fill {
        if waitFirst {
            try await awaitReadable(deadlines: deadlines, phase: phase)
        }
        while true {
            let outcome: ReadOutcome
            // Throttled: read no more than the allowance, after waiting for it; the rest stays in the kernel.
            let paced = pacer?.isLimited == true
            let size = paced ? try await pacedAllowance(pacer!, upTo: readSize, deadlines: deadlines) : readSize
            let fresh: [UInt8]
            (fresh, outcome) = readOnce(upTo: size)
            if let pacer, case .read(let n) = outcome {
                if paced { pacedCredit -= n }
                pacer.record(n)
            }
            switch outcome {
            case .read(let n):
                buffer = fresh
                bufferOffset = 0
                if n == size, readSize < Self.maxReadSize { readSize *= 2 }
                return n > 0 ? .data : .end(clean: true)
            case .uncleanEnd:
                return .end(clean: false)
            case .wait(.readable):
                try await awaitReadable(deadlines: deadlines, phase: phase)
            case .wait(.writable):
                let (deadline, timeoutPhase) = deadlines.next(phase)
                try await waitUntil(.writable, deadline: deadline, phase: timeoutPhase)
            case .failed(let error):
                throw error
            }
        }
    }

    /// Waits until the socket has bytes to read. For the response head of the only transfer in flight, first
    /// polls it for up to the busy-poll budget when the policy gives one (``BusyPollPolicy``), then parks on the
    /// event loop; either way the wait is recorded in the policy. Body waits park at once: a body's next bytes
    /// come as fast as the server sends them, and polling for them cost more CPU than the wake-ups it saved
    /// (256 MiB downloads).
    nonisolated(nonsending) private func awaitReadable(
        deadlines: Deadlines, phase: HTTPClientError.TimeoutPhase
    ) async throws(HTTPClientError) {
        let (deadline, timeoutPhase) = deadlines.next(phase)
        // With other transfers in flight nothing polls, and the wait is not observed either: it would measure
        // the queueing behind them, not the server (and the two clock reads are saved on the busiest path).
        let transfers = phase == .head && busyPoll.limit > 0 ? NetworkActivity.inProcess : Int.max
        guard transfers <= 1 else {
            try await waitUntil(.readable, deadline: deadline, phase: timeoutPhase)
            return
        }
        let start = MonotonicTime.now
        if let budget = busyPoll.budget(transfersInFlight: transfers, processors: Processors.available) {
            var end = start.adding(nanoseconds: budget)
            if let deadline, deadline < end { end = deadline }
            busyPollCounters?.countPoll()
            if pollSocket(until: end) {
                busyPollCounters?.countHit()
                busyPoll.observe(wait: start.nanoseconds(to: .now))
                return
            }
        }
        try await waitUntil(.readable, deadline: deadline, phase: timeoutPhase)
        busyPoll.observe(wait: start.nanoseconds(to: .now))
    }

    /// Waits until the socket is ready for `interest`, or `deadline` (a timeout names `phase`). Every wait of a
    /// request goes through here (the wait for `100 Continue` excepted: it is the client's choice, and ends by
    /// itself): with a low-speed limit, the limit's window is looked at before it and it ends at the window's end
    /// at the latest. Without one this costs one test of ``lowSpeed``.
    @inline(__always)
    nonisolated(nonsending) private func waitUntil(
        _ interest: IOInterest, deadline: MonotonicTime?, phase: HTTPClientError.TimeoutPhase
    ) async throws(HTTPClientError) {
        if lowSpeed == nil {
            try await socket.waitUntil(interest, deadline: deadline, phase: phase)
        } else {
            try await waitWatchingSpeed(interest, deadline: deadline, phase: phase)
        }
    }

    /// ``waitUntil(_:deadline:phase:)`` under a low-speed limit: the wait ends at `deadline` or when the waits of
    /// the limit's window add up to its duration, whichever comes first; at the window's end the window is judged
    /// (``LowSpeedWatch/beforeWait(bytesMoved:)`` fails the transfer, or starts a new window and the wait goes on).
    /// Kept out of the callers' frames (an async function's frame holds all its paths' locals).
    @inline(never)
    nonisolated(nonsending) private func waitWatchingSpeed(
        _ interest: IOInterest, deadline: MonotonicTime?, phase: HTTPClientError.TimeoutPhase
    ) async throws(HTTPClientError) {
        // Bounded: each round but the last waits out a window's rest, so time moves on; a window that ends with too
        // few bytes throws, and `deadline` (when there is one) ends the wait with its own timeout.
        while var watch = lowSpeed {
            let left = try watch.beforeWait(bytesMoved: machine.requestBytesWritten + parser.bytesReceived)
            let start = MonotonicTime.now
            let windowEnd = start.adding(nanoseconds: left)
            lowSpeed = watch
            if let deadline, deadline <= windowEnd {
                defer { lowSpeed?.waited(nanoseconds: start.nanoseconds(to: .now)) }
                try await socket.waitUntil(interest, deadline: deadline, phase: phase)
                return
            }
            do {
                try await socket.waitUntil(interest, deadline: windowEnd, phase: .lowSpeed)
                lowSpeed?.waited(nanoseconds: start.nanoseconds(to: .now))
                return
            } catch where error.code == .timeout {
                // The window's time is up (the event loop's timer may fire a little before the clock says so).
                lowSpeed?.waited(nanoseconds: max(left, start.nanoseconds(to: .now)))
            }
        }
        try await socket.waitUntil(interest, deadline: deadline, phase: phase)
    }

    /// Peeks at the socket (`recv` with `MSG_PEEK`, which takes nothing) until bytes or the peer's close show, or
    /// `end` passes; true if they showed. Under TLS it watches the encrypted stream, which OpenSSL has read to
    /// the end when it asks to wait.
    private func pollSocket(until end: MonotonicTime) -> Bool {
        repeat {
            if socket.pendingInput() != .nothing { return true }
        } while MonotonicTime.now < end
        return false
    }

    // MARK: Lifecycle

    /// Whether bytes beyond the current response are waiting in the read buffer.
    var hasBufferedInput: Bool { bufferOffset < buffer.count }

    /// Whether an idle connection is still worth reusing: nothing buffered, and the peer has not closed.
    ///
    /// `retryable`: the request may be sent again on a new connection if this one turns out closed (an
    /// idempotent method with a replayable body; see `StaleConnectionRetry`). Then, when the last `recv` (ours,
    /// or OpenSSL's under TLS) left the socket empty, the event loop answers instead of the kernel: if no read
    /// edge has come since (data, a TLS alert or the peer's FIN would have made one) and none reported a
    /// close, nothing has arrived, and the `recv(MSG_PEEK)` of every other reuse is saved. That answer is as
    /// old as the loop thread's last look, microseconds on a busy machine, so a close just before it can be
    /// missed; the request then fails on the closed connection and is sent once more on a new one. A request
    /// that could not be repeated always asks the kernel.
    func looksReusable(retryable: Bool = false) -> Bool {
        guard bufferOffset >= buffer.count, tls?.hasUnexpectedInput != true else { return false }
        if retryable && (tls?.socketDrained ?? socketDrained) && socket.readSideIsQuiet { return true }
        return socket.looksReusable()
    }

    func close() {
        pacer = nil  // gives back an unused grant
        machine.closed()
        tls?.shutdown()
        socket.close()
    }
}

private enum WriteOutcome {
    case wrote(Int)
    case wait(IOInterest)
    case failed(HTTPClientError)

    init(_ outcome: SyscallOutcome) {
        switch outcome {
        case .done(let n): self = .wrote(n)
        case .wouldBlock: self = .wait(.writable)
        case .failed(let code):
            self = .failed(HTTPClientError(.ioFailure, "writing the request failed: \(errnoText(code))", errno: code))
        }
    }

    init(_ outcome: TLSOutcome) {
        switch outcome {
        case .done(let n): self = .wrote(n)
        case .uncleanEnd: self = .wrote(0)  // as before: the next attempt reports the broken connection
        case .wantRead: self = .wait(.readable)
        case .wantWrite: self = .wait(.writable)
        case .failed(let error): self = .failed(error)
        }
    }
}

private enum ReadOutcome {
    /// Bytes read; 0 is a clean end of the stream (a TCP FIN, or TLS close_notify).
    case read(Int)
    /// TLS ended without close_notify.
    case uncleanEnd
    case wait(IOInterest)
    case failed(HTTPClientError)

    init(_ outcome: SyscallOutcome) {
        switch outcome {
        case .done(let n): self = .read(n)
        case .wouldBlock: self = .wait(.readable)
        case .failed(let code):
            self = .failed(HTTPClientError(.ioFailure, "reading the response failed: \(errnoText(code))", errno: code))
        }
    }

    init(_ outcome: TLSOutcome) {
        switch outcome {
        case .done(let n): self = .read(n)
        case .uncleanEnd: self = .uncleanEnd
        case .wantRead: self = .wait(.readable)
        case .wantWrite: self = .wait(.writable)
        case .failed(let error): self = .failed(error)
        }
    }
}

// MARK: Expect: 100-continue

extension HTTP1Connection {
    /// What came back while a request sent with `Expect: 100-continue` waited for the go-ahead.
    enum ContinueOutcome {
        /// `100 Continue`, or nothing before the wait ended: send the body.
        case sendBody
        /// A final response head came first: the body must not be sent, and the connection closes after this
        /// response (``HTTP1ConnectionStateMachine/bodyWithheld()``).
        case finalHead(HTTP1ResponseHead)
    }

    /// After the head of a request with `Expect: 100-continue` went out: waits until `100 Continue` arrives, a
    /// final response head arrives, or `timeout` passes (RFC 9110 §10.1.1: a client that sent the expectation
    /// need not wait for an indefinite period). The wait is a choice, not a byte the server owes: the inactivity
    /// timeout shortens it (a server silent that long is taken not to do 100-continue) instead of failing the
    /// request, and only the total deadline ends it with a timeout error.
    func awaitContinue(timeout: Duration, deadlines: Deadlines) async throws(HTTPClientError) -> ContinueOutcome {
        let giveUp = MonotonicTime.now + min(timeout, deadlines.inactivity ?? timeout)
        // Bounded: each round parses what is buffered or reads once; the wait ends by `giveUp` at the latest.
        while true {
            while bufferOffset < buffer.count {
                let (event, consumed) = try parseAtOffset()
                bufferOffset += consumed
                switch event {
                case .head(let head):
                    try accept(head)
                    machine.bodyWithheld()
                    return .finalHead(head)
                case .needMoreData:
                    continue
                case .body, .end:
                    throw .malformedResponse("the parser produced body bytes before the response head")
                }
            }
            if parser.receivedContinue { return .sendBody }
            // Read before waiting: TLS may hold decrypted bytes that the socket no longer shows as readable.
            switch try readAvailable() {
            case .data:
                continue
            case .end:
                throw .connectionClosed("the connection closed while the request waited for 100 Continue",
                                        bytesReceived: parser.bytesReceived)
            case .wouldBlock:
                break
            }
            guard MonotonicTime.now < giveUp else { return .sendBody }
            if let total = deadlines.total, total <= giveUp {
                try await socket.waitUntil(.readable, deadline: total, phase: .total)
            } else {
                do {
                    try await socket.waitUntil(.readable, deadline: giveUp, phase: .head)
                } catch where error.code == .timeout {
                    return .sendBody
                }
            }
        }
    }

    /// One non-blocking read (through TLS when there is TLS) of at most `size` bytes into a fresh buffer.
    private func readOnce(upTo size: Int) -> ([UInt8], ReadOutcome) {
        var outcome = ReadOutcome.wait(.readable)
        let fresh = [UInt8](unsafeUninitializedCapacity: size) { storage, count in
            let raw = UnsafeMutableRawBufferPointer(storage)
            if let tls {
                outcome = ReadOutcome(tls.tryRead(into: raw))
            } else {
                outcome = ReadOutcome(socket.tryRead(into: raw))
                switch outcome {
                case .read(let n): socketDrained = n > 0 && n < size
                case .wait: socketDrained = true
                default: socketDrained = false
                }
            }
            if case .read(let n) = outcome { count = n } else { count = 0 }
        }
        return (fresh, outcome)
    }

    private enum Available { case data, wouldBlock, end }

    /// One read attempt into a fresh buffer, without waiting.
    private func readAvailable() throws(HTTPClientError) -> Available {
        let (fresh, outcome) = readOnce(upTo: readSize)
        switch outcome {
        case .read(let n):
            guard n > 0 else { return .end }
            buffer = fresh
            bufferOffset = 0
            return .data
        case .uncleanEnd:
            return .end
        case .wait:
            return .wouldBlock
        case .failed(let error):
            throw error
        }
    }
}
