// libFuzzer target: Set-Cookie parsing (RFC 6265 §5.2 / 6265bis) and cookie dates (§5.1.1) (docs/fuzzing.md).
// Input: a Set-Cookie field value (up to the first 0x00), then optionally a request host and path.
// Checks:
// - a parsed cookie has a non-empty name; name and value hold no CR, LF or NUL (what the parser promises for
//   the Cookie header we later write), the name no "=" or ";", the value no ";";
// - HTTPClient.Cookie.parse's result has a path starting with "/", a non-empty domain, and honours Secure and
//   the __Host- prefix;
// - a cookie-date parses to a time between 1601-01-01 and 9999-12-31, and that time written as an RFC 1123
//   date parses back to the same time.
@testable import AsyncHTTP
import FuzzSupport

/// `seconds` since 1970 as "06 Nov 1994 08:49:37 GMT" (civil-from-days, Howard Hinnant's algorithm).
func rfc1123(_ seconds: Int) -> String {
    let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    let secondOfDay = seconds - days * 86_400
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    return "\(two(day)) \(months[month - 1]) \(year) \(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
}

nonisolated(unsafe) let now = 1_700_000_000.0

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCookie(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let parts = fuzzStrings(bytes, maxParts: 3)
    let field = parts[0]

    // Cookie dates, on the whole field value (the parser also meets them inside Expires).
    if let date = CookieDate.parse(field) {
        fuzzCheck(date.isFinite && date >= -11_644_473_600 && date <= 253_402_300_799, "date \(date) out of range from '\(field)'")
        let written = rfc1123(Int(date))
        fuzzCheck(CookieDate.parse(written) == date, "date \(date) written as '\(written)' parses to \(String(describing: CookieDate.parse(written)))")
    }

    guard let parsed = ParsedSetCookie(parsing: field, now: now) else { return 0 }
    fuzzCheck(!parsed.name.isEmpty, "empty name from '\(field)'")
    for text in [parsed.name, parsed.value] {
        fuzzCheck(!text.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }), "CR/LF/NUL in '\(text)' from '\(field)'")
        fuzzCheck(!text.utf8.contains(UInt8(ascii: ";")), "';' in '\(text)' from '\(field)'")
    }
    fuzzCheck(!parsed.name.utf8.contains(UInt8(ascii: "=")), "'=' in name '\(parsed.name)'")
    if let expires = parsed.expires { fuzzCheck(!expires.isNaN, "NaN expiry from '\(field)'") }

    let host = parts.count > 1 && !parts[1].isEmpty ? parts[1].lowercased() : "www.example.co.uk"
    let path = parts.count > 2 && parts[2].hasPrefix("/") ? parts[2] : "/a/b"
    for isSecure in [true, false] {
        let request = CookieJar.RequestContext(host: host, path: path, isSecure: isSecure)
        guard let cookie = HTTPClient.Cookie.parse(setCookie: field, request: request, now: now) else { continue }
        fuzzCheck(cookie.path.hasPrefix("/"), "cookie path '\(cookie.path)' from '\(field)'")
        fuzzCheck(!cookie.domain.isEmpty || host.isEmpty, "empty domain from '\(field)'")
        fuzzCheck(cookie.name == parsed.name && cookie.value == parsed.value, "name/value changed")
        fuzzCheck(!cookie.secure || isSecure, "a Secure cookie accepted from an insecure origin")
        if cookie.name.lowercased().hasPrefix("__host-") {
            fuzzCheck(cookie.secure && cookie.hostOnly && cookie.path == "/", "__Host- rules broken by '\(field)'")
        }
        // (request.host, not host: the context canonicalises it, IDNA ToASCII.)
        if !cookie.hostOnly {
            fuzzCheck(CookieDomain.domainMatches(request.host, cookie.domain), "domain '\(cookie.domain)' does not match host '\(request.host)'")
        } else {
            fuzzCheck(cookie.domain == request.host, "host-only cookie with domain '\(cookie.domain)' for host '\(request.host)'")
        }
    }
    return 0
}

runLibFuzzer(fuzzCookie)
