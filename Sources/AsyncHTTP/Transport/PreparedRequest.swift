import HTTPTypes

/// A request checked and encoded once, ready to be written (again, on a retry) to a connection.
struct PreparedRequest: Sendable {
    let url: HTTPURL
    let method: HTTPRequest.Method
    let head: [UInt8]
    let body: HTTPClientRequest.Body?
    let persistentConnection: Bool
    /// How long to wait for `100 Continue` before sending the body; nil when the head carries no
    /// `Expect: 100-continue` and the body follows the head at once.
    let continueTimeout: Duration?

    /// `absoluteForm`: the request goes to an HTTP proxy, which needs the whole URL as the target (RFC 9112 §3.2.2).
    /// `expectContinue`: the policy that decides whether the body waits for `100 Continue` (nil: never, and an
    /// `Expect: 100-continue` the caller set is removed, for the retry after a `417`).
    init(
        _ request: HTTPClientRequest, url: HTTPURL, userAgent: String?, absoluteForm: Bool = false,
        expectContinue: ExpectContinuePolicy? = nil
    ) throws(HTTPClientError) {
        self.url = url
        self.method = request.method
        self.body = request.body
        // RFC 9112 §9.6: a client that sends the `close` option must send no further request on the connection,
        // whether the option came from `persistentConnection` or from a `Connection` field the caller set.
        self.persistentConnection = request.persistentConnection
            && !(request.headers[.connection].map(Self.hasCloseOption) ?? false)
        let framing: HTTP1BodyFraming
        switch request.body?.storage {
        case .bytes(let bytes)?:
            framing = .contentLength(bytes.count)
        case .stream(let length?, _, _)?:
            framing = .contentLength(length)
        case .stream(nil, _, _)?:
            guard request.version >= .http1_1 else {
                throw .invalidRequest("a body of unknown length needs chunked encoding, which HTTP/1.0 does not have")
            }
            framing = .chunked
        case nil:
            // RFC 9110 §8.6: send Content-Length: 0 for methods that define a body, as curl does.
            switch request.method {
            case .post, .put, .patch: framing = .contentLength(0)
            default: framing = .none
            }
        }
        var headers = request.headers
        // Proxy credentials are for a proxy that reads this head: an HTTP proxy forwarding a plain-http request.
        // Directly, through a CONNECT tunnel or through SOCKS the head goes to the origin, which must not see
        // them (URLSession reserves the field; curl would send a -H one on to the origin).
        // (A read first: almost no request has the field, and removing walks the fields as a mutation.)
        if !absoluteForm, headers.contains(.proxyAuthorization) { headers[.proxyAuthorization] = nil }
        if !request.persistentConnection {
            headers[.connection] = "close"
        } else if request.version == .http1_0, headers[.connection] == nil {
            // HTTP/1.0 closes after each response unless both sides opt in (RFC 9112 §9.3).
            headers[.connection] = "keep-alive"
        }
        // RFC 9110 §10.1.1: 100-continue only with content, and not towards an HTTP/1.0 server, which has no 1xx.
        let expectField = Self.expect
        let askedForContinue = headers[expectField]?.lowercased() == "100-continue"
        if let expectContinue, let body = request.body, request.version == .http1_1,
           askedForContinue || expectContinue.applies(toBodyLength: body.length) {
            headers[expectField] = "100-continue"
            continueTimeout = expectContinue.timeout
        } else {
            if askedForContinue { headers[expectField] = nil }
            continueTimeout = nil
        }
        var head: [UInt8] = []
        head.reserveCapacity(256)
        let target = absoluteForm ? url.absoluteFormTarget : url.requestTarget
        let host = url.hostHeaderParts
        try HTTPClientError.mapping { () throws(HTTP1Error) in
            try HTTP1RequestEncoder.encodeHead(
                method: request.method, target: target, host: host.name, port: host.port, headers: headers,
                framing: framing, version: request.version, userAgent: userAgent, into: &head)
        }
        self.head = head
    }

    /// Whether a `Connection` field value (a comma-separated list of options) holds `close`, in any case.
    static func hasCloseOption(_ value: String) -> Bool {
        value.split(separator: ",").contains { $0.trimmingWhitespace().lowercased() == "close" }
    }

    /// `Expect`, which swift-http-types does not name; made once (making a name checks and lowercases it).
    private static let expect = HTTPField.Name("Expect")!

    var isReplayable: Bool { body?.isReplayable ?? true }

    /// Writes the head and body. Small bodies go out in the same syscall as the head.
    ///
    /// With `Expect: 100-continue` the head goes out alone and the body waits for `100 Continue` or the
    /// timeout; a final response head that comes first is returned, and the body is not sent. Nil: the whole
    /// request went out.
    func write(
        to connection: HTTP1Connection, deadlines: Deadlines, observation: RequestObservation? = nil
    ) async throws(HTTPClientError) -> HTTP1ResponseHead? {
        guard let body else {
            try await connection.write(head, deadlines: deadlines)
            observation?.headSent(head)
            return nil
        }
        return try await writeWithBody(body, to: connection, deadlines: deadlines, observation: observation)
    }

    /// The head and its `body`. Apart from ``write(to:deadlines:observation:)``, whose frame every request carries
    /// while its head goes out: an async function's frame holds every local of all its paths.
    @inline(never)
    private func writeWithBody(
        _ body: HTTPClientRequest.Body, to connection: HTTP1Connection, deadlines: Deadlines, observation: RequestObservation?
    ) async throws(HTTPClientError) -> HTTP1ResponseHead? {
        if let pieces = body.directPieces, connection.canSendFile {
            return try await writeDirect(pieces, to: connection, deadlines: deadlines, observation: observation)
        }
        switch body.storage {
        case .bytes(let bytes):
            if let continueTimeout {
                try await connection.write(head, deadlines: deadlines)
                observation?.headSent(head, bodyLength: body.length)
                if case .finalHead(let early) = try await connection.awaitContinue(timeout: continueTimeout, deadlines: deadlines) {
                    return early
                }
                try await write(bytes, to: connection, deadlines: deadlines, observation: observation)
                return nil
            }
            if let observation, bytes.count > Self.reportedSlice {
                try await connection.write(head, deadlines: deadlines)
                observation.headSent(head, bodyLength: body.length)
                try await write(bytes, to: connection, deadlines: deadlines, observation: observation)
                return nil
            }
            try await connection.write(head, bytes[...], deadlines: deadlines)
            if let observation {
                observation.headSent(head, bodyLength: body.length)
                if !bytes.isEmpty { observation.bodySent(total: bytes.count) }
            }
        case .stream(let length, _, let makeSource):
            // Made before the head goes out: a file that cannot be opened fails with nothing sent.
            let source = try makeSource()
            try await connection.write(head, deadlines: deadlines)
            observation?.headSent(head, bodyLength: body.length)
            if let continueTimeout,
               case .finalHead(let early) = try await connection.awaitContinue(timeout: continueTimeout, deadlines: deadlines) {
                return early  // the source is dropped unread; a file closes with it
            }
            // A task pulls the body's chunks ahead of this one, which writes whatever is waiting in one `sendmsg`
            // (see `RequestBodyReadAhead`). Not a child task: a task group waits for its children, so a source that
            // stalls and ignores cancellation would hold the request past its deadline. The writer's waits end at
            // the total deadline or on cancellation; the producer is cancelled with this task, and left to end when
            // its source lets it (its next chunk finds the read-ahead closed). When the body is written whole, it
            // has ended.
            let readAhead = RequestBodyReadAhead()
            let producer = Task { await readAhead.produce(from: source) }
            defer { readAhead.stopTimer() }
            // The producer is no child of this task: hand it this task's cancellation (a source may end on it).
            let outcome = await withTaskCancellationHandler { () async -> Result<Void, HTTPClientError> in
                do throws(HTTPClientError) {
                    if let length {
                        try await writeExactly(length, from: readAhead, to: connection, deadlines: deadlines, observation: observation)
                    } else {
                        try await writeChunked(from: readAhead, to: connection, deadlines: deadlines, observation: observation)
                    }
                    return .success(())
                } catch {
                    return .failure(error)
                }
            } onCancel: {
                producer.cancel()
            }
            if case .failure(let error) = outcome {
                readAhead.close()
                producer.cancel()
                throw error
            }
            if length != nil {
                // A body of known length ends at that length, maybe before its source ended: stop the producer
                // (nothing more of it is read; after a source that ended, both do nothing).
                readAhead.close()
                producer.cancel()
            }
        }
        return nil
    }

    /// A body of bytes and regular files' ranges on plain TCP (a file, a multipart form of files): the head,
    /// then each piece in order, the files with `sendfile` (no read-ahead task, no buffers; the kernel copies
    /// from the page cache). Every file is opened and checked before the head goes out, like a chunk source.
    private func writeDirect(
        _ pieces: [DirectPiece], to connection: HTTP1Connection, deadlines: Deadlines, observation: RequestObservation?
    ) async throws(HTTPClientError) -> HTTP1ResponseHead? {
        var files: [LocalFile] = []
        defer { for file in files { file.close() } }
        for case .file(let slice) in pieces { files.append(try slice.open()) }
        try await connection.write(head, deadlines: deadlines)
        observation?.headSent(head, bodyLength: self.body?.length)
        if let continueTimeout,
           case .finalHead(let early) = try await connection.awaitContinue(timeout: continueTimeout, deadlines: deadlines) {
            return early
        }
        var sent = 0
        var nextFile = 0
        for piece in pieces {
            switch piece {
            case .bytes(let bytes):
                guard !bytes.isEmpty else { continue }
                try await connection.write(bytes, deadlines: deadlines)
                sent += bytes.count
                observation?.bodySent(total: sent)
            case .file(let slice):
                let file = files[nextFile]
                nextFile += 1
                let before = sent
                try await connection.sendFile(file, offset: slice.offset, count: slice.count, deadlines: deadlines) { total in
                    observation?.bodySent(total: before + total)
                }
                sent += slice.count
            }
        }
        return nil
    }

    /// Bytes in memory are written in slices of this size when someone watches (an observer or a progress
    /// handler), so that a large upload's progress moves as it goes out rather than jumping from 0 to the end.
    static let reportedSlice = 256 * 1024

    /// Writes an in-memory body, reporting to `observation` after each ``reportedSlice`` (or once, without one).
    private func write(
        _ bytes: [UInt8], to connection: HTTP1Connection, deadlines: Deadlines, observation: RequestObservation?
    ) async throws(HTTPClientError) {
        guard let observation, bytes.count > Self.reportedSlice else {
            try await connection.write(bytes[...], deadlines: deadlines)
            if !bytes.isEmpty { observation?.bodySent(total: bytes.count) }
            return
        }
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + Self.reportedSlice)
            try await connection.write(bytes[offset..<end], deadlines: deadlines)
            offset = end
            observation.bodySent(total: offset)
        }
    }

    private func writeExactly(
        _ length: Int, from readAhead: RequestBodyReadAhead, to connection: HTTP1Connection, deadlines: Deadlines,
        observation: RequestObservation?
    ) async throws(HTTPClientError) {
        // Nothing to send: the body is complete as it is (its source is not waited for).
        guard length > 0 else { return }
        var sent = 0
        while true {
            let batch = try await readAhead.take(deadlines: deadlines)
            guard sent + batch.bytes <= length else {
                throw .invalidRequest("the body stream produced more than its declared length of \(length) bytes")
            }
            try await connection.write(batch.chunks, deadlines: deadlines)
            sent += batch.bytes
            if batch.bytes > 0 { observation?.bodySent(total: sent) }
            // The declared length is on the wire: the body is complete, and the request waits for no end from
            // the source (a source that yields its bytes and never finishes would hold the request until its
            // deadline). As curl reads an upload of known size (`CURLOPT_INFILESIZE`) no further than that size.
            if batch.ended || sent == length { break }
        }
        guard sent == length else {
            throw .invalidRequest("the body stream ended after \(sent) of its declared \(length) bytes")
        }
    }

    /// RFC 9112 §7.1: each chunk is its size in hex, CRLF, the data, CRLF; a zero chunk ends the body.
    /// A chunk's closing CRLF rides in front of the next chunk's size line, and a batch of chunks goes out in one
    /// `sendmsg` with the size lines between them.
    private func writeChunked(
        from readAhead: RequestBodyReadAhead, to connection: HTTP1Connection, deadlines: Deadlines,
        observation: RequestObservation?
    ) async throws(HTTPClientError) {
        var trailer: [UInt8] = []
        var sent = 0
        while true {
            let batch = try await readAhead.take(deadlines: deadlines)
            var parts: [ArraySlice<UInt8>] = []
            parts.reserveCapacity(batch.chunks.count * 2 + 1)
            for chunk in batch.chunks where !chunk.isEmpty { // an empty chunk would end the body early
                var sizeLine = trailer
                HTTP1RequestEncoder.chunkHeader(size: chunk.count, into: &sizeLine)
                parts.append(sizeLine[...])
                parts.append(chunk)
                trailer = HTTP1RequestEncoder.chunkTrailer
            }
            if batch.ended {
                parts.append((trailer + HTTP1RequestEncoder.lastChunk)[...])
                try await connection.write(parts, deadlines: deadlines)
                sent += batch.bytes
                if batch.bytes > 0 { observation?.bodySent(total: sent) }
                return
            }
            try await connection.write(parts, deadlines: deadlines)
            sent += batch.bytes
            if batch.bytes > 0 { observation?.bodySent(total: sent) }
        }
    }
}
