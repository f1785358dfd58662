// ahttp's options for bodies on disk, with curl's spellings:
//   -F name=value[;type=…] | -F 'name=@path[;type=…][;filename=…]' | -F 'name=<path' (- for stdin)   multipart/form-data
//   --form-string name=value                                                  a literal multipart field
//   --data-urlencode [name=]content | [name]@file                             urlencoded, joined to -d with &
//   --data-binary @file                                                       streamed from disk
//   -T file                                                                   PUT from disk (URL/ + file name)
//   -o file (atomic) | -O (name from the URL) | -C - (resume) | --expect100-timeout SECONDS

import AsyncHTTP
import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct BodyOptions {
    /// -F / --form-string, in order.
    var formParts: [FormPart] = []
    /// --data-binary @file given before any other data: streamed instead of read into memory (data given after it
    /// is joined in memory, in order).
    var dataBinaryFile: String?
    /// -T: the file to PUT.
    var uploadFile: String?
    /// -O: the output file name comes from the URL.
    var remoteName = false
    /// -C -: resume a partial download.
    var resume = false
    var expect100Timeout: Double?

    /// One -F part: its name, what it holds, its `;type=` and its `;headers=`.
    struct FormPart {
        enum Content {
            case text(String)
            case file(path: String, filename: String?)
            case textFromFile(path: String)
        }
        var name: String
        var content: Content
        var type: String?
        /// `;headers=` in order (``formHeaderField(_:in:)``), a file's lines read already: as curl, which reads a
        /// `headers=@file` as it reads the command line.
        var headers = HTTPFields()
    }
}

/// `-F` as curl's get_param_part reads it: `name=value`, `name=@file`, `name=<file` (the file's contents as a text
/// field; `-` is standard input for both), each followed by `;type=…` (up to the next known option, so
/// `type=text/plain;charset=utf-8` is one type), `;filename=…` and `;headers=…` (a field line, or `@file` of them). A value may be double-quoted, with `\"` and `\\`
/// inside (`@"my file.txt"`). `literal` (`--form-string`): the value is taken as it is.
func parseFormPart(_ text: String, literal: Bool, warn: (String) -> Void = { _ in }) throws -> BodyOptions.FormPart {
    guard let equals = text.firstIndex(of: "=") else { throw UsageError(message: "-F '\(text)': expected name=content") }
    let name = String(text[..<equals])
    let content = String(text[text.index(after: equals)...])
    if literal { return BodyOptions.FormPart(name: name, content: .text(content)) }
    let marker = content.first.flatMap { $0 == "@" || $0 == "<" ? $0 : nil }
    var rest = Substring(content).dropFirst(marker == nil ? 0 : 1)
    let value = formWord(&rest)
    if marker != nil, value.isEmpty { throw UsageError(message: "-F '\(text)': no file name after \(marker!)") }
    var type: String?
    var filename: String?
    var headers = HTTPFields()
    let known = ["type=", "filename=", "headers=", "encoder="]
    while rest.first == ";" {
        rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
        if rest.hasPrefix("type=") {
            rest = rest.dropFirst(5)
            // To the next ';' that starts a known option: a type's own parameters stay in it.
            var end = rest.startIndex
            while end < rest.endIndex {
                if rest[end] == ";", known.contains(where: { rest[rest.index(after: end)...].drop { $0 == " " }.hasPrefix($0) }) { break }
                end = rest.index(after: end)
            }
            type = String(rest[..<end]).trimmingSpaces()
            rest = rest[end...]
        } else if rest.hasPrefix("filename=") {
            rest = rest.dropFirst(9)
            filename = formWord(&rest)
        } else if rest.hasPrefix("headers=") {
            // As curl: `headers=@file` (or `<file`; `-` is standard input) reads field lines from a file, warning
            // and going on without them when it cannot be read; anything else is one field line.
            rest = rest.dropFirst(8).drop { $0 == " " || $0 == "\t" }
            var lines: [String]
            if rest.first == "@" || rest.first == "<" {
                rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
                let path = formWord(&rest)
                let file = path == "-" ? "/dev/stdin" : path
                if access(file, R_OK) != 0 {
                    warn("Cannot read from \(path): \(String(cString: strerror(errno)))")
                    lines = []
                } else {
                    lines = formHeaderLines(try readFile(file))
                }
            } else {
                lines = [formWord(&rest)]
            }
            for line in lines { headers.append(try formHeaderField(line, in: text)) }
        } else if rest.hasPrefix("encoder=") {
            // Known to curl; the library's form sends every part as it is (8bit), with no transfer encoding.
            throw UsageError(message: "-F '\(text)': the part option encoder= is not supported (type=, filename= and headers= are)")
        } else {
            _ = formWord(&rest)  // as curl: an unknown option is skipped
        }
    }
    let part: BodyOptions.FormPart.Content = switch marker {
    case "@": .file(path: value, filename: filename)
    case "<": .textFromFile(path: value)
    default: .text(value)
    }
    return BodyOptions.FormPart(name: name, content: part, type: type, headers: headers)
}

/// One `;headers=` field line, `Name: value`, as a field (`text` is the -F argument, for the message). A line curl
/// would send as it is but that is no field (no colon, a name with a space) is refused: the form's fields are
/// `HTTPField`s.
func formHeaderField(_ line: String, in text: String) throws -> HTTPField {
    guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else {
        throw UsageError(message: "-F '\(text)': the part header '\(line)' is not 'Name: value'")
    }
    return HTTPField(name: name, value: String(line[line.index(after: colon)...]).trimmingSpaces())
}

/// The field lines of a `headers=@file`, as curl's read_field_headers reads them: CRs are ignored; a line that starts
/// with white space continues the field before it (its characters appended as they are, the line break dropped); a
/// line starting with `#` is a comment; white space at a field's end is removed, and empty fields are skipped.
func formHeaderLines(_ bytes: [UInt8]) -> [String] {
    func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
    var fields: [String] = []
    var field: [UInt8] = []
    var atLineStart = true
    var inComment = false
    func flush() {
        while let last = field.last, isSpace(last) { field.removeLast() }
        if !field.isEmpty { fields.append(String(decoding: field, as: UTF8.self)) }
        field = []
    }
    for byte in bytes {
        if atLineStart && !isSpace(byte) { flush() }
        switch byte {
        case 0x0D: continue
        case 0x0A:
            atLineStart = true
            inComment = false
            continue
        case UInt8(ascii: "#") where atLineStart: inComment = true
        default: break
        }
        atLineStart = false
        if !inComment { field.append(byte) }
    }
    flush()
    return fields
}

/// One word of a -F value, as curl's get_param_word: a double-quoted one (backslash escapes `"` and `\` inside; what
/// follows the closing quote up to the next `;` is dropped), else everything up to the next `;`.
func formWord(_ rest: inout Substring) -> String {
    guard rest.first == "\"" else {
        let word = rest.prefix { $0 != ";" }
        rest = rest[word.endIndex...]
        return String(word)
    }
    var word = ""
    var index = rest.index(after: rest.startIndex)
    while index < rest.endIndex, rest[index] != "\"" {
        if rest[index] == "\\", rest.index(after: index) < rest.endIndex,
           rest[rest.index(after: index)] == "\"" || rest[rest.index(after: index)] == "\\" {
            index = rest.index(after: index)
        }
        word.append(rest[index])
        index = rest.index(after: index)
    }
    rest = rest[index...].drop { $0 != ";" }
    return word
}

extension String {
    /// Without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

/// `--data-urlencode` as curl reads it: `content`, `=content`, `name=content`, `@file`, `name@file`; the
/// content (not the name) is percent-encoded.
func dataURLEncode(_ text: String) throws -> [UInt8] {
    if let equals = text.firstIndex(of: "=") {
        let name = String(text[..<equals])
        let content = URLEncodedForm.percentEncoded(String(text[text.index(after: equals)...]))
        return Array((name.isEmpty ? content : name + "=" + content).utf8)
    }
    if let at = text.firstIndex(of: "@") {
        let name = String(text[..<at])
        // The file's bytes as they are: decoding them as UTF-8 first turned each invalid byte into U+FFFD.
        let bytes = try readFile(String(text[text.index(after: at)...]))
        let content = URLEncodedForm.percentEncoded(bytes: bytes)
        return Array((name.isEmpty ? content : name + "=" + content).utf8)
    }
    return Array(URLEncodedForm.percentEncoded(text).utf8)
}

/// Joins data items with `&`, as curl joins several -d.
func joinData(_ existing: [UInt8]?, _ more: [UInt8]) -> [UInt8] {
    guard let existing else { return more }
    return existing + Array("&".utf8) + more
}

/// Sets the request's body from -F, --data-binary @file and -T. Runs after -d set its body and before -X
/// sets the method. Throws `HTTPClientError` for a file that cannot be read (nothing is sent).
func applyBodies(_ options: Options, to request: inout HTTPClientRequest) throws {
    let bodies = options.bodies
    if let timeout = bodies.expect100Timeout {
        request.expectContinue = ExpectContinuePolicy(timeout: .milliseconds(Int64(timeout * 1000)))
    }
    if let path = bodies.dataBinaryFile {
        request.method = .post
        if let data = options.data {
            // Mixed with other -d: joined in memory, as curl does.
            request.body = .bytes(try readFile(path) + Array("&".utf8) + data)
        } else {
            request.body = try .file(path)
        }
        if request.headers[.contentType] == nil { request.headers[.contentType] = "application/x-www-form-urlencoded" }
    }
    if !bodies.formParts.isEmpty {
        guard options.data == nil, bodies.dataBinaryFile == nil, bodies.uploadFile == nil else {
            throw UsageError(message: "-F cannot be combined with -d, --data-binary or -T")
        }
        var form = MultipartForm()
        for part in bodies.formParts {
            let headers = part.headers
            switch part.content {
            case .text(let value):
                if let type = part.type {
                    form.append(part.name, body: .bytes(Array(value.utf8)), contentType: type, headers: headers)
                } else {
                    form.append(part.name, value, headers: headers)
                }
            case .file(let path, let filename) where path == "-":
                // curl: `@-` reads standard input, sent as a file named "-" unless filename= names it.
                form.append(part.name, data: try readFile("/dev/stdin"), filename: filename ?? "-",
                            contentType: part.type ?? "application/octet-stream", headers: headers)
            case .file(let path, let filename):
                try form.appendFile(part.name, path: path, filename: filename, contentType: part.type, headers: headers)
            case .textFromFile(let path):
                let bytes = try readFile(path == "-" ? "/dev/stdin" : path)
                if let type = part.type {
                    form.append(part.name, body: .bytes(bytes), contentType: type, headers: headers)
                } else {
                    form.append(part.name, rawValue: bytes, headers: headers)  // as they are, as curl sends them
                }
            }
        }
        try request.setForm(form)
    }
    if let path = bodies.uploadFile {
        request.body = try .file(path == "-" ? "/dev/stdin" : path)  // curl: -T - reads stdin
        request.method = .put
        // curl: a URL ending in '/', or with no path at all (`http://host`), gets the file's name appended.
        if path != "-", let base = uploadDirectoryURL(request.url) {
            let name = path.split(separator: "/").last.map(String.init) ?? path
            request.url = base + URLEncodedForm.percentEncoded(name).replacingOccurrences(of: "+", with: "%20")
        }
    }
}

/// `url` ready for -T's file name when it names a directory (ends in '/') or no path at all (then with the '/'
/// added), else nil. A URL with a query or fragment keeps it as it is.
func uploadDirectoryURL(_ url: String) -> String? {
    if url.hasSuffix("/") { return url }
    guard let schemeEnd = Substring(url).range(of: "://") else { return nil }
    let rest = url[schemeEnd.upperBound...]
    return rest.contains(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ? nil : url + "/"
}

func isSpecialFile(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFREG && (info.st_mode & S_IFMT) != S_IFDIR
}

/// Whether an -o file gets a response whatever its status: with --fail-with-body (curl writes the error page, then
/// exits 22) and with -I (the head is what was asked for). Otherwise a non-2xx status leaves the file alone.
func writesErrorResponses(_ options: Options) -> Bool {
    options.failWithBody || options.headOnly
}

/// -o / -O: the body goes to `path` atomically (a temporary file beside, renamed into place when complete); a
/// non-2xx status leaves the file alone unless ``writesErrorResponses(_:)``. Returns the response's status code,
/// the bytes received and whether the file was written.
func downloadToFile(
    _ client: HTTPClient, _ request: HTTPClientRequest, path: String, options: Options, heads: () -> String
) async throws -> (status: Int, size: Int, url: String, written: Bool) {
    if let refusal = refusingDirectoryOutput(path) { throw refusal }
    if options.bodies.resume, let kept = resumableOutputSize(path) {
        return try await resumeExistingOutput(client, request, path: path, kept: kept, options: options)
    }
    // --retry as without -o FILE: an error status leaves the file alone, so a retry's answer can still replace it.
    let downloadOptions = DownloadOptions(resume: options.bodies.resume, writesErrorResponses: writesErrorResponses(options))
    let result = try await retrying(options: options, status: { ($0.status.code, $0.headers[.retryAfter]) }) {
        try await client.download(request, to: path, options: downloadOptions)
    }
    if (options.includeHeaders || options.headOnly) && result.written {
        // As curl: -i puts the heads in the output file, before the body.
        var head = heads()
        if head.isEmpty {
            head = "HTTP/1.1 \(result.status.code) \(result.status.reasonPhrase)\r\n"
                + result.headers.map { "\($0.name): \($0.value)\r\n" }.joined() + "\r\n"
        }
        try await prependAtomically(Array(head.utf8), to: path)
    }
    return (result.status.code, result.bytesReceived, result.url.description, result.written)
}

/// -C - over an output file of its own (no `<file>.part` of the library's resumable download beside it): its size,
/// which curl resumes from; nil when there is nothing to resume (no regular file, an empty one, or a `.part`).
func resumableOutputSize(_ path: String) -> Int? {
    var info = stat(), part = stat()
    guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size > 0,
          stat(path + ".part", &part) != 0 else { return nil }
    return Int(info.st_size)
}

/// -C - as curl resumes a file that is there: `Range: bytes=<size>-`; a 206 from that byte is appended (to a copy
/// renamed over the file, so the file is never seen half-written), a 416 means the file is complete (left as it
/// is, exit 0), a 200 replaces it whole, and an error status leaves it alone (written only with
/// ``writesErrorResponses(_:)``).
func resumeExistingOutput(
    _ client: HTTPClient, _ request: HTTPClientRequest, path: String, kept: Int, options: Options
) async throws -> (status: Int, size: Int, url: String, written: Bool) {
    var attempt = request
    attempt.headers[.range] = "bytes=\(kept)-"
    attempt.acceptsCompressedResponse = false  // a range counts the bytes as they are stored
    let response = try await retrying(options: options, status: { ($0.status.code, $0.headers[.retryAfter]) }) {
        try await client.send(attempt)
    }
    let code = response.status.code
    let url = response.url.description
    if code == 416 {
        for try await _ in response.body {}
        return (code, 0, url, true)
    }
    if code == 206 {
        guard let range = response.headers[.contentRange], range.hasPrefix("bytes \(kept)-") else {
            throw HTTPClientError(.malformedResponse, "resuming \(path) at byte \(kept): the 206 is for another range")
        }
        let input = open(LocalFiles.resolvingSymbolicLinks(path), O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw UsageError(message: "cannot read '\(path)': \(String(cString: strerror(errno)))", exitCode: 23) }
        defer { close(input) }
        var received = 0
        try await replaceAtomically(path, tag: "resume") { output in
            try copyAll(from: input, path: path, to: output)
            for try await chunk in response.body {
                try writeAll(output, chunk)
                received += chunk.count
            }
        }
        return (code, received, url, true)
    }
    guard (200..<300).contains(code) || writesErrorResponses(options) else {
        for try await _ in response.body {}
        return (code, 0, url, false)
    }
    return (code, try await response.body.write(toFileAtPath: path), url, true)
}

/// -J: where the body of `response` goes: the Content-Disposition name made safe (its last path component, no
/// leading dot; `ContentDisposition.safeFileName`), else -O's `fallback`, in `directory` (curl's --output-dir).
func serverNamedPath(_ response: HTTPClientResponse, directory: String?, fallback: String) -> String {
    let name = response.contentDisposition?.filename.flatMap(ContentDisposition.safeFileName) ?? fallback
    return (directory.map { $0 + "/" } ?? "") + name
}

/// -J's refusal when the file the server named is there already; curl's write error (23).
func refusingToOverwrite(_ path: String) -> UsageError {
    UsageError(message: "refusing to overwrite '\(path)': the file exists (-J never replaces a file)", exitCode: 23)
}

/// -J's write of a response in hand: a 2xx body, atomically, to ``serverNamedPath(_:directory:fallback:)``, never
/// over an existing file (``refusingToOverwrite(_:)``); nil, with the body untouched, for another status, as -O
/// leaves its file alone.
func writeNamedByServer(
    _ response: HTTPClientResponse, directory: String?, fallback: String
) async throws -> (path: String, size: Int)? {
    guard (200..<300).contains(response.status.code) else { return nil }
    let path = serverNamedPath(response, directory: directory, fallback: fallback)
    var info = stat()
    if lstat(path, &info) == 0 { throw refusingToOverwrite(path) }
    let size = try await response.body.write(toFileAtPath: path, replacingExisting: false)
    return (path, size)
}

/// -O with -J: sends `request` (with --retry) and writes it through ``writeNamedByServer(_:directory:fallback:)``.
func downloadNamedByServer(
    _ client: HTTPClient, _ request: HTTPClientRequest, directory: String?, fallback: String, options: Options
) async throws -> (status: Int, size: Int, url: String, path: String?) {
    let response = try await sendRetrying(request, client: client, options: options)
    let written = try await writeNamedByServer(response, directory: directory, fallback: fallback)
    return (response.status.code, written?.size ?? 0, response.url.description, written?.path)
}

/// Rewrites `path` as `prefix` followed by its old content, so the file is never seen half-written.
func prependAtomically(_ prefix: [UInt8], to path: String) async throws {
    let input = open(path, O_RDONLY | O_CLOEXEC)
    guard input >= 0 else { throw UsageError(message: "cannot read '\(path)': \(String(cString: strerror(errno)))", exitCode: 23) }
    defer { close(input) }
    try await replaceAtomically(path, tag: "head") { output in
        try writeAll(output, prefix[...])
        try copyAll(from: input, path: path, to: output)
    }
}

/// Copies what is left to read of `input` (the file at `path`, named in an error) to `output`; curl's write error
/// (23) when either fails.
func copyAll(from input: Int32, path: String, to output: Int32) throws {
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count >= 0 else { throw UsageError(message: "cannot read '\(path)': \(String(cString: strerror(errno)))", exitCode: 23) }
        if count == 0 { break }
        try writeAll(output, buffer[0..<count])
    }
}

/// Replaces `path` with what `fill` writes to a temporary file beside it, then fsync and rename: the file is never
/// seen half-written, and on any failure the old one stays as it was and the temporary file is removed. As curl
/// writes its output file in place: a file there keeps its mode (a 0600 file stays 0600), a new one gets 0666 less
/// the umask, and a symbolic link is written through (the temporary file goes beside its target, which the rename
/// replaces; the link stays).
func replaceAtomically(_ path: String, tag: String, _ fill: (Int32) async throws -> Void) async throws {
    let target = LocalFiles.resolvingSymbolicLinks(path)
    let temporary = target + ".ahttp-\(tag)-\(getpid())"
    let output = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard output >= 0 else { throw UsageError(message: "cannot write '\(temporary)': \(String(cString: strerror(errno)))", exitCode: 23) }
    var renamed = false
    defer {
        close(output)
        if !renamed { unlink(temporary) }
    }
    try await fill(output)
    var existing = stat()
    _ = fchmod(output, stat(target, &existing) == 0 && (existing.st_mode & S_IFMT) == S_IFREG
        ? existing.st_mode & 0o777 : outputFileMode)
    guard fsync(output) == 0, rename(temporary, target) == 0 else {
        throw UsageError(message: "cannot write '\(path)': \(String(cString: strerror(errno)))", exitCode: 23)
    }
    renamed = true
}

/// Runs `applyBodies`, printing a failure (not under -s without -S, as curl); curl's exit code for it, or nil when the
/// request is ready.
func applyBodiesReporting(_ options: Options, to request: inout HTTPClientRequest) -> Int32? {
    do {
        try applyBodies(options, to: &request)
        return nil
    } catch let error as HTTPClientError {
        if options.showsErrors { printError(error.message) }
        return 26  // CURLE_READ_ERROR: a file to send could not be read
    } catch let error as UsageError {
        if options.showsErrors { printError(error.message) }
        return 26
    } catch {
        if options.showsErrors { printError("\(error)") }
        return 26
    }
}

/// curl's write error (23) for an -o that names a directory: it cannot open it for writing. (The library refuses
/// such a destination as an invalid request, 43.)
func refusingDirectoryOutput(_ path: String) -> UsageError? {
    var info = stat()
    guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
    return UsageError(message: "cannot write '\(path)': Is a directory", exitCode: 23)
}
