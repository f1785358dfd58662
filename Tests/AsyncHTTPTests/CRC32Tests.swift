import CCRC32
import CZlib
import XCTest

/// `ahttp_crc32` (the gzip trailer's check, folded with carry-less multiplication on x86-64) against zlib's own
/// `crc32_z`, the reference, over every length and alignment where the folding code changes path.
final class CRC32Tests: XCTestCase {
    private func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
    }

    private func reference(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(crc32_z(UInt(crc), bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count))
    }

    private func ours(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        ahttp_crc32(crc, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    func testEveryLengthUpTo600AtEveryAlignmentMatchesZlib() {
        let bytes = randomBytes(600 + 16, seed: 1)
        bytes.withUnsafeBytes { all in
            for offset in 0..<16 {
                for length in 0...600 {
                    let slice = UnsafeRawBufferPointer(rebasing: all[offset..<(offset + length)])
                    let start = UInt32(truncatingIfNeeded: length &* 2_654_435_761)
                    XCTAssertEqual(ours(start, slice), reference(start, slice), "offset \(offset), length \(length)")
                }
            }
        }
    }

    func testLargeBuffersAndChainedCallsMatchZlib() {
        let bytes = randomBytes(3 << 20, seed: 2)
        bytes.withUnsafeBytes { all in
            XCTAssertEqual(ours(0, all), reference(0, all))
            // A body summed in the uneven steps a stream delivers gives the same CRC as summed at once.
            var crc: UInt32 = 0
            var start = 0
            var step = 1
            while start < all.count {
                let end = min(start + step, all.count)
                crc = ours(crc, UnsafeRawBufferPointer(rebasing: all[start..<end]))
                start = end
                step = step * 3 + 17
            }
            XCTAssertEqual(crc, reference(0, all))
        }
    }

    func testKnownValues() {
        // The check value of CRC-32/ISO-HDLC (gzip's): "123456789" → 0xCBF43926; and a run long enough to fold.
        XCTAssertEqual(Array("123456789".utf8).withUnsafeBytes { ours(0, $0) }, 0xCBF4_3926)
        XCTAssertEqual([UInt8](repeating: 0, count: 4096).withUnsafeBytes { ours(0, $0) }, 0xC71C_0011)
        XCTAssertEqual(ours(0x1234_5678, UnsafeRawBufferPointer(start: nil, count: 0)), 0x1234_5678)
    }

    func testTheFoldingPathIsUsedWhereTheProcessorHasIt() throws {
        #if arch(x86_64)
        let flags = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("flags") }?.split(separator: " ") ?? []
        let capable = flags.contains("pclmulqdq") && flags.contains("sse4_1")
        XCTAssertEqual(ahttp_crc32_is_accelerated() != 0, capable, "cpuinfo says pclmulqdq+sse4_1: \(capable)")
        #else
        XCTAssertEqual(ahttp_crc32_is_accelerated(), 0)
        #endif
    }
}
