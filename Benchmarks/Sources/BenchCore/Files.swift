#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whole-file reads and writes, for the parser corpus.
public enum Files {
    public static func read(_ path: String) throws -> [UInt8] {
        guard let file = fopen(path, "rb") else { throw BenchError("cannot open \(path)") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if n == 0 { break }
            bytes.append(contentsOf: buffer[..<n])
        }
        guard ferror(file) == 0 else { throw BenchError("cannot read \(path)") }
        return bytes
    }

    public static func write(_ bytes: [UInt8], to path: String) throws {
        guard let file = fopen(path, "wb") else { throw BenchError("cannot create \(path)") }
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        guard fclose(file) == 0, written == bytes.count else { throw BenchError("cannot write \(path)") }
    }
}
