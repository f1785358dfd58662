/// Finds the URLs a stylesheet loads — `url(…)` tokens and `@import "…"` — and rewrites them.
///
/// There is no CSS library on the platform (libxml2 reads markup only), so this is a hand-written scanner for
/// the few tokens that matter here, following CSS Syntax Level 3 (§4.3): comments (`/* … */`) and strings
/// (`"…"`, `'…'`, with backslash escapes) are skipped so that a `url(` inside them is not taken; `url(` must
/// start an identifier (`myurl(` is not one); the URL's escapes (`\"`, `\29 `) are decoded. It never fails:
/// text it does not understand is left as it is, as a browser's tokenizer would leave it.
///
/// The scanner works on bytes: every CSS encoding a browser meets in practice (UTF-8, Latin-1, …) is
/// ASCII-compatible, and a URL is ASCII once resolved.
enum CSSURLScanner {
    /// One URL in a stylesheet.
    struct Reference: Equatable {
        /// The bytes of the whole token: `url( … )` or, after `@import`, the string `"…"`.
        var range: Range<Int>
        /// The URL as written, escapes decoded, surrounding spaces removed.
        var url: String
        /// Whether this is the target of an `@import` (a stylesheet) rather than an image, font, …
        var isImport: Bool
    }

    /// Every URL reference in `css`, in order.
    static func references(in css: [UInt8]) -> [Reference] {
        var found: [Reference] = []
        var i = 0
        let n = css.count
        // After `@import`, the next token (a string or url()) is the imported stylesheet.
        var afterImport = false
        while i < n {
            let byte = css[i]
            if byte == UInt8(ascii: "/") && i + 1 < n && css[i + 1] == UInt8(ascii: "*") {
                // A comment runs to "*/" or to the end (an unclosed comment is a parse error that ends there).
                var j = i + 2
                while j + 1 < n && !(css[j] == UInt8(ascii: "*") && css[j + 1] == UInt8(ascii: "/")) { j += 1 }
                i = min(n, j + 2)
                continue
            }
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                let (end, value) = string(css, from: i)
                if afterImport { found.append(Reference(range: i..<end, url: trimmed(value), isImport: true)) }
                afterImport = false
                i = end
                continue
            }
            if byte == UInt8(ascii: "\\") {
                afterImport = false
                i = min(n, i + 2)
                continue
            }
            if byte == UInt8(ascii: "@") && matchesKeyword(css, at: i + 1, "import") {
                afterImport = true
                i += 7
                continue
            }
            if (byte | 0x20) == UInt8(ascii: "u") && matchesFunction(css, at: i) {
                let (end, value) = urlToken(css, from: i)
                if let value, !value.isEmpty {
                    found.append(Reference(range: i..<min(end, n), url: value, isImport: afterImport))
                }
                afterImport = false
                i = max(end, i + 1)
                continue
            }
            if !isWhitespace(byte) { afterImport = false }
            i += 1
        }
        return found
    }

    /// `css` with each reference replaced by `url("…")` of what `replacement` returns for it; a reference for
    /// which it returns nil is left as written.
    static func rewrite(_ css: [UInt8], _ replacement: (Reference) -> String?) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(css.count)
        var copied = 0
        for reference in references(in: css) {
            guard let url = replacement(reference) else { continue }
            output.append(contentsOf: css[copied..<reference.range.lowerBound])
            output.append(contentsOf: Array("url(\"".utf8))
            output.append(contentsOf: quoted(url))
            output.append(contentsOf: Array("\")".utf8))
            copied = reference.range.upperBound
        }
        output.append(contentsOf: css[copied...])
        return output
    }

    // MARK: - Tokens

    /// A string token starting at the quote at `start`: (the index after it, its decoded value). An unescaped
    /// newline ends it (a "bad string" in CSS Syntax §4.3.5; whatever it held is not a URL anyone loads).
    private static func string(_ css: [UInt8], from start: Int) -> (end: Int, value: String) {
        let quote = css[start]
        var value: [UInt8] = []
        var i = start + 1
        while i < css.count {
            let byte = css[i]
            if byte == quote { return (i + 1, String(decoding: value, as: UTF8.self)) }
            if byte == UInt8(ascii: "\n") { return (i, String(decoding: value, as: UTF8.self)) }
            if byte == UInt8(ascii: "\\") {
                if i + 1 < css.count && css[i + 1] == UInt8(ascii: "\n") {
                    i += 2  // an escaped newline continues the string
                    continue
                }
                i = escape(css, at: i, into: &value)
                continue
            }
            value.append(byte)
            i += 1
        }
        return (i, String(decoding: value, as: UTF8.self))
    }

    /// `url(` at `start` through its `)`: (the index after it, the URL, or nil for a bad url token — CSS Syntax
    /// §4.3.6: a quote, `(` or a space inside an unquoted URL, or text after a quoted one; its remnants up to the
    /// next `)` are skipped, as a browser skips them). The end of the input ends the token (a parse error that
    /// still yields the URL, §4.3.6).
    private static func urlToken(_ css: [UInt8], from start: Int) -> (end: Int, value: String?) {
        var i = start + 4
        while i < css.count && isWhitespace(css[i]) { i += 1 }
        if i < css.count && (css[i] == UInt8(ascii: "\"") || css[i] == UInt8(ascii: "'")) {
            let (afterString, value) = string(css, from: i)
            i = afterString
            while i < css.count && isWhitespace(css[i]) { i += 1 }
            if i >= css.count { return (i, trimmed(value)) }
            guard css[i] == UInt8(ascii: ")") else { return (badURLRemnants(css, from: i), nil) }
            return (i + 1, trimmed(value))
        }
        var value: [UInt8] = []
        while i < css.count {
            let byte = css[i]
            if byte == UInt8(ascii: ")") { return (i + 1, String(decoding: value, as: UTF8.self)) }
            if isWhitespace(byte) {
                // Only spaces may follow before ")".
                var j = i
                while j < css.count && isWhitespace(css[j]) { j += 1 }
                if j >= css.count { return (j, String(decoding: value, as: UTF8.self)) }
                guard css[j] == UInt8(ascii: ")") else { return (badURLRemnants(css, from: j), nil) }
                return (j + 1, String(decoding: value, as: UTF8.self))
            }
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") || byte == UInt8(ascii: "(") {
                return (badURLRemnants(css, from: i), nil)
            }
            if byte == UInt8(ascii: "\\") {
                i = escape(css, at: i, into: &value)
                continue
            }
            value.append(byte)
            i += 1
        }
        return (i, String(decoding: value, as: UTF8.self))
    }

    /// The index after the `)` that ends a bad url's remnants (escapes skipped), or the end of the input.
    private static func badURLRemnants(_ css: [UInt8], from start: Int) -> Int {
        var i = start
        while i < css.count {
            if css[i] == UInt8(ascii: ")") { return i + 1 }
            i += css[i] == UInt8(ascii: "\\") ? 2 : 1
        }
        return css.count
    }

    /// Decodes the escape at `start` (a backslash) into `value`: up to six hex digits and one optional space
    /// (a code point), or the next character itself. Returns the index after it.
    private static func escape(_ css: [UInt8], at start: Int, into value: inout [UInt8]) -> Int {
        var i = start + 1
        guard i < css.count else { return i }
        var scalar: UInt32 = 0
        var digits = 0
        while i < css.count && digits < 6, let digit = hexValue(css[i]) {
            scalar = scalar << 4 | UInt32(digit)
            digits += 1
            i += 1
        }
        if digits == 0 {
            value.append(css[i])
            return i + 1
        }
        if i < css.count && isWhitespace(css[i]) { i += 1 }
        let character = Unicode.Scalar(scalar).flatMap { $0.value == 0 ? nil : $0 } ?? "\u{FFFD}"
        value.append(contentsOf: Array(String(Character(character)).utf8))
        return i
    }

    /// Whether `css[start...]` is `url(` (any case) not preceded by an identifier character.
    private static func matchesFunction(_ css: [UInt8], at start: Int) -> Bool {
        guard start + 4 <= css.count,
            (css[start + 1] | 0x20) == UInt8(ascii: "r"), (css[start + 2] | 0x20) == UInt8(ascii: "l"),
            css[start + 3] == UInt8(ascii: "(")
        else { return false }
        return start == 0 || !isIdentifier(css[start - 1])
    }

    /// Whether `css[start...]` is the identifier `word` (ASCII, any case) and ends there.
    private static func matchesKeyword(_ css: [UInt8], at start: Int, _ word: String) -> Bool {
        let letters = Array(word.utf8)
        guard start + letters.count <= css.count else { return false }
        for (offset, letter) in letters.enumerated() where (css[start + offset] | 0x20) != letter { return false }
        return start + letters.count == css.count || !isIdentifier(css[start + letters.count])
    }

    /// A URL as the inside of a double-quoted CSS string: `"`, `\` and newlines escaped.
    private static func quoted(_ url: String) -> [UInt8] {
        var out: [UInt8] = []
        for byte in url.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), byte]
            case UInt8(ascii: "\n"): out += Array("\\a ".utf8)
            default: out.append(byte)
            }
        }
        return out
    }

    private static func trimmed(_ text: String) -> String {
        var scalars = Substring(text)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D
    }

    private static func isIdentifier(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_") || byte >= 0x80
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
