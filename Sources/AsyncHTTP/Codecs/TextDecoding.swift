// Turning a response body into a String: which charset, and the decoders for the few that matter.
//
// Bulk conversions only: each decoder writes UTF-8 straight into the new String's storage
// (`String(unsafeUninitializedCapacity:initializingUTF8With:)`) or hands the bytes to the standard
// library's UTF-8 decoder; no per-character String appends.

/// A text encoding a response body can be decoded from.
///
/// ```swift
/// let text = TextEncoding.decode(body, contentType: response.headers[.contentType])
/// ```
///
/// Each decoder strips its own byte order mark (a leading U+FEFF is never part of the text), and
/// replaces what it cannot decode with U+FFFD REPLACEMENT CHARACTER rather than failing.
public enum TextEncoding: Sendable, Hashable {
    /// UTF-8. Invalid sequences become U+FFFD, one per maximal invalid subpart, as
    /// `String(decoding:as:)` and the WHATWG Encoding Standard do.
    case utf8
    /// ISO-8859-1: every byte is the code point of the same value, so 0x80–0x9F are C1 controls.
    case isoLatin1
    /// Windows-1252: ISO-8859-1 except 0x80–0x9F, which hold typographic characters (€, “, ”, –, …).
    /// The five bytes Windows leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) decode to the C1
    /// control of the same value, as the WHATWG Encoding Standard's index-windows-1252 maps them.
    case windows1252
    /// UTF-16 whose byte order comes from its byte order mark; big-endian without one
    /// (RFC 2781 §4.3, the IANA registration of "UTF-16"). Browsers assume little-endian instead.
    case utf16
    /// UTF-16, big-endian. An unpaired surrogate becomes U+FFFD; so does an odd trailing byte.
    case utf16BE
    /// UTF-16, little-endian. An unpaired surrogate becomes U+FFFD; so does an odd trailing byte.
    case utf16LE
    /// US-ASCII. Bytes 0x80–0xFF are not ASCII and become U+FFFD.
    case ascii

    /// Looks up an IANA charset name or alias, case-insensitively, ignoring surrounding whitespace.
    ///
    /// Recognises the IANA Character Sets registry's names and aliases for these encodings, plus the
    /// WHATWG Encoding Standard's labels for them (`"utf8"`, `"latin1"`, `"cp1252"`, `"ucs-2"`, …).
    /// Names are mapped to what they say: `"iso-8859-1"` and `"us-ascii"` stay ISO-8859-1 and ASCII,
    /// where browsers would decode both as Windows-1252.
    /// Returns `nil` for any other charset.
    public init?(charset: String) {
        var name = Substring(charset)
        while let first = name.first, first == " " || first == "\t" { name.removeFirst() }
        while let last = name.last, last == " " || last == "\t" { name.removeLast() }
        guard let encoding = Self.charsetNames[name.lowercased()] else { return nil }
        self = encoding
    }

    /// The value of the `charset` parameter of a `Content-Type` field value, or `nil` when there is
    /// none (or it is empty).
    ///
    /// Parses parameters as RFC 9110 §5.6.6 defines them: `;`-separated `name=value` pairs after
    /// the media type, names case-insensitive, values a token or a quoted-string (whose `\`
    /// escapes are undone). Whitespace around `;` is allowed and, leniently, around `=` too.
    /// If `charset` appears twice, the first wins (as the WHATWG MIME Sniffing parser does).
    ///
    /// ```swift
    /// TextEncoding.charset(fromContentType: #"text/html; charset="UTF-8""#)   // "UTF-8"
    /// ```
    public static func charset(fromContentType contentType: String) -> String? {
        let bytes = Array(contentType.utf8)
        func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        guard var index = bytes.firstIndex(of: UInt8(ascii: ";")) else { return nil }
        while index < bytes.count {
            // At a ';' (or where one was expected): skip it and the whitespace after it.
            index += 1
            while index < bytes.count, isWhitespace(bytes[index]) { index += 1 }
            let nameStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "="), bytes[index] != UInt8(ascii: ";") {
                index += 1
            }
            var nameEnd = index
            while nameEnd > nameStart, isWhitespace(bytes[nameEnd - 1]) { nameEnd -= 1 }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { continue }  // no value
            index += 1
            while index < bytes.count, isWhitespace(bytes[index]) { index += 1 }
            var value: [UInt8] = []
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                // quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE; an unterminated one runs
                // to the end of the field.
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count { index += 1 }
                    value.append(bytes[index])
                    index += 1
                }
                // Skip the closing quote and anything up to the next ';'.
                while index < bytes.count, bytes[index] != UInt8(ascii: ";") { index += 1 }
            } else {
                let valueStart = index
                while index < bytes.count, bytes[index] != UInt8(ascii: ";") { index += 1 }
                var valueEnd = index
                while valueEnd > valueStart, isWhitespace(bytes[valueEnd - 1]) { valueEnd -= 1 }
                value = Array(bytes[valueStart..<valueEnd])
            }
            let name = bytes[nameStart..<nameEnd]
            if name.count == 7, String(decoding: name, as: UTF8.self).lowercased() == "charset" {
                return value.isEmpty ? nil : String(decoding: value, as: UTF8.self)
            }
        }
        return nil
    }

    /// Decodes a body to a String, choosing the encoding in this order (the WHATWG Encoding Standard's, with
    /// HTTP's defaults):
    ///
    /// 1. a byte order mark: UTF-8 (EF BB BF), UTF-16BE (FE FF), UTF-16LE (FF FE), whatever the charset says
    ///    (WHATWG "decode": a BOM wins over the label);
    /// 2. UTF-8 for JSON (`application/json`, any `+json`): RFC 8259 §8.1 allows nothing else;
    /// 3. the `charset` of `contentType`, if it names an encoding listed here, or a legacy one the platform's
    ///    `iconv` decodes (Shift_JIS, EUC-JP, GBK, GB18030, Big5, EUC-KR, KOI8-R, windows-1250…1258,
    ///    ISO-8859-2…16, …);
    /// 4. else UTF-8, if the bytes are valid UTF-8 (so ASCII, too);
    /// 5. else `fallback.encoding` — ISO-8859-1 unless configured, which is ASIHTTPRequest's
    ///    `defaultResponseEncoding` and also what HTTP/1.1 once made the default (RFC 2616 §3.7.1).
    ///
    /// When `contentType` holds several media types (several `Content-Type` fields, joined with ", "), the
    /// charset is the WHATWG's: the last media type's, or an earlier one's of the same type. An unknown
    /// charset name is treated as no charset, as browsers do; so, here, is a known one this platform cannot
    /// decode (``HTTPClientResponse/text(upTo:)`` throws for that instead). Never fails: undecodable bytes
    /// become U+FFFD.
    public static func decode(
        _ bytes: [UInt8], contentType: String?, fallback: TextDecodingFallback = TextDecodingFallback()
    ) -> String {
        (try? decodeChecked(bytes, contentType: contentType, fallback: fallback, refusesUnsupported: false))
            ?? fallback.encoding.decode(bytes)
    }

    /// ``decode(_:contentType:fallback:)`` that throws `HTTPClientError.Code.malformedResponse` naming a declared
    /// charset it knows of but cannot decode here (rather than passing a guess off as the text).
    static func decodeChecked(
        _ bytes: [UInt8], contentType: String?, fallback: TextDecodingFallback, refusesUnsupported: Bool = true,
        legacyNames: [String: [String]] = LegacyCharset.iconvNames
    ) throws(HTTPClientError) -> String {
        let result: Result<String, HTTPClientError> = bytes.withUnsafeBufferPointer { buffer in
            if let bomEncoding = byteOrderMarkEncoding(buffer) { return .success(bomEncoding.decode(buffer)) }
            var json = false
            var charset: String?
            if let contentType { (json, charset) = mediaType(fromContentType: contentType) }
            if json { return .success(TextEncoding.utf8.decode(buffer)) }
            if let charset {
                if let declared = TextEncoding(charset: charset) { return .success(declared.decode(buffer)) }
                switch LegacyCharset.decode(buffer, charset: charset, table: legacyNames) {
                case .decoded(let text): return .success(text)
                case .unknown: break
                case .unsupported:
                    if refusesUnsupported {
                        return .failure(HTTPClientError(.malformedResponse,
                            "the body's charset '\(charset.prefix(40))' (Content-Type) cannot be decoded on this platform;"
                                + " read its bytes from body"))
                    }
                }
            }
            if let text = String(validating: buffer, as: UTF8.self) { return .success(text) }
            return .success(fallback.encoding.decode(buffer))
        }
        return try result.get()
    }

    /// Whether `contentType` is JSON, and its charset, as the WHATWG's "extract a MIME type" reads a value that
    /// may join several fields: media types are split at commas outside quoted strings; a later one replaces an
    /// earlier one, and keeps the earlier one's charset only when it is the same type and names none. `*/*`
    /// (an invalid type) is skipped.
    static func mediaType(fromContentType contentType: String) -> (isJSON: Bool, charset: String?) {
        // The common case: one media type, no comma at all.
        guard contentType.utf8.contains(UInt8(ascii: ",")) else {
            return (isJSON(essence(of: Substring(contentType))), charset(fromContentType: contentType))
        }
        var essenceSoFar: String?
        var charsetSoFar: String?
        for part in splitOutsideQuotes(contentType) {
            let type = essence(of: part)
            guard type.contains("/"), type != "*/*" else { continue }
            let partCharset = charset(fromContentType: String(part))
            if type != essenceSoFar {
                essenceSoFar = type
                charsetSoFar = partCharset
            } else if let partCharset {
                charsetSoFar = partCharset
            }
        }
        return (essenceSoFar.map(isJSON) ?? false, charsetSoFar)
    }

    /// The lowercased `type/subtype` of one media type, without parameters or surrounding whitespace.
    private static func essence(of mediaType: Substring) -> String {
        let head = mediaType.prefix { $0 != ";" }
        return String(head.trimmingWhitespace()).lowercased()
    }

    /// RFC 8259 §8.1: JSON exchanged between systems is UTF-8. `application/json` and any `+json` (RFC 6839 §3.1).
    private static func isJSON(_ essence: String) -> Bool {
        essence == "application/json" || (essence.hasSuffix("+json") && essence.contains("/"))
    }

    /// `value` split at the commas outside quoted strings (whose `\` escapes are skipped over).
    private static func splitOutsideQuotes(_ value: String) -> [Substring] {
        var parts: [Substring] = []
        var start = value.startIndex
        var index = value.startIndex
        var quoted = false
        while index < value.endIndex {
            let character = value[index]
            if quoted, character == "\\" {
                index = value.index(after: index)
                if index < value.endIndex { index = value.index(after: index) }
                continue
            }
            if character == "\"" { quoted.toggle() }
            if !quoted, character == "," {
                parts.append(value[start..<index])
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        parts.append(value[start...])
        return parts
    }

    /// Decodes `bytes` in this encoding, stripping a matching byte order mark.
    public func decode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBufferPointer { decode($0) }
    }

    // MARK: - Internals

    private static func byteOrderMarkEncoding(_ bytes: UnsafeBufferPointer<UInt8>) -> TextEncoding? {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { return .utf8 }
        if bytes.count >= 2, bytes[0] == 0xFE, bytes[1] == 0xFF { return .utf16BE }
        if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] == 0xFE { return .utf16LE }
        return nil
    }

    func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        switch self {
        case .utf8:
            let hasBOM = bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[(hasBOM ? 3 : 0)...]), as: UTF8.self)
        case .isoLatin1:
            return Self.decodeSingleByte(bytes, maxUTF8Length: 2) { UInt32($0) }
        case .windows1252:
            return Self.decodeSingleByte(bytes, maxUTF8Length: 3) { byte in
                (0x80...0x9F).contains(byte) ? UInt32(Self.windows1252C1Range[Int(byte - 0x80)]) : UInt32(byte)
            }
        case .ascii:
            return Self.decodeSingleByte(bytes, maxUTF8Length: 3) { $0 < 0x80 ? UInt32($0) : 0xFFFD }
        case .utf16:
            if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] == 0xFE {
                return Self.decodeUTF16(UnsafeBufferPointer(rebasing: bytes[2...]), bigEndian: false)
            }
            let hasBOM = bytes.count >= 2 && bytes[0] == 0xFE && bytes[1] == 0xFF
            return Self.decodeUTF16(UnsafeBufferPointer(rebasing: bytes[(hasBOM ? 2 : 0)...]), bigEndian: true)
        case .utf16BE:
            let hasBOM = bytes.count >= 2 && bytes[0] == 0xFE && bytes[1] == 0xFF
            return Self.decodeUTF16(UnsafeBufferPointer(rebasing: bytes[(hasBOM ? 2 : 0)...]), bigEndian: true)
        case .utf16LE:
            let hasBOM = bytes.count >= 2 && bytes[0] == 0xFF && bytes[1] == 0xFE
            return Self.decodeUTF16(UnsafeBufferPointer(rebasing: bytes[(hasBOM ? 2 : 0)...]), bigEndian: false)
        }
    }

    /// Decodes an encoding with one byte per character, each mapped to a BMP scalar by `scalar`.
    @inline(__always)
    private static func decodeSingleByte(
        _ bytes: UnsafeBufferPointer<UInt8>, maxUTF8Length: Int, scalar: (UInt8) -> UInt32
    ) -> String {
        guard !bytes.isEmpty else { return "" }
        return String(unsafeUninitializedCapacity: bytes.count * maxUTF8Length) { out in
            var written = 0
            for byte in bytes {
                if byte < 0x80 {
                    out[written] = byte
                    written += 1
                } else {
                    written += writeUTF8(scalar(byte), to: out, at: written)
                }
            }
            return written
        }
    }

    /// Transcodes UTF-16 to UTF-8. Unpaired surrogates and an odd final byte become U+FFFD.
    private static func decodeUTF16(_ bytes: UnsafeBufferPointer<UInt8>, bigEndian: Bool) -> String {
        guard !bytes.isEmpty else { return "" }
        // Worst case: 3 UTF-8 bytes per code unit (a surrogate pair is 4 bytes for 2 units), and 3
        // for the U+FFFD of an odd trailing byte.
        return String(unsafeUninitializedCapacity: bytes.count / 2 * 3 + 3) { out in
            @inline(__always) func unit(_ i: Int) -> UInt32 {
                bigEndian ? UInt32(bytes[i]) << 8 | UInt32(bytes[i + 1]) : UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i])
            }
            var index = 0
            var written = 0
            while index + 1 < bytes.count {
                let first = unit(index)
                index += 2
                var scalar = first
                if (0xD800..<0xDC00).contains(first) {
                    if index + 1 < bytes.count, case let second = unit(index), (0xDC00..<0xE000).contains(second) {
                        scalar = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                        index += 2
                    } else {
                        scalar = 0xFFFD
                    }
                } else if (0xDC00..<0xE000).contains(first) {
                    scalar = 0xFFFD
                }
                written += writeUTF8(scalar, to: out, at: written)
            }
            if index < bytes.count { written += writeUTF8(0xFFFD, to: out, at: written) }
            return written
        }
    }

    /// Writes `scalar` (a valid Unicode scalar value) as UTF-8; returns the bytes written.
    @inline(__always)
    private static func writeUTF8(_ scalar: UInt32, to out: UnsafeMutableBufferPointer<UInt8>, at index: Int) -> Int {
        switch scalar {
        case 0..<0x80:
            out[index] = UInt8(scalar)
            return 1
        case 0x80..<0x800:
            out[index] = UInt8(0xC0 | scalar >> 6)
            out[index + 1] = UInt8(0x80 | scalar & 0x3F)
            return 2
        case 0x800..<0x10000:
            out[index] = UInt8(0xE0 | scalar >> 12)
            out[index + 1] = UInt8(0x80 | scalar >> 6 & 0x3F)
            out[index + 2] = UInt8(0x80 | scalar & 0x3F)
            return 3
        default:
            out[index] = UInt8(0xF0 | scalar >> 18)
            out[index + 1] = UInt8(0x80 | scalar >> 12 & 0x3F)
            out[index + 2] = UInt8(0x80 | scalar >> 6 & 0x3F)
            out[index + 3] = UInt8(0x80 | scalar & 0x3F)
            return 4
        }
    }

    /// Windows-1252 bytes 0x80–0x9F (WHATWG index-windows-1252). The five bytes Windows leaves
    /// undefined map to the C1 control of the same value, as WHATWG maps them.
    static let windows1252C1Range: [UInt16] = [
        0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,  // 80–87
        0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,  // 88–8F
        0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,  // 90–97
        0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,  // 98–9F
    ]

    /// Lower-cased charset names and aliases: the IANA Character Sets registry's, plus the WHATWG
    /// Encoding Standard's labels for the same encodings.
    static let charsetNames: [String: TextEncoding] = {
        var names: [String: TextEncoding] = [:]
        for name in [
            "utf-8", "utf8", "csutf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8",
        ] { names[name] = .utf8 }
        for name in [
            "iso-8859-1", "iso_8859-1", "iso_8859-1:1987", "iso8859-1", "iso88591", "latin1", "l1",
            "iso-ir-100", "ibm819", "cp819", "csisolatin1",
        ] { names[name] = .isoLatin1 }
        for name in ["windows-1252", "cp1252", "x-cp1252", "cswindows1252"] { names[name] = .windows1252 }
        for name in [
            "us-ascii", "ascii", "us", "iso646-us", "iso_646.irv:1991", "ansi_x3.4-1968", "ansi_x3.4-1986",
            "iso-ir-6", "ibm367", "cp367", "csascii",
        ] { names[name] = .ascii }
        for name in ["utf-16", "utf16", "csutf16", "ucs-2", "iso-10646-ucs-2", "csunicode", "unicode"] {
            names[name] = .utf16
        }
        for name in ["utf-16be", "csutf16be", "unicodefffe"] { names[name] = .utf16BE }
        for name in ["utf-16le", "csutf16le", "unicodefeff"] { names[name] = .utf16LE }
        return names
    }()
}

/// What ``TextEncoding/decode(_:contentType:fallback:)`` does when neither the `Content-Type`
/// charset, nor a byte order mark, nor UTF-8 validity settles the encoding.
public struct TextDecodingFallback: Sendable, Hashable {
    /// The encoding used last. Default ISO-8859-1, ASIHTTPRequest's `defaultResponseEncoding`;
    /// `.windows1252` matches what browsers do with unlabelled legacy text.
    public var encoding: TextEncoding

    /// Creates a fallback; ISO-8859-1 unless given.
    public init(encoding: TextEncoding = .isoLatin1) {
        self.encoding = encoding
    }
}

/// The legacy charsets AsyncHTTP has no decoder of its own for (CJK, Cyrillic, Central European, …), decoded by
/// the C library's `iconv` (glibc's, musl's, or Darwin's libiconv): their tables are large, and the platform already
/// carries them. Only ``TextEncoding/decode(_:contentType:fallback:)`` comes here, once a body has been read.
enum LegacyCharset {
    enum Outcome {
        case decoded(String)
        /// A charset this client knows of (a WHATWG encoding's label) that `iconv` here cannot decode.
        case unsupported
        /// A name neither this table nor `iconv` knows: ignored, as browsers ignore an unknown label.
        case unknown
    }

    /// Decodes `bytes` from `charset` to a String; what `iconv` cannot convert becomes U+FFFD.
    static func decode(
        _ bytes: UnsafeBufferPointer<UInt8>, charset: String, table: [String: [String]] = iconvNames
    ) -> Outcome {
        let label = String(charset.utf8.prefix(64).filter { $0 != 0x20 && $0 != 0x09 }.map { Character(UnicodeScalar($0)) })
            .lowercased()
        let known = table[label]
        // A known label only, in the WHATWG's superset first (shift_jis is windows-31j there). An unknown name is
        // not handed to iconv: it would decode what browsers refuse (UTF-7, ISO-2022-KR/CN, EBCDIC), encodings
        // that can hide markup from a sanitizer.
        for name in known ?? [] {
            if let text = Iconv.convert(bytes, from: name) { return .decoded(text) }
        }
        return known == nil ? .unknown : .unsupported
    }

    /// The WHATWG Encoding Standard's labels of the legacy encodings, lowercased, with the `iconv` names to try,
    /// the WHATWG's superset first (its shift_jis is windows-31j, its euc-kr windows-949, its gbk gb18030).
    static let iconvNames: [String: [String]] = {
        var names: [String: [String]] = [:]
        func add(_ labels: [String], _ iconv: [String]) { for label in labels { names[label] = iconv } }
        add(["shift_jis", "shift-jis", "sjis", "ms_kanji", "ms932", "windows-31j", "x-sjis", "csshiftjis"], ["CP932", "SHIFT_JIS"])
        add(["euc-jp", "x-euc-jp", "cseucpkdfmtjapanese"], ["EUC-JP"])
        add(["iso-2022-jp", "csiso2022jp"], ["ISO-2022-JP"])
        add(["euc-kr", "ks_c_5601-1987", "ks_c_5601-1989", "ksc5601", "ksc_5601", "korean", "windows-949", "cp949",
             "csksc56011987", "cseuckr", "iso-ir-149"], ["CP949", "EUC-KR"])
        add(["gbk", "gb2312", "chinese", "csgb2312", "csiso58gb231280", "gb_2312", "gb_2312-80", "iso-ir-58", "x-gbk",
             "cp936", "windows-936"], ["GB18030", "GBK"])
        add(["gb18030"], ["GB18030"])
        add(["big5", "big5-hkscs", "cn-big5", "csbig5", "x-x-big5"], ["BIG5-HKSCS", "BIG5"])
        add(["koi8-r", "koi8_r", "koi", "koi8", "cskoi8r"], ["KOI8-R"])
        add(["koi8-u", "koi8-ru"], ["KOI8-U"])
        add(["ibm866", "866", "cp866", "csibm866"], ["CP866"])
        add(["macintosh", "mac", "x-mac-roman", "csmacintosh"], ["MACINTOSH"])
        add(["x-mac-cyrillic", "x-mac-ukrainian"], ["MAC-CYRILLIC", "MACCYRILLIC"])
        add(["windows-874", "dos-874", "tis-620", "iso-8859-11", "iso8859-11", "iso885911"], ["CP874", "TIS-620"])
        for number in [1250, 1251, 1253, 1254, 1255, 1256, 1257, 1258] {
            add(["windows-\(number)", "cp\(number)", "x-cp\(number)"], ["CP\(number)", "WINDOWS-\(number)"])
        }
        for number in [2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16] {
            add(["iso-8859-\(number)", "iso8859-\(number)", "iso8859\(number)", "iso_8859-\(number)"], ["ISO-8859-\(number)"])
        }
        add(["iso-8859-8-i", "csiso88598i", "logical"], ["ISO-8859-8"])
        add(["latin2", "l2", "csisolatin2"], ["ISO-8859-2"])
        add(["latin3", "l3", "csisolatin3"], ["ISO-8859-3"])
        add(["latin4", "l4", "csisolatin4"], ["ISO-8859-4"])
        add(["cyrillic", "csisolatincyrillic"], ["ISO-8859-5"])
        add(["arabic", "csisolatinarabic"], ["ISO-8859-6"])
        add(["greek", "greek8", "csisolatingreek"], ["ISO-8859-7"])
        add(["hebrew", "csisolatinhebrew", "visual"], ["ISO-8859-8"])
        add(["latin6", "l6", "csisolatin6"], ["ISO-8859-10"])
        add(["l9", "csisolatin9"], ["ISO-8859-15"])
        add(["utf-32", "utf-32le", "utf-32be"], [])
        return names
    }()
}
