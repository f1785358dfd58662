/// `data:` URIs (RFC 2397), media types and file names for archived resources.
enum MediaTypes {
    /// `data:<type>;base64,<bytes>`; the media type's spaces are dropped (`text/css;charset=utf-8`), since a
    /// URL has none.
    static func dataURI(_ bytes: [UInt8], mediaType: String) -> String {
        let type = String(mediaType.filter { $0 != " " && $0 != "\t" && $0 != "\"" && $0 != "," })
        return "data:" + type + ";base64," + base64(bytes)
    }

    /// 8 hex digits of FNV-1a (32-bit) of `text`: a short, stable name part, not a security measure.
    static func digest(_ text: String) -> String {
        var hash: UInt32 = 2_166_136_261
        for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// Standard base64 (RFC 4648 §4) with padding.
    static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let n = UInt32(bytes[i]) << 16
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], UInt8(ascii: "="), UInt8(ascii: "=")]
        } else if rest == 2 {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], UInt8(ascii: "=")]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The media type without parameters, lowercased: `text/html; charset=utf-8` → `text/html`.
    static func essence(_ contentType: String) -> String {
        let head = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        return head.trimmingSpacesAndTabs().lowercased()
    }

    /// The `charset` parameter of a `Content-Type`, unquoted.
    static func charset(_ contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingSpacesAndTabs().lowercased() == "charset" else { continue }
            let value = pair[1].trimmingSpacesAndTabs().filter { $0 != "\"" }
            return value.isEmpty ? nil : value
        }
        return nil
    }

    static func isHTML(_ essence: String) -> Bool { essence == "text/html" || essence == "application/xhtml+xml" }
    static func isCSS(_ essence: String) -> Bool { essence == "text/css" }

    /// A guess from the path's extension, for responses without a `Content-Type`.
    static func guess(path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        let ext = name.split(separator: ".").count > 1 ? (name.split(separator: ".").last.map(String.init) ?? "") : ""
        return byExtension[ext.lowercased()] ?? "application/octet-stream"
    }

    /// A file name for the directory form: `<prefix>-<last path segment>` with only `[A-Za-z0-9._-]` kept
    /// (at most 60 characters), and an extension from the media type when the URL has none — a browser opening
    /// `file:` URLs goes by the extension.
    static func fileName(prefix: String, path: String, mediaType: String) -> String {
        let segment = path.split(separator: "/").last.map(String.init) ?? ""
        var name = String(segment.unicodeScalars.map { scalar -> Character in
            let c = Character(scalar)
            return (c.isASCII && (c.isLetter || c.isNumber || c == "." || c == "-" || c == "_")) ? c : "_"
        }.prefix(60))
        while name.hasPrefix(".") { name.removeFirst() }
        if name.isEmpty { name = "resource" }
        let wanted = extensionFor(essence(mediaType))
        let parts = name.split(separator: ".")
        let current = parts.count > 1 ? parts.last.map(String.init)?.lowercased() : nil
        if let wanted, current != wanted, !(wanted == "jpg" && current == "jpeg"), !(wanted == "html" && current == "htm") {
            name += "." + wanted
        }
        return "\(prefix)-\(name)"
    }

    private static func extensionFor(_ essence: String) -> String? {
        switch essence {
        case "text/html", "application/xhtml+xml": "html"
        case "text/css": "css"
        case "text/javascript", "application/javascript", "application/x-javascript": "js"
        case "image/png": "png"
        case "image/jpeg": "jpg"
        case "image/gif": "gif"
        case "image/svg+xml": "svg"
        case "image/webp": "webp"
        case "image/x-icon", "image/vnd.microsoft.icon": "ico"
        case "font/woff": "woff"
        case "font/woff2": "woff2"
        default: nil
        }
    }

    private static let byExtension: [String: String] = [
        "html": "text/html", "htm": "text/html", "css": "text/css", "js": "text/javascript", "mjs": "text/javascript",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "svg": "image/svg+xml",
        "webp": "image/webp", "ico": "image/x-icon", "woff": "font/woff", "woff2": "font/woff2", "ttf": "font/ttf",
        "otf": "font/otf",
    ]
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    func trimmingSpacesAndTabs() -> String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return String(text)
    }
}
