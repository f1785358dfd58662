// libFuzzer target: the gzip / deflate Inflater with small decompression-bomb limits (docs/fuzzing.md).
// Input: one configuration byte (bit 0: gzip or deflate; bits 1-3: the small output buffer's size; bits
// 4-6: maxBytes, 1-8 KiB), then the compressed body.
// Checks:
// - the body fed whole (64 KiB output buffer) and fed in pieces derived from the input (a small output
//   buffer) give the same result: both succeed with the same bytes, or both fail with the same error code
//   (a limit may be hit where the other run found corrupt data first) and prefix-consistent output;
// - no run ever emits more than maxBytes; totalOut equals the bytes emitted; errors are sticky;
// - with a small ratio limit as well (4:1 after 256 bytes): still at most maxBytes, and a success there is
//   a success without the ratio limit, with the same bytes;
// - gzip: the Inflater's own trailer check (CRC-32 and length, session 12) agrees with zlib's: the same bytes, and
//   a failure where zlib fails, with the same error code.
@testable import AsyncHTTP
@testable import AsyncHTTPCore
import FuzzSupport

struct InflateResult {
    var output: [UInt8] = []
    var error: HTTPClientError?
}

func inflate(
    _ body: [UInt8], encoding: ContentCoding, limits: DecompressionLimits, bufferSize: Int, pieces: [Int]?,
    zlibChecksTrailers: Bool = false
) -> InflateResult {
    let inflater = Inflater(encoding: encoding, limits: limits, bufferSize: bufferSize, checksGzipTrailers: !zlibChecksTrailers)
    var result = InflateResult()
    var offset = 0
    var pieceIndex = 0
    func feed(_ bytes: ArraySlice<UInt8>) -> HTTPClientError? {
        var failure: HTTPClientError?
        bytes.withUnsafeBytes { buffer in
            do throws(HTTPClientError) {
                try inflater.decompress(buffer) { (chunk) throws(HTTPClientError) in
                    fuzzCheck(chunk.count <= bufferSize, "emitted \(chunk.count) bytes with a \(bufferSize)-byte buffer")
                    result.output.append(contentsOf: chunk)
                }
            } catch {
                failure = error
            }
        }
        return failure
    }
    while offset < body.count {
        let length = pieces.map { $0[pieceIndex] } ?? (body.count - offset)
        pieceIndex += 1
        if let error = feed(body[offset..<(offset + length)]) {
            result.error = error
            break
        }
        offset += length
    }
    if result.error == nil {
        do throws(HTTPClientError) { try inflater.finish() } catch { result.error = error }
    }
    fuzzCheck(inflater.totalOut == result.output.count, "totalOut \(inflater.totalOut) but \(result.output.count) bytes emitted")
    if let maxBytes = limits.maxBytes {
        fuzzCheck(result.output.count <= maxBytes, "emitted \(result.output.count) bytes, limit \(maxBytes)")
    }
    if let error = result.error {
        // Errors are sticky.
        let again = feed([0x1f, 0x8b, 0])
        fuzzCheck(again == error, "after \(error), decompress threw \(String(describing: again))")
        var finishError: HTTPClientError?
        do throws(HTTPClientError) { try inflater.finish() } catch { finishError = error }
        fuzzCheck(finishError == error, "after \(error), finish threw \(String(describing: finishError))")
    }
    return result
}

func isPrefix(_ a: [UInt8], of b: [UInt8]) -> Bool { a.count <= b.count && b.starts(with: a) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInflate(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard let config = bytes.first else { return 0 }
    let body = Array(bytes.dropFirst())
    let encoding: ContentCoding = config & 1 == 0 ? .gzip : .deflate
    let smallBuffer = [1, 2, 7, 64, 255, 1024, 4096, 16384][Int((config >> 1) & 7)]
    let maxBytes = 1024 * (1 + Int((config >> 4) & 7))
    var random = InputRandom(seed: bytes)

    let limits = DecompressionLimits(maxBytes: maxBytes, maxRatio: nil)
    let whole = inflate(body, encoding: encoding, limits: limits, bufferSize: 64 * 1024, pieces: nil)
    let pieces = random.pieces(total: body.count)
    let split = inflate(body, encoding: encoding, limits: limits, bufferSize: smallBuffer, pieces: pieces)
    let context = "\(encoding) maxBytes=\(maxBytes) buffer=\(smallBuffer) pieces=\(pieces)\n whole: \(whole.output.count) bytes, \(String(describing: whole.error))\n split: \(split.output.count) bytes, \(String(describing: split.error))\n input=\(hex(body, limit: 2048))"
    switch (whole.error, split.error) {
    case (nil, nil):
        fuzzCheck(whole.output == split.output, "whole and split decoded different bytes\n \(context)")
    case (let a?, let b?):
        fuzzCheck(a.code == b.code || a.code == .bodyLimitExceeded || b.code == .bodyLimitExceeded, "different errors\n \(context)")
        fuzzCheck(isPrefix(whole.output, of: split.output) || isPrefix(split.output, of: whole.output), "outputs before the error disagree\n \(context)")
    default:
        fuzzCheck(false, "one run failed, the other did not\n \(context)")
    }

    if encoding == .gzip {
        let zlibChecked = inflate(body, encoding: encoding, limits: limits, bufferSize: smallBuffer, pieces: pieces, zlibChecksTrailers: true)
        let both = "\(context)\n zlib's check: \(zlibChecked.output.count) bytes, \(String(describing: zlibChecked.error))"
        fuzzCheck((zlibChecked.error == nil) == (split.error == nil), "our trailer check and zlib's disagree\n \(both)")
        fuzzCheck(zlibChecked.error?.code == split.error?.code, "our trailer check and zlib's fail differently\n \(both)")
        fuzzCheck(zlibChecked.output == split.output, "our trailer check and zlib's hand out different bytes\n \(both)")
    }

    let bombLimits = DecompressionLimits(maxBytes: maxBytes, maxRatio: 4, ratioAppliesAfter: 256)
    let strict = inflate(body, encoding: encoding, limits: bombLimits, bufferSize: smallBuffer, pieces: pieces)
    if strict.error == nil {
        fuzzCheck(whole.error == nil && whole.output == strict.output, "the ratio-limited run succeeded where the plain one did not agree\n \(context)")
    } else {
        fuzzCheck(isPrefix(strict.output, of: whole.output) || isPrefix(whole.output, of: strict.output), "ratio-limited output disagrees\n \(context)")
    }
    return 0
}

runLibFuzzer(fuzzInflate)
