import HTTPTypes

/// How ``HTTPClient/download(_:to:options:)`` writes a response to disk.
public struct DownloadOptions: Sendable, Hashable {
    /// Keep a partial file when a download fails, and continue it next time (ASIHTTPRequest's
    /// `allowResumeForFileDownloads`, curl's `-C -`): see ``HTTPClient/download(_:to:options:)``.
    public var resume: Bool
    /// Write the body of a non-2xx response to the destination too. Off by default: an error page never
    /// replaces a file you had.
    public var writesErrorResponses: Bool
    /// Where the bytes go until the download completes (ASIHTTPRequest's `temporaryFileDownloadPath`); it must be
    /// on the destination's file system for the final move to be atomic. nil: a file beside the destination —
    /// `.<name>.<pid>.<random>.download`, or `<destination>.part` when resuming (a stable name, so that the
    /// next attempt finds it).
    public var temporaryPath: String?

    /// Creates download options; the defaults write a whole, successful body atomically and keep nothing on failure.
    public init(resume: Bool = false, writesErrorResponses: Bool = false, temporaryPath: String? = nil) {
        self.resume = resume
        self.writesErrorResponses = writesErrorResponses
        self.temporaryPath = temporaryPath
    }
}

/// What ``HTTPClient/download(_:to:options:)`` did.
public struct DownloadResult: Sendable {
    /// The final response's status (after redirects and authentication), and its fields.
    public var status: HTTPResponse.Status
    /// The final response's header fields.
    public var headers: HTTPFields
    /// The URL the body came from (the last redirect hop's).
    public var url: HTTPURL
    /// The destination path.
    public var path: String
    /// Whether the destination now holds this download (false for an error status not written, see
    /// ``DownloadOptions/writesErrorResponses``).
    public var written: Bool
    /// The size of the file now at ``path`` when ``written``: the whole representation, resumed or not.
    public var fileSize: Int
    /// Body bytes received by this call (less than ``fileSize`` when a partial file was resumed).
    public var bytesReceived: Int
    /// The bytes of an earlier partial file that this call kept and appended to (0: downloaded whole).
    public var resumedFrom: Int
}

extension HTTPClient {
    /// Sends `request` and writes the response body to the file at `destination`, atomically.
    ///
    /// ```swift
    /// let result = try await client.download(HTTPClientRequest(url: "https://example.com/big.iso"), to: "/tmp/big.iso")
    /// print(result.status, result.fileSize)
    /// // resumable: a failed attempt leaves /tmp/big.iso.part, and the next call continues it
    /// let again = try await client.download(request, to: "/tmp/big.iso", options: DownloadOptions(resume: true))
    /// ```
    ///
    /// The bytes go to a temporary file beside the destination (created with mode 0600), which is flushed
    /// (`fsync`) and renamed over the destination only when the body arrived complete and the status was 2xx
    /// (or ``DownloadOptions/writesErrorResponses`` is set). Until then the destination is untouched: a file
    /// already there survives a failed download, and nothing else is left behind. An error status leaves the
    /// destination alone and returns with ``DownloadResult/written`` false. The body streams to disk as it
    /// arrives; memory stays at a few read buffers, whatever the size.
    ///
    /// As curl writes its output file: a file already at `destination` keeps its permission bits (a 0600 file stays
    /// 0600) and a new one gets 0666 less the umask; a `destination` that is a symbolic link is written through (the
    /// temporary file goes beside the link's target, the rename replaces the target, and the link stays).
    ///
    /// With ``DownloadOptions/resume``, the temporary file is `<destination>.part`, with its validator in
    /// `<destination>.part.validator`, and both are kept when the transfer fails. The next call sends
    /// `Range: bytes=N-` for the N bytes kept, with `If-Range` (the strong `ETag`, or a `Last-Modified` that is
    /// strong by RFC 9110 §8.8.2.2), and:
    /// - `206` starting at byte N: the body is appended;
    /// - `200` (the resource changed, or the server ignores ranges): the file starts again from zero;
    /// - `416` with `Content-Range: bytes */N`: the kept file was already complete;
    /// - anything else that does not fit (a `206` elsewhere, a `416` with another length): the partial file is
    ///   dropped and the request sent again once, without a range.
    /// A partial file without a usable validator is started again rather than spliced blindly. The request's
    /// ``HTTPClientRequest/progressHandler`` sees one transfer with one final value, counted from the start of
    /// the file as curl's meter and ASIHTTPRequest count a resumed download: the N bytes kept are in
    /// ``HTTPTransferProgress/bytesReceived`` and in ``HTTPTransferProgress/bytesExpectedToReceive`` (the `206`'s
    /// own length plus N; ``DownloadResult/bytesReceived`` counts only the new bytes), and a response dropped for
    /// a start over is not reported. A `416` that finds the file complete reports N of N. Resumable
    /// downloads ask for the identity encoding (no `Accept-Encoding`), so the bytes kept and the bytes a range
    /// counts are the same bytes. A second download to the same partial file at the same time is refused
    /// (`flock`).
    ///
    /// Throws `HTTPClientError` for a failed transfer (with `resume`, the partial file stays) and for file
    /// errors (`HTTPClientError.Code.ioFailure`, naming the path).
    public func download(
        _ request: HTTPClientRequest, to destination: String, options: DownloadOptions = DownloadOptions()
    ) async throws -> DownloadResult {
        do {
            try Self.checkDestination(destination)
        } catch {
            // Nothing is sent: the request's progress ends here, or a `progressUpdates()` stream never would.
            request.progressHandler?.report(.failedBeforeSending(request))
            throw error
        }
        if options.resume { return try await resumableDownload(request, to: destination, options: options) }
        let response = try await send(request)
        let status = response.status.code
        guard (200..<300).contains(status) || options.writesErrorResponses else {
            return DownloadResult(status: response.status, headers: response.headers, url: response.url, path: destination,
                                  written: false, fileSize: 0, bytesReceived: 0, resumedFrom: 0)
        }
        let received = try await Self.writeWhole(response.body, to: destination, temporaryPath: options.temporaryPath)
        return DownloadResult(status: response.status, headers: response.headers, url: response.url, path: destination,
                              written: true, fileSize: received, bytesReceived: received, resumedFrom: 0)
    }

    /// Sends `request` and writes the response body, atomically, to a new file in `directory` named by the
    /// response: its ``HTTPClientResponse/suggestedFilename`` (the `Content-Disposition` name, else the final URL's
    /// last path segment, made safe), or `index.html` when neither gives a name (as wget names a URL ending in
    /// `/`). ``DownloadResult/path`` is the file chosen.
    ///
    /// ```swift
    /// let result = try await client.download(HTTPClientRequest(url: "https://example.com/export?id=7"),
    ///                                        intoDirectory: "/tmp/downloads")
    /// print(result.path)      // /tmp/downloads/report-7.csv, from `Content-Disposition: attachment; filename=…`
    /// ```
    ///
    /// The name comes from the server, so it never replaces a file: when a file of that name is already in the
    /// directory, the call throws `HTTPClientError.Code.ioFailure` naming it, before the body is read, and the
    /// final rename refuses to replace one created meanwhile (`RENAME_NOREPLACE`). The body is written as
    /// ``download(_:to:options:)`` writes it (a temporary file, then the rename), and an error status leaves
    /// nothing behind unless ``DownloadOptions/writesErrorResponses`` is set. ``DownloadOptions/resume`` is refused
    /// (`HTTPClientError.Code.invalidRequest`): the name is known only once the response has come, after the
    /// request that would have had to ask for the rest of a partial file.
    public func download(
        _ request: HTTPClientRequest, intoDirectory directory: String, options: DownloadOptions = DownloadOptions()
    ) async throws -> DownloadResult {
        do {
            guard !options.resume else {
                throw HTTPClientError.invalidRequest(
                    "a download into a directory cannot resume: its file name comes with the response; use download(_:to:options:)")
            }
            guard LocalFiles.isDirectory(directory) else {
                throw HTTPClientError.invalidRequest("the download directory \(directory) is not a directory")
            }
        } catch {
            request.progressHandler?.report(.failedBeforeSending(request))
            throw error
        }
        let response = try await send(request)
        let name = response.suggestedFilename ?? "index.html"
        let destination = directory.hasSuffix("/") ? directory + name : directory + "/" + name
        let status = response.status.code
        guard (200..<300).contains(status) || options.writesErrorResponses else {
            return DownloadResult(status: response.status, headers: response.headers, url: response.url, path: destination,
                                  written: false, fileSize: 0, bytesReceived: 0, resumedFrom: 0)
        }
        try Self.checkDestination(destination)
        try Self.refuseExisting(destination)
        let received = try await Self.writeWhole(response.body, to: destination, temporaryPath: options.temporaryPath,
                                                 replacingExisting: false)
        return DownloadResult(status: response.status, headers: response.headers, url: response.url, path: destination,
                              written: true, fileSize: received, bytesReceived: received, resumedFrom: 0)
    }

    /// Throws when something is at `destination` already, for a write that must not replace it.
    static func refuseExisting(_ destination: String) throws(HTTPClientError) {
        guard !LocalFiles.exists(destination) else {
            throw HTTPClientError(.ioFailure, "\(destination) already exists, and a download named by the server never replaces a file")
        }
    }

    /// Refuses a destination that a download cannot replace by a rename.
    static func checkDestination(_ destination: String) throws(HTTPClientError) {
        guard !destination.isEmpty else { throw HTTPClientError.invalidRequest("the download destination is empty") }
        guard !LocalFiles.isDirectory(destination) else {
            throw HTTPClientError.invalidRequest("the download destination \(destination) is a directory")
        }
        // A rename would replace the device or FIFO itself (as root, /dev/null with a regular file).
        guard !LocalFiles.isSpecialFile(destination) else {
            throw HTTPClientError.invalidRequest(
                "the download destination \(destination) is not a regular file; stream the response body to it instead")
        }
    }

    /// Writes `body` to a new temporary file and moves it over `destination` once complete; on any failure the
    /// temporary file is removed (if it is still ours) and the destination is untouched. Two downloads given one
    /// `temporaryPath` at once: the one whose file was replaced fails, instead of renaming the other's.
    static func writeWhole(
        _ body: HTTPClientResponse.Body, to destination: String, temporaryPath: String?, replacingExisting: Bool = true
    ) async throws -> Int {
        let temporary = temporaryPath ?? LocalFiles.temporaryPath(beside: destination)
        if temporaryPath != nil { LocalFiles.remove(temporary) }
        let file = try LocalFile.openForWriting(temporary, mode: .createNew)
        // Closed only once the rename is done or the failure handled: `isStill(at:)` below asks the open descriptor
        // which file it is, and a rename refused (`replacingExisting` false, a file arrived at the destination)
        // must still find the temporary file ours to remove.
        defer { file.close() }
        do {
            let received = try await write(body, to: file)
            file.giveMode(replacing: destination)
            try file.sync()
            // A `temporaryPath` given to two downloads at once: the other one removed ours and wrote its own there,
            // and renaming it would put the other's half-written bytes in place of ours.
            guard file.isStill(at: temporary) else {
                throw HTTPClientError(.ioFailure, "another download replaced the temporary file \(temporary) of \(destination)")
            }
            try LocalFiles.moveIntoPlace(temporary, destination, replacingExisting: replacingExisting)
            return received
        } catch {
            // Only our own: at a shared `temporaryPath` the file there may be another download's.
            if file.isStill(at: temporary) { LocalFiles.remove(temporary) }
            throw error
        }
    }

    /// With a progress handler, the download owns it across its attempts (``ResumedDownloadProgress``): one
    /// final value, counted from the start of the file.
    private func resumableDownload(
        _ request: HTTPClientRequest, to destination: String, options: DownloadOptions
    ) async throws -> DownloadResult {
        guard let handler = request.progressHandler else {
            return try await resumableDownload(request, to: destination, options: options, progress: nil)
        }
        let progress = ResumedDownloadProgress(handler)
        do {
            let result = try await resumableDownload(request, to: destination, options: options, progress: progress)
            progress.close(failed: false)
            return result
        } catch {
            progress.close(failed: true)
            throw error
        }
    }

    private func resumableDownload(
        _ request: HTTPClientRequest, to destination: String, options: DownloadOptions, progress: ResumedDownloadProgress?
    ) async throws -> DownloadResult {
        let partialPath = options.temporaryPath ?? LocalFiles.sibling(of: destination, suffix: ".part")
        let sidecarPath = LocalFiles.sibling(of: partialPath, suffix: ".validator")
        let partial = try Self.openLockedPartial(partialPath)
        // Once the partial file has become the destination, the partial path is no longer ours: another download
        // of the same file may already have created and locked a new one there.
        var moved = false
        defer {
            // A partial file that never received a byte is no progress worth keeping (only ours to remove
            // while we hold its lock).
            if !moved, LocalFiles.size(atPath: partialPath) == 0 {
                LocalFiles.remove(partialPath)
                LocalFiles.remove(sidecarPath)
            }
            partial.close()
        }
        var request = request
        // Identity bytes only: a range counts the bytes of the representation as sent, and a kept file of
        // inflated bytes could not be continued by a range of compressed ones.
        request.acceptsCompressedResponse = false
        // Bounded: the second round runs without a range, which cannot ask for a start-over.
        for round in 0..<2 {
            var kept = try partial.status().size
            let stored = try PrivateFile.contents(atPath: sidecarPath, what: "partial download validator", regularFileOnly: true)
                .flatMap { DownloadResume.parseSidecar(String(decoding: $0, as: UTF8.self)) }
            var attempt = request
            if kept > 0, let stored, round == 0 {
                attempt.headers[DownloadResume.range] = "bytes=\(kept)-"
                attempt.headers[DownloadResume.ifRange] = stored.value
            } else {
                kept = 0
            }
            if let progress {
                progress.startOver(round: round)
                attempt.progressHandler = progress.handler(round: round)
            }
            let response = try await send(attempt)
            func result(written: Bool, size: Int, received: Int, resumedFrom: Int) -> DownloadResult {
                DownloadResult(status: response.status, headers: response.headers, url: response.url, path: destination,
                               written: written, fileSize: size, bytesReceived: received, resumedFrom: resumedFrom)
            }
            switch DownloadResume.decide(status: response.status.code, headers: response.headers, offset: kept,
                                         stored: kept > 0 ? stored : nil) {
            case .notSuccess:
                progress?.decide(offset: 0)
                if options.writesErrorResponses {
                    // Not a part of the representation: written whole, beside, and the partial file kept.
                    let received = try await Self.writeWhole(response.body, to: destination, temporaryPath: nil)
                    return result(written: true, size: received, received: received, resumedFrom: 0)
                }
                return result(written: false, size: 0, received: 0, resumedFrom: 0)
            case .startOver(let reason):
                configuration.logger(for: .requestStatus).debug("download of \(destination) starts over: \(reason)")
                try partial.truncate(to: 0)
                LocalFiles.remove(sidecarPath)
                if round == 1 { throw HTTPClientError.malformedResponse("download of \(destination): \(reason)") }
                continue
            case .complete:
                progress?.finish(with: HTTPTransferProgress(
                    bytesExpectedToSend: request.body.map { $0.length } ?? 0, bytesReceived: kept, bytesExpectedToReceive: kept))
                partial.giveMode(replacing: destination)
                try partial.sync()
                try LocalFiles.moveIntoPlace(partialPath, destination)
                moved = true
                LocalFiles.remove(sidecarPath)
                return result(written: true, size: kept, received: 0, resumedFrom: kept)
            case .restart:
                try partial.truncate(to: 0)
                kept = 0
                try PrivateFile.writeAtomically(
                    Array(DownloadResume.sidecarText(DownloadResume.validator(from: response.headers)).utf8), toPath: sidecarPath)
                progress?.decide(offset: 0)
            case .append:
                progress?.decide(offset: kept)
            }
            // The partial file and its sidecar stay if the body fails: the next call continues from there.
            let received = try await Self.write(response.body, to: partial)
            if let value = response.headers[DownloadResume.contentRange],
               case .range(_, let last, let complete)? = DownloadResume.parseContentRange(value) {
                // The whole length, or with `bytes first-last/*` (length unknown) at least the range's own end.
                let expected = complete ?? (last + 1)
                if kept + received != expected {
                    let of = complete.map { "of \($0)" } ?? "of the \(expected) its 206 announced (bytes \(kept)-\(last)/*)"
                    throw HTTPClientError.connectionClosed(
                        "download of \(destination) holds \(kept + received) bytes \(of) after the 206 ended; kept for resuming",
                        bytesReceived: received)
                }
            }
            partial.giveMode(replacing: destination)
            try partial.sync()
            try LocalFiles.moveIntoPlace(partialPath, destination)
            moved = true
            LocalFiles.remove(sidecarPath)
            return result(written: true, size: kept + received, received: received, resumedFrom: kept)
        }
        throw HTTPClientError.malformedResponse("download of \(destination) did not settle")  // not reached
    }

    /// Opens the partial file at `path` and takes its lock. Another download of the same file may move its
    /// partial file into place between our `open` and our `flock`: the lock is then on what became the
    /// destination, and bytes appended to it would corrupt a finished download. So the lock counts only while
    /// the path still names the locked file; otherwise the path is opened again (bounded: three tries).
    /// `afterOpen` runs between the two, for tests.
    static func openLockedPartial(_ path: String, afterOpen: () -> Void = {}) throws(HTTPClientError) -> LocalFile {
        for _ in 0..<3 {
            let file = try LocalFile.openForWriting(path, mode: .append)
            // A FIFO or a device (planted, or named by mistake) is no partial file: it would be truncated and
            // renamed into place.
            guard (try? file.status().isRegular) == true else {
                file.close()
                throw HTTPClientError.invalidRequest("\(path) is not a regular file; refused as a partial download")
            }
            afterOpen()
            guard file.tryLock() else {
                file.close()
                throw HTTPClientError.invalidRequest("another download is writing \(path)")
            }
            if file.isStill(at: path) { return file }
            file.close()
        }
        throw HTTPClientError.invalidRequest("another download keeps moving \(path) into place; try again")
    }

    /// Streams `body` into `file`; the number of bytes written.
    private static func write(_ body: HTTPClientResponse.Body, to file: LocalFile) async throws -> Int {
        var total = 0
        for try await chunk in body {
            try file.write(chunk)
            total += chunk.count
        }
        return total
    }
}

extension HTTPClientResponse.Body {
    /// Writes the rest of the body to the file at `path` as ``HTTPClient/download(_:to:options:)`` does, for a
    /// response already in hand (a batch member's, say): to a temporary file beside `path` (mode 0600), flushed
    /// and renamed over `path` only once the body arrived complete, so a file already there survives a failed
    /// transfer and nothing else is left behind. Memory stays at a few read buffers, whatever the size. Returns
    /// the bytes written.
    ///
    /// The body is written whatever the response's status: look at it first if an error page must not replace
    /// the file. Throws `HTTPClientError.Code.invalidRequest` for a path that is empty, a directory or not a
    /// regular file (a rename would replace a device itself), `HTTPClientError` for a failed transfer, and
    /// `HTTPClientError.Code.ioFailure` for a file error.
    ///
    /// ```swift
    /// let response = try await client.send(HTTPClientRequest(url: "https://example.com/big.iso"))
    /// if response.status == .ok {
    ///     let size = try await response.body.write(toFileAtPath: "/tmp/big.iso")
    ///     print("wrote \(size) bytes")
    /// }
    /// ```
    public func write(toFileAtPath path: String) async throws -> Int {
        try await write(toFileAtPath: path, replacingExisting: true)
    }

    /// Writes the rest of the body to the file at `path` as ``write(toFileAtPath:)`` does; with
    /// `replacingExisting` false, a file already at `path` is never replaced: the call throws
    /// `HTTPClientError.Code.ioFailure` naming it, before reading the body, and the final rename refuses to replace
    /// a file created there meanwhile (`RENAME_NOREPLACE`). For a name that came from the server
    /// (``HTTPClientResponse/suggestedFilename``).
    public func write(toFileAtPath path: String, replacingExisting: Bool) async throws -> Int {
        try HTTPClient.checkDestination(path)
        if !replacingExisting { try HTTPClient.refuseExisting(path) }
        return try await HTTPClient.writeWhole(self, to: path, temporaryPath: nil, replacingExisting: replacingExisting)
    }
}
