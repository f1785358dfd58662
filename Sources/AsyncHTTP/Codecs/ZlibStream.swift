import CCRC32
import CZlib

// Streaming gzip / deflate codecs over zlib, for the compression middleware.
//
// Pure: bytes in, bytes out through a callback, no I/O. The decoder writes into one reusable
// contiguous buffer (64 KiB by default, made on first use) and hands out views of it, so the hot path is one
// `inflate()` call per buffer-full, never per byte.

/// A content coding this client can decode (RFC 9110 §8.4.1).
///
/// `identity` is not a case: a middleware simply does not create an ``Inflater`` for it.
enum ContentCoding: String, Sendable, Hashable {
    /// RFC 1952 gzip, possibly several members concatenated (RFC 1952 §2.2).
    case gzip
    /// RFC 9110 §8.4.1.2: the zlib format (RFC 1950). Raw RFC 1951 deflate, which some servers send
    /// instead, is accepted too; see ``Inflater``.
    case deflate

    /// Parses one `Content-Encoding` token, case-insensitively (RFC 9110 §8.4.1).
    /// `x-gzip` is accepted as `gzip`, as RFC 9110 §8.4.1.3 asks of recipients.
    init?(token: String) {
        switch token.lowercased() {
        case "gzip", "x-gzip": self = .gzip
        case "deflate": self = .deflate
        default: return nil
        }
    }
}

/// Limits that stop a decompression bomb: a small body that inflates to an enormous one.
///
/// Exceeding either throws `HTTPClientError(.bodyLimitExceeded, …)` before the offending output is
/// emitted, so a consumer never sees more than `maxBytes` bytes.
struct DecompressionLimits: Sendable, Hashable {
    /// The most decompressed bytes one body may produce, or `nil` for no absolute cap.
    ///
    /// Default `nil`: no other client caps the decoded size (curl, Go's `net/http`, URLSession,
    /// browsers), and legitimate bodies can be large — an object stored gzipped and served with
    /// `Content-Encoding: gzip` routinely inflates to gigabytes when streamed to disk. Memory is
    /// bounded separately, by the body-collection limit (`collect(upTo:)`), which must count decoded
    /// bytes; the amplification attack itself is caught by ``maxRatio``.
    var maxBytes: Int?
    /// The most decompressed bytes allowed per compressed byte, over the whole body so far, or `nil`
    /// for no ratio check.
    ///
    /// Default 200: Apache httpd's `mod_deflate` (`DeflateInflateRatioLimit`, `AP_INFLATE_RATIO_LIMIT
    /// 200`). Ordinary text and JSON compress 3–20:1 with gzip; deflate's ceiling is about 1032:1,
    /// which is what a bomb of zeros achieves. curl, Go and browsers have no such limit.
    var maxRatio: Int?
    /// The ratio is only enforced once this many bytes have been produced, so that a small, highly
    /// repetitive body (a page of spaces, an empty JSON array padded out) is never refused.
    ///
    /// Default 1 MiB: where a bomb starts to cost memory worth caring about. `mod_deflate` instead
    /// tolerates three consecutive 8 KiB buffers over the ratio (`DeflateInflateRatioBurst`).
    var ratioAppliesAfter: Int

    init(maxBytes: Int? = nil, maxRatio: Int? = 200, ratioAppliesAfter: Int = 1 << 20) {
        self.maxBytes = maxBytes
        self.maxRatio = maxRatio
        self.ratioAppliesAfter = ratioAppliesAfter
    }

    /// No limits at all.
    static let unlimited = DecompressionLimits(maxBytes: nil, maxRatio: nil)

    /// Limits held by reference, for a value that should not grow by their size (a response).
    final class Shared: Sendable {
        let limits: DecompressionLimits
        init(_ limits: DecompressionLimits) { self.limits = limits }
    }
}

/// A streaming decoder for the `gzip` and `deflate` content codings.
///
/// ```swift
/// let inflater = Inflater(encoding: .gzip, limits: DecompressionLimits())
/// for chunk in compressedChunks {
///     try chunk.withUnsafeBytes { try inflater.decompress($0) { decoded in sink(decoded) } }
/// }
/// try inflater.finish()   // throws if the body stopped before the end of the compressed stream
/// ```
///
/// What it accepts, and why:
/// - `gzip`: zlib's automatic gzip/zlib detection (`windowBits` 15 + 32), as curl does for `gzip`.
///   Several members concatenated decode as one body (RFC 1952 §2.2; gzip(1), Go's `gzip.Reader`
///   and Python's `gzip` do the same): after a member's end, the next byte starts a new member.
///   Zero bytes after the last member are skipped as padding, as gzip(1) and Python's `gzip` do.
///   Anything else after a member (garbage after padding, or a member that does not parse) is an
///   error, as in Go and Python — a lenient decoder could silently drop a corrupt second member and
///   present a short body as complete. (Chromium ignores bytes after the first member instead.)
/// - `deflate`: RFC 9110 says zlib-wrapped (RFC 1950), but some servers send raw RFC 1951 data. The
///   first two bytes decide, as libsoup and browsers do: a valid zlib header (CM = 8, CINFO ≤ 7,
///   `(CMF * 256 + FLG) % 31 == 0`) means zlib, anything else raw deflate. Zero padding after the
///   end is tolerated; other trailing bytes are an error.
/// - An empty body (``finish()`` with no input at all) is accepted, as curl and Chromium do: some
///   servers label empty responses `Content-Encoding: gzip`.
///
/// Errors are sticky: after a failure every later call throws the same error.
///
/// A gzip member's CRC-32 and length (its trailer, RFC 1952 §2.3.1) are checked here rather than by zlib: for a
/// member that starts with gzip's magic byte, zlib reads the header with its check on (so a header CRC is still
/// verified) and stops after it (`Z_BLOCK`); its check is then switched off (`inflateValidate`), and the decoded
/// bytes are summed with `ahttp_crc32` (carry-less multiplication where the processor has it, about five times
/// zlib 1.2's own). The failure is the one zlib gives: "incorrect data check" or "incorrect length check".
/// zlib-wrapped streams keep zlib's own Adler-32 check.
///
/// A class rather than a noncopyable struct so that a middleware can keep it in an
/// `AsyncIteratorProtocol` value (which must be copyable). The `z_stream` lives on the heap
/// because zlib ≥ 1.2.9 checks that `state->strm` still points at the stream it was initialised
/// with. Not `Sendable`: one body, one owner.
final class Inflater {
    let encoding: ContentCoding
    let limits: DecompressionLimits
    /// Compressed bytes consumed so far (including gzip headers, trailers and padding).
    private(set) var totalIn = 0
    /// Decompressed bytes emitted so far, across all gzip members.
    private(set) var totalOut = 0

    private let stream: UnsafeMutablePointer<z_stream>
    /// The reusable buffer of ``decompress(_:emit:)``, made on its first call: the compression middleware's body
    /// inflates into the arrays it hands out (``decompress(_:into:)``) and never needs one.
    private var outputBuffer: UnsafeMutableRawBufferPointer?
    private let bufferSize: Int
    private var zlibInitialised = false
    private var state = State.start
    /// Whether gzip members' trailers are checked here (the default) or by zlib (for differential tests).
    private let checksGzipTrailers: Bool
    /// Whether the current member is gzip-framed and its trailer is checked here (zlib's check is off).
    private(set) var checksTrailer = false
    /// A gzip member whose trailer is checked here, still in its header: zlib reads the header with its check on
    /// (a header CRC, `FHCRC`, is verified) and stops after it (`Z_BLOCK`); then its check is switched off.
    private var inHeader = false
    /// The CRC-32 and length of the bytes the current member has decoded so far.
    private var memberCRC: UInt32 = 0
    private var memberLength = 0
    /// The last eight input bytes zlib consumed, the oldest in the low byte: at a gzip member's end, its trailer.
    private var lastInput: UInt64 = 0

    private enum State {
        /// Nothing received yet; zlib not initialised (it is once the format is known).
        /// Valid transitions to: .sniffing, .inflating, .failed
        case start
        /// `deflate` only: one byte of the two that tell zlib from raw deflate has arrived.
        /// Valid transitions to: .inflating, .failed
        case sniffing(firstByte: UInt8)
        /// zlib is inside a stream (or a gzip member).
        /// Valid transitions to: .ended, .failed
        case inflating
        /// A stream (or gzip member) ended with its checksum verified. `sawPadding` once a zero byte
        /// followed it, after which only more zeros are accepted.
        /// Valid transitions to: .inflating (next gzip member), .failed
        case ended(sawPadding: Bool)
        /// Valid transitions to: none
        case failed(HTTPClientError)
    }

    /// - Parameters:
    ///   - encoding: the response's content coding.
    ///   - limits: the decompression-bomb limits.
    ///   - bufferSize: the size of the reusable output buffer; each `emit` gets at most this many
    ///     bytes. 64 KiB: larger than any socket read, small enough to stay in L2.
    ///   - checksGzipTrailers: `false` leaves gzip trailers to zlib's own check, as before session 12: the
    ///     reference that the tests and the fuzzer compare the default against.
    init(
        encoding: ContentCoding, limits: DecompressionLimits = DecompressionLimits(), bufferSize: Int = 64 * 1024,
        checksGzipTrailers: Bool = true
    ) {
        precondition(bufferSize > 0 && bufferSize <= Int(UInt32.max), "output buffer size out of range")
        self.encoding = encoding
        self.limits = limits
        self.checksGzipTrailers = checksGzipTrailers
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        self.bufferSize = bufferSize
    }

    deinit {
        if zlibInitialised { inflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
        outputBuffer?.deallocate()
    }

    /// Whether ``decompress(_:emit:)``'s buffer has been made (tests).
    var hasOutputBuffer: Bool { outputBuffer != nil }

    /// Decompresses `input`, handing each run of decoded bytes to `emit`.
    ///
    /// `emit` receives a view into the inflater's own buffer, valid only during the call; copy out
    /// what you keep. It may be called several times, or not at all (zlib may need more input).
    /// - Throws: `.decompressionFailed` for corrupt data, `.bodyLimitExceeded` when a limit is hit,
    ///   or whatever `emit` throws.
    func decompress(
        _ input: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) throws(HTTPClientError) -> Void
    ) throws(HTTPClientError) {
        let output: UnsafeMutableRawBufferPointer
        if let outputBuffer {
            output = outputBuffer
        } else {
            output = .allocate(byteCount: bufferSize, alignment: 16)
            outputBuffer = output
        }
        var rest = input
        while true {
            let (consumed, produced) = try decompress(rest, into: output)
            rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
            if produced > 0 { try emit(UnsafeRawBufferPointer(rebasing: output[..<produced])) }
            // The bytes decoded before a failure went out first; now the failure.
            if case .failed(let error) = state { throw error }
            // A buffer with room to spare means the input is used up and nothing is pending in zlib.
            if produced < output.count { return }
        }
    }

    /// Decompresses from `input` straight into `output`, until the input is used up or `output` is full.
    /// Returns the input bytes consumed and the bytes written at the start of `output`.
    ///
    /// When `output` comes back full, zlib may hold more decoded bytes: call again (with the rest of the input,
    /// or with none) before declaring the end with ``finish()``. A caller that hands the decoded bytes on
    /// as they are (the compression middleware's body) inflates into the array it returns, with no copy.
    ///
    /// A failure after some bytes were decoded in the same call returns those bytes (they are good, and counted
    /// in ``totalOut``); the failure is kept and thrown by the next call, or by ``finish()``.
    /// - Throws: `.decompressionFailed` for corrupt data, `.bodyLimitExceeded` when a limit is hit (bytes past
    ///   the limit are never counted or returned).
    func decompress(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) throws(HTTPClientError) -> (consumed: Int, produced: Int) {
        var consumed = 0
        var produced = 0
        do {
            return try decompressSteps(input, into: output, consumed: &consumed, produced: &produced)
        } catch {
            // `fail` made the error sticky; hand out what was decoded before it.
            guard produced > 0 else { throw error }
            return (consumed, produced)
        }
    }

    private func decompressSteps(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, consumed: inout Int, produced: inout Int
    ) throws(HTTPClientError) -> (consumed: Int, produced: Int) {
        var rest = input
        defer { consumed = input.count - rest.count }
        func consume(_ count: Int) { rest = UnsafeRawBufferPointer(rebasing: rest[count...]) }
        while produced < output.count {
            switch state {
            case .failed(let error):
                throw error
            case .start:
                guard !rest.isEmpty else { return (input.count - rest.count, produced) }
                if encoding == .gzip {
                    // 15 + 32: gzip or zlib, detected from the header (curl: MAX_WBITS + 32).
                    try initialiseZlib(windowBits: 15 + 32)
                    startMember(firstByte: rest[0])
                    state = .inflating
                } else if rest.count >= 2 {
                    try initialiseZlib(windowBits: Self.isZlibHeader(rest[0], rest[1]) ? 15 : -15)
                    state = .inflating
                } else {
                    state = .sniffing(firstByte: rest[0])
                    totalIn += 1
                    consume(1)
                }
            case .sniffing(let firstByte):
                guard !rest.isEmpty else { return (input.count - rest.count, produced) }
                try initialiseZlib(windowBits: Self.isZlibHeader(firstByte, rest[0]) ? 15 : -15)
                state = .inflating
                // The held byte was already counted in totalIn; feed it to zlib without counting again.
                totalIn -= 1
                var held = firstByte
                let step = try withUnsafeBytes(of: &held) { (byte) throws(HTTPClientError) in
                    try inflateStep(byte, into: UnsafeMutableRawBufferPointer(rebasing: output[produced...]))
                }
                produced += step.produced
            case .inflating:
                let step = try inflateStep(rest, into: UnsafeMutableRawBufferPointer(rebasing: output[produced...]))
                consume(step.consumed)
                produced += step.produced
                guard case .inflating = state else { continue }
                // Input used up and room left over: zlib holds nothing more until more input comes.
                if rest.isEmpty && step.roomLeft { return (input.count, produced) }
                if step.consumed == 0 && step.produced == 0 {
                    // zlib always consumes input while it has output room; guard against spinning.
                    guard rest.isEmpty else { throw fail(corrupt("zlib made no progress")) }
                    return (input.count, produced)
                }
            case .ended(let sawPadding):
                guard !rest.isEmpty else { return (input.count - rest.count, produced) }
                let zeros = rest.firstIndex(where: { $0 != 0 }) ?? rest.count
                totalIn += zeros
                consume(zeros)
                if rest.isEmpty {
                    if zeros > 0 { state = .ended(sawPadding: true) }
                    return (input.count, produced)
                }
                guard encoding == .gzip, !sawPadding, zeros == 0 else {
                    throw fail(corrupt("unexpected data after the end of the compressed stream"))
                }
                // A new gzip member (RFC 1952 §2.2). inflateReset keeps the window bits.
                guard inflateReset(stream) == Z_OK else { throw fail(corrupt("inflateReset failed")) }
                startMember(firstByte: rest[0])
                state = .inflating
            }
        }
        return (input.count - rest.count, produced)
    }

    /// Declares the end of the compressed body.
    ///
    /// - Throws: `.decompressionFailed` with "truncated" in the message if the body stopped before
    ///   the end of the compressed stream: a short body must never pass for a complete one.
    func finish() throws(HTTPClientError) {
        switch state {
        case .start, .ended:
            return
        case .sniffing, .inflating:
            throw fail(HTTPClientError(
                .decompressionFailed,
                "\(encoding.rawValue) data truncated: the body ended before the end of the compressed stream"
                    + " (\(totalIn) bytes in, \(totalOut) bytes out)"))
        case .failed(let error):
            throw error
        }
    }

    // MARK: - Internals

    /// RFC 1950 §2.2: CM (low nibble of CMF) = 8, CINFO (high nibble) ≤ 7 (window ≤ 32 KiB), and
    /// CMF·256 + FLG a multiple of 31.
    static func isZlibHeader(_ cmf: UInt8, _ flg: UInt8) -> Bool {
        cmf & 0x0F == 8 && cmf >> 4 <= 7 && (UInt16(cmf) << 8 | UInt16(flg)) % 31 == 0
    }

    /// Prepares for a member of the `gzip` coding whose first byte is `firstByte`: gzip's magic (0x1F; zlib checks
    /// the second byte) means the trailer is checked here, and zlib's own check is switched off once it has read
    /// the header; anything else is zlib-wrapped (or refused by zlib) and zlib checks it.
    private func startMember(firstByte: UInt8) {
        checksTrailer = checksGzipTrailers && firstByte == 0x1F
        inHeader = checksTrailer
        memberCRC = 0
        memberLength = 0
        _ = inflateValidate(stream, 1)
    }

    /// Adds the bytes a member just decoded to its CRC-32 and length.
    private func sum(_ decoded: UnsafeRawBufferPointer) {
        guard let base = decoded.baseAddress else { return }
        memberCRC = ahttp_crc32(memberCRC, base.assumingMemoryBound(to: UInt8.self), decoded.count)
        memberLength &+= decoded.count
    }

    /// Keeps the last eight bytes of `consumed` input in ``lastInput``.
    private func remember(_ consumed: UnsafeRawBufferPointer) {
        if consumed.count >= 8 {
            lastInput = UInt64(littleEndian: consumed.loadUnaligned(fromByteOffset: consumed.count - 8, as: UInt64.self))
        } else {
            for byte in consumed { lastInput = lastInput >> 8 | UInt64(byte) << 56 }
        }
    }

    /// At a gzip member's end: compares its trailer (CRC-32, then the length modulo 2³², both little-endian) with
    /// what was decoded.
    private func trailerMismatch() -> String? {
        if UInt32(truncatingIfNeeded: lastInput) != memberCRC { return "incorrect data check" }
        if UInt32(truncatingIfNeeded: lastInput >> 32) != UInt32(truncatingIfNeeded: memberLength) {
            return "incorrect length check"
        }
        return nil
    }

    private func initialiseZlib(windowBits: Int32) throws(HTTPClientError) {
        let status = ahttp_inflateInit2(stream, windowBits)
        guard status == Z_OK else {
            throw fail(HTTPClientError(.decompressionFailed, "zlib inflateInit2 failed (\(status))"))
        }
        zlibInitialised = true
    }

    /// One `inflate()` call from `input` into `output`: the bytes consumed and produced, and whether zlib stopped
    /// with output room to spare (it then needs more input before it can produce more). Sets `state` to `.ended`
    /// at a stream (member) end.
    private func inflateStep(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) throws(HTTPClientError) -> (consumed: Int, produced: Int, roomLeft: Bool) {
        // avail_in is 32-bit; a larger input is fed in slices by the caller's loop.
        let offered = min(input.count, Int(UInt32.max))
        let room = min(output.count, Int(UInt32.max))
        // A nil next_in is fine with avail_in 0 (zlib then only drains what it holds).
        stream.pointee.next_in = input.baseAddress.map { UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: UInt8.self)) }
        stream.pointee.avail_in = uInt(offered)
        stream.pointee.next_out = output.baseAddress!.assumingMemoryBound(to: UInt8.self)
        stream.pointee.avail_out = uInt(room)
        // Never leave zlib holding a pointer into the caller's buffers.
        defer {
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
            stream.pointee.next_out = nil
            stream.pointee.avail_out = 0
        }
        let status = inflate(stream, inHeader ? Z_BLOCK : Z_NO_FLUSH)
        // Stopped before the first deflate block (data_type bit 7): the header is read, and checked if it has a CRC.
        // (Z_BUF_ERROR too: a call that reaches that point without consuming input reports no progress.)
        if inHeader && (status == Z_OK || status == Z_BUF_ERROR) && stream.pointee.data_type & 128 != 0 {
            inHeader = false
            _ = inflateValidate(stream, 0)
        }
        let consumed = offered - Int(stream.pointee.avail_in)
        let produced = room - Int(stream.pointee.avail_out)
        let roomLeft = stream.pointee.avail_out != 0
        totalIn += consumed
        if produced > 0 { try account(produced) }
        if checksTrailer {
            if produced > 0 { sum(UnsafeRawBufferPointer(rebasing: output[..<produced])) }
            if consumed > 0 { remember(UnsafeRawBufferPointer(rebasing: input[..<consumed])) }
        }
        // A corrupt stream may still have decoded good bytes in this call: they are returned, and the failure,
        // recorded by `fail`, is thrown by the caller's next step.
        func failing(_ error: HTTPClientError) throws(HTTPClientError) -> (consumed: Int, produced: Int, roomLeft: Bool) {
            let error = fail(error)
            guard produced > 0 else { throw error }
            return (consumed, produced, roomLeft)
        }
        switch status {
        case Z_OK, Z_BUF_ERROR:
            // Z_BUF_ERROR: no progress possible, zlib needs more input (or more room).
            return (consumed, produced, roomLeft)
        case Z_STREAM_END:
            if checksTrailer, let mismatch = trailerMismatch() { return try failing(corrupt(mismatch)) }
            state = .ended(sawPadding: false)
            return (consumed, produced, roomLeft)
        case Z_NEED_DICT:
            return try failing(corrupt("the stream asks for a preset dictionary, which HTTP cannot supply"))
        case Z_DATA_ERROR:
            return try failing(corrupt(stream.pointee.msg.map { String(cString: $0) } ?? "invalid data"))
        case Z_MEM_ERROR:
            return try failing(HTTPClientError(.decompressionFailed, "zlib ran out of memory"))
        default:
            return try failing(corrupt("zlib inflate returned \(status)"))
        }
    }

    /// Counts `produced` decoded bytes against the limits, before they are emitted.
    private func account(_ produced: Int) throws(HTTPClientError) {
        let total = totalOut + produced
        if let maxBytes = limits.maxBytes, total > maxBytes {
            throw fail(HTTPClientError(
                .bodyLimitExceeded, "decompressed size exceeded the limit of \(maxBytes) bytes"))
        }
        if let maxRatio = limits.maxRatio, total > limits.ratioAppliesAfter {
            let (bound, overflow) = max(totalIn, 1).multipliedReportingOverflow(by: maxRatio)
            if !overflow && total > bound {
                throw fail(HTTPClientError(
                    .bodyLimitExceeded,
                    "decompressed size exceeded \(maxRatio) times the compressed size (\(total) bytes from"
                        + " \(totalIn)): refusing a likely decompression bomb"))
            }
        }
        totalOut = total
    }

    private func corrupt(_ detail: String) -> HTTPClientError {
        HTTPClientError(.decompressionFailed, "\(encoding.rawValue) data corrupt: \(detail)")
    }

    private func fail(_ error: HTTPClientError) -> HTTPClientError {
        state = .failed(error)
        return error
    }
}

extension Inflater {
    /// Decodes a whole body at once: ``decompress(_:emit:)`` then ``finish()``.
    static func decompress(
        _ bytes: [UInt8], encoding: ContentCoding, limits: DecompressionLimits = DecompressionLimits()
    ) throws(HTTPClientError) -> [UInt8] {
        let inflater = Inflater(encoding: encoding, limits: limits)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count * 4)
        // Array.withUnsafeBytes is untyped `rethrows`; carry the typed error out in a Result.
        try bytes.withUnsafeBytes { input in
            Result { () throws(HTTPClientError) in
                try inflater.decompress(input) { decoded.append(contentsOf: $0) }
            }
        }.get()
        try inflater.finish()
        return decoded
    }
}

/// A streaming encoder for request bodies: `gzip` (RFC 1952, `windowBits` 31) by default, or
/// zlib-wrapped `deflate` (RFC 1950, as RFC 9110 §8.4.1.2 defines the coding).
///
/// ```swift
/// let deflater = Deflater()
/// try deflater.compress(part) { sendBytes($0) }
/// try deflater.finish { sendBytes($0) }
/// ```
///
/// A class for the same reasons as ``Inflater``. Not `Sendable`: one body, one owner.
final class Deflater {
    let encoding: ContentCoding
    let level: Int32
    /// Uncompressed bytes consumed so far.
    private(set) var totalIn = 0
    /// Compressed bytes emitted so far.
    private(set) var totalOut = 0

    private let stream: UnsafeMutablePointer<z_stream>
    private let output: UnsafeMutableRawBufferPointer
    private var zlibInitialised = false
    private var finished = false

    /// - Parameters:
    ///   - encoding: `.gzip` (the default) or `.deflate` (zlib-wrapped).
    ///   - level: 0…9, or `Z_DEFAULT_COMPRESSION` (-1, which zlib treats as 6; Go's gzip default too).
    ///   - bufferSize: the reusable output buffer; each `emit` gets at most this many bytes.
    init(encoding: ContentCoding = .gzip, level: Int32 = Z_DEFAULT_COMPRESSION, bufferSize: Int = 64 * 1024) {
        precondition((-1...9).contains(level), "zlib compression level must be -1...9")
        precondition(bufferSize > 0 && bufferSize <= Int(UInt32.max), "output buffer size out of range")
        self.encoding = encoding
        self.level = level
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        output = .allocate(byteCount: bufferSize, alignment: 16)
    }

    deinit {
        if zlibInitialised { deflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
        output.deallocate()
    }

    /// Compresses `input`, handing compressed bytes to `emit` as zlib's buffer fills (zlib holds
    /// back small inputs until there is enough to compress well; ``finish(emit:)`` flushes them).
    func compress(
        _ input: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) throws(HTTPClientError) -> Void
    ) throws(HTTPClientError) {
        precondition(!finished, "Deflater.compress called after finish")
        var rest = input
        while !rest.isEmpty {
            let offered = min(rest.count, Int(UInt32.max))
            try run(UnsafeRawBufferPointer(rebasing: rest[..<offered]), flush: Z_NO_FLUSH, emit: emit)
            rest = UnsafeRawBufferPointer(rebasing: rest[offered...])
        }
    }

    /// Writes out everything zlib holds and the gzip trailer (CRC-32 and length). Idempotent.
    func finish(emit: (UnsafeRawBufferPointer) throws(HTTPClientError) -> Void) throws(HTTPClientError) {
        guard !finished else { return }
        try run(UnsafeRawBufferPointer(start: nil, count: 0), flush: Z_FINISH, emit: emit)
        finished = true
    }

    private func run(
        _ input: UnsafeRawBufferPointer, flush: Int32, emit: (UnsafeRawBufferPointer) throws(HTTPClientError) -> Void
    ) throws(HTTPClientError) {
        if !zlibInitialised {
            // windowBits 15 (+16 for the gzip wrapper), memLevel 8: zlib's defaults.
            let status = ahttp_deflateInit2(
                stream, level, encoding == .gzip ? 15 + 16 : 15, 8, Z_DEFAULT_STRATEGY)
            guard status == Z_OK else { throw failure("deflateInit2 returned \(status)") }
            zlibInitialised = true
        }
        stream.pointee.next_in = input.baseAddress.map {
            UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: UInt8.self))
        }
        stream.pointee.avail_in = uInt(input.count)
        defer {
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        while true {
            stream.pointee.next_out = output.baseAddress!.assumingMemoryBound(to: UInt8.self)
            stream.pointee.avail_out = uInt(output.count)
            let availableBefore = stream.pointee.avail_in
            let status = deflate(stream, flush)
            totalIn += Int(availableBefore - stream.pointee.avail_in)
            let produced = output.count - Int(stream.pointee.avail_out)
            if produced > 0 {
                totalOut += produced
                try emit(UnsafeRawBufferPointer(rebasing: output[..<produced]))
            }
            switch status {
            case Z_STREAM_END:
                return
            case Z_OK, Z_BUF_ERROR:
                // Done with this call once the input is consumed and the output buffer was not filled
                // (a full buffer may mean more is pending). Z_FINISH only ends at Z_STREAM_END.
                if flush != Z_FINISH && stream.pointee.avail_in == 0 && stream.pointee.avail_out != 0 { return }
            default:
                throw failure("deflate returned \(status)")
            }
        }
    }

    private func failure(_ detail: String) -> HTTPClientError {
        HTTPClientError(.invalidRequest, "\(encoding.rawValue) compression of the request body failed: \(detail)")
    }
}
