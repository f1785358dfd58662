// Base64 (RFC 4648 §4), the standard alphabet with padding: what NTLM's and Negotiate's token68 carry
// (MS-NLMP over HTTP, RFC 4559 §4) and what Basic's credentials are (RFC 7617 §2).
//
// In Swift rather than Foundation so that the sans-IO auth code needs nothing beyond the standard library,
// and rather than OpenSSL's EVP_DecodeBlock, which pads its output with zero bytes and cannot tell padding
// from data.

enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// `bytes` in base64 with `=` padding.
    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(alphabet[Int(group >> 6 & 0x3F)])
            output.append(alphabet[Int(group & 0x3F)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let group = UInt32(bytes[index]) << 16
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(UInt8(ascii: "="))
            output.append(UInt8(ascii: "="))
        case 2:
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(alphabet[Int(group >> 6 & 0x3F)])
            output.append(UInt8(ascii: "="))
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `text` encodes, or `nil` when it is not base64.
    ///
    /// Padding may be left off (some servers do; Chromium and curl accept it), but a character outside the
    /// alphabet, a `=` before the end, or a length that no encoding produces (one leftover character) is
    /// refused, since a damaged NTLM message is better caught here than parsed.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var characters = Array(text.utf8)
        var padding = 0
        while characters.last == UInt8(ascii: "=") && padding < 2 {
            characters.removeLast()
            padding += 1
        }
        guard characters.count % 4 != 1 else { return nil }
        if padding > 0 && (characters.count + padding) % 4 != 0 { return nil }

        var output: [UInt8] = []
        output.reserveCapacity(characters.count * 3 / 4)
        var group: UInt32 = 0
        var bits = 0
        for character in characters {
            guard let value = sextet(character) else { return nil }
            group = group << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: group >> UInt32(bits)))
            }
        }
        return output
    }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
