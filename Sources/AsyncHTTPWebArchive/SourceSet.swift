/// The candidates of an `srcset` attribute (HTML Living Standard, "parse a srcset attribute"): each a URL
/// followed by optional descriptors (`2x`, `480w`), separated by commas. A URL may itself contain commas
/// (`data:image/png;base64,…`): only commas after the URL, or trailing it, separate candidates.
enum SourceSet {
    struct Candidate: Equatable {
        var url: String
        /// The descriptors as written (`"2x"`, `"480w"`), or empty.
        var descriptors: String
    }

    static func parse(_ text: String) -> [Candidate] {
        let bytes = Array(text.utf8)
        var candidates: [Candidate] = []
        var i = 0
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D }
        // Bounded: every pass of the outer loop consumes at least one byte or ends.
        while i < bytes.count {
            while i < bytes.count && (isSpace(bytes[i]) || bytes[i] == UInt8(ascii: ",")) { i += 1 }
            guard i < bytes.count else { break }
            let urlStart = i
            while i < bytes.count && !isSpace(bytes[i]) { i += 1 }
            var urlEnd = i
            var descriptors: [UInt8] = []
            if bytes[urlEnd - 1] == UInt8(ascii: ",") {
                // "a.png," — the commas end the candidate; it has no descriptors.
                while urlEnd > urlStart && bytes[urlEnd - 1] == UInt8(ascii: ",") { urlEnd -= 1 }
            } else {
                // Descriptors run to the next comma outside parentheses.
                var depth = 0
                while i < bytes.count {
                    let byte = bytes[i]
                    if byte == UInt8(ascii: "(") { depth += 1 }
                    if byte == UInt8(ascii: ")") && depth > 0 { depth -= 1 }
                    if byte == UInt8(ascii: ",") && depth == 0 { break }
                    descriptors.append(byte)
                    i += 1
                }
            }
            guard urlEnd > urlStart else { continue }
            var text = String(decoding: descriptors, as: UTF8.self)
            while let last = text.last, last.isWhitespace { text.removeLast() }
            while let first = text.first, first.isWhitespace { text.removeFirst() }
            candidates.append(Candidate(url: String(decoding: bytes[urlStart..<urlEnd], as: UTF8.self), descriptors: text))
        }
        return candidates
    }

    static func serialize(_ candidates: [Candidate]) -> String {
        candidates.map { $0.descriptors.isEmpty ? $0.url : $0.url + " " + $0.descriptors }.joined(separator: ", ")
    }
}
