// The `Content-Disposition` response field (RFC 6266) and the file name a response suggests, made safe to create.

/// A parsed `Content-Disposition` field (RFC 6266): the disposition type and its parameters, with the file name
/// the server suggests.
///
/// ```swift
/// let response = try await client.send(HTTPClientRequest(url: "https://example.com/export?id=7"))
/// if let disposition = response.contentDisposition, disposition.isAttachment {
///     print(disposition.filename ?? "-")        // as sent: may hold "../" or a leading dot
/// }
/// print(response.suggestedFilename ?? "-")       // safe to create in a directory
/// ```
///
/// Parsing is as lenient as browsers are where RFC 6266 is strict (an unquoted value may hold spaces; a
/// parameter that cannot be read is skipped), and it never fails for a field whose type is readable.
/// ``filename`` prefers `filename*` (RFC 8187, in UTF-8 or ISO-8859-1) over `filename`, as RFC 6266 §4.3 asks.
/// The name is given as the server sent it: use ``safeFileName(_:)`` (or
/// ``HTTPClientResponse/suggestedFilename``) before creating a file with it.
public struct ContentDisposition: Sendable, Hashable {
    /// The disposition type, lowercased: `attachment`, `inline`, or an extension type.
    public var type: String
    /// The parameters by lowercased name, their values unquoted (the backslash of a `\"` or `\\` removed). A name given
    /// twice keeps its first value. `filename*` is kept as sent; ``filename`` decodes it.
    public var parameters: [String: String]

    /// Parses a `Content-Disposition` field value; nil when it does not start with a disposition type (a token).
    public init?(_ fieldValue: String) {
        let bytes = Array(fieldValue.utf8)
        var index = 0
        Self.skipWhitespace(bytes, &index)
        let typeStart = index
        while index < bytes.count, Self.isTokenByte(bytes[index]) { index += 1 }
        guard index > typeStart else { return nil }
        type = String(decoding: bytes[typeStart..<index], as: UTF8.self).lowercased()
        parameters = [:]
        while index < bytes.count {
            // Anything up to the next ';' that is not a parameter is skipped.
            while index < bytes.count, bytes[index] != UInt8(ascii: ";") { index += 1 }
            guard index < bytes.count else { break }
            index += 1
            Self.skipWhitespace(bytes, &index)
            let nameStart = index
            while index < bytes.count, Self.isTokenByte(bytes[index]) { index += 1 }
            let name = String(decoding: bytes[nameStart..<index], as: UTF8.self).lowercased()
            Self.skipWhitespace(bytes, &index)
            guard !name.isEmpty, index < bytes.count, bytes[index] == UInt8(ascii: "=") else { continue }
            index += 1
            Self.skipWhitespace(bytes, &index)
            let value: [UInt8]
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                value = Self.quotedString(bytes, &index)
            } else {
                let valueStart = index
                while index < bytes.count, bytes[index] != UInt8(ascii: ";") { index += 1 }
                var valueEnd = index
                while valueEnd > valueStart, bytes[valueEnd - 1] == UInt8(ascii: " ") || bytes[valueEnd - 1] == UInt8(ascii: "\t") {
                    valueEnd -= 1
                }
                value = Array(bytes[valueStart..<valueEnd])
            }
            if parameters[name] == nil { parameters[name] = String(decoding: value, as: UTF8.self) }
        }
    }

    /// Whether the server asks for the body to be saved rather than shown (`attachment`).
    public var isAttachment: Bool { type == "attachment" }

    /// The file name the server suggests, as it sent it: `filename*` when present and decodable, else `filename`;
    /// nil when neither is there. It may name a path (`../../.profile`): see ``safeFileName(_:)``.
    public var filename: String? {
        if let extended = parameters["filename*"], let decoded = Self.decodeExtendedValue(extended) { return decoded }
        return parameters["filename"]
    }

    /// Decodes an RFC 8187 extended value (`UTF-8''%e2%82%ac%20rates`); nil for another charset, a missing part, a
    /// bad escape or bytes that are not valid in the charset named.
    public static func decodeExtendedValue(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = parts[0].lowercased()
        var bytes: [UInt8] = []
        var encoded = Array(parts[2].utf8)[...]
        while let byte = encoded.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard encoded.count >= 2, let value = UInt8(String(decoding: encoded.prefix(2), as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(value)
            encoded = encoded.dropFirst(2)
        }
        switch charset {
        case "utf-8":
            return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1":
            var text = ""
            text.unicodeScalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
            return text
        default:
            return nil
        }
    }

    /// `suggested` made safe to create inside a directory, or nil when nothing usable is left.
    ///
    /// - Only the last path component is kept, after the last `/` or `\` (`../../etc/passwd` → `passwd`,
    ///   `C:\dir\a.txt` → `a.txt`), as curl's `-J` and browsers do.
    /// - Control characters (U+0000–U+001F, U+007F) become `_`.
    /// - Leading and trailing white space goes, and so do leading dots: a server cannot name a hidden file
    ///   (`.bashrc`) or `..`. (curl's `-J` keeps a leading dot.)
    /// - A name longer than `NAME_MAX` (255 bytes of UTF-8) is shortened, keeping its extension.
    public static func safeFileName(_ suggested: String) -> String? {
        // On scalars, not characters: a combining mark after "/" or "." makes one character of the two, which
        // would hide the separator (or the leading dot) from a character comparison.
        var scalars = Array(suggested.unicodeScalars)
        if let separator = scalars.lastIndex(where: { $0 == "/" || $0 == "\\" }) { scalars.removeSubrange(...separator) }
        for index in scalars.indices where scalars[index].value < 0x20 || scalars[index].value == 0x7F { scalars[index] = "_" }
        let leading = scalars.prefix { $0 == "." || $0 == " " || $0 == "\t" }.count
        let trailing = scalars.reversed().prefix { $0 == " " || $0 == "\t" }.count
        guard leading + trailing < scalars.count else { return nil }
        var result = ""
        result.unicodeScalars.append(contentsOf: scalars[leading..<(scalars.count - trailing)])
        guard result.utf8.count > LocalFiles.maxNameBytes else { return result }
        // Keep a short extension ("….tar.gz" keeps ".gz"); the stem is cut at a character boundary.
        let dot = result.unicodeScalars.lastIndex(of: ".")
        let suffix = dot.map { String(result.unicodeScalars[$0...]) }.flatMap { $0.utf8.count <= 16 ? $0 : nil } ?? ""
        let stem = suffix.isEmpty ? result : String(result.unicodeScalars[..<dot!])
        return LocalFiles.shortened(stem, toBytes: LocalFiles.maxNameBytes - suffix.utf8.count) + suffix
    }

    // MARK: Parsing

    private static func skipWhitespace(_ bytes: [UInt8], _ index: inout Int) {
        while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") { index += 1 }
    }

    /// RFC 9110's `tchar`.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// A quoted-string starting at `index` (its opening quote), without quotes or quoted-pair backslashes; an
    /// unterminated one runs to the end of the field. A backslash escapes only `"` and `\`: before any other
    /// byte it is kept, as servers send Windows paths unescaped (`"C:\dir\a.txt"`) and curl and browsers
    /// read them so; ``safeFileName(_:)`` then keeps what follows the last one.
    private static func quotedString(_ bytes: [UInt8], _ index: inout Int) -> [UInt8] {
        var value: [UInt8] = []
        index += 1
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\"), index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "\\") {
                value.append(bytes[index])
                index += 1
            } else {
                value.append(byte)
            }
        }
        return value
    }
}

extension HTTPClientResponse {
    /// The response's `Content-Disposition` field, parsed; nil when there is none or its type cannot be read.
    public var contentDisposition: ContentDisposition? {
        headers[.contentDisposition].flatMap(ContentDisposition.init)
    }

    /// The file name to save this response's body under, safe to create in a directory (URLSession's
    /// `suggestedFilename`): the `Content-Disposition` field's name (whatever its type), else the last segment
    /// of the final URL's path, percent-decoded; each through ``ContentDisposition/safeFileName(_:)``, so it is
    /// one path component, never hidden and never `..`. nil when neither gives a name (a URL ending in `/`).
    public var suggestedFilename: String? {
        if let name = contentDisposition?.filename.flatMap(ContentDisposition.safeFileName) { return name }
        let path = url.path
        guard let slash = path.lastIndex(of: "/") else { return ContentDisposition.safeFileName(percentDecoded(path)) }
        return ContentDisposition.safeFileName(percentDecoded(path[path.index(after: slash)...]))
    }
}
