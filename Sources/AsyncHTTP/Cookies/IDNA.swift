// IDNA ToASCII (the subset cookies need) and Punycode (RFC 3492).

/// Host names to ASCII, the way RFC 6265 §5.1.2 canonicalises them: lowercase, and each non-ASCII label
/// becomes `xn--` plus its Punycode. Full IDNA 2008 / UTS #46 mapping and NFC normalisation are out of
/// scope: the Swift standard library has no normaliser and URLs normally arrive already in ASCII.
package enum IDNA {
    /// `url` (absolute, as typed) with a non-ASCII host in its IDNA ASCII form (`http://bücher.example/x` to
    /// `http://xn--bcher-kva.example/x`), as a redirect's `Location` is sent; unchanged when the host is ASCII, an
    /// IP literal, or cannot be encoded. For ahttp, which sends such a host as curl does with libidn2.
    package static func withASCIIHost(_ url: String) -> String {
        RedirectMiddleware.asciiHost(url)
    }

    /// The ASCII form of a dotted host name, or nil if a label cannot be encoded.
    static func toASCII(_ host: String) -> String? {
        var result = ""
        for (number, label) in host.split(separator: ".", omittingEmptySubsequences: false).enumerated() {
            guard let encoded = labelToASCII(label) else { return nil }
            if number > 0 { result += "." }
            result += encoded
        }
        return result
    }

    /// One label to ASCII: ASCII labels are lowercased; others lowercased and Punycode-encoded.
    static func labelToASCII(_ label: Substring) -> String? {
        if label.utf8.allSatisfy({ $0 < 0x80 }) { return label.lowercased() }
        guard let encoded = Punycode.encode(label.lowercased()) else { return nil }
        return "xn--" + encoded
    }
}

/// Punycode, RFC 3492: a bootstring encoding of Unicode labels in the letters, digits and hyphen of DNS.
enum Punycode {
    // RFC 3492 §5 parameter values for Punycode.
    private static let base = 36
    private static let tMin = 1
    private static let tMax = 26
    private static let skew = 38
    private static let damp = 700
    private static let initialBias = 72
    private static let initialN = 128
    /// DNS labels are at most 63 octets; anything much longer is not a host label and could overflow `delta`.
    private static let maxInputScalars = 1024

    /// Encodes `input` (RFC 3492 §6.3) without the `xn--` prefix. Returns nil for over-long input.
    static func encode(_ input: String) -> String? {
        let codePoints = input.unicodeScalars.map { Int($0.value) }
        guard codePoints.count <= maxInputScalars else { return nil }
        var output: [UInt8] = codePoints.filter { $0 < 0x80 }.map { UInt8($0) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append(UInt8(ascii: "-")) }

        var n = initialN
        var delta = 0
        var bias = initialBias
        while handled < codePoints.count {
            // The smallest code point not yet handled.
            let m = codePoints.filter { $0 >= n }.min()!
            delta += (m - n) * (handled + 1)
            n = m
            for c in codePoints {
                if c < n { delta += 1 }
                if c == n {
                    // Emit delta as a generalized variable-length integer.
                    var q = delta
                    var k = base
                    while true {
                        let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                        if q < t { break }
                        output.append(digit(t + (q - t) % (base - t)))
                        q = (q - t) / (base - t)
                        k += base
                    }
                    output.append(digit(q))
                    bias = adapt(delta: delta, numPoints: handled + 1, firstTime: handled == basicCount)
                    delta = 0
                    handled += 1
                }
            }
            delta += 1
            n += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// RFC 3492 §6.1 bias adaptation.
    private static func adapt(delta: Int, numPoints: Int, firstTime: Bool) -> Int {
        var delta = firstTime ? delta / damp : delta / 2
        delta += delta / numPoints
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + ((base - tMin + 1) * delta) / (delta + skew)
    }

    /// 0-25 are "a"-"z", 26-35 are "0"-"9".
    private static func digit(_ value: Int) -> UInt8 {
        value < 26 ? UInt8(ascii: "a") + UInt8(value) : UInt8(ascii: "0") + UInt8(value - 26)
    }
}
