import AsyncHTTP

extension S3Client {
    /// Uploads a file: in one `PUT` up to ``S3MultipartOptions/threshold``, otherwise as a multipart upload
    /// whose parts (file ranges, streamed from disk) go up in parallel through the client's batch API, at most
    /// ``S3MultipartOptions/maxConcurrentParts`` at once.
    ///
    /// ```swift
    /// let result = try await s3.uploadFile(bucket: "backups", key: "disk.img", path: "/tmp/disk.img")
    /// ```
    ///
    /// - A failed part stops the upload: the parts running are cancelled and the upload is aborted (S3 deletes
    ///   its parts). With ``S3MultipartOptions/abortsOnFailure`` off it is kept instead, and the error is an
    ///   ``S3MultipartUploadError`` with its ID.
    /// - `resumingUploadID` continues such an upload: the parts S3 already has (same number, same size, and the
    ///   MD5 of the file's bytes there is the part's entity tag) are not sent again.
    /// - Each part is signed when it is about to start, so a long upload never sends a signature older than a
    ///   few parts (S3 refuses requests more than 15 minutes from its clock).
    public func uploadFile(bucket: String, key: String, path: String, options: S3PutOptions = S3PutOptions(),
                           resumingUploadID: String? = nil) async throws -> S3PutResult {
        let whole = try HTTPClientRequest.Body.file(path)
        guard let size = whole.length else {
            throw HTTPClientError(.invalidRequest, "\(path) is not a regular file: a multipart upload needs its size")
        }
        let settings = configuration.multipart
        if size <= settings.threshold && resumingUploadID == nil {
            return try await putObject(bucket: bucket, key: key, body: whole, options: options)
        }
        // S3: at most 10 000 parts, each at least 5 MiB but the last.
        var partSize = max(settings.partSize, 1)
        if (size + partSize - 1) / partSize > 10_000 { partSize = (size + 9_999) / 10_000 }
        let partCount = max(1, (size + partSize - 1) / partSize)

        let uploadID: String
        if let resumingUploadID {
            uploadID = resumingUploadID
        } else {
            uploadID = try await createMultipartUpload(bucket: bucket, key: key, options: options)
        }
        var etags: [Int: String] = [:]
        do {
            if resumingUploadID != nil {
                for (number, stored) in try await listParts(bucket: bucket, key: key, uploadID: uploadID) {
                    // A number outside this file's parts (0, negative, past the last: a server's mistake, or a file
                    // that shrank) names no range of the file, and the offset below would overflow or be negative:
                    // it is passed over, so every part of the file is still sent, and never completed with. Not an
                    // error: that would abort, and so delete, the very upload being resumed.
                    guard (1...partCount).contains(number) else { continue }
                    let expected = number == partCount ? size - (partCount - 1) * partSize : partSize
                    // The same size is not the same bytes: a file changed between the attempts would be completed
                    // as a mix of old and new parts. Kept only if its MD5 is the entity tag S3 gave it.
                    if stored.size == expected,
                       try await Self.fileRange(path, offset: (number - 1) * partSize, length: expected, hasETag: stored.eTag) {
                        etags[number] = stored.eTag
                    }
                }
            }
            try await uploadParts(bucket: bucket, key: key, path: path, uploadID: uploadID, size: size,
                                  partSize: partSize, partCount: partCount, etags: &etags)
            return try await completeMultipartUpload(bucket: bucket, key: key, uploadID: uploadID, etags: etags)
        } catch {
            if settings.abortsOnFailure {
                // In a task of its own: when the failure is this task's cancellation, an abort sent from here would
                // be cancelled before it went out, and the parts would stay on S3 with their upload ID lost.
                let abort = Task { [self] in try await abortMultipartUpload(bucket: bucket, key: key, uploadID: uploadID) }
                do {
                    try await abort.value
                } catch let abortError {
                    // No such upload (a resumed ID that was never there): nothing stays on S3.
                    if (abortError as? S3Error)?.code == "NoSuchUpload" { throw error }
                    // Not aborted: the parts stay, so the error carries the ID to abort (or resume) with.
                    throw S3MultipartUploadError(uploadID: uploadID, partsCompleted: etags.count,
                                                 underlying: error, abortFailure: abortError)
                }
                throw error
            }
            throw S3MultipartUploadError(uploadID: uploadID, partsCompleted: etags.count, underlying: error)
        }
    }

    /// Whether the file's bytes in the range are the part S3 stored with `eTag`: S3's entity tag of a part is the
    /// MD5 of its bytes, in hex and quotes. A tag that is not one (parts encrypted with SSE-KMS have others) says
    /// nothing, and the part goes up again.
    static func fileRange(_ path: String, offset: Int, length: Int, hasETag eTag: String) async throws -> Bool {
        var tag = Substring(eTag)
        if tag.hasPrefix("\""), tag.hasSuffix("\""), tag.count >= 2 { tag = tag.dropFirst().dropLast() }
        guard tag.utf8.count == 32, tag.utf8.allSatisfy({ hexValue($0) != nil }) else { return false }
        let reader = try HTTPClientRequest.Body.file(path, offset: offset, length: length).makeChunkReader()
        let hasher = try DigestHasher.md5()
        while let chunk = try await reader.next() { try hasher.update(chunk) }
        return hex(try hasher.finish()) == tag.lowercased()
    }

    /// Starts a multipart upload (`POST ?uploads`) and returns its ID.
    public func createMultipartUpload(bucket: String, key: String, options: S3PutOptions = S3PutOptions()) async throws -> String {
        var request = HTTPClientRequest(url: try url(bucket: bucket, key: key, query: [("uploads", nil)]))
        request.method = .post
        try options.apply(to: &request)
        let root = try await sendForXML(request, what: "a new multipart upload")
        guard let id = root.value("UploadId"), !id.isEmpty else {
            throw HTTPClientError(.malformedResponse, "S3 started a multipart upload without an UploadId")
        }
        return id
    }

    /// Aborts a multipart upload: S3 deletes the parts it holds.
    public func abortMultipartUpload(bucket: String, key: String, uploadID: String) async throws {
        var request = HTTPClientRequest(url: try url(bucket: bucket, key: key, query: [("uploadId", uploadID)]))
        request.method = .delete
        let response = try await send(request)
        try await check(response)
    }

    /// The parts S3 holds for an upload: number → (entity tag, size). Follows `NextPartNumberMarker`.
    func listParts(bucket: String, key: String, uploadID: String) async throws -> [Int: (eTag: String, size: Int)] {
        var parts: [Int: (eTag: String, size: Int)] = [:]
        var marker: String?
        for _ in 0..<20 {   // 20 pages of 1000: more than the 10 000 parts S3 allows.
            var query: [(String, String?)] = [("uploadId", uploadID)]
            if let marker { query.append(("part-number-marker", marker)) }
            let root = try await sendForXML(HTTPClientRequest(url: try url(bucket: bucket, key: key, query: query)),
                                            what: "a part listing", limit: Self.maxListingBytes)
            for part in root.children("Part") {
                if let number = part.value("PartNumber").flatMap({ Int($0) }), let eTag = part.value("ETag"),
                   let size = part.value("Size").flatMap({ Int($0) }) {
                    parts[number] = (eTag, size)
                }
            }
            guard root.value("IsTruncated") == "true", let next = root.value("NextPartNumberMarker") else { break }
            marker = next
        }
        return parts
    }

    /// What a part's member of the batch ends with: S3 errors are values, so the batch reports them as they are.
    private enum PartOutcome: Sendable {
        case stored(eTag: String)
        case refused(S3Error)
    }

    /// Sends the parts missing from `etags` through one batch, signing each as it is added.
    private func uploadParts(bucket: String, key: String, path: String, uploadID: String, size: Int, partSize: Int,
                             partCount: Int, etags: inout [Int: String]) async throws {
        var pending = (1...partCount).filter { etags[$0] == nil }[...]
        guard !pending.isEmpty else { return }
        let concurrency = max(1, configuration.multipart.maxConcurrentParts)
        let batchConfiguration = HTTPBatchConfiguration(maxConcurrentRequests: concurrency, cancelsAllOnFailure: true)
        let stored = try await client.withBatch(batchConfiguration, handler: { response -> PartOutcome in
            guard (200..<300).contains(response.status.code) else { return .refused(await S3Client.error(from: response)) }
            guard let eTag = response.headers[HTTPField.Name("ETag")!] else {
                throw HTTPClientError(.malformedResponse, "S3 stored a part without an ETag")
            }
            return .stored(eTag: eTag)
        }) { batch -> [Int: String] in
            var memberPart: [Int: Int] = [:]
            var stored: [Int: String] = [:]
            func addNext() async throws {
                guard let number = pending.popFirst() else { return }
                let offset = (number - 1) * partSize
                var request = HTTPClientRequest(url: try url(
                    bucket: bucket, key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)]))
                request.method = .put
                request.body = try .file(path, offset: offset, length: min(partSize, size - offset))
                memberPart[batch.add(try await signed(request))] = number
            }
            for _ in 0..<concurrency { try await addNext() }
            if pending.isEmpty { batch.finish() }
            for await member in batch.results {
                guard let number = memberPart[member.id] else { continue }
                switch member.result {
                case .success(.stored(let eTag)):
                    stored[number] = eTag
                case .success(.refused(let error)):
                    batch.cancelAll()
                    throw error
                case .failure(let error):
                    batch.cancelAll()
                    throw error
                }
                if !pending.isEmpty {
                    try await addNext()
                    if pending.isEmpty { batch.finish() }
                }
            }
            return stored
        }
        etags.merge(stored) { _, new in new }
        guard etags.count == partCount else {
            throw HTTPClientError(.cancelled, "the multipart upload ended with \(etags.count) of \(partCount) parts stored")
        }
    }

    /// Completes an upload from its parts' entity tags (`POST ?uploadId=…` with the part list).
    private func completeMultipartUpload(bucket: String, key: String, uploadID: String,
                                         etags: [Int: String]) async throws -> S3PutResult {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for (number, eTag) in etags.sorted(by: { $0.key < $1.key }) {
            xml += "<Part><PartNumber>\(number)</PartNumber><ETag>\(escapeXML(eTag))</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        var request = HTTPClientRequest(url: try url(bucket: bucket, key: key, query: [("uploadId", uploadID)]))
        request.method = .post
        request.setHeader("Content-Type", "application/xml")
        request.body = .bytes(Array(xml.utf8))
        let root = try await sendForXML(request, what: "a multipart completion")
        return S3PutResult(eTag: root.value("ETag"), versionID: nil)
    }
}

/// `&`, `<`, `>`, `"` and `'` as XML character entities.
func escapeXML(_ text: String) -> String {
    var out = ""
    for character in text {
        switch character {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        default: out.append(character)
        }
    }
    return out
}
