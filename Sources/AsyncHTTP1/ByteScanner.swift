import CIntrinsics

/// Small helpers over contiguous bytes, shared by the parser and the request encoder.
package enum ByteScanner {
    package static let cr: UInt8 = 0x0D
    package static let lf: UInt8 = 0x0A
    package static let sp: UInt8 = 0x20
    package static let htab: UInt8 = 0x09

    /// The first index of `byte` in `bytes[start...]`. Scans eight bytes at a time (the SWAR "has zero byte"
    /// test that memchr implementations use), since the sans-IO AsyncHTTP1 target imports no Glibc.
    @inline(__always)
    package static func firstIndex(of byte: UInt8, in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard start < bytes.count, let base = bytes.baseAddress else { return nil }
        var position = start
        let end = bytes.count
        let pattern = UInt64(byte) &* 0x0101_0101_0101_0101
        while position + 8 <= end {
            let word = base.loadUnaligned(fromByteOffset: position, as: UInt64.self) ^ pattern
            let found = (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080
            if found != 0 {
                // Little- and big-endian both: the lowest set bit marks the first match in memory order on
                // little-endian; fall back to a byte loop within the word to stay endian-neutral.
                #if _endian(little)
                return position + found.trailingZeroBitCount / 8
                #else
                break
                #endif
            }
            position += 8
        }
        while position < end {
            if base.load(fromByteOffset: position, as: UInt8.self) == byte { return position }
            position += 1
        }
        return nil
    }

    /// The first index at or after `start` of a byte outside printable ASCII (0x20–0x7E): a control
    /// character, DEL, or obs-text. Eight bytes at a time, since field values are mostly long and clean.
    @inline(__always)
    package static func firstNonPrintableASCII(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard start < bytes.count, let base = bytes.baseAddress else { return nil }
        var position = start
        let end = bytes.count
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        while position + 8 <= end {
            let word = base.loadUnaligned(fromByteOffset: position, as: UInt64.self)
            let below0x20 = (word &- ones &* 0x20) & ~word
            let del = word ^ (ones &* 0x7F)
            let isDEL = (del &- ones) & ~del
            // High bits flag bytes >= 0x80 directly, and bytes < 0x20 or == 0x7F through the two tests.
            if (word | below0x20 | isDEL) & highBits != 0 { break }
            position += 8
        }
        while position < end {
            let byte = base.load(fromByteOffset: position, as: UInt8.self)
            if byte < 0x20 || byte >= 0x7F { return position }
            position += 1
        }
        return nil
    }

    /// Asks the CPU to start loading `bytes[start..<start + count]` (or as much of it as exists) into the cache.
    @inline(__always)
    package static func prefetch(_ bytes: UnsafeRawBufferPointer, from start: Int, count: Int) {
        guard start >= 0, start < bytes.count, count > 0, let base = bytes.baseAddress else { return }
        let end = UInt(bitPattern: base + min(bytes.count, start + count))
        var line = UInt(bitPattern: base + start) & ~63  // 64-byte cache lines
        while line < end {
            ahttp_prefetch(UnsafeRawPointer(bitPattern: line))
            line += 64
        }
    }

    /// `bytes[start..<end]` without one CR at the end (a line whose LF is at `end`).
    @inline(__always)
    package static func trimmingCR(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> UnsafeRawBufferPointer {
        let trimmedEnd = end > start && bytes[end - 1] == cr ? end - 1 : end
        return UnsafeRawBufferPointer(rebasing: bytes[start..<trimmedEnd])
    }

    /// Without leading and trailing SP and HTAB (OWS).
    package static func trimmingWhitespace(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var start = 0
        var end = bytes.count
        while start < end && (bytes[start] == sp || bytes[start] == htab) { start += 1 }
        while end > start && (bytes[end - 1] == sp || bytes[end - 1] == htab) { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
    }

    /// The index of the first byte that is a control character other than HTAB (0x00–0x08, 0x0A–0x1F, 0x7F).
    package static func firstControlCharacter(in bytes: UnsafeRawBufferPointer) -> Int? {
        for index in 0..<bytes.count {
            let byte = bytes[index]
            if (byte < 0x20 && byte != htab) || byte == 0x7F { return index }
        }
        return nil
    }

    @inline(__always)
    package static func isDigit(_ byte: UInt8) -> Bool { byte &- 0x30 < 10 }

    @inline(__always)
    package static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: return Int(byte - 0x30)
        case 0x41...0x46: return Int(byte - 0x41 + 10)
        case 0x61...0x66: return Int(byte - 0x61 + 10)
        default: return nil
        }
    }

    /// RFC 9110 §5.6.2 tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" /
    /// "|" / "~" / DIGIT / ALPHA, as two 64-bit masks (bytes 0–63 and 64–127); see the test that rebuilds them.
    package static let tokenMaskLow: UInt64 = 0x03ff_6cfa_0000_0000
    package static let tokenMaskHigh: UInt64 = 0x57ff_ffff_c7ff_fffe

    @inline(__always)
    package static func isTokenCharacter(_ byte: UInt8) -> Bool {
        if byte < 64 { return tokenMaskLow >> UInt64(byte) & 1 == 1 }
        if byte < 128 { return tokenMaskHigh >> UInt64(byte - 64) & 1 == 1 }
        return false
    }

    package static func hasPrefix(_ bytes: UnsafeRawBufferPointer, _ prefix: StaticString) -> Bool {
        guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
        for index in 0..<prefix.utf8CodeUnitCount where bytes[index] != prefix.utf8Start[index] {
            return false
        }
        return true
    }

    /// Whether `string`'s UTF-8 is exactly `bytes`.
    @inline(__always)
    package static func equals(_ string: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let utf8 = string.utf8
        guard utf8.count == bytes.count else { return false }
        guard !bytes.isEmpty else { return true }
        return utf8.withContiguousStorageIfAvailable { stored in
            equals(UnsafeRawBufferPointer(stored), bytes)
        } ?? utf8.elementsEqual(bytes)
    }

    /// Byte equality of two buffers, eight bytes at a time.
    @inline(__always)
    package static func equals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard let left = a.baseAddress, let right = b.baseAddress else { return a.count == 0 }
        var position = 0
        if a.count >= 8 {
            while position + 8 < a.count {
                if left.loadUnaligned(fromByteOffset: position, as: UInt64.self) != right.loadUnaligned(fromByteOffset: position, as: UInt64.self) {
                    return false
                }
                position += 8
            }
            // The last eight bytes, overlapping what was compared already: no byte-by-byte tail.
            let last = a.count - 8
            return left.loadUnaligned(fromByteOffset: last, as: UInt64.self) == right.loadUnaligned(fromByteOffset: last, as: UInt64.self)
        }
        while position < a.count {
            if left.load(fromByteOffset: position, as: UInt8.self) != right.load(fromByteOffset: position, as: UInt8.self) { return false }
            position += 1
        }
        return true
    }

    /// ASCII case-insensitive comparison with a lowercase literal.
    package static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        for index in 0..<bytes.count {
            var byte = bytes[index]
            if byte >= 0x41 && byte <= 0x5A { byte |= 0x20 }
            if byte != lowercase.utf8Start[index] { return false }
        }
        return true
    }

    /// Bytes as ISO Latin 1 (each byte one Unicode scalar), which is how HTTP/1 reason phrases are defined.
    package static func latin1String(_ bytes: UnsafeRawBufferPointer) -> String {
        if bytes.allSatisfy({ $0 < 0x80 }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        var string = ""
        string.unicodeScalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
        return string
    }

    /// A byte for an error message: `'x'` when printable ASCII, `0x0A` otherwise.
    package static func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F {
            return "'\(Character(Unicode.Scalar(byte)))'"
        }
        let hex = String(byte, radix: 16, uppercase: true)
        return "0x" + (hex.count == 1 ? "0" + hex : hex)
    }

    /// Bytes for an error message, quoted: printable ASCII as is, anything else as `\xNN`, cut at 64 bytes.
    package static func quote(_ bytes: UnsafeRawBufferPointer) -> String {
        var text = "'"
        for byte in bytes.prefix(64) {
            if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\\") {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                text += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        if bytes.count > 64 { text += "…" }
        return text + "'"
    }
}
