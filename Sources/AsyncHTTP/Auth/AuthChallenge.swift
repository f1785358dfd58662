// Challenges in `WWW-Authenticate` and `Proxy-Authenticate` (RFC 9110 §11.6.1, §11.7.1), parsed per §11.2:
//
//     challenge   = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
//     auth-param  = token BWS "=" BWS ( token / quoted-string )
//     token68     = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
//
// One field value may hold several challenges, and the commas that separate challenges are the same commas
// that separate one challenge's parameters (§11.6.1: "it might contain more than one challenge"). An element
// that is `token BWS "="` continues the current challenge; any other token starts a new one. This is how
// Chromium's HttpAuthChallengeTokenizer and Firefox's nsHttpChallenge split them too.
//
// Bytes in, values out: no I/O, never throws. Servers send a lot of slightly wrong headers, so an element
// that cannot be parsed is skipped up to the next comma and the rest of the field is still read.

/// One authentication challenge from a `WWW-Authenticate` or `Proxy-Authenticate` field.
///
/// ```swift
/// let challenges = AuthChallenge.parse([#"Basic realm="a", Digest realm="b", nonce="x", qop="auth,auth-int""#])
/// challenges[1].scheme                 // "digest"
/// challenges[1].parameters["qop"]      // "auth,auth-int"
/// ```
struct AuthChallenge: Sendable, Equatable {
    /// The auth-scheme, lowercased (schemes are case-insensitive, RFC 9110 §11.1): `"basic"`, `"digest"`,
    /// `"ntlm"`, `"negotiate"`, `"bearer"`, ...
    var scheme: String
    /// The auth-params, keyed by lowercased name (case-insensitive, §11.2), values with their quotes removed
    /// and backslash escapes undone. When a name repeats, the first value is kept: RFC 9110 §11.2 says each
    /// name "MUST only occur once per challenge", and the first one is the one Chromium keeps.
    var parameters: [String: String]
    /// The token68 form of the challenge's data, as sent (`NTLM TlRMTVNTUAACAAAA...`), or `nil`.
    /// A challenge has a token68 or parameters, never both.
    var token68: String?

    init(scheme: String, parameters: [String: String] = [:], token68: String? = nil) {
        self.scheme = scheme
        self.parameters = parameters
        self.token68 = token68
    }

    /// The `realm` parameter: the protection space within the origin (RFC 9110 §11.5).
    var realm: String? { parameters["realm"] }

    /// Parses every challenge in the given field values, in order. Each value is one `WWW-Authenticate` (or
    /// `Proxy-Authenticate`) field line; a challenge never continues from one line into the next.
    ///
    /// Never fails: elements that do not parse are skipped, and an empty array means no usable challenge.
    static func parse(_ fieldValues: [String]) -> [AuthChallenge] {
        var challenges: [AuthChallenge] = []
        for value in fieldValues {
            var parser = Parser(Array(value.utf8))
            parser.parse(into: &challenges)
        }
        return challenges
    }

    /// `value` as an HTTP quoted-string (RFC 9110 §5.6.4), with `"` and `\` escaped by a backslash:
    /// `a"b` becomes `"a\"b"`.
    ///
    /// A quoted-string cannot carry control characters other than HTAB; check with ``canBeQuoted(_:)`` first
    /// when the value does not come from a parsed header.
    static func quoted(_ value: String) -> String {
        var result = "\""
        result.reserveCapacity(value.utf8.count + 2)
        for character in value.unicodeScalars {
            if character == "\"" || character == "\\" { result.unicodeScalars.append("\\") }
            result.unicodeScalars.append(character)
        }
        result += "\""
        return result
    }

    /// Whether `value` can go in a quoted-string without loss: it is printable ASCII, SP and HTAB only.
    ///
    /// RFC 9110 §5.6.4 also admits obs-text (bytes 0x80-0xFF) but gives them no charset; RFC 7616 §3.4 and
    /// RFC 8187 say to send anything outside ASCII in an extended parameter such as `username*` instead.
    static func canBeQuoted(_ value: String) -> Bool {
        value.utf8.allSatisfy { $0 == 0x09 || (0x20...0x7E).contains($0) }
    }

    /// Whether `byte` is a tchar (RFC 9110 §5.6.2): ALPHA, DIGIT, the backtick, or one of
    /// `! # $ % & ' * + - . ^ _ | ~`.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}

// MARK: - The parser

extension AuthChallenge {
    /// A cursor over one field value. Each step reads one comma-separated element.
    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func parse(into challenges: inout [AuthChallenge]) {
            var current: AuthChallenge?
            // Set right after a scheme and its spaces: only there may a token68 appear.
            var afterScheme = false

            while true {
                skipWhitespace()
                if !afterScheme {
                    while index < bytes.count && (bytes[index] == UInt8(ascii: ",") || isWhitespace(bytes[index])) {
                        index += 1
                    }
                }
                guard index < bytes.count else { break }

                if afterScheme {
                    afterScheme = false
                    if bytes[index] == UInt8(ascii: ",") { continue }
                    if let token68 = token68AtElementEnd() {
                        current?.token68 = token68
                        continue
                    }
                }

                guard let name = token() else {
                    skipElement()
                    continue
                }
                let afterName = index
                skipWhitespace()

                if index < bytes.count && bytes[index] == UInt8(ascii: "=") {
                    // auth-param = token BWS "=" BWS ( token / quoted-string )
                    index += 1
                    skipWhitespace()
                    guard let value = parameterValue() else {
                        skipElement()
                        continue
                    }
                    // A parameter before any scheme, or after a token68, belongs to nothing: skip it.
                    if current != nil && current?.token68 == nil {
                        let key = Self.lowercased(name)
                        if current?.parameters[key] == nil { current?.parameters[key] = value }
                    }
                    // `realm="a" junk`: keep the value, drop the junk (a missing comma is a common slip).
                    if !atElementEnd() { skipElement() }
                    continue
                }

                // Anything else starts a new challenge.
                if let finished = current { challenges.append(finished) }
                current = AuthChallenge(scheme: Self.lowercased(name))
                index = afterName
                if index < bytes.count && isWhitespace(bytes[index]) {
                    afterScheme = true
                } else if !atElementEnd() {
                    // `Basic"x"`: the scheme is not followed by a space or a comma. Keep the scheme, drop the rest.
                    skipElement()
                }
            }
            if let finished = current { challenges.append(finished) }
        }

        // MARK: Pieces of the grammar

        /// token = 1*tchar (RFC 9110 §5.6.2).
        mutating func token() -> [UInt8]? {
            let start = index
            while index < bytes.count && AuthChallenge.isTokenCharacter(bytes[index]) { index += 1 }
            return index > start ? Array(bytes[start..<index]) : nil
        }

        /// A token68 that makes up the whole rest of the element, or `nil` (and the cursor unmoved) when the
        /// element is something else, such as the first auth-param. `abc=` followed by the end is a token68:
        /// an auth-param needs a value after its `=`.
        mutating func token68AtElementEnd() -> String? {
            let start = index
            while index < bytes.count && Self.isToken68Character(bytes[index]) { index += 1 }
            guard index > start else { return nil }
            while index < bytes.count && bytes[index] == UInt8(ascii: "=") { index += 1 }
            let end = index
            if atElementEnd() {
                return String(decoding: bytes[start..<end], as: UTF8.self)
            }
            index = start
            return nil
        }

        /// The value of an auth-param: a quoted-string, unescaped, or an unquoted run.
        ///
        /// RFC 9110 allows only a token unquoted, but servers send unquoted base64 nonces with `/`, `+` and `=`
        /// in them; like curl's Digest parser, we take everything up to whitespace or a comma.
        mutating func parameterValue() -> String? {
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "\"") {
                // On failure, back to the opening quote so that skipElement() sees the string whole.
                let start = index
                guard let value = quotedString() else {
                    index = start
                    return nil
                }
                return value
            }
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: ","), !isWhitespace(bytes[index]),
                bytes[index] != UInt8(ascii: "\""), bytes[index] > 0x20, bytes[index] != 0x7F
            {
                index += 1
            }
            return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
        }

        /// quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE (RFC 9110 §5.6.4), with the escapes undone.
        /// `nil` when it is not closed, or holds a control character.
        mutating func quotedString() -> String? {
            precondition(bytes[index] == UInt8(ascii: "\""))
            index += 1
            var value: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: value, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
                    guard index < bytes.count, Self.isQuotable(bytes[index]) else { return nil }
                    value.append(bytes[index])
                    index += 1
                case let byte where Self.isQuotable(byte):
                    value.append(byte)
                default:
                    return nil
                }
            }
            return nil
        }

        /// Skips to the next comma outside a quoted-string (or the end), leaving the cursor on it.
        mutating func skipElement() {
            var quoted = false
            while index < bytes.count {
                let byte = bytes[index]
                if quoted {
                    if byte == UInt8(ascii: "\\") {
                        index += 1
                    } else if byte == UInt8(ascii: "\"") {
                        quoted = false
                    }
                } else if byte == UInt8(ascii: "\"") {
                    quoted = true
                } else if byte == UInt8(ascii: ",") {
                    return
                }
                index += 1
            }
            index = bytes.count
        }

        /// Skips OWS; true when what follows is a comma or the end.
        mutating func atElementEnd() -> Bool {
            skipWhitespace()
            return index == bytes.count || bytes[index] == UInt8(ascii: ",")
        }

        mutating func skipWhitespace() {
            while index < bytes.count && isWhitespace(bytes[index]) { index += 1 }
        }

        func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

        // MARK: Character classes

        /// token68 characters before the trailing `=`: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/".
        static func isToken68Character(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                true
            default:
                false
            }
        }

        /// qdtext and the second byte of a quoted-pair: HTAB, SP, VCHAR, obs-text.
        static func isQuotable(_ byte: UInt8) -> Bool {
            byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
        }

        /// ASCII lowercasing of a token (tokens are ASCII, so this is all the case folding §11.1 asks for).
        static func lowercased(_ token: [UInt8]) -> String {
            String(decoding: token.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
    }
}
