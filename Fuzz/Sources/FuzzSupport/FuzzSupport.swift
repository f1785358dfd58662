#if canImport(Glibc)
import Glibc
#endif

// Shared by the libFuzzer targets (docs/fuzzing.md): deterministic randomness derived from the input, and a
// check that traps so libFuzzer reports the input.

/// Stops the process with `message` when `condition` is false: a failed property is a crash to libFuzzer,
/// which then writes the input as a reproducer. Active in release builds, unlike `assert`.
@inline(never)
public func fuzzCheck(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() {
        fatalError("FUZZ PROPERTY VIOLATED: " + message(), file: file, line: line)
    }
}

/// A small PRNG (SplitMix64) seeded from the input's bytes (FNV-1a), so the split points of a differential
/// run are a pure function of the input: a reproducer replays exactly the same feeding.
public struct InputRandom {
    private var state: UInt64

    public init<Bytes: Collection>(seed bytes: Bytes) where Bytes.Element == UInt8 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        state = hash
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound` (`bound` > 0).
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// Piece lengths (each ≥ 1) that add up to `total`: a mix of single bytes, small pieces and large ones,
    /// so both byte-at-a-time carries and big reads are exercised.
    public mutating func pieces(total: Int) -> [Int] {
        var result: [Int] = []
        var left = total
        while left > 0 {
            let length: Int
            switch below(4) {
            case 0: length = 1
            case 1: length = 1 + below(8)
            case 2: length = 1 + below(64)
            default: length = 1 + below(max(left, 1))
            }
            let piece = min(length, left)
            result.append(piece)
            left -= piece
        }
        return result
    }
}

/// The input as bytes (libFuzzer may pass a null pointer for an empty input).
public func fuzzBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// The input split at its `0x00` bytes, each part decoded as UTF-8 (invalid sequences become U+FFFD, as a
/// `String` made from header bytes would).
public func fuzzStrings(_ bytes: [UInt8], maxParts: Int = 8) -> [String] {
    bytes.split(separator: 0, maxSplits: maxParts - 1, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
}

public func hex<Bytes: Collection>(_ bytes: Bytes, limit: Int = 256) -> String where Bytes.Element == UInt8 {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    for byte in bytes.prefix(limit) {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: text, as: UTF8.self) + (bytes.count > limit ? "…" : "")
}

/// libFuzzer's entry for programs that have their own `main` (SwiftPM gives every executable target one).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// Hands the process to libFuzzer with the command line (libFuzzer flags, corpus directories or a
/// reproducer file) and `testOneInput` as the target; exits with libFuzzer's status.
public func runLibFuzzer(_ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
}

/// Whether inputs that hit an already reported finding (Fuzz/findings/) are checked too: set
/// ASYNCHTTP_FUZZ_KNOWN=1 to reproduce one. By default they are skipped so that a run can find new failures.
public let checkKnownFindings: Bool = getenv("ASYNCHTTP_FUZZ_KNOWN") != nil
