import HTTPTypes

/// How a request body is delimited on the wire (RFC 9112 §6).
package enum HTTP1BodyFraming: Equatable {
    /// No body and no framing header. Use `.contentLength(0)` for an empty body on a method that defines
    /// one (POST, PUT): RFC 9110 §8.6 says a user agent should then send `Content-Length: 0`.
    case none
    case contentLength(Int)
    /// `Transfer-Encoding: chunked`; HTTP/1.1 only.
    case chunked
}

/// Writes HTTP/1.x request heads and chunk framing into a byte buffer. Sans-IO: the caller sends the bytes.
///
/// ```swift
/// var buffer: [UInt8] = []
/// try HTTP1RequestEncoder.encodeHead(
///     method: .post, target: url.requestTarget, host: url.hostHeader, headers: fields,
///     framing: .chunked, version: .http1_1, userAgent: "AsyncHTTP", into: &buffer)
/// HTTP1RequestEncoder.chunkHeader(size: part.count, into: &buffer)
/// buffer += part + HTTP1RequestEncoder.chunkTrailer
/// buffer += HTTP1RequestEncoder.lastChunk
/// ```
package enum HTTP1RequestEncoder {
    /// Appends `METHOD target HTTP/1.x`, `Host`, the caller's fields, `User-Agent` and the framing header,
    /// then the empty line.
    ///
    /// - `Host` comes first (RFC 9112 §3.2: it should be the first field) unless `headers` already holds one,
    ///   which is then sent where it is.
    /// - `Content-Length` and `Transfer-Encoding` in `headers` are dropped: `framing` alone decides them,
    ///   so a caller's field can never contradict the body that follows (a request-smuggling shape).
    /// - `User-Agent` is added only if `headers` has none and `userAgent` is non-nil.
    /// - `port`, when given, follows `host` after a colon in the `Host` field (the caller leaves out a default
    ///   port); `host` then holds the name alone, in brackets if it is an IPv6 address.
    ///
    /// Throws `.invalidRequest` for a method that is not a token, a target with a space, control or
    /// non-ASCII byte, a host or field value with CR, LF or NUL, a version other than 1.0/1.1, or chunked
    /// framing on HTTP/1.0 (which has no chunked coding).
    package static func encodeHead(
        method: HTTPRequest.Method, target: String, host: String, port: Int? = nil, headers: HTTPFields,
        framing: HTTP1BodyFraming, version: HTTPVersion, userAgent: String?, into buffer: inout [UInt8]
    ) throws(HTTP1Error) {
        guard version == .http1_1 || version == .http1_0 else {
            throw .invalidRequest("cannot send an \(version) request (only HTTP/1.0 and HTTP/1.1)")
        }
        if framing == .chunked && version == .http1_0 {
            throw .invalidRequest("a chunked request body needs HTTP/1.1; HTTP/1.0 has no chunked transfer coding")
        }
        if case .contentLength(let length) = framing, length < 0 {
            throw .invalidRequest("negative Content-Length \(length)")
        }
        try validateMethod(method.rawValue)
        try validateTarget(target)
        try validateValue(host, name: "Host")

        let start = buffer.count
        buffer.reserveCapacity(start + 128 + target.utf8.count + headers.count * 32)
        appendUTF8(method.rawValue, into: &buffer)
        buffer.append(ByteScanner.sp)
        appendUTF8(target, into: &buffer)
        buffer.append(contentsOf: version == .http1_1 ? httpVersion1_1 : httpVersion1_0)

        var hasUserAgent = false
        if !headers.contains(hostFieldName) {
            appendUTF8("Host: ", into: &buffer)
            appendUTF8(host, into: &buffer)
            if let port {
                buffer.append(UInt8(ascii: ":"))
                appendDecimal(port, into: &buffer)
            }
            buffer.append(contentsOf: crlf)
        }
        // RFC 6265 §5.4: at most one Cookie field. `HTTPFields` splits a Cookie value at "; " into separate
        // fields (HTTP/2's RFC 9113 §8.2.3), and HTTP/1 servers join repeated fields with ", ", which breaks
        // the pairs (Werkzeug reads "a=1; b=2" sent as two fields as a="1, b=2"). Fold them back.
        var cookies: [String] = []
        for field in headers {
            let name = field.name
            if name == .contentLength || name == .transferEncoding { continue }
            if name == .userAgent { hasUserAgent = true }
            let value = field.value
            do throws(HTTP1Error) {
                try validateName(name.rawName)
                try validateValue(value, name: name.rawName)
            } catch {
                buffer.removeSubrange(start...)  // leave no half-written head behind
                throw error
            }
            if name == .cookie {
                cookies.append(value)
                continue
            }
            append(name: name.rawName, value: value, into: &buffer)
        }
        if !cookies.isEmpty {
            append(name: "Cookie", value: cookies.joined(separator: "; "), into: &buffer)
        }
        if !hasUserAgent, let userAgent {
            do throws(HTTP1Error) {
                try validateValue(userAgent, name: "User-Agent")
            } catch {
                buffer.removeSubrange(start...)
                throw error
            }
            append(name: "User-Agent", value: userAgent, into: &buffer)
        }
        switch framing {
        case .none:
            break
        case .contentLength(let length):
            append(name: "Content-Length", value: String(length), into: &buffer)
        case .chunked:
            append(name: "Transfer-Encoding", value: "chunked", into: &buffer)
        }
        buffer.append(contentsOf: crlf)
    }

    /// Appends a chunk-size line, lowercase hex then CRLF: `1a2b\r\n`. `size` must be positive; a zero-size
    /// chunk would end the body, which is ``lastChunk``'s job.
    package static func chunkHeader(size: Int, into buffer: inout [UInt8]) {
        precondition(size > 0, "a chunk must not be empty: use lastChunk to end the body")
        let digits = (Int.bitWidth - size.leadingZeroBitCount + 3) / 4
        for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
            buffer.append(hexDigits[(size >> shift) & 0xF])
        }
        buffer.append(contentsOf: crlf)
    }

    /// Follows each chunk's data.
    package static let chunkTrailer: [UInt8] = Array("\r\n".utf8)
    /// Ends a chunked body (a zero-size chunk and an empty trailer section).
    package static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

    /// Checks a header given as strings, for the string-based `setHeader` API: the name must be an RFC 9110
    /// token, and the value must not hold CR, LF or NUL (which would let a value start a new header or
    /// end the head: header injection). `HTTPFields` would silently turn those into spaces; we refuse instead.
    package static func validateHeader(name: String, value: String) throws(HTTP1Error) {
        try validateName(name)
        try validateValue(value, name: name)
    }

    // MARK: - Validation

    private static func validateMethod(_ method: String) throws(HTTP1Error) {
        guard !method.isEmpty else { throw .invalidRequest("empty request method") }
        if let offset = firstOffset(in: method, where: { !ByteScanner.isTokenCharacter($0) }) {
            let byte = Array(method.utf8)[offset]
            throw .invalidRequest("invalid character \(ByteScanner.describe(byte)) at offset \(offset) in method \(quoted(method))")
        }
    }

    private static func validateName(_ name: String) throws(HTTP1Error) {
        guard !name.isEmpty else { throw .invalidRequest("empty header name") }
        if let offset = firstOffset(in: name, where: { !ByteScanner.isTokenCharacter($0) }) {
            let byte = Array(name.utf8)[offset]
            throw .invalidRequest("invalid character \(ByteScanner.describe(byte)) at offset \(offset) in header name \(quoted(name))")
        }
    }

    private static func validateValue(_ value: String, name: String) throws(HTTP1Error) {
        guard let offset = firstOffset(in: value, where: { $0 == ByteScanner.cr || $0 == ByteScanner.lf || $0 == 0 }) else { return }
        switch Array(value.utf8)[offset] {
        case ByteScanner.cr: throw .invalidRequest("header '\(name)' value contains a carriage return")
        case ByteScanner.lf: throw .invalidRequest("header '\(name)' value contains a line feed")
        default: throw .invalidRequest("header '\(name)' value contains a NUL byte")
        }
    }

    /// The request target (RFC 9112 §3.2) is ASCII without spaces or controls; a space or CRLF would split
    /// the request line.
    private static func validateTarget(_ target: String) throws(HTTP1Error) {
        guard !target.isEmpty else { throw .invalidRequest("empty request target") }
        guard let offset = firstOffset(in: target, where: { $0 <= ByteScanner.sp || $0 >= 0x7F }) else { return }
        let byte = Array(target.utf8)[offset]
        if byte == ByteScanner.sp {
            throw .invalidRequest("request target contains a space at offset \(offset)")
        }
        if byte < 0x20 || byte == 0x7F {
            throw .invalidRequest("request target contains control character \(ByteScanner.describe(byte)) at offset \(offset)")
        }
        throw .invalidRequest("request target contains a non-ASCII byte \(ByteScanner.describe(byte)) at offset \(offset)")
    }

    /// The offset of the first byte of `string` that `test` picks, or nil. Every head checks its method, target,
    /// host and each field this way: over a native string's contiguous bytes, not `String.UTF8View`'s iterator.
    @inline(__always)
    private static func firstOffset(in string: String, where test: (UInt8) -> Bool) -> Int? {
        if let found = string.utf8.withContiguousStorageIfAvailable({ bytes -> Int? in
            for offset in bytes.indices where test(bytes[offset]) { return offset }
            return nil
        }) {
            return found
        }
        for (offset, byte) in string.utf8.enumerated() where test(byte) { return offset }
        return nil
    }

    private static func quoted(_ string: String) -> String {
        var copy = string
        return copy.withUTF8 { ByteScanner.quote(UnsafeRawBufferPointer($0)) }
    }

    /// `value`'s decimal digits (a port: not negative).
    private static func appendDecimal(_ value: Int, into buffer: inout [UInt8]) {
        precondition(value >= 0, "a port is not negative")
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            buffer.append(UInt8(truncatingIfNeeded: rest / divisor) + UInt8(ascii: "0"))
            rest %= divisor
            divisor /= 10
        }
    }

    /// `string`'s UTF-8 bytes, copied from its contiguous storage in one go (`Array.append(contentsOf:)` of a
    /// `String.UTF8View` copies through the view's generic path: about a third of what encoding a head cost).
    @inline(__always)
    private static func appendUTF8(_ string: String, into buffer: inout [UInt8]) {
        if string.utf8.withContiguousStorageIfAvailable({ buffer.append(contentsOf: $0) }) == nil {
            buffer.append(contentsOf: string.utf8)
        }
    }

    @inline(__always)
    private static func append(name: String, value: String, into buffer: inout [UInt8]) {
        appendUTF8(name, into: &buffer)
        buffer.append(UInt8(ascii: ":"))
        buffer.append(ByteScanner.sp)
        appendUTF8(value, into: &buffer)
        buffer.append(ByteScanner.cr)
        buffer.append(ByteScanner.lf)
    }

    // swift-http-types marks `.host` unavailable (it models HTTP/2's `:authority`); HTTP/1.1 needs the field.
    private static let hostFieldName = HTTPField.Name("Host")!
    private static let crlf: [UInt8] = [ByteScanner.cr, ByteScanner.lf]
    private static let httpVersion1_1: [UInt8] = Array(" HTTP/1.1\r\n".utf8)
    private static let httpVersion1_0: [UInt8] = Array(" HTTP/1.0\r\n".utf8)
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
