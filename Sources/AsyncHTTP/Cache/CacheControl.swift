import HTTPTypes

/// The `Cache-Control` directives of a request or a response (RFC 9111 §5.2), as a private cache reads them.
///
/// Directive names are case-insensitive (§5.2); an argument may be a token or a quoted string, and a
/// quoted string may hold commas (`private="Set-Cookie, X-Token"`). Numeric arguments are delta-seconds
/// (§1.2.2): digits only; a value too large to represent is 2147483648, as §1.2.2 requires. Unknown
/// directives are ignored (§5.2.3).
struct CacheControl: Equatable, Sendable {
    /// `max-stale` (§5.2.1.2): with no argument the client accepts a stale response of any age.
    enum MaxStale: Equatable, Sendable {
        case any
        case seconds(Int)
    }

    /// `max-age` (§5.2.1.1, §5.2.2.1). An invalid or contradictory value (two different `max-age`s) reads
    /// as 0: §4.2.1 lets a cache consider such a response stale.
    var maxAge: Int?
    /// `s-maxage` (§5.2.2.10): parsed, and ignored by a private cache.
    var sharedMaxAge: Int?
    var maxStale: MaxStale?
    /// `min-fresh` (§5.2.1.3).
    var minFresh: Int?
    /// `no-cache` (§5.2.1.4, §5.2.2.4). The qualified response form (`no-cache="Set-Cookie"`) is treated
    /// as the unqualified one, the conservative reading §5.2.2.4 allows.
    var noCache = false
    /// `no-store` (§5.2.1.5, §5.2.2.5).
    var noStore = false
    /// `only-if-cached` (§5.2.1.7).
    var onlyIfCached = false
    /// `must-revalidate` (§5.2.2.2).
    var mustRevalidate = false
    /// `proxy-revalidate` (§5.2.2.8): for shared caches only.
    var proxyRevalidate = false
    /// `must-understand` (§5.2.2.3).
    var mustUnderstand = false
    /// `public` (§5.2.2.9).
    var isPublic = false
    /// `private` (§5.2.2.7): a private cache may store the response.
    var isPrivate = false
    /// `no-transform` (§5.2.2.6): this cache never transforms a body, so it only records it.
    var noTransform = false

    /// The largest delta-seconds a cache must represent (§1.2.2).
    static let deltaSecondsCeiling = 2_147_483_648

    init() {}

    /// The directives of every `Cache-Control` field line in `fields`, combined.
    init(_ fields: HTTPFields) {
        for value in fields[values: .cacheControl] { parse(value) }
    }

    init(parsing value: String) {
        parse(value)
    }

    private mutating func parse(_ value: String) {
        for (name, argument) in Self.directives(value) {
            switch name {
            case "max-age": maxAge = Self.merge(maxAge, Self.deltaSeconds(argument) ?? 0)
            case "s-maxage": sharedMaxAge = Self.merge(sharedMaxAge, Self.deltaSeconds(argument) ?? 0)
            case "max-stale":
                if let argument {
                    maxStale = Self.deltaSeconds(argument).map { .seconds($0) } ?? maxStale
                } else {
                    maxStale = .any
                }
            case "min-fresh": minFresh = Self.deltaSeconds(argument).map { Swift.max($0, minFresh ?? 0) } ?? minFresh
            case "no-cache": noCache = true
            case "no-store": noStore = true
            case "only-if-cached": onlyIfCached = true
            case "must-revalidate": mustRevalidate = true
            case "proxy-revalidate": proxyRevalidate = true
            case "must-understand": mustUnderstand = true
            case "public": isPublic = true
            case "private": isPrivate = true
            case "no-transform": noTransform = true
            default: break
            }
        }
    }

    /// Two different values of one directive: §4.2.1 allows treating the response as stale (0).
    private static func merge(_ old: Int?, _ new: Int) -> Int {
        guard let old else { return new }
        return old == new ? old : 0
    }

    /// delta-seconds = 1*DIGIT (§1.2.2), also accepted quoted (§5.2: "max-age=\"5\"" is to be accepted).
    /// nil when absent or not digits; values past 2^31 are 2^31.
    static func deltaSeconds(_ text: Substring?) -> Int? {
        guard var text, !text.isEmpty else { return nil }
        if text.count >= 2, text.first == "\"", text.last == "\"" { text = text.dropFirst().dropLast() }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        var value = 0
        for digit in text.utf8 {
            value = value * 10 + Int(digit - 0x30)
            if value >= deltaSecondsCeiling { return deltaSecondsCeiling }
        }
        return value
    }

    /// The directives of one field value, names lowercased, arguments as written (quotes kept).
    static func directives(_ value: String) -> [(name: String, argument: Substring?)] {
        var result: [(String, Substring?)] = []
        let text = Substring(value)
        var index = text.startIndex
        while index < text.endIndex {
            // One list member: up to a comma outside quotes.
            var inQuotes = false
            var escaped = false
            let start = index
            while index < text.endIndex {
                let character = text[index]
                if escaped {
                    escaped = false
                } else if inQuotes, character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    inQuotes.toggle()
                } else if character == ",", !inQuotes {
                    break
                }
                index = text.index(after: index)
            }
            let member = text[start..<index].trimmingWhitespace()
            if index < text.endIndex { index = text.index(after: index) }
            guard !member.isEmpty else { continue }
            if let equals = member.firstIndex(of: "=") {
                let name = member[..<equals].trimmingWhitespace().lowercased()
                let argument = member[member.index(after: equals)...].trimmingWhitespace()
                result.append((name, argument[...]))
            } else {
                result.append((member.lowercased(), nil))
            }
        }
        return result
    }
}
