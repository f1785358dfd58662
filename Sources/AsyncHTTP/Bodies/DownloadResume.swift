import HTTPTypes

/// The decisions of a resumable download, as pure functions of what is on disk and what the server said
/// (no I/O, so they are tested without files or sockets).
///
/// A partial file is resumed only with a validator (RFC 9110 §13.1.5): the next request sends
/// `Range: bytes=N-` with `If-Range: <validator>`, and a server whose representation changed answers `200`
/// with the whole of it instead of a `206` that would splice two versions. ASIHTTPRequest and curl's `-C -`
/// resume without one; here a partial file without a usable validator is started again.
enum DownloadResume {
    /// What `If-Range` will carry.
    struct Validator: Equatable, Sendable {
        enum Kind: String, Sendable { case etag, lastModified = "last-modified" }
        var kind: Kind
        var value: String
    }

    static let range = HTTPField.Name("Range")!
    static let ifRange = HTTPField.Name("If-Range")!
    static let contentRange = HTTPField.Name("Content-Range")!
    static let eTag = HTTPField.Name("ETag")!
    static let lastModified = HTTPField.Name("Last-Modified")!
    static let date = HTTPField.Name("Date")!

    /// The validator a later `If-Range` may carry, from a 200 or 206 response's fields.
    ///
    /// - A strong `ETag` (RFC 9110 §13.1.5: a client must not send a weak one, `W/"…"`, in `If-Range`).
    /// - Otherwise `Last-Modified`, but only when it is strong in the sense of §8.8.2.2: the response's
    ///   `Date` is at least one second later, so the representation cannot have changed twice within that
    ///   second unseen.
    static func validator(from headers: HTTPFields) -> Validator? {
        if let tag = headers[eTag]?.trimmedSpaces(), tag.hasPrefix("\""), tag.count >= 2, tag.hasSuffix("\"") {
            return Validator(kind: .etag, value: tag)
        }
        if let modified = headers[lastModified], let date = headers[date],
           let modifiedTime = CookieDate.parse(modified), let dateTime = CookieDate.parse(date),
           dateTime - modifiedTime >= 1 {
            return Validator(kind: .lastModified, value: modified)
        }
        return nil
    }

    /// A parsed `Content-Range` (RFC 9110 §14.4): a range with an optional complete length, or
    /// `bytes */N` (unsatisfied, in a 416).
    enum ContentRange: Equatable {
        case range(first: Int, last: Int, completeLength: Int?)
        case unsatisfied(completeLength: Int)
    }

    /// nil for anything malformed, and for a range whose end is not representable: the byte after its last one
    /// (`last + 1`, what a `bytes N-last/*` download is checked against) must fit in an `Int`, so
    /// `bytes 5-9223372036854775807/*` is refused. With a complete length `last` is below it, so that always fits.
    static func parseContentRange(_ value: String) -> ContentRange? {
        let text = value.trimmedSpaces()
        guard text.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = text.dropFirst(6).trimmedSpaces()
        guard let slash = spec.firstIndex(of: "/") else { return nil }
        let rangePart = spec[..<slash]
        let lengthPart = spec[spec.index(after: slash)...]
        let complete: Int? = lengthPart == "*" ? nil : Int(lengthPart)
        if lengthPart != "*" && complete == nil { return nil }
        if rangePart == "*" {
            guard let complete else { return nil }
            return .unsatisfied(completeLength: complete)
        }
        let bounds = rangePart.split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int(bounds[0]), let last = Int(bounds[1]), first >= 0, last >= first else { return nil }
        if let complete, last >= complete { return nil }
        guard last < Int.max else { return nil }
        return .range(first: first, last: last, completeLength: complete)
    }

    /// What to do with a response to a download request; `offset` is what the partial file holds, and a
    /// `Range: bytes=offset-` went out when it is above zero.
    enum Decision: Equatable {
        /// Append the body to the partial file (a 206 starting at `offset`).
        case append
        /// Start the file from zero with this body (200, or any 2xx when nothing was kept).
        case restart
        /// The partial file is already complete (416 naming exactly its length).
        case complete
        /// The answer does not fit what is kept (a 206 elsewhere, a 416 with another length): drop the partial
        /// file and ask again without a range.
        case startOver(String)
        /// Not a success: leave the partial file for a later attempt.
        case notSuccess
    }

    /// `stored`: the validator the partial file was written under (sent as `If-Range`). A 206 that names another
    /// version in the same kind of validator is another representation's bytes: a server that honours `Range` but
    /// not `If-Range` would otherwise have them spliced onto the old ones.
    static func decide(status: Int, headers: HTTPFields, offset: Int, stored: Validator? = nil) -> Decision {
        if offset == 0 {
            if status == 206 { return .startOver("206 Partial Content to a request without a Range") }
            return (200..<300).contains(status) ? .restart : .notSuccess
        }
        switch status {
        case 206:
            guard let value = headers[contentRange], let range = parseContentRange(value) else {
                return .startOver("206 without a valid Content-Range")
            }
            guard case .range(let first, _, _) = range, first == offset else {
                return .startOver("206 Content-Range '\(value)' does not start at byte \(offset)")
            }
            if let stored {
                let field = stored.kind == .etag ? eTag : lastModified
                if let answered = headers[field], answered != stored.value {
                    return .startOver("206 for another version (\(field.rawName) \(answered), the partial file's \(stored.value))")
                }
            }
            return .append
        case 416:
            if let value = headers[contentRange], case .unsatisfied(let length)? = parseContentRange(value), length == offset {
                return .complete
            }
            return .startOver("416 Range Not Satisfiable for a partial file of \(offset) bytes")
        case 200..<300:
            return .restart
        default:
            return .notSuccess
        }
    }

    // MARK: The sidecar

    /// The small file beside the partial download that keeps its validator (`<partial>.validator`):
    /// `AsyncHTTP partial download 1`, then `etag: "…"` or `last-modified: …`. Written with mode 0600.
    static func sidecarText(_ validator: Validator?) -> String {
        var text = "AsyncHTTP partial download 1\n"
        if let validator { text += "\(validator.kind.rawValue): \(validator.value)\n" }
        return text
    }

    static func parseSidecar(_ text: String) -> Validator? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        guard lines.first == "AsyncHTTP partial download 1" else { return nil }
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmedSpaces()
            guard !value.isEmpty, !value.contains("\r") else { continue }
            if let kind = Validator.Kind(rawValue: key) { return Validator(kind: kind, value: value) }
        }
        return nil
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    fileprivate func trimmedSpaces() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
