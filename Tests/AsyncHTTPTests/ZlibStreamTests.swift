import CZlib
import XCTest

@testable import AsyncHTTP

final class ZlibStreamTests: XCTestCase {
    // MARK: - Fixtures, made with zlib directly (not with the code under test)

    /// Compresses `bytes` in one shot with zlib. windowBits 31 = gzip, 15 = zlib (RFC 1950),
    /// -15 = raw deflate (RFC 1951).
    private func zlibCompress(_ bytes: [UInt8], windowBits: Int32, level: Int32 = 6) -> [UInt8] {
        var stream = z_stream()
        XCTAssertEqual(ahttp_deflateInit2(&stream, level, windowBits, 8, Z_DEFAULT_STRATEGY), Z_OK)
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 32)
        var input = bytes
        let written = input.withUnsafeMutableBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                stream.next_in = inputBuffer.baseAddress
                stream.avail_in = uInt(inputBuffer.count)
                stream.next_out = outputBuffer.baseAddress
                stream.avail_out = uInt(outputBuffer.count)
                XCTAssertEqual(deflate(&stream, Z_FINISH), Z_STREAM_END)
                return outputBuffer.count - Int(stream.avail_out)
            }
        }
        return Array(output[..<written])
    }

    /// Decompresses with zlib directly (windowBits 31: gzip only), to check the Deflater's output.
    private func zlibDecompressGzip(_ bytes: [UInt8], windowBits: Int32 = 31) -> [UInt8]? {
        var stream = z_stream()
        XCTAssertEqual(ahttp_inflateInit2(&stream, windowBits), Z_OK)
        defer { inflateEnd(&stream) }
        var input = bytes
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var status: Int32 = Z_OK
        input.withUnsafeMutableBufferPointer { inputBuffer in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = uInt(inputBuffer.count)
            repeat {
                let produced = chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return out.count - Int(stream.avail_out)
                }
                result += chunk[..<produced]
            } while status == Z_OK
        }
        return status == Z_STREAM_END ? result : nil
    }

    /// Deterministic text, ~4:1 compressible, larger than the 64 KiB output buffer.
    private func sampleText(count: Int = 300_000) -> [UInt8] {
        let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "{\"id\":", "},\n"]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 16)
        while bytes.count < count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes += words[Int(state >> 33) % words.count].utf8
            bytes += String(state >> 50).utf8
            bytes.append(0x20)
        }
        return Array(bytes[..<count])
    }

    private func inflateWhole(
        _ bytes: [UInt8], _ encoding: ContentCoding, limits: DecompressionLimits = DecompressionLimits()
    ) throws(HTTPClientError) -> [UInt8] {
        try Inflater.decompress(bytes, encoding: encoding, limits: limits)
    }

    /// Feeds `bytes` in pieces of `pieceSize`, then finishes. Returns the output and the largest emit.
    private func inflateInPieces(
        _ bytes: [UInt8], _ encoding: ContentCoding, pieceSize: Int,
        limits: DecompressionLimits = DecompressionLimits(), inflater: Inflater? = nil
    ) throws(HTTPClientError) -> [UInt8] {
        let inflater = inflater ?? Inflater(encoding: encoding, limits: limits)
        var output: [UInt8] = []
        var start = 0
        while start < bytes.count {
            let piece = Array(bytes[start..<min(start + pieceSize, bytes.count)])
            try piece.withUnsafeBytes { input in
                Result { () throws(HTTPClientError) in
                    try inflater.decompress(input) { output.append(contentsOf: $0) }
                }
            }.get()
            start += pieceSize
        }
        try inflater.finish()
        return output
    }

    private func assertThrows(
        _ code: HTTPClientError.Code, containing text: String, file: StaticString = #filePath, line: UInt = #line,
        _ body: () throws -> Void
    ) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            guard let error = error as? HTTPClientError else {
                return XCTFail("not an HTTPClientError: \(error)", file: file, line: line)
            }
            XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
            XCTAssertTrue(error.message.contains(text), "message was: \(error.message)", file: file, line: line)
        }
    }

    // MARK: - gzip

    func testGzipRoundTripFedWholeRestoresTheBodyAndCountsBytes() throws {
        let original = sampleText()
        let gzip = zlibCompress(original, windowBits: 31)
        let inflater = Inflater(encoding: .gzip, limits: DecompressionLimits())
        var output: [UInt8] = []
        var emits = 0
        try gzip.withUnsafeBytes { input in
            try inflater.decompress(input) { chunk in
                XCTAssertLessThanOrEqual(chunk.count, 64 * 1024)
                emits += 1
                output.append(contentsOf: chunk)
            }
        }
        try inflater.finish()
        XCTAssertEqual(output, original)
        XCTAssertGreaterThan(emits, 1, "300 kB must come out through the 64 KiB buffer in several emits")
        XCTAssertEqual(inflater.totalIn, gzip.count)
        XCTAssertEqual(inflater.totalOut, original.count)
    }

    /// Feeds `bytes` in pieces of `pieceSize` through ``Inflater/decompress(_:into:)`` with an output array of
    /// `outputSize`, draining after each full array as the compression middleware does, then finishes.
    private func inflateInto(
        _ bytes: [UInt8], _ encoding: ContentCoding, pieceSize: Int, outputSize: Int
    ) throws -> (output: [UInt8], steps: Int) {
        let inflater = Inflater(encoding: encoding, limits: .unlimited)
        var output: [UInt8] = []
        var steps = 0
        var start = 0
        var wasFull = false
        // Bounded: every step consumes input or produces output, or ends the loop.
        while start < bytes.count || wasFull {
            guard steps < (bytes.count + 1) * 64 else { XCTFail("no progress"); break }
            let piece = Array(bytes[start..<min(start + pieceSize, bytes.count)])
            var buffer = [UInt8](repeating: 0xAA, count: outputSize)
            let step = try piece.withUnsafeBytes { input in
                try buffer.withUnsafeMutableBytes { out in try inflater.decompress(input, into: out) }
            }
            XCTAssertLessThanOrEqual(step.produced, outputSize)
            output += buffer[..<step.produced]
            start += step.consumed
            wasFull = step.produced == outputSize
            steps += 1
        }
        try inflater.finish()
        return (output, steps)
    }

    func testInflatingIntoTheCallersArrayRestoresTheBodyAtAnyPieceAndArraySize() throws {
        let original = sampleText()
        for (encoding, windowBits) in [(ContentCoding.gzip, Int32(31)), (.deflate, 15), (.deflate, -15)] {
            let compressed = zlibCompress(original, windowBits: windowBits)
            for (pieceSize, outputSize) in [(compressed.count, 256 * 1024), (16 * 1024, 64 * 1024), (1, 7), (3, 1), (4096, 100_000)] {
                let result = try inflateInto(compressed, encoding, pieceSize: pieceSize, outputSize: outputSize)
                XCTAssertEqual(result.output, original, "\(encoding) \(windowBits), pieces of \(pieceSize), arrays of \(outputSize)")
            }
        }
    }

    func testAnArrayFilledExactlyAtTheEndIsDrainedBeforeFinish() throws {
        // 300,000 bytes into arrays of 100,000 and of 60,000: the last full array leaves nothing in zlib, and the
        // drain call that follows must find the stream ended rather than report it truncated.
        let original = sampleText()
        let gzip = zlibCompress(original, windowBits: 31)
        for outputSize in [100_000, 60_000, original.count] {
            let result = try inflateInto(gzip, .gzip, pieceSize: gzip.count, outputSize: outputSize)
            XCTAssertEqual(result.output, original)
            XCTAssertEqual(result.steps, original.count / outputSize + 1, "full arrays, then one empty drain")
        }
    }

    func testInflatingIntoTheCallersArrayDecodesEveryGzipMember() throws {
        let first = sampleText(count: 70_000), second = Array("and the second member\n".utf8), third = sampleText(count: 5_000)
        let gzip = zlibCompress(first, windowBits: 31) + zlibCompress(second, windowBits: 31) + zlibCompress(third, windowBits: 31)
        for (pieceSize, outputSize) in [(gzip.count, 1 << 20), (1, 13), (1000, 22)] {
            XCTAssertEqual(try inflateInto(gzip, .gzip, pieceSize: pieceSize, outputSize: outputSize).output, first + second + third)
        }
    }

    func testBytesDecodedBeforeCorruptDataAreHandedOutThenTheErrorIsThrown() throws {
        // Raw deflate (from the fuzzer) that decodes one byte and then is corrupt. Through a 2-byte buffer the
        // byte used to be counted in totalOut and never emitted.
        let body: [UInt8] = [0x6B, 0x00, 0x00, 0xBC]
        let inflater = Inflater(encoding: .deflate, limits: .unlimited, bufferSize: 2)
        var emitted: [UInt8] = []
        assertThrows(.decompressionFailed, containing: "corrupt") {
            try body.withUnsafeBytes { input in
                try Result { () throws(HTTPClientError) in try inflater.decompress(input) { emitted += $0 } }.get()
            }
        }
        XCTAssertEqual(emitted.count, 1)
        XCTAssertEqual(inflater.totalOut, emitted.count)
        // Into the caller's array: the good byte comes back, the error with the next call.
        let second = Inflater(encoding: .deflate, limits: .unlimited)
        var array = [UInt8](repeating: 0, count: 64)
        let step = try body.withUnsafeBytes { input in try array.withUnsafeMutableBytes { try second.decompress(input, into: $0) } }
        XCTAssertEqual(step.produced, 1)
        XCTAssertEqual(Array(array[..<1]), emitted)
        assertThrows(.decompressionFailed, containing: "corrupt") { try second.finish() }
    }

    func testInflatingIntoTheCallersArrayKeepsTheLimits() {
        let zeros = zlibCompress([UInt8](repeating: 0, count: 4 << 20), windowBits: 31)
        let inflater = Inflater(encoding: .gzip, limits: DecompressionLimits(maxBytes: 1000))
        var buffer = [UInt8](repeating: 0, count: 4096)
        assertThrows(.bodyLimitExceeded, containing: "1000 bytes") {
            _ = try zeros.withUnsafeBytes { input in
                try buffer.withUnsafeMutableBytes { out in try inflater.decompress(input, into: out) }
            }
        }
    }

    func testGzipFedOneByteAtATimeRestoresTheBody() throws {
        let original = sampleText(count: 100_000)
        let gzip = zlibCompress(original, windowBits: 31)
        XCTAssertEqual(try inflateInPieces(gzip, .gzip, pieceSize: 1), original)
    }

    func testGzipFedInOddSizedPiecesRestoresTheBody() throws {
        let original = sampleText()
        let gzip = zlibCompress(original, windowBits: 31)
        XCTAssertEqual(try inflateInPieces(gzip, .gzip, pieceSize: 7_919), original)
    }

    func testEmptyGzipMemberDecodesToEmptyBody() throws {
        XCTAssertEqual(try inflateWhole(zlibCompress([], windowBits: 31), .gzip), [])
    }

    func testEmptyBodyWithGzipCodingFinishesCleanly() throws {
        let inflater = Inflater(encoding: .gzip, limits: DecompressionLimits())
        try inflater.finish()
        XCTAssertEqual(inflater.totalIn, 0)
        XCTAssertEqual(try inflateWhole([], .deflate), [])
    }

    func testMultiMemberGzipDecodesAsOneBodyWholeAndOneByteAtATime() throws {
        let first = sampleText(count: 70_000)
        let second = Array("and the second member\n".utf8)
        let third = sampleText(count: 5_000)
        let gzip = zlibCompress(first, windowBits: 31) + zlibCompress(second, windowBits: 31)
            + zlibCompress(third, windowBits: 31)
        XCTAssertEqual(try inflateWhole(gzip, .gzip), first + second + third)
        XCTAssertEqual(try inflateInPieces(gzip, .gzip, pieceSize: 1), first + second + third)
    }

    func testTruncatedSecondGzipMemberIsReportedByFinish() {
        let gzip = zlibCompress(Array("one".utf8), windowBits: 31) + zlibCompress(sampleText(count: 1000), windowBits: 31)
        assertThrows(.decompressionFailed, containing: "truncated") {
            _ = try inflateWhole(Array(gzip.dropLast(4)), .gzip)
        }
    }

    func testTrailingZeroPaddingAfterGzipIsTolerated() throws {
        let original = Array("padded like a tape archive".utf8)
        let gzip = zlibCompress(original, windowBits: 31) + [UInt8](repeating: 0, count: 512)
        XCTAssertEqual(try inflateWhole(gzip, .gzip), original)
        XCTAssertEqual(try inflateInPieces(gzip, .gzip, pieceSize: 3), original)
    }

    func testGarbageAfterGzipMemberIsRejected() {
        let gzip = zlibCompress(Array("hello".utf8), windowBits: 31) + Array("<html>oops".utf8)
        assertThrows(.decompressionFailed, containing: "gzip data corrupt") {
            _ = try inflateWhole(gzip, .gzip)
        }
    }

    func testNonZeroBytesAfterZeroPaddingAreRejected() {
        let gzip = zlibCompress(Array("hello".utf8), windowBits: 31) + [0, 0, 0x1F, 0x8B]
        assertThrows(.decompressionFailed, containing: "after the end of the compressed stream") {
            _ = try inflateWhole(gzip, .gzip)
        }
    }

    func testGzipCodingAlsoAcceptsZlibWrappedDataLikeCurl() throws {
        let original = sampleText(count: 10_000)
        XCTAssertEqual(try inflateWhole(zlibCompress(original, windowBits: 15), .gzip), original)
    }

    // MARK: - deflate: zlib-wrapped vs raw

    func testZlibHeaderDetectionFollowsRFC1950() {
        // zlib's own headers for levels 1, 6 (default), 9, and a 512-byte window.
        for (cmf, flg) in [(0x78, 0x01), (0x78, 0x9C), (0x78, 0xDA), (0x18, 0x95)] as [(UInt8, UInt8)] {
            XCTAssertTrue(Inflater.isZlibHeader(cmf, flg), "\(cmf) \(flg)")
        }
        XCTAssertFalse(Inflater.isZlibHeader(0x78, 0x9D), "checksum off by one")
        XCTAssertFalse(Inflater.isZlibHeader(0x88, 0x98), "CINFO 8 is a 64 KiB window, invalid")  // 0x8898 % 31 == 0
        XCTAssertFalse(Inflater.isZlibHeader(0x79, 0xC3), "CM 9 is not deflate")
        // Raw deflate typically starts with a fixed- or dynamic-Huffman block: low bits 0b011 / 0b101.
        let raw = zlibCompress(sampleText(count: 1000), windowBits: -15)
        XCTAssertFalse(Inflater.isZlibHeader(raw[0], raw[1]))
    }

    func testDeflateZlibWrappedDecodesWholeAndOneByteAtATime() throws {
        let original = sampleText(count: 80_000)
        let zlib = zlibCompress(original, windowBits: 15)
        XCTAssertEqual(try inflateWhole(zlib, .deflate), original)
        XCTAssertEqual(try inflateInPieces(zlib, .deflate, pieceSize: 1), original)
    }

    func testDeflateRawDecodesWholeAndOneByteAtATime() throws {
        let original = sampleText(count: 80_000)
        let raw = zlibCompress(original, windowBits: -15)
        XCTAssertEqual(try inflateWhole(raw, .deflate), original)
        XCTAssertEqual(try inflateInPieces(raw, .deflate, pieceSize: 1), original)
    }

    func testDeflateCountsTheSniffedHeaderByteOnce() throws {
        let zlib = zlibCompress(sampleText(count: 5000), windowBits: 15)
        let inflater = Inflater(encoding: .deflate, limits: DecompressionLimits())
        _ = try inflateInPieces(zlib, .deflate, pieceSize: 1, inflater: inflater)
        XCTAssertEqual(inflater.totalIn, zlib.count)
        XCTAssertEqual(inflater.totalOut, 5000)
    }

    func testDeflateWithOnlyOneHeaderByteIsTruncated() {
        assertThrows(.decompressionFailed, containing: "truncated") {
            _ = try inflateWhole([0x78], .deflate)
        }
    }

    func testDeflateStreamWithTrailingGarbageIsRejected() {
        let zlib = zlibCompress(Array("data".utf8), windowBits: 15) + [0x41]
        assertThrows(.decompressionFailed, containing: "deflate data corrupt") {
            _ = try inflateWhole(zlib, .deflate)
        }
    }

    func testErrorThrownByEmitPropagatesUnchanged() {
        let gzip = zlibCompress(sampleText(count: 1000), windowBits: 31)
        let inflater = Inflater(encoding: .gzip, limits: DecompressionLimits())
        let stop = HTTPClientError(.bodyLimitExceeded, "consumer said stop")
        XCTAssertThrowsError(try gzip.withUnsafeBytes { try inflater.decompress($0) { _ throws(HTTPClientError) in throw stop } }) {
            XCTAssertEqual($0 as? HTTPClientError, stop)
        }
    }

    // MARK: - Corrupt and truncated data

    func testCorruptGzipHeaderThrowsWithZlibMessage() {
        assertThrows(.decompressionFailed, containing: "gzip data corrupt: incorrect header check") {
            _ = try inflateWhole(Array("<html>not compressed at all</html>".utf8), .gzip)
        }
    }

    func testCorruptGzipChecksumThrows() {
        var gzip = zlibCompress(sampleText(count: 10_000), windowBits: 31)
        gzip[gzip.count - 6] ^= 0xFF  // inside the CRC-32 of the trailer
        assertThrows(.decompressionFailed, containing: "gzip data corrupt: incorrect data check") {
            _ = try inflateWhole(gzip, .gzip)
        }
    }

    func testAWrongLengthInTheGzipTrailerThrows() {
        var gzip = zlibCompress(sampleText(count: 10_000), windowBits: 31)
        gzip[gzip.count - 4] ^= 0x01  // ISIZE, the length modulo 2^32
        assertThrows(.decompressionFailed, containing: "gzip data corrupt: incorrect length check") {
            _ = try inflateWhole(gzip, .gzip)
        }
    }

    func testTheTrailerIsCheckedWhereverThePiecesSplitIt() throws {
        // The CRC-32 and length are read from the last eight bytes consumed: a trailer split across pieces of
        // any size, in any member, must still match (and a flipped bit in it must not).
        let members = [sampleText(count: 3_000), [], Array("x".utf8), sampleText(count: 70_001)]
        let gzip = members.map { zlibCompress($0, windowBits: 31) }.reduce([], +)
        let original = members.reduce([], +)
        for pieceSize in [1, 2, 3, 5, 7, 8, 9, 13, 64, 4096] {
            let inflater = Inflater(encoding: .gzip, limits: DecompressionLimits())
            XCTAssertEqual(try inflateInPieces(gzip, .gzip, pieceSize: pieceSize, inflater: inflater), original, "pieces of \(pieceSize)")
            XCTAssertTrue(inflater.checksTrailer, "gzip members are checked here, not by zlib")
        }
        // Every byte of the third member's trailer, flipped in turn: each is caught, at every split tried.
        let thirdEnd = members[0...2].map { zlibCompress($0, windowBits: 31).count }.reduce(0, +)
        for offset in (thirdEnd - 8)..<thirdEnd {
            var corrupt = gzip
            corrupt[offset] ^= 0x80
            let expected = offset < thirdEnd - 4 ? "incorrect data check" : "incorrect length check"
            for pieceSize in [1, 3, 8, 4096] {
                assertThrows(.decompressionFailed, containing: expected) {
                    _ = try inflateInPieces(corrupt, .gzip, pieceSize: pieceSize)
                }
            }
        }
    }

    func testAWrongCRCInTheDecodedBytesIsCaughtNotOnlyInTheTrailer() {
        // A stored (uncompressed) deflate block lets one decoded byte change without breaking the deflate data:
        // the trailer is intact, the body is not, and the CRC-32 over the decoded bytes must say so.
        var gzip = zlibCompress(sampleText(count: 5_000), windowBits: 31, level: 0)
        gzip[gzip.count - 100] ^= 0x20
        assertThrows(.decompressionFailed, containing: "gzip data corrupt: incorrect data check") {
            _ = try inflateInPieces(gzip, .gzip, pieceSize: 777)
        }
    }

    func testAHeaderCRCIsStillVerified() throws {
        // RFC 1952 §2.3.1 FHCRC: two bytes after the header fields, the low half of the header's CRC-32.
        let plain = sampleText(count: 4_000)
        let member = zlibCompress(plain, windowBits: 31)
        var header = Array(member[..<10])
        header[3] |= 0x02
        let crc = header.withUnsafeBytes { UInt32(crc32(0, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), 10)) }
        let good = header + [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF)] + member[10...]
        for pieceSize in [1, 11, 4096] {
            XCTAssertEqual(try inflateInPieces(good, .gzip, pieceSize: pieceSize), plain)
        }
        var bad = good
        bad[10] ^= 0x01
        assertThrows(.decompressionFailed, containing: "gzip data corrupt: header crc mismatch") {
            _ = try inflateInPieces(bad, .gzip, pieceSize: 5)
        }
    }

    func testOurTrailerCheckAgreesWithZlibsOnEveryCorruption() throws {
        // Differential: every bit flip of every byte of a three-member body (one member stored, one empty),
        // decoded with the trailer checked here and with zlib's own check, in pieces of 7 bytes: the same bytes
        // and the same outcome each time.
        let body = zlibCompress(sampleText(count: 300), windowBits: 31) + zlibCompress([], windowBits: 31)
            + zlibCompress(sampleText(count: 200), windowBits: 31, level: 0)
        func run(_ bytes: [UInt8], ours: Bool) -> (output: [UInt8], error: HTTPClientError.Code?) {
            let inflater = Inflater(encoding: .gzip, limits: DecompressionLimits(), bufferSize: 64, checksGzipTrailers: ours)
            var output: [UInt8] = []
            do {
                output = try inflateInPieces(bytes, .gzip, pieceSize: 7, inflater: inflater)
                return (output, nil)
            } catch {
                // inflateInPieces gives nothing back on failure: decode again, collecting what came out.
                let again = Inflater(encoding: .gzip, limits: DecompressionLimits(), bufferSize: 64, checksGzipTrailers: ours)
                _ = try? bytes.withUnsafeBytes { input in
                    try Result { () throws(HTTPClientError) in try again.decompress(input) { output += $0 } }.get()
                }
                return (output, error.code)
            }
        }
        var failures = 0
        for offset in body.indices {
            for bit in [0, 3, 7] {
                var corrupt = body
                corrupt[offset] ^= 1 << bit
                let (ours, zlib) = (run(corrupt, ours: true), run(corrupt, ours: false))
                XCTAssertEqual(ours.error, zlib.error, "byte \(offset), bit \(bit)")
                XCTAssertEqual(ours.output, zlib.output, "byte \(offset), bit \(bit)")
                if zlib.error != nil { failures += 1 }
            }
        }
        // Nearly every flip is caught (a flip in the header's MTIME, XFL or OS byte is not an error).
        XCTAssertGreaterThan(failures, body.count * 3 * 3 / 4)
    }

    func testAZlibMemberAfterAGzipMemberKeepsZlibsOwnCheck() {
        // Our check covers gzip members; zlib-wrapped data under the gzip coding keeps zlib's Adler-32 check,
        // also when it follows a gzip member whose check was ours.
        let gzip = zlibCompress(sampleText(count: 2_000), windowBits: 31)
        var zlibWrapped = zlibCompress(sampleText(count: 2_000), windowBits: 15)
        let inflater = Inflater(encoding: .gzip, limits: DecompressionLimits())
        XCTAssertEqual(
            try inflateInPieces(gzip + zlibWrapped, .gzip, pieceSize: 1000, inflater: inflater),
            sampleText(count: 2_000) + sampleText(count: 2_000))
        XCTAssertFalse(inflater.checksTrailer, "a zlib-wrapped member keeps zlib's check")
        zlibWrapped[zlibWrapped.count - 1] ^= 0xFF  // inside the Adler-32
        assertThrows(.decompressionFailed, containing: "incorrect data check") {
            _ = try inflateWhole(gzip + zlibWrapped, .gzip)
        }
        assertThrows(.decompressionFailed, containing: "incorrect data check") {
            _ = try inflateWhole(zlibWrapped, .gzip)
        }
    }

    func testCorruptDeflateDataThrowsAndTheErrorIsSticky() {
        // A raw deflate block of reserved type 3 (BTYPE = 11) is invalid.
        let inflater = Inflater(encoding: .deflate, limits: DecompressionLimits())
        let bad: [UInt8] = [0x07, 0x00, 0x00, 0x00]
        var first: HTTPClientError?
        do {
            try bad.withUnsafeBytes { try inflater.decompress($0) { _ in XCTFail("no output expected") } }
        } catch let error as HTTPClientError {
            first = error
        } catch {
            XCTFail("\(error)")
        }
        XCTAssertEqual(first?.code, .decompressionFailed)
        XCTAssertEqual(first?.message, "deflate data corrupt: invalid block type")
        XCTAssertThrowsError(try [UInt8(1)].withUnsafeBytes { try inflater.decompress($0) { _ in } }) {
            XCTAssertEqual($0 as? HTTPClientError, first)
        }
        XCTAssertThrowsError(try inflater.finish()) { XCTAssertEqual($0 as? HTTPClientError, first) }
    }

    func testTruncatedGzipIsReportedByFinishNotPresentedAsComplete() throws {
        let original = sampleText(count: 50_000)
        let gzip = zlibCompress(original, windowBits: 31)
        for cut in [gzip.count - 1, gzip.count - 8, gzip.count / 2, 5] {
            let inflater = Inflater(encoding: .gzip, limits: DecompressionLimits())
            var output: [UInt8] = []
            try Array(gzip[..<cut]).withUnsafeBytes { try inflater.decompress($0) { output += $0 } }
            XCTAssertLessThanOrEqual(output.count, original.count)
            XCTAssertThrowsError(try inflater.finish(), "cut at \(cut)") { error in
                let error = error as? HTTPClientError
                XCTAssertEqual(error?.code, .decompressionFailed)
                XCTAssertTrue(error?.message.contains("gzip data truncated") == true, "\(String(describing: error))")
            }
        }
    }

    // MARK: - Bomb limits

    func testAbsoluteLimitStopsOutputAtMaxBytes() {
        let zeros = zlibCompress([UInt8](repeating: 0, count: 4 << 20), windowBits: 31)
        let limits = DecompressionLimits(maxBytes: 1 << 20, maxRatio: nil)
        let inflater = Inflater(encoding: .gzip, limits: limits)
        var emitted = 0
        XCTAssertThrowsError(try zeros.withUnsafeBytes { try inflater.decompress($0) { emitted += $0.count } }) {
            let error = $0 as? HTTPClientError
            XCTAssertEqual(error?.code, .bodyLimitExceeded)
            XCTAssertEqual(error?.message, "decompressed size exceeded the limit of 1048576 bytes")
        }
        XCTAssertLessThanOrEqual(emitted, 1 << 20)
        XCTAssertGreaterThan(emitted, (1 << 20) - 64 * 1024)
    }

    func testAbsoluteLimitAllowsABodyOfExactlyMaxBytes() throws {
        let body = sampleText(count: 100_000)
        let gzip = zlibCompress(body, windowBits: 31)
        XCTAssertEqual(try inflateWhole(gzip, .gzip, limits: DecompressionLimits(maxBytes: 100_000)), body)
        assertThrows(.bodyLimitExceeded, containing: "99999 bytes") {
            _ = try inflateWhole(gzip, .gzip, limits: DecompressionLimits(maxBytes: 99_999))
        }
    }

    func testDefaultRatioLimitRefusesAZeroBomb() {
        // 16 MiB of zeros is ~16 KiB of gzip: about 1000:1.
        let bomb = zlibCompress([UInt8](repeating: 0, count: 16 << 20), windowBits: 31)
        XCTAssertLessThan(bomb.count, 32 << 10)
        let inflater = Inflater(encoding: .gzip, limits: DecompressionLimits())
        var emitted = 0
        XCTAssertThrowsError(try bomb.withUnsafeBytes { try inflater.decompress($0) { emitted += $0.count } }) {
            let error = $0 as? HTTPClientError
            XCTAssertEqual(error?.code, .bodyLimitExceeded)
            XCTAssertTrue(error?.message.contains("200 times the compressed size") == true, "\(String(describing: error))")
        }
        // Stopped just past the 1 MiB grace, long before 16 MiB.
        XCTAssertLessThanOrEqual(emitted, (1 << 20) + 64 * 1024)
    }

    func testRatioLimitIsNotAppliedWithinTheFirstMebibyte() throws {
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        XCTAssertEqual(try inflateWhole(zlibCompress(zeros, windowBits: 31), .gzip), zeros)
    }

    func testRatioLimitCanBeDisabledOrRaised() throws {
        let zeros = [UInt8](repeating: 0, count: 8 << 20)
        let bomb = zlibCompress(zeros, windowBits: 31)
        XCTAssertEqual(try inflateWhole(bomb, .gzip, limits: .unlimited).count, zeros.count)
        XCTAssertEqual(try inflateWhole(bomb, .gzip, limits: DecompressionLimits(maxRatio: 2000)).count, zeros.count)
        assertThrows(.bodyLimitExceeded, containing: "10 times") {
            _ = try inflateWhole(bomb, .gzip, limits: DecompressionLimits(maxRatio: 10, ratioAppliesAfter: 0))
        }
    }

    func testOrdinaryTextIsWellWithinTheDefaultRatio() throws {
        let text = sampleText(count: 3 << 20)
        XCTAssertEqual(try inflateWhole(zlibCompress(text, windowBits: 31, level: 9), .gzip), text)
    }

    // MARK: - Deflater

    func testDeflaterWritesGzipThatZlibReads() throws {
        let original = sampleText()
        let deflater = Deflater()
        var gzip: [UInt8] = []
        // Fed in uneven pieces, the way a streamed request body arrives.
        var start = 0
        while start < original.count {
            let end = min(start + 10_007, original.count)
            try original[start..<end].withUnsafeBytes { try deflater.compress($0) { gzip += $0 } }
            start = end
        }
        try deflater.finish { gzip += $0 }
        XCTAssertEqual(Array(gzip.prefix(3)), [0x1F, 0x8B, 0x08], "gzip magic and CM = deflate")
        XCTAssertEqual(zlibDecompressGzip(gzip), original)
        XCTAssertEqual(deflater.totalIn, original.count)
        XCTAssertEqual(deflater.totalOut, gzip.count)
        XCTAssertLessThan(gzip.count, original.count / 2)
    }

    func testDeflaterOutputRoundTripsThroughInflaterOneByteAtATime() throws {
        let original = sampleText(count: 40_000)
        let deflater = Deflater(level: 1)
        var gzip: [UInt8] = []
        try original.withUnsafeBytes { try deflater.compress($0) { gzip += $0 } }
        try deflater.finish { gzip += $0 }
        XCTAssertEqual(try inflateInPieces(gzip, .gzip, pieceSize: 1), original)
    }

    func testDeflaterOfEmptyBodyIsAValidEmptyGzipMember() throws {
        let deflater = Deflater()
        var gzip: [UInt8] = []
        try deflater.finish { gzip += $0 }
        try deflater.finish { _ in XCTFail("finish is idempotent") }
        XCTAssertEqual(zlibDecompressGzip(gzip), [])
        XCTAssertEqual(gzip.count, 20, "10-byte header, 2-byte empty final block, 8-byte trailer")
    }

    func testDeflaterWithDeflateCodingWritesZlibFormat() throws {
        let original = sampleText(count: 20_000)
        let deflater = Deflater(encoding: .deflate)
        var zlib: [UInt8] = []
        try original.withUnsafeBytes { try deflater.compress($0) { zlib += $0 } }
        try deflater.finish { zlib += $0 }
        XCTAssertTrue(Inflater.isZlibHeader(zlib[0], zlib[1]))
        XCTAssertEqual(zlibDecompressGzip(zlib, windowBits: 15), original)
    }

    // MARK: - ContentCoding

    func testContentCodingTokensAreCaseInsensitiveAndAcceptXGzip() {
        XCTAssertEqual(ContentCoding(token: "gzip"), .gzip)
        XCTAssertEqual(ContentCoding(token: "GZip"), .gzip)
        XCTAssertEqual(ContentCoding(token: "x-gzip"), .gzip)
        XCTAssertEqual(ContentCoding(token: "Deflate"), .deflate)
        XCTAssertNil(ContentCoding(token: "br"))
        XCTAssertNil(ContentCoding(token: "identity"))
    }

    // MARK: - Output buffer

    /// The compression middleware's body inflates into the arrays it hands out: its inflater makes no 64 KiB buffer
    /// of its own (every decoded response allocated one, unused); a caller of `decompress(_:emit:)` still gets one.
    /// (`hasOutputBuffer` is new: this test does not compile against the old code, which always allocated.)
    func testInflatingIntoTheCallersArrayMakesNoBufferOfItsOwn() throws {
        let text = [UInt8](String(repeating: "lazy buffers, ", count: 2000).utf8)
        let gzip = zlibCompress(text, windowBits: 31)
        let inflater = Inflater(encoding: .gzip)
        var array = [UInt8](repeating: 0, count: text.count + 16)
        let step = try gzip.withUnsafeBytes { input in try array.withUnsafeMutableBytes { try inflater.decompress(input, into: $0) } }
        XCTAssertEqual(Array(array[..<step.produced]), text)
        XCTAssertFalse(inflater.hasOutputBuffer)
        try inflater.finish()

        let emitting = Inflater(encoding: .gzip)
        var decoded: [UInt8] = []
        try gzip.withUnsafeBytes { input in try emitting.decompress(input) { decoded += $0 } }
        XCTAssertEqual(decoded, text)
        XCTAssertTrue(emitting.hasOutputBuffer)
    }
}
