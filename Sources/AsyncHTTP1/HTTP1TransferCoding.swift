/// A transfer coding applied under `chunked` that the client decodes (RFC 9112 §7): the parser reports it in
/// ``HTTP1ResponseHead/transferCoding`` and only de-chunks; the transport inflates (transfer codings are
/// hop-by-hop, so they are undone where the connection is, not in a middleware).
///
/// Which codings are accepted is decided here, in the sans-IO layer, because a coding the client cannot
/// undo must refuse the message (RFC 9112 §6.1) before any of its body is handed out.
package enum HTTP1TransferCoding: String, Sendable, Hashable {
    /// RFC 9112 §7.2 (RFC 1952); `x-gzip` is the same coding (§7.2: "SHOULD be treated as gzip").
    case gzip
    /// RFC 9112 §7.2: the zlib format (RFC 1950).
    case deflate
}

extension HTTP1TransferCoding {
    /// The coding a Transfer-Encoding element names, case-insensitively; nil for any other (chunked included).
    package init?(name: UnsafeRawBufferPointer) {
        if ByteScanner.equalsIgnoringCase(name, "gzip") || ByteScanner.equalsIgnoringCase(name, "x-gzip") {
            self = .gzip
        } else if ByteScanner.equalsIgnoringCase(name, "deflate") {
            self = .deflate
        } else {
            return nil
        }
    }

    /// The same, from a `String` (error messages).
    package static func named(_ name: String) -> Self? {
        var name = name
        return name.withUTF8 { Self(name: UnsafeRawBufferPointer($0)) }
    }
}
