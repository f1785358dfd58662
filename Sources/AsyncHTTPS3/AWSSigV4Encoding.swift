// The text transformations of AWS Signature Version 4's canonical request: URI encoding, path normalisation,
// the canonical query string, header value trimming, and the timestamp format. Pure functions on strings.

/// RFC 3986 percent-encoding as SigV4 specifies it: every byte except the unreserved characters
/// `A–Z a–z 0–9 - . _ ~` becomes `%XX` with uppercase hex; `/` too, unless `keepingSlash`.
func awsURIEncode(_ text: some Sequence<UInt8>, keepingSlash: Bool = false) -> String {
    let digits = Array("0123456789ABCDEF".utf8)
    var out: [UInt8] = []
    for byte in text {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            out.append(byte)
        case UInt8(ascii: "/") where keepingSlash:
            out.append(byte)
        default:
            out.append(UInt8(ascii: "%"))
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
    }
    return String(decoding: out, as: UTF8.self)
}

/// The value of one hex digit, either case; nil for any other byte.
func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

/// `%XX` sequences decoded to bytes; a `%` not followed by two hex digits stays as it is. `+` stays `+`: in a
/// URL's query it is a literal plus to AWS (botocore and the AWS CLI send a space as `%20`).
func percentDecode(_ text: Substring) -> [UInt8] {
    let bytes = Array(text.utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var index = 0
    while index < bytes.count {
        if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
           let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
            out.append(high << 4 | low)
            index += 3
        } else {
            out.append(bytes[index])
            index += 1
        }
    }
    return out
}

/// RFC 3986 §5.2.4 "remove dot segments", plus what AWS services (other than S3) also require: empty
/// segments (`//`) removed. A trailing slash is kept. botocore's `remove_dot_segments` does the same.
func removingDotSegments(_ path: String) -> String {
    guard !path.isEmpty else { return "/" }
    var output: [Substring] = []
    for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
        switch segment {
        case ".": continue
        case "..": if !output.isEmpty { output.removeLast() }
        default: output.append(segment)
        }
    }
    let leading = path.hasPrefix("/") ? "/" : ""
    let trailing = path.hasSuffix("/") && !output.isEmpty ? "/" : ""
    return leading + output.joined(separator: "/") + trailing
}

/// The canonical query string: each `name=value` pair decoded then encoded the SigV4 way, sorted by encoded
/// name and then value (byte order), joined with `&`; a name without `=` gets an empty value.
func canonicalQueryString(_ query: String?) -> String {
    guard let query, !query.isEmpty else { return "" }
    var pairs: [(String, String)] = []
    for item in query.split(separator: "&", omittingEmptySubsequences: true) {
        let name: Substring
        let value: Substring
        if let equals = item.firstIndex(of: "=") {
            name = item[..<equals]
            value = item[item.index(after: equals)...]
        } else {
            name = item
            value = ""
        }
        pairs.append((awsURIEncode(percentDecode(name)), awsURIEncode(percentDecode(value))))
    }
    pairs.sort { $0.0 != $1.0 ? Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8))
        : Array($0.1.utf8).lexicographicallyPrecedes(Array($1.1.utf8)) }
    return pairs.map { $0.0 + "=" + $0.1 }.joined(separator: "&")
}

/// SigV4's `Trimall`: leading and trailing whitespace removed, runs of spaces inside made one space.
func trimmingAll(_ value: String) -> String {
    value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
}

/// The UTC civil date and time of `seconds` since 1970, as SigV4's `YYYYMMDD'T'HHMMSS'Z'`.
/// Howard Hinnant's `civil_from_days`, so no calendar library is needed.
func amzTimestamp(secondsSince1970 seconds: Int64) -> String {
    let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    let secondOfDay = seconds - days * 86_400
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthIndex = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
    let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
    return pad(year, 4) + pad(month, 2) + pad(day, 2) + "T" + pad(secondOfDay / 3600, 2)
        + pad(secondOfDay / 60 % 60, 2) + pad(secondOfDay % 60, 2) + "Z"
}
