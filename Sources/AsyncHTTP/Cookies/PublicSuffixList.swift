/// The Public Suffix List (https://publicsuffix.org): which domains are open for anyone to register
/// names under, such as `com`, `co.uk` or `github.io`.
///
/// The cookie jar uses it to refuse `Domain=co.uk`-style cookies that would reach every site under a
/// registry (RFC 6265 §5.3 step 5), as browsers and curl (with libpsl) do: a cookie's `Domain` must be the
/// request host's ``registrableDomain(of:)`` or lie below it.
///
/// ```swift
/// let psl = PublicSuffixList.shared
/// psl.publicSuffix(of: "www.example.co.uk")        // "co.uk"
/// psl.registrableDomain(of: "www.example.co.uk")   // "example.co.uk"
/// psl.registrableDomain(of: "co.uk")               // nil: it is itself a public suffix
/// ```
///
/// Both ICANN and private-section rules count, as in browsers. Hosts are compared in their ASCII form:
/// non-ASCII labels are lowercased and Punycode-encoded (RFC 3492). That is not full IDNA (UTS #46
/// mapping and Unicode normalisation are out of scope), so a Unicode host that needs mapping beyond
/// lowercasing, such as one in decomposed form, will not find its rule. Results come back in the form
/// the host was given (Unicode in, Unicode out).
public struct PublicSuffixList: Sendable {
    /// What kind of rule a key (a rule with its `*.` or `!` removed) stands for. One key can carry several:
    /// `ck` has the wildcard `*.ck`, and `www.ck` the exception `!www.ck`.
    struct RuleKinds: OptionSet, Sendable {
        let rawValue: UInt8
        /// `example.com`: the key itself is a public suffix.
        static let normal = RuleKinds(rawValue: 1)
        /// `*.example.com`: any single label under the key is a public suffix.
        static let wildcard = RuleKinds(rawValue: 2)
        /// `!www.example.com`: the key is *not* a public suffix, its parent is.
        static let exception = RuleKinds(rawValue: 4)
    }

    /// Rules by their ASCII, lowercase key: one dictionary probe per label of the host.
    private let rules: [String: RuleKinds]

    /// The number of rules loaded.
    public var ruleCount: Int { rules.values.reduce(0) { $0 + $1.rawValue.nonzeroBitCount } }

    /// Parses the list's text format: one rule per line, `//` comments, and each line read only up to its
    /// first whitespace (https://github.com/publicsuffix/list/wiki/Format).
    public init(listText: String) {
        var rules: [String: RuleKinds] = [:]
        rules.reserveCapacity(10_000)
        for line in listText.split(whereSeparator: \.isNewline) {
            guard let rule = line.split(whereSeparator: \.isWhitespace).first, !rule.hasPrefix("//") else {
                continue
            }
            var kind = RuleKinds.normal
            var body = Substring(rule)
            if body.hasPrefix("!") {
                kind = .exception
                body = body.dropFirst()
            } else if body.hasPrefix("*.") {
                kind = .wildcard
                body = body.dropFirst(2)
            }
            // Rules for internationalised TLDs are written in Unicode; hosts arrive as Punycode.
            guard let key = IDNA.toASCII(String(body)) else { continue }
            rules[key, default: []].insert(kind)
        }
        self.rules = rules
    }

    /// Loads a list from a file in the `public_suffix_list.dat` format.
    public init(contentsOfFile path: String) throws {
        guard let bytes = try PrivateFile.contents(atPath: path, what: "the public suffix list") else {
            throw HTTPClientError(.ioFailure, "could not read the public suffix list at \(path): no such file")
        }
        self.init(listText: String(decoding: bytes, as: UTF8.self))
    }

    /// The copy of the list compiled into AsyncHTTP (see `Resources/public_suffix_list.SOURCE` for its date;
    /// `scripts/embed-psl.sh` regenerates it from `Resources/public_suffix_list.dat`).
    ///
    /// Parsed once, on first use. It is compiled in rather than shipped as a SwiftPM resource so that
    /// AsyncHTTP does not need Foundation's `Bundle`: no resource file can go missing, and programs that use
    /// AsyncHTTP do not map Foundation and ICU for it.
    public static let shared: PublicSuffixList = {
        let text = bundledText.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
        return PublicSuffixList(listText: text)
    }()

    /// The public suffix of `host`: the longest suffix some rule (or the default rule `*`) makes public.
    ///
    /// Returns `nil` for an empty host or one with an empty label (a leading dot, `a..b`), and for hosts
    /// that cannot be encoded as ASCII. A trailing dot is not special: `example.com.` has an empty label.
    public func publicSuffix(of host: String) -> String? {
        guard let host = Host(host) else { return nil }
        return host.suffix(labels: publicSuffixLabelCount(host))
    }

    /// The registrable domain of `host` ("eTLD+1"): its public suffix plus one more label; `nil` when the host
    /// is itself a public suffix or is not a valid host name.
    public func registrableDomain(of host: String) -> String? {
        guard let host = Host(host) else { return nil }
        let count = publicSuffixLabelCount(host) + 1
        guard count <= host.asciiLabelStarts.count else { return nil }
        return host.suffix(labels: count)
    }

    /// Whether `domain` is exactly a public suffix (including a single unlisted label, by the default rule).
    ///
    /// This is not the test for a cookie's `Domain`: the parent of a wildcard rule is no public suffix by the
    /// list's algorithm (`sch.uk`, under `*.sch.uk`; `kawasaki.jp`, under `*.kawasaki.jp`), yet no site below
    /// it may set a cookie for it. Compare the `Domain` with the request host's ``registrableDomain(of:)``.
    public func isPublicSuffix(_ domain: String) -> Bool {
        guard let host = Host(domain) else { return false }
        return publicSuffixLabelCount(host) == host.asciiLabelStarts.count
    }

    /// The number of labels in the public suffix of `host`, following the algorithm at
    /// https://github.com/publicsuffix/list/wiki/Format#formal-algorithm: an exception rule wins;
    /// otherwise the matching rule with the most labels; otherwise the default rule `*` (one label).
    private func publicSuffixLabelCount(_ host: Host) -> Int {
        let starts = host.asciiLabelStarts
        let labelCount = starts.count
        // Keys from the longest suffix (the whole host) to the shortest (the last label).
        let keys = starts.map { String(host.ascii[$0...]) }
        let kinds = keys.map { rules[$0] ?? [] }
        // An exception rule `!a.b.c` matches suffix a.b.c and makes b.c the public suffix.
        for index in 0..<labelCount where kinds[index].contains(.exception) {
            return labelCount - index - 1
        }
        for index in 0..<labelCount {
            // A normal rule matching this suffix, or a wildcard rule on its parent (`*.` + parent).
            if kinds[index].contains(.normal) { return labelCount - index }
            if index + 1 < labelCount, kinds[index + 1].contains(.wildcard) { return labelCount - index }
        }
        return 1
    }

    /// A host split into labels, kept in two forms: as given (lowercased) for the answer, and in ASCII for
    /// the lookup. The two have the same labels, one for one.
    private struct Host {
        let ascii: String
        let asciiLabelStarts: [String.Index]
        let originalLabels: [Substring]

        init?(_ host: String) {
            // IDNA treats the ideographic and fullwidth full stops as dots (UTS #46); map them so labels line up.
            let normalized = String(host.lowercased().map { Self.fullStops.contains($0) ? "." : $0 })
            let labels = normalized.split(separator: ".", omittingEmptySubsequences: false)
            guard !normalized.isEmpty, !labels.contains(where: \.isEmpty) else { return nil }
            var ascii = ""
            for label in labels {
                guard let encoded = IDNA.labelToASCII(label) else { return nil }
                if !ascii.isEmpty { ascii += "." }
                ascii += encoded
            }
            var starts = [ascii.startIndex]
            var index = ascii.startIndex
            while let dot = ascii[index...].firstIndex(of: ".") {
                index = ascii.index(after: dot)
                starts.append(index)
            }
            // A "." followed by a combining mark is one Character, so `split` kept it inside a label, and the
            // label's ASCII form still holds the dot: the two forms no longer line up. Such a label starts with
            // a combining mark, which UTS #46 refuses anyway (found by fuzzing: Fuzz/findings/).
            guard starts.count == labels.count else { return nil }
            self.ascii = ascii
            self.asciiLabelStarts = starts
            self.originalLabels = labels
        }

        /// U+3002 ideographic, U+FF0E fullwidth and U+FF61 halfwidth ideographic full stops.
        private static let fullStops: Set<Character> = ["\u{3002}", "\u{FF0E}", "\u{FF61}"]

        /// The last `labels` labels, in the form the host was given.
        func suffix(labels count: Int) -> String {
            originalLabels.suffix(count).joined(separator: ".")
        }
    }
}
