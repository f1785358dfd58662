/// How the text of form names and values becomes bytes (ASIHTTPRequest's `stringEncoding`).
///
/// UTF-8 by default, as browsers submit forms from UTF-8 pages. ISO-8859-1 for servers that still expect it:
/// characters it cannot hold are sent as HTML numeric character references (`&#8364;` for `€`), as the WHATWG
/// form-submission algorithm does for every non-UTF-8 encoding, rather than dropped or replaced silently.
public enum FormTextEncoding: Sendable, Hashable {
    /// UTF-8, the default.
    case utf8
    /// ISO-8859-1; other characters become `&#NNNN;`.
    case isoLatin1

    /// The IANA charset name (`UTF-8`, `ISO-8859-1`).
    public var charsetName: String {
        switch self {
        case .utf8: "UTF-8"
        case .isoLatin1: "ISO-8859-1"
        }
    }

    /// `text` in this encoding.
    func encode(_ text: String) -> [UInt8] {
        switch self {
        case .utf8:
            return Array(text.utf8)
        case .isoLatin1:
            var bytes: [UInt8] = []
            bytes.reserveCapacity(text.unicodeScalars.count)
            for scalar in text.unicodeScalars {
                if scalar.value < 256 {
                    bytes.append(UInt8(scalar.value))
                } else {
                    bytes.append(contentsOf: "&#\(scalar.value);".utf8)
                }
            }
            return bytes
        }
    }
}
