// Cookies as RFC 6265 defines them, with the parts of draft-ietf-httpbis-rfc6265bis that browsers
// enforce today (SameSite, the `__Secure-` / `__Host-` prefixes, CTL rejection, size limits).
//
// Pure values and parsing, no clock. Time is a `Double` of seconds since 1970-01-01 UTC inside, passed in as
// `now:` so tests never sleep (STYLE: "Time is a parameter"); the cookie's times are shown to users as `Date`s
// (FoundationEssentials', which the core already uses for `URL`), which is what a Swift developer expects.

#if canImport(FoundationEssentials)
import FoundationEssentials
#elseif canImport(Foundation)
import Foundation
#endif

extension HTTPClient {
    /// An HTTP cookie as a user agent stores it (RFC 6265 §5.3).
    ///
    /// Values of this type come out of ``CookieJar`` (or ``parse(setCookie:request:now:publicSuffixList:)``);
    /// you rarely build one by hand. Its times are `Date`s (``expiresDate``, ``creationDate``,
    /// ``lastAccessDate``).
    ///
    /// It is named like async-http-client's `HTTPClient.Cookie`; its old name, `HTTPCookie`, collided with
    /// Foundation's type of that name in files that import both, and remains as a deprecated alias.
    public struct Cookie: Sendable, Hashable {
        /// The `SameSite` attribute (RFC 6265bis §5.6.7).
        ///
        /// AsyncHTTP is not a browser: it has no "site for cookies", so every request counts as same-site and
        /// the value is stored and persisted for callers that want it, not enforced. (curl does the same.)
        public enum SameSite: String, Sendable, Hashable, CaseIterable {
            /// Sent only with same-site requests.
            case strict = "Strict"
            /// Sent with same-site requests and top-level cross-site navigations.
            case lax = "Lax"
            /// Sent with every request; needs `Secure`.
            case none = "None"
            /// No `SameSite` attribute, or one with an unrecognised value (6265bis: "Default").
            case unspecified
        }

        /// The cookie's name; never empty.
        public var name: String
        /// The cookie's value, exactly as the server sent it (surrounding spaces trimmed, quotes kept).
        public var value: String
        /// The canonical (lowercased, ASCII) domain the cookie belongs to, without a leading dot.
        public var domain: String
        /// `true` when the response had no `Domain` attribute: the cookie goes back only to exactly ``domain``,
        /// not to its subdomains (RFC 6265 §5.3 step 6).
        public var hostOnly: Bool
        /// The path the cookie applies to; always starts with `/`.
        public var path: String
        /// When the cookie expires, in seconds since 1970 (the jar's clock); `nil` for a session cookie.
        var expirySeconds: Double?
        /// Only sent over secure connections (https).
        public var secure: Bool
        /// `HttpOnly`: not for scripts. A client library is always an "HTTP API", so this changes nothing here;
        /// it is kept so it survives a round trip through a cookie file.
        public var httpOnly: Bool
        /// The `SameSite` attribute.
        public var sameSite: SameSite
        /// ``creationDate`` in seconds since 1970.
        var creationSeconds: Double
        /// ``lastAccessDate`` in seconds since 1970.
        var lastAccessSeconds: Double

        /// When the cookie expires; `nil` for a session cookie, which lives until
        /// ``CookieJar/removeSessionCookies()`` (ASIHTTPRequest's `clearSession`).
        public var expiresDate: Date? {
            get { expirySeconds.map(Date.init(timeIntervalSince1970:)) }
            set { expirySeconds = newValue?.timeIntervalSince1970 }
        }
        /// When the cookie was first stored; a replacement keeps the original's (RFC 6265 §5.3 step 11.3).
        public var creationDate: Date {
            get { Date(timeIntervalSince1970: creationSeconds) }
            set { creationSeconds = newValue.timeIntervalSince1970 }
        }
        /// When the cookie was last sent; the least recently used cookies are evicted first (§5.3).
        public var lastAccessDate: Date {
            get { Date(timeIntervalSince1970: lastAccessSeconds) }
            set { lastAccessSeconds = newValue.timeIntervalSince1970 }
        }

        /// Whether the cookie outlives the session (it had `Expires` or `Max-Age`). RFC 6265's persistent-flag.
        public var isPersistent: Bool { expirySeconds != nil }

        /// Creates a cookie from its stored fields.
        ///
        /// ```swift
        /// import Foundation
        ///
        /// let cookie = HTTPClient.Cookie(name: "sid", value: "31d4", domain: "example.com", creationDate: Date())
        /// ```
        public init(
            name: String, value: String, domain: String, hostOnly: Bool = true, path: String = "/",
            expiresDate: Date? = nil, secure: Bool = false, httpOnly: Bool = false, sameSite: SameSite = .unspecified,
            creationDate: Date, lastAccessDate: Date? = nil
        ) {
            self.init(
                name: name, value: value, domain: domain, hostOnly: hostOnly, path: path,
                expirySeconds: expiresDate?.timeIntervalSince1970, secure: secure, httpOnly: httpOnly,
                sameSite: sameSite, creationSeconds: creationDate.timeIntervalSince1970,
                lastAccessSeconds: lastAccessDate?.timeIntervalSince1970)
        }

        /// The memberwise initialiser over the jar's clock (seconds since 1970).
        init(
            name: String, value: String, domain: String, hostOnly: Bool = true, path: String = "/",
            expirySeconds: Double? = nil, secure: Bool = false, httpOnly: Bool = false,
            sameSite: SameSite = .unspecified, creationSeconds: Double, lastAccessSeconds: Double? = nil
        ) {
            self.name = name
            self.value = value
            self.domain = domain
            self.hostOnly = hostOnly
            self.path = path
            self.expirySeconds = expirySeconds
            self.secure = secure
            self.httpOnly = httpOnly
            self.sameSite = sameSite
            self.creationSeconds = creationSeconds
            self.lastAccessSeconds = lastAccessSeconds ?? creationSeconds
        }

        /// Whether the cookie has expired at `now`. A cookie whose expiry is exactly `now` is expired
        /// (Chromium's `CanonicalCookie::IsExpired` uses `>=` too).
        public func isExpired(at now: Date) -> Bool {
            isExpired(at: now.timeIntervalSince1970)
        }

        /// Whether the cookie has expired at `now`, in seconds since 1970 (the clock ``CookieJar``'s `now:`
        /// parameters take).
        public func isExpired(at now: Double) -> Bool {
            guard let expirySeconds else { return false }
            return expirySeconds <= now
        }

        /// The expiry a `Max-Age` of zero or less gives: "the earliest representable date and time" (§5.2.2).
        static let earliestTime = -Double.greatestFiniteMagnitude
    }
}

// MARK: - Printing without the value

extension HTTPClient.Cookie: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The cookie with `<redacted>` in place of its value, which is most often a session token: printing,
    /// interpolating or logging cookies (such as the list ``CookieJar/setCookies(fromHeaders:for:now:)``
    /// returns) never shows it. Read ``value`` itself when you mean to.
    ///
    /// ```swift
    /// for cookie in try await jar.cookies(for: "https://example.com/") {
    ///     print(cookie)   // Cookie(sid=<redacted>; domain: .example.com, path: /, expires: session, secure, httpOnly)
    /// }
    /// ```
    public var description: String {
        var text = "Cookie(\(name)=<redacted>; domain: \(hostOnly ? "" : ".")\(domain), path: \(path)"
        text += ", expires: " + (expiresDate.map { "\($0)" } ?? "session")
        if secure { text += ", secure" }
        if httpOnly { text += ", httpOnly" }
        if sameSite != .unspecified { text += ", sameSite: \(sameSite.rawValue)" }
        return text + ")"
    }

    /// Same as ``description``: the value is redacted.
    public var debugDescription: String { description }

    /// A mirror with the value redacted, so that `dump(cookie)` and debuggers' views do not show it either.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "name": name, "value": "<redacted>", "domain": domain, "hostOnly": hostOnly, "path": path,
                "expiresDate": expiresDate as Any, "secure": secure, "httpOnly": httpOnly, "sameSite": sameSite,
                "creationDate": creationDate, "lastAccessDate": lastAccessDate,
            ],
            displayStyle: .struct)
    }
}

// MARK: - Parsing Set-Cookie (RFC 6265 §5.2) and creating the cookie (§5.3 steps 1-10)

extension HTTPClient.Cookie {
    /// Parses one `Set-Cookie` field value received for `request` and applies RFC 6265's storage rules that
    /// do not depend on what the jar already holds: domain (with public-suffix rejection), default path,
    /// `Secure` only from secure origins, `SameSite=None` only with `Secure`, and the prefixes.
    ///
    /// Returns `nil` when a user agent must ignore the cookie. ``CookieJar`` calls this for every
    /// `Set-Cookie` header; call it directly only to inspect a header.
    ///
    /// ```swift
    /// let request = CookieJar.RequestContext(host: "www.example.com", path: "/account/login", isSecure: true)
    /// let cookie = HTTPClient.Cookie.parse(setCookie: "sid=31d4; Path=/; Secure; HttpOnly", request: request, now: now)
    /// ```
    ///
    /// - Parameters:
    ///   - setCookie: the field value, without the `Set-Cookie:` name.
    ///   - request: where the response came from.
    ///   - now: the current time in seconds since 1970; `Max-Age` counts from it and it becomes the creation time.
    ///   - publicSuffixList: rejects `Domain` attributes above the host's registrable domain: public suffixes
    ///     such as `com` or `co.uk`, and the parents of wildcard rules such as `sch.uk` (for `*.sch.uk`)
    ///     (§5.3 step 5, as browsers apply it); `nil` turns the check off.
    public static func parse(
        setCookie: String, request: CookieJar.RequestContext, now: Double,
        publicSuffixList: PublicSuffixList? = .shared
    ) -> HTTPClient.Cookie? {
        guard let parsed = ParsedSetCookie(parsing: setCookie, now: now) else { return nil }
        return HTTPClient.Cookie(parsed, request: request, now: now, publicSuffixList: publicSuffixList)
    }

    /// RFC 6265 §5.3 steps 2-10 plus 6265bis §5.7's secure-origin, SameSite=None and prefix checks.
    init?(
        _ parsed: ParsedSetCookie, request: CookieJar.RequestContext, now: Double, publicSuffixList: PublicSuffixList?
    ) {
        let host = request.host
        let hostIsIP = CookieDomain.isIPAddress(host)

        // Steps 4-6: domain attribute, public suffix rejection, domain-match.
        var domainAttribute = parsed.domain ?? ""
        if !domainAttribute.isEmpty, !hostIsIP, let publicSuffixList {
            if let site = publicSuffixList.registrableDomain(of: host) {
                // Step 5 as browsers apply it: the Domain must be the host's registrable domain or lie below it
                // (Chromium's GetCookieDomainWithString compares the two registrable domains; Firefox and curl
                // with libpsl do the same). Asking only whether the attribute is itself a public suffix let
                // `Domain=sch.uk` through from www.school.sch.uk, and on to every school: the list has the
                // wildcard `*.sch.uk` but no rule `sch.uk`, so `sch.uk` alone looks like an ordinary domain.
                guard CookieDomain.domainMatches(domainAttribute, site) else { return nil }
            } else {
                // The host is itself a public suffix (or no host name the list can read): "If the
                // domain-attribute is identical to the canonicalized request-host, let the domain-attribute be
                // the empty string. Otherwise, ignore the cookie entirely."
                guard domainAttribute == host else { return nil }
                domainAttribute = ""
            }
        }
        let domain: String
        let hostOnly: Bool
        if domainAttribute.isEmpty {
            domain = host
            hostOnly = true
        } else {
            guard CookieDomain.domainMatches(host, domainAttribute) else { return nil }
            domain = domainAttribute
            hostOnly = false
        }

        // Step 7: path.
        let path: String
        if let attribute = parsed.path, attribute.hasPrefix("/") {
            path = attribute
        } else {
            path = CookiePath.defaultPath(ofRequestPath: request.path)
        }

        // 6265bis §5.7 (storage model): a Secure cookie may only be set from a secure origin. Unlike browsers
        // (and curl), http://localhost is not treated as secure: an HTTP client cannot know that the loopback
        // traffic is private.
        if parsed.secure && !request.isSecure { return nil }
        // 6265bis §5.7: "SameSite=None" requires "Secure".
        if parsed.sameSite == .none && !parsed.secure { return nil }
        // 6265bis §4.1.3 and §5.7: name prefixes. Recent drafts match them
        // case-insensitively (so "__host-" cannot dodge the rules), and so does Chromium.
        if parsed.name.utf8.starts(withASCIICaseInsensitive: "__secure-") && !parsed.secure { return nil }
        if parsed.name.utf8.starts(withASCIICaseInsensitive: "__host-") {
            guard parsed.secure, hostOnly, parsed.path != nil, path == "/" else { return nil }
        }

        self.init(
            name: parsed.name, value: parsed.value, domain: domain, hostOnly: hostOnly, path: path,
            expirySeconds: parsed.expires, secure: parsed.secure, httpOnly: parsed.httpOnly,
            sameSite: parsed.sameSite, creationSeconds: now, lastAccessSeconds: now)
    }
}

/// The result of RFC 6265 §5.2's parsing algorithm: a name, a value and the attributes that survived
/// (the last valid one of each kind wins, as §5.3 reads "the last attribute in the cookie-attribute-list").
struct ParsedSetCookie: Equatable {
    var name: String
    var value: String
    /// Absolute expiry from `Max-Age` if there was a valid one (it wins, §5.3 step 3), else from `Expires`.
    var expires: Double?
    /// The canonicalised `Domain` attribute (leading dot removed, lowercased, IDNA ToASCII), or nil.
    var domain: String?
    /// The `Path` attribute: nil when absent; a value that does not start with "/" (including the empty
    /// string) means "use the default path" (§5.2.4).
    var path: String?
    var secure = false
    var httpOnly = false
    var sameSite = HTTPClient.Cookie.SameSite.unspecified

    /// 6265bis §5.6 and §6.1: a name plus value longer than 4096 octets is ignored.
    static let maxNameValueLength = 4096
    /// 6265bis §5.6: an attribute value longer than 1024 octets is ignored.
    static let maxAttributeValueLength = 1024

    init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Runs RFC 6265 §5.2 on one `Set-Cookie` field value; `nil` means "ignore the set-cookie-string entirely".
    init?(parsing string: String, now: Double) {
        let bytes = Array(string.utf8)
        // 6265bis §5.6: control characters other than HTAB make the whole line invalid. This also
        // guarantees nothing we later put in a Cookie header can contain CR, LF or NUL.
        for byte in bytes where (byte < 0x20 && byte != 0x09) || byte == 0x7F { return nil }

        // Step 1: the name-value-pair is everything up to the first ";".
        let firstSemicolon = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
        let pair = bytes[..<firstSemicolon]
        // Step 2: no "=" means ignore. (6265bis would make it a nameless cookie; we keep RFC 6265's rule,
        // which also keeps "name=value" the only shape in our Cookie header.)
        guard let equals = pair.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        // Steps 3-4: split at the first "=", trim whitespace.
        let name = Self.trimmingWhitespace(pair[..<equals])
        let value = Self.trimmingWhitespace(pair[(equals + 1)...])
        // Step 5: an empty name means ignore.
        guard !name.isEmpty, name.count + value.count <= Self.maxNameValueLength else { return nil }
        self.init(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))

        var maxAgeExpiry: Double?
        var expiresExpiry: Double?
        // §5.2 "unparsed-attributes": each iteration consumes one ";"-separated cookie-av.
        var position = firstSemicolon
        while position < bytes.endIndex {
            let start = position + 1
            let end = bytes[start...].firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
            position = end
            let av = bytes[start..<end]
            let attributeName: ArraySlice<UInt8>
            let attributeValue: ArraySlice<UInt8>
            if let equals = av.firstIndex(of: UInt8(ascii: "=")) {
                attributeName = Self.trimmingWhitespace(av[..<equals])
                attributeValue = Self.trimmingWhitespace(av[(equals + 1)...])
            } else {
                attributeName = Self.trimmingWhitespace(av)
                attributeValue = []
            }
            if attributeValue.count > Self.maxAttributeValueLength { continue }

            if attributeName.equalsASCIICaseInsensitive("expires") {
                // §5.2.1: an unparsable date means the attribute is ignored.
                if let date = CookieDate.parse(attributeValue) { expiresExpiry = date }
            } else if attributeName.equalsASCIICaseInsensitive("max-age") {
                if let delta = Self.parseMaxAge(attributeValue) {
                    // §5.2.2: zero or negative means "the earliest representable date and time".
                    maxAgeExpiry = delta <= 0 ? HTTPClient.Cookie.earliestTime : now + delta
                }
            } else if attributeName.equalsASCIICaseInsensitive("domain") {
                // §5.2.3: an empty value is undefined; "SHOULD ignore the cookie-av entirely".
                guard !attributeValue.isEmpty else { continue }
                var domainBytes = attributeValue
                if domainBytes.first == UInt8(ascii: ".") { domainBytes = domainBytes.dropFirst() }
                // A trailing dot too, as in the request host (see `CookieJar.RequestContext`): "com." is the public
                // suffix "com" (curl's CVE-2022-27779 was a cookie set for "com." from "evil.com.").
                if domainBytes.last == UInt8(ascii: ".") { domainBytes = domainBytes.dropLast() }
                let text = String(decoding: domainBytes, as: UTF8.self)
                // "Domain=." leaves "": §5.3 step 4 then makes the cookie host-only. A domain that cannot be
                // encoded is kept lowercased; it domain-matches no canonical host, so the cookie is refused.
                domain = IDNA.toASCII(text) ?? text.lowercased()
            } else if attributeName.equalsASCIICaseInsensitive("path") {
                // §5.2.4: empty or not starting with "/" means the default path; we resolve that later.
                path = String(decoding: attributeValue, as: UTF8.self)
            } else if attributeName.equalsASCIICaseInsensitive("secure") {
                secure = true
            } else if attributeName.equalsASCIICaseInsensitive("httponly") {
                httpOnly = true
            } else if attributeName.equalsASCIICaseInsensitive("samesite") {
                // 6265bis §5.6.7: unknown values leave the attribute out (enforcement "Default").
                if attributeValue.equalsASCIICaseInsensitive("strict") {
                    sameSite = .strict
                } else if attributeValue.equalsASCIICaseInsensitive("lax") {
                    sameSite = .lax
                } else if attributeValue.equalsASCIICaseInsensitive("none") {
                    sameSite = .none
                }
            }
            // §5.2 step 6: other attribute names are ignored.
        }
        expires = maxAgeExpiry ?? expiresExpiry
    }

    /// §5.2.2: "If the first character of the attribute-value is not a DIGIT or a "-" character, ignore the
    /// cookie-av. If the remainder of attribute-value contains a non-DIGIT character, ignore the cookie-av."
    /// Huge values do not overflow: they are parsed as a Double (an expiry far in the future).
    static func parseMaxAge(_ value: ArraySlice<UInt8>) -> Double? {
        guard let first = value.first else { return nil }
        let negative = first == UInt8(ascii: "-")
        let digits = negative ? value.dropFirst() : value
        guard first.isASCIIDigit || negative, !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit) else { return nil }
        var result = 0.0
        for digit in digits { result = result * 10 + Double(digit - UInt8(ascii: "0")) }
        return negative ? -result : result
    }

    /// Removes leading and trailing WSP (space and horizontal tab), RFC 6265 §5.2 steps 4 and 3 of each av.
    static func trimmingWhitespace(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, first == 0x20 || first == 0x09 { slice.removeFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice.removeLast() }
        return slice
    }
}

// MARK: - Cookie dates (RFC 6265 §5.1.1)

/// RFC 6265 §5.1.1's cookie-date algorithm, which is deliberately lax: it reads the tokens a date needs from
/// whatever order and decoration servers actually send (RFC 1123, RFC 850, asctime and worse).
enum CookieDate {
    /// Parses a cookie-date; returns seconds since 1970 or nil when §5.1.1 says "fail to parse".
    static func parse(_ string: String) -> Double? {
        parse(ArraySlice(string.utf8))
    }

    static func parse(_ bytes: ArraySlice<UInt8>) -> Double? {
        var time: (hour: Int, minute: Int, second: Int)?
        var dayOfMonth: Int?
        var month: Int?
        var year: Int?

        // Step 1: split into date-tokens, the runs of non-delimiters.
        var index = bytes.startIndex
        while index < bytes.endIndex {
            while index < bytes.endIndex, isDelimiter(bytes[index]) { index += 1 }
            let tokenStart = index
            while index < bytes.endIndex, !isDelimiter(bytes[index]) { index += 1 }
            guard tokenStart < index else { break }
            let token = bytes[tokenStart..<index]

            // Step 2: each token sets the first not-yet-found field whose production it matches, in this order.
            if time == nil, let value = matchTime(token) {
                time = value
            } else if dayOfMonth == nil, let value = matchDigits(token, min: 1, max: 2) {
                dayOfMonth = value
            } else if month == nil, let value = matchMonth(token) {
                month = value
            } else if year == nil, let value = matchDigits(token, min: 2, max: 4) {
                year = value
            }
        }

        guard let time, let dayOfMonth, let month, var year else { return nil }
        // Steps 3-4: two-digit years. 70-99 are 1970-1999, 0-69 are 2000-2069.
        if (70...99).contains(year) {
            year += 1900
        } else if (0...69).contains(year) {
            year += 2000
        }
        // Step 5: range checks.
        guard (1...31).contains(dayOfMonth), year >= 1601, time.hour <= 23, time.minute <= 59, time.second <= 59
        else { return nil }
        // Step 6: the date must exist (no 31 April, no 29 February 2023).
        guard dayOfMonth <= daysInMonth(month, year: year) else { return nil }
        let days = daysFromCivil(year: year, month: month, day: dayOfMonth)
        return Double(days * 86_400 + time.hour * 3600 + time.minute * 60 + time.second)
    }

    /// delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E
    static func isDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x09, 0x20...0x2F, 0x3B...0x40, 0x5B...0x60, 0x7B...0x7E: true
        default: false
        }
    }

    /// `min...max` DIGITs followed by the end of the token or a non-digit (then anything):
    /// the shape of both day-of-month (1*2DIGIT) and year (2*4DIGIT).
    static func matchDigits(_ token: ArraySlice<UInt8>, min: Int, max: Int) -> Int? {
        var value = 0
        var count = 0
        var index = token.startIndex
        while index < token.endIndex, token[index].isASCIIDigit {
            count += 1
            guard count <= max else { return nil }  // a digit where a non-digit must follow
            value = value * 10 + Int(token[index] - UInt8(ascii: "0"))
            index += 1
        }
        return count >= min ? value : nil
    }

    /// hms-time = time-field ":" time-field ":" time-field, each 1*2DIGIT, then end or non-digit.
    static func matchTime(_ token: ArraySlice<UInt8>) -> (hour: Int, minute: Int, second: Int)? {
        var fields: [Int] = []
        fields.reserveCapacity(3)
        var index = token.startIndex
        for fieldNumber in 0..<3 {
            if fieldNumber > 0 {
                guard index < token.endIndex, token[index] == UInt8(ascii: ":") else { return nil }
                index += 1
            }
            var value = 0
            var count = 0
            while index < token.endIndex, token[index].isASCIIDigit, count < 2 {
                value = value * 10 + Int(token[index] - UInt8(ascii: "0"))
                count += 1
                index += 1
            }
            guard count > 0 else { return nil }
            fields.append(value)
        }
        // ( non-digit *OCTET ): a third digit in the seconds field disqualifies the token.
        if index < token.endIndex, token[index].isASCIIDigit { return nil }
        return (fields[0], fields[1], fields[2])
    }

    /// month = ( "jan" / "feb" / ... / "dec" ) *OCTET, case-insensitive. Returns 1...12.
    static func matchMonth(_ token: ArraySlice<UInt8>) -> Int? {
        guard token.count >= 3 else { return nil }
        let start = token.startIndex
        let prefix = (token[start] | 0x20, token[start + 1] | 0x20, token[start + 2] | 0x20)
        for (number, name) in monthNames.enumerated() where (name.0, name.1, name.2) == prefix {
            return number + 1
        }
        return nil
    }

    private static let monthNames: [(UInt8, UInt8, UInt8)] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ].map { name in
        let bytes = Array(name.utf8)
        return (bytes[0], bytes[1], bytes[2])
    }

    static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

// MARK: - Domain and path matching (RFC 6265 §5.1.3, §5.1.4)

enum CookieDomain {
    /// §5.1.3: `host` domain-matches `domain` when they are identical, or when `domain` is a suffix of `host`
    /// preceded by a "." and `host` is a host name rather than an IP address.
    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        if host == domain { return true }
        let hostBytes = host.utf8
        let domainBytes = domain.utf8
        guard hostBytes.count > domainBytes.count, !isIPAddress(host) else { return false }
        let suffixStart = hostBytes.index(hostBytes.endIndex, offsetBy: -domainBytes.count)
        return hostBytes[suffixStart...].elementsEqual(domainBytes)
            && hostBytes[hostBytes.index(before: suffixStart)] == UInt8(ascii: ".")
    }

    /// Whether `host` is an IP address literal, so that it can only match itself. IPv6 literals contain ":"
    /// (with or without brackets); like the WHATWG URL host parser, a host whose last label is numeric is IPv4.
    static func isIPAddress(_ host: String) -> Bool {
        if host.utf8.contains(UInt8(ascii: ":")) { return true }
        let lastLabel = host.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).last ?? []
        return !lastLabel.isEmpty && lastLabel.allSatisfy(\.isASCIIDigit)
    }
}

enum CookiePath {
    /// §5.1.4 default-path: the request path up to, not including, its right-most "/"; "/" when there is
    /// at most one "/" or the path does not start with one.
    static func defaultPath(ofRequestPath path: String) -> String {
        let bytes = path.utf8
        guard bytes.first == UInt8(ascii: "/"),
              let lastSlash = bytes.lastIndex(of: UInt8(ascii: "/")), lastSlash != bytes.startIndex
        else { return "/" }
        return String(path[..<lastSlash])
    }

    /// §5.1.4 path-match: identical, or `cookiePath` is a prefix of `requestPath` that ends in "/" or is
    /// followed by "/" in `requestPath`. ("/docs" matches "/docs/x" but not "/docsx".)
    static func pathMatches(requestPath: String, cookiePath: String) -> Bool {
        let request = requestPath.utf8
        let cookie = cookiePath.utf8
        guard request.starts(with: cookie) else { return false }
        if request.count == cookie.count || cookie.last == UInt8(ascii: "/") { return true }
        return request[request.index(request.startIndex, offsetBy: cookie.count)] == UInt8(ascii: "/")
    }
}

// MARK: - Small byte helpers

// fileprivate so they cannot clash with similar helpers elsewhere in the module.
extension UInt8 {
    fileprivate var isASCIIDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
    fileprivate var asciiLowercased: UInt8 {
        self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z") ? self | 0x20 : self
    }
}

extension Sequence<UInt8> {
    /// Compares with a lowercase ASCII literal, ignoring ASCII case.
    fileprivate func equalsASCIICaseInsensitive(_ lowercaseLiteral: StaticString) -> Bool {
        let literal = UnsafeBufferPointer(
            start: lowercaseLiteral.utf8Start, count: lowercaseLiteral.utf8CodeUnitCount)
        return elementsEqual(literal) { $0.asciiLowercased == $1 }
    }

    /// Whether the sequence starts with a lowercase ASCII literal, ignoring ASCII case.
    fileprivate func starts(withASCIICaseInsensitive lowercaseLiteral: StaticString) -> Bool {
        let literal = UnsafeBufferPointer(
            start: lowercaseLiteral.utf8Start, count: lowercaseLiteral.utf8CodeUnitCount)
        return starts(with: literal) { $0.asciiLowercased == $1 }
    }
}

// MARK: - Deprecated spellings

/// The old name of ``HTTPClient/Cookie``, which collided with Foundation's `HTTPCookie` in files that import both.
@available(*, deprecated, renamed: "HTTPClient.Cookie")
public typealias HTTPCookie = HTTPClient.Cookie

extension HTTPClient.Cookie {
    /// The expiry in seconds since 1970.
    @available(*, deprecated, renamed: "expiresDate")
    public var expires: Double? {
        get { expirySeconds }
        set { expirySeconds = newValue }
    }

    /// The creation time in seconds since 1970.
    @available(*, deprecated, renamed: "creationDate")
    public var creationTime: Double {
        get { creationSeconds }
        set { creationSeconds = newValue }
    }

    /// The last-access time in seconds since 1970.
    @available(*, deprecated, renamed: "lastAccessDate")
    public var lastAccessTime: Double {
        get { lastAccessSeconds }
        set { lastAccessSeconds = newValue }
    }

    /// Creates a cookie from its stored fields, with times in seconds since 1970.
    @available(*, deprecated, message: "use init(name:value:domain:hostOnly:path:expiresDate:secure:httpOnly:sameSite:creationDate:lastAccessDate:)")
    public init(
        name: String, value: String, domain: String, hostOnly: Bool = true, path: String = "/",
        expires: Double? = nil, secure: Bool = false, httpOnly: Bool = false, sameSite: SameSite = .unspecified,
        creationTime: Double, lastAccessTime: Double? = nil
    ) {
        self.init(
            name: name, value: value, domain: domain, hostOnly: hostOnly, path: path, expirySeconds: expires,
            secure: secure, httpOnly: httpOnly, sameSite: sameSite, creationSeconds: creationTime,
            lastAccessSeconds: lastAccessTime)
    }
}
