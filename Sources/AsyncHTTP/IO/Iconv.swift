#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The C library's `iconv` (glibc's, musl's, or Darwin's libiconv), for the legacy charsets of response text
/// (``LegacyCharset``): their tables are large, and the platform already has them.
enum Iconv {
    /// Converts with `iconv`, or nil when it cannot open a conversion from `name`.
    static func convert(_ bytes: UnsafeBufferPointer<UInt8>, from name: String) -> String? {
        let descriptor = iconv_open("UTF-8", name)
        guard descriptor != UnsafeMutableRawPointer(bitPattern: -1) else { return nil }
        defer { iconv_close(descriptor) }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return "" }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count * 2 + 16)
        var output = [UInt8](repeating: 0, count: Swift.min(Swift.max(bytes.count * 3, 64), 64 * 1024))
        var input: UnsafeMutablePointer<CChar>? =
            UnsafeMutablePointer(mutating: UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self))
        var inputLeft = bytes.count
        let replacement: [UInt8] = [0xEF, 0xBF, 0xBD]  // U+FFFD
        /// One `iconv` call (with no input: the end of a stateful encoding's shift state, ISO-2022-JP); the bytes it
        /// wrote are appended. Returns the errno of a failure, or 0.
        func step(flushing: Bool) -> Int32 {
            output.withUnsafeMutableBytes { out in
                var next: UnsafeMutablePointer<CChar>? = out.baseAddress!.assumingMemoryBound(to: CChar.self)
                var outputLeft = out.count
                let result = flushing
                    ? iconv(descriptor, nil, nil, &next, &outputLeft) : iconv(descriptor, &input, &inputLeft, &next, &outputLeft)
                let failure = result == -1 ? errno : 0
                decoded.append(contentsOf: UnsafeRawBufferPointer(rebasing: out[..<(out.count - outputLeft)]))
                return failure
            }
        }
        // Each turn consumes input, empties a full output, or skips a byte: bounded by the input and the output.
        while inputLeft > 0 {
            switch step(flushing: false) {
            case 0, E2BIG:
                continue  // done, or the output was full: go round with it emptied
            case EILSEQ:
                // A byte that starts no character here: U+FFFD for it, and go on after it.
                decoded.append(contentsOf: replacement)
                input = input.map { $0 + 1 }
                inputLeft -= 1
            default:
                // EINVAL: the input ends inside a character.
                decoded.append(contentsOf: replacement)
                inputLeft = 0
            }
        }
        // A shift sequence is a few bytes: one round, or two if the output was full.
        for _ in 0..<4 where step(flushing: true) != E2BIG { break }
        return String(decoding: decoded, as: UTF8.self)
    }
}
