import HTTPTypes

/// An `application/x-www-form-urlencoded` form: name/value pairs in order (ASIFormDataRequest's
/// `setPostValue:forKey:` and `addPostValue:forKey:`, curl's `--data-urlencode`).
///
/// ```swift
/// var form = URLEncodedForm()
/// form.append("q", "swift http")
/// form.append("tag", "a")
/// form.append("tag", "b")          // repeated names are kept, in order
/// var request = HTTPClientRequest(url: "https://example.com/search")
/// request.setForm(form)            // POST, Content-Type, Content-Length: q=swift+http&tag=a&tag=b
/// ```
///
/// Encoded as the WHATWG URL Standard's `application/x-www-form-urlencoded` serializer does: `*-._`, digits
/// and ASCII letters stay, a space becomes `+`, every other byte is `%XX` (uppercase hex).
public struct URLEncodedForm: Sendable {
    /// The pairs, in the order they are sent.
    public var fields: [(name: String, value: String)]

    /// Creates a form with `fields`, in order.
    ///
    /// ```swift
    /// var form = URLEncodedForm([(name: "q", value: "swift http")])
    /// form.append("page", "2")
    /// ```
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    /// Adds a pair, keeping any earlier pair of the same name (ASI's `addPostValue:forKey:`).
    public mutating func append(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every pair named `name` with one pair (ASI's `setPostValue:forKey:`), where the first of
    /// them was, or at the end.
    public mutating func set(_ name: String, _ value: String) {
        if let first = fields.firstIndex(where: { $0.name == name }) {
            fields[first].value = value
            var index = fields.index(after: first)
            while index < fields.endIndex {
                if fields[index].name == name { fields.remove(at: index) } else { index += 1 }
            }
        } else {
            fields.append((name, value))
        }
    }

    /// The body's bytes: `name=value` pairs joined with `&`.
    public func encoded(encoding: FormTextEncoding = .utf8) -> [UInt8] {
        var bytes: [UInt8] = []
        for (index, field) in fields.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: "&")) }
            Self.percentEncode(encoding.encode(field.name), into: &bytes)
            bytes.append(UInt8(ascii: "="))
            Self.percentEncode(encoding.encode(field.value), into: &bytes)
        }
        return bytes
    }

    /// The WHATWG `application/x-www-form-urlencoded` byte serializer.
    static func percentEncode(_ input: [UInt8], into bytes: inout [UInt8]) {
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in input {
            switch byte {
            case UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"):
                bytes.append(byte)
            case UInt8(ascii: " "):
                bytes.append(UInt8(ascii: "+"))
            default:
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            }
        }
    }

    /// The percent-encoding of `text`'s UTF-8 bytes as a string (for the CLI's `--data-urlencode`).
    public static func percentEncoded(_ text: String, encoding: FormTextEncoding = .utf8) -> String {
        var bytes: [UInt8] = []
        percentEncode(encoding.encode(text), into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The percent-encoding of `bytes` as they are, in no text encoding (a file's contents, for the CLI's
    /// `--data-urlencode @file`).
    ///
    /// ```swift
    /// URLEncodedForm.percentEncoded(bytes: [0x63, 0x61, 0x66, 0xE9])   // "caf%E9"
    /// ```
    public static func percentEncoded(bytes: [UInt8]) -> String {
        var encoded: [UInt8] = []
        percentEncode(bytes, into: &encoded)
        return String(decoding: encoded, as: UTF8.self)
    }
}

extension HTTPClientRequest {
    /// Makes `form` the body, with `Content-Type: application/x-www-form-urlencoded` (plus `; charset=…` for an
    /// encoding other than UTF-8, as ASIHTTPRequest sent it). A GET becomes a POST, as ASIFormDataRequest did;
    /// any other method you chose (PUT, PATCH) stays.
    public mutating func setForm(_ form: URLEncodedForm, encoding: FormTextEncoding = .utf8) {
        body = .bytes(form.encoded(encoding: encoding))
        self[FormSummaryOption.self] = FormSummary(
            kind: "urlencoded", fieldNames: form.fields.map(\.name), fileNames: [], length: body?.length)
        var type = "application/x-www-form-urlencoded"
        if encoding != .utf8 { type += "; charset=\(encoding.charsetName)" }
        headers[.contentType] = type
        if method == .get { method = .post }
    }
}
