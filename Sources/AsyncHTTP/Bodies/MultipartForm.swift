import HTTPTypes

/// A `multipart/form-data` form (RFC 7578): text fields, in-memory data and files streamed from disk
/// (ASIFormDataRequest's `setPostValue:forKey:`, `addData:withFileName:andContentType:forKey:` and
/// `addFile:withFileName:andContentType:forKey:`; curl's `-F`).
///
/// ```swift
/// var form = MultipartForm()
/// form.append("title", "Holiday")
/// try form.appendFile("photo", path: "/tmp/beach.jpg")          // Content-Type: image/jpeg, from the extension
/// form.append("notes", data: Array("Sunny".utf8), filename: "notes.txt", contentType: "text/plain")
/// var request = HTTPClientRequest(url: "https://example.com/upload")
/// try request.setForm(form)                                       // POST, with Content-Length computed up front
/// ```
///
/// - The boundary is random (`AsyncHTTPBoundary` and 24 random letters and digits, 143 bits) and checked
///   against every in-memory part: if it occurs in one, another is drawn. File and stream parts are not read
///   ahead to check; a collision with 143 random bits is not a practical concern (browsers do the same).
/// - The total length is computed before anything is sent, so the form goes out with `Content-Length`; only
///   a part whose length is unknown (a one-shot stream of unknown length) makes it chunked.
/// - Files are opened when added, to fail early, and again for each send: the form is replayable as long as
///   every part is (a one-shot stream part makes it one-shot).
/// - Names and filenames are escaped as the WHATWG form-submission algorithm does (`"` → `%22`, CR → `%0D`,
///   LF → `%0A`), and encoded in the form's ``FormTextEncoding``.
public struct MultipartForm: Sendable {
    /// One part: its name, its optional filename and content type, and its content.
    struct Part: Sendable {
        enum Content: Sendable {
            case text(String)
            case data([UInt8])
            case body(HTTPClientRequest.Body)
        }
        var name: String
        var filename: String?
        var contentType: String?
        var content: Content
        /// Fields written after the part's own (curl's `;headers=`); a `Content-Disposition` here replaces the
        /// part's, a `Content-Type` was taken into `contentType` (unless one was given) and is not written again.
        var headers = HTTPFields()
    }

    var parts: [Part] = []
    /// The boundary asked for, or nil for a random one.
    public var boundary: String?

    /// An empty form. `boundary`: a fixed boundary (1 to 70 characters of RFC 2046's `bchars`, not ending in a
    /// space), for tests that compare bytes; nil draws a random one when the body is made.
    public init(boundary: String? = nil) {
        self.boundary = boundary
    }

    /// The number of parts.
    public var count: Int { parts.count }

    /// Adds a text field; repeated names are kept in order.
    ///
    /// Every `append` takes `headers`: fields the part carries after its `Content-Disposition` and `Content-Type`,
    /// as curl's `-F 'name=value;headers=X-Note: 1'` and libcurl's `curl_mime_headers`, with curl's rules: a
    /// `Content-Disposition` among them is sent instead of the part's own; a `Content-Type` among them is the
    /// part's type when the call gives none (`contentType` nil, before any guess from the file name), written
    /// where the part's type goes, and otherwise not sent. Values cannot break a line: `HTTPField` turns CR, LF
    /// and NUL into spaces.
    public mutating func append(_ name: String, _ value: String, headers: HTTPFields = HTTPFields()) {
        parts.append(Part(name: name, contentType: headers[.contentType], content: .text(value), headers: headers))
    }

    /// Adds a text field whose value is bytes sent as they are, in no text encoding (a file's contents, as curl's
    /// `-F 'name=<file'` sends them); like any text field it has no `Content-Type`.
    ///
    /// ```swift
    /// var form = MultipartForm()
    /// form.append("notes", rawValue: [0x63, 0x61, 0x66, 0xE9])   // "café" in ISO 8859-1
    /// ```
    public mutating func append(_ name: String, rawValue: [UInt8], headers: HTTPFields = HTTPFields()) {
        parts.append(Part(name: name, contentType: headers[.contentType], content: .data(rawValue), headers: headers))
    }

    /// Adds bytes held in memory as a file part. `contentType` nil: guessed from `filename`'s extension,
    /// else `application/octet-stream`.
    public mutating func append(
        _ name: String, data: [UInt8], filename: String? = nil, contentType: String? = nil, headers: HTTPFields = HTTPFields()
    ) {
        let type = contentType ?? headers[.contentType] ?? (filename.map(MediaTypes.forFileName) ?? "application/octet-stream")
        parts.append(Part(name: name, filename: filename, contentType: type, content: .data(data), headers: headers))
    }

    /// Adds a file streamed from disk. The file is opened now to check it (a missing or unreadable file throws
    /// `HTTPClientError.Code.invalidRequest`), and read only as the request is sent.
    /// `filename` nil: the path's last component; `contentType` nil: from the extension (as ASIHTTPRequest
    /// did), else `application/octet-stream`.
    public mutating func appendFile(
        _ name: String, path: String, filename: String? = nil, contentType: String? = nil, headers: HTTPFields = HTTPFields()
    ) throws(HTTPClientError) {
        let body = try HTTPClientRequest.Body.file(path)
        let shownName = filename ?? (path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path)
        parts.append(Part(name: name, filename: shownName,
                          contentType: contentType ?? headers[.contentType] ?? MediaTypes.forFileName(shownName),
                          content: .body(body), headers: headers))
    }

    /// Adds any request body as a part (a stream of unknown length makes the whole form chunked).
    public mutating func append(
        _ name: String, body: HTTPClientRequest.Body, filename: String? = nil, contentType: String? = nil,
        headers: HTTPFields = HTTPFields()
    ) {
        let type = contentType ?? headers[.contentType] ?? (filename.map(MediaTypes.forFileName) ?? "application/octet-stream")
        parts.append(Part(name: name, filename: filename, contentType: type, content: .body(body), headers: headers))
    }

    /// The body and its `Content-Type` (`multipart/form-data; boundary=…`).
    ///
    /// - Throws: `HTTPClientError.Code.invalidRequest` for a fixed ``boundary`` found in a part, a part whose known
    ///   length is negative, or a total length past `Int.max` (each names the part).
    public func makeBody(encoding: FormTextEncoding = .utf8) throws(HTTPClientError) -> (body: HTTPClientRequest.Body, contentType: String) {
        let boundary = try chooseBoundary(encoding: encoding)
        let delimiter = Array("--\(boundary)".utf8)
        // Segments alternate framing bytes (merged with in-memory content) and streamed bodies.
        enum Segment: Sendable {
            case bytes([UInt8])
            /// A streamed part's body, and the part's name (for a length error).
            case body(HTTPClientRequest.Body, part: String)
        }
        var segments: [Segment] = []
        var pending: [UInt8] = []
        for part in parts {
            pending += delimiter + Self.crlf
            if !part.headers.contains(.contentDisposition) {
                pending += Array("Content-Disposition: form-data; name=\"".utf8) + Self.escape(encoding.encode(part.name)) + [UInt8(ascii: "\"")]
                if let filename = part.filename {
                    pending += Array("; filename=\"".utf8) + Self.escape(encoding.encode(filename)) + [UInt8(ascii: "\"")]
                }
                pending += Self.crlf
            }
            if let type = part.contentType {
                pending += Array("Content-Type: ".utf8) + Self.stripLineBreaks(type) + Self.crlf
            }
            // A Content-Type field went into the part's type when it was added (curl's rule).
            for field in part.headers where field.name != .contentType {
                pending += Array(field.name.rawName.utf8) + Array(": ".utf8) + Self.stripLineBreaks(field.value) + Self.crlf
            }
            pending += Self.crlf
            switch part.content {
            case .text(let value): pending += encoding.encode(value)
            case .data(let bytes): pending += bytes
            case .body(let body):
                if case .bytes(let bytes) = body.storage {
                    pending += bytes
                } else {
                    segments.append(.bytes(pending))
                    pending = []
                    segments.append(.body(body, part: part.name))
                }
            }
            pending += Self.crlf
        }
        pending += delimiter + Array("--".utf8) + Self.crlf
        segments.append(.bytes(pending))

        // Added with overflow checks: a part's known length is the caller's (`.stream(_, length: .known(.max))` trapped
        // here), and a negative one would have shrunk the form's Content-Length below what is sent.
        var total: Int? = 0
        var replayable = true
        for segment in segments {
            let length: Int?
            let part: String?
            switch segment {
            case .bytes(let bytes):
                (length, part) = (bytes.count, nil)
            case .body(let body, let name):
                (length, part) = (body.length, name)
                replayable = replayable && body.isReplayable
                if let length, length < 0 {
                    throw HTTPClientError(.invalidRequest, "multipart form part '\(name)' has a negative length (\(length))")
                }
            }
            guard let sum = total, let length else {
                total = nil
                continue
            }
            let (added, overflow) = sum.addingReportingOverflow(length)
            if overflow {
                throw HTTPClientError(.invalidRequest,
                    "multipart form length overflows" + (part.map { " at part '\($0)' (its length is \(length))" } ?? ""))
            }
            total = added
        }
        // RFC 2046 §5.1.1: a boundary with characters a header parameter's token may not hold (`'()+,/:=?` and
        // space) goes in quotes; none of the boundary characters needs escaping inside them.
        let isToken = boundary.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || Array("-._".utf8).contains(byte)
        }
        let contentType = "multipart/form-data; boundary=" + (isToken ? boundary : "\"\(boundary)\"")
        if segments.count == 1, case .bytes(let bytes) = segments[0] {
            return (.bytes(bytes), contentType)
        }
        let frozen = segments
        // Bytes and regular files only: the transport may send the files' ranges with `sendfile`.
        var direct: [DirectPiece]? = []
        for segment in segments {
            switch segment {
            case .bytes(let bytes): direct?.append(.bytes(bytes))
            case .body(let body, _):
                if let pieces = body.directPieces { direct?.append(contentsOf: pieces) } else { direct = nil }
            }
        }
        var body = HTTPClientRequest.Body(storage: .stream(length: total, replayable: replayable, makeSource: { () throws(HTTPClientError) in
            // Every part's source is made now, before the head goes out: a file gone missing fails with nothing sent.
            enum Piece {
                case bytes([UInt8])
                /// A streamed part, its declared length (nil: unknown) and its name.
                case source(BodyChunkSource, length: Int?, part: String)
            }
            var pieces: [Piece] = []
            for segment in frozen {
                switch segment {
                case .bytes(let bytes):
                    pieces.append(.bytes(bytes))
                case .body(let body, let part):
                    // In-memory bodies were merged into the framing above; what is left here is a stream.
                    guard case .stream(let length, _, let makeSource) = body.storage else { continue }
                    pieces.append(.source(try makeSource(), length: length, part: part))
                }
            }
            var index = 0
            var partBytes = 0
            return BodyChunkSource {
                while index < pieces.count {
                    switch pieces[index] {
                    case .bytes(let bytes):
                        index += 1
                        if !bytes.isEmpty { return bytes[...] }
                    case .source(let source, let length, let part):
                        // Each part keeps to its own length: the form's is their sum, so a part that ran over or
                        // short would shift the delimiters after it, and the form would end cut or padded.
                        if let chunk = try await source.next() {
                            partBytes += chunk.count
                            if let length, partBytes > length {
                                throw HTTPClientError.invalidRequest(
                                    "multipart form part '\(part)' produced more than its declared length of \(length) bytes")
                            }
                            return chunk
                        }
                        if let length, partBytes != length {
                            throw HTTPClientError.invalidRequest(
                                "multipart form part '\(part)' ended after \(partBytes) of its declared \(length) bytes")
                        }
                        partBytes = 0
                        index += 1
                    }
                }
                return nil
            }
        }))
        body.directPieces = direct
        return (body, contentType)
    }

    static let crlf: [UInt8] = [13, 10]

    /// WHATWG: in a name or filename, `"` → `%22`, CR → `%0D`, LF → `%0A`.
    static func escape(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for byte in bytes {
            switch byte {
            case 0x22: out += Array("%22".utf8)
            case 0x0D: out += Array("%0D".utf8)
            case 0x0A: out += Array("%0A".utf8)
            default: out.append(byte)
            }
        }
        return out
    }

    /// A content type is a header value inside the body: CR and LF in it would start a new header line.
    static func stripLineBreaks(_ text: String) -> [UInt8] {
        text.utf8.filter { $0 != 13 && $0 != 10 }
    }

    /// RFC 2046 §5.1.1 `bchars`.
    static func isBoundaryCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"):
            return true
        default:
            return Array("'()+_,-./:=? ".utf8).contains(byte)
        }
    }

    /// The boundary: the one asked for (checked), or a random one that no in-memory part contains.
    func chooseBoundary(encoding: FormTextEncoding) throws(HTTPClientError) -> String {
        if let boundary {
            let bytes = Array(boundary.utf8)
            guard (1...70).contains(bytes.count), bytes.allSatisfy(Self.isBoundaryCharacter), bytes.last != UInt8(ascii: " ") else {
                throw .invalidRequest("multipart boundary '\(boundary)' is not 1 to 70 of RFC 2046's boundary characters")
            }
            guard !occursInParts(bytes, encoding: encoding) else {
                throw .invalidRequest("multipart boundary '\(boundary)' occurs in a part of the form")
            }
            return boundary
        }
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        // Bounded: a collision with 143 random bits is next to impossible; eight draws are plenty.
        for _ in 0..<8 {
            var bytes = Array("AsyncHTTPBoundary".utf8)
            for _ in 0..<24 { bytes.append(alphabet.randomElement()!) }
            if !occursInParts(bytes, encoding: encoding) { return String(decoding: bytes, as: UTF8.self) }
        }
        throw .invalidRequest("no multipart boundary could be found that the form's parts do not contain")
    }

    /// Whether the delimiter `--boundary` occurs in any in-memory part's content (RFC 2046 §5.1.1: the
    /// delimiter must not appear inside an encapsulated part). Names, filenames and a part's own fields cannot
    /// hold one: their CR and LF are escaped or replaced, so they never start a line.
    func occursInParts(_ boundary: [UInt8], encoding: FormTextEncoding) -> Bool {
        let delimiter = Array("--".utf8) + boundary
        for part in parts {
            let content: [UInt8]
            switch part.content {
            case .text(let text): content = encoding.encode(text)
            case .data(let bytes): content = bytes
            case .body(let body):
                guard case .bytes(let bytes) = body.storage else { continue }
                content = bytes
            }
            if Self.contains(content, delimiter) { return true }
        }
        return false
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        let first = needle[0]
        var index = 0
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == first && haystack[index..<(index + needle.count)].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }
}

extension HTTPClientRequest {
    /// Makes `form` the body, with `Content-Type: multipart/form-data; boundary=…`. A GET becomes a POST, as
    /// ASIFormDataRequest did; any other method you chose (PUT, PATCH) stays.
    public mutating func setForm(_ form: MultipartForm, encoding: FormTextEncoding = .utf8) throws(HTTPClientError) {
        let (body, contentType) = try form.makeBody(encoding: encoding)
        self.body = body
        self[FormSummaryOption.self] = FormSummary(
            kind: "multipart", fieldNames: form.parts.map(\.name), fileNames: form.parts.compactMap(\.filename), length: body.length)
        headers[.contentType] = contentType
        if method == .get { method = .post }
    }
}

/// Media types for file parts, from the file name's extension (ASIHTTPRequest asked the system's
/// `UTTypeCopyPreferredTagWithClass`; this is the common subset of nginx's `mime.types`).
public enum MediaTypes {
    /// The media type for `fileName`'s extension, or `application/octet-stream`.
    public static func forFileName(_ fileName: String) -> String {
        guard let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex else { return "application/octet-stream" }
        let ext = fileName[fileName.index(after: dot)...].lowercased()
        return byExtension[ext] ?? "application/octet-stream"
    }

    static let byExtension: [String: String] = [
        "txt": "text/plain", "text": "text/plain", "log": "text/plain", "md": "text/markdown",
        "html": "text/html", "htm": "text/html", "css": "text/css", "csv": "text/csv", "xml": "application/xml",
        "js": "text/javascript", "mjs": "text/javascript", "json": "application/json",
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
        "svg": "image/svg+xml", "ico": "image/x-icon", "bmp": "image/bmp", "tif": "image/tiff", "tiff": "image/tiff",
        "heic": "image/heic", "avif": "image/avif",
        "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip",
        "tar": "application/x-tar", "bz2": "application/x-bzip2", "xz": "application/x-xz", "7z": "application/x-7z-compressed",
        "mp3": "audio/mpeg", "wav": "audio/wav", "ogg": "audio/ogg", "m4a": "audio/mp4", "flac": "audio/flac",
        "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm", "avi": "video/x-msvideo",
        "doc": "application/msword", "xls": "application/vnd.ms-excel", "ppt": "application/vnd.ms-powerpoint",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "wasm": "application/wasm", "woff": "font/woff", "woff2": "font/woff2", "bin": "application/octet-stream",
    ]
}
