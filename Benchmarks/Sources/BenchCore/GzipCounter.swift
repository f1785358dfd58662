import CBenchZlib

/// Inflates a gzip stream fed in pieces and counts the output, which is discarded.
///
/// For clients without built-in decompression (AsyncHTTP, until its compression middleware is wired):
/// the benchmark streams the compressed body through zlib itself, with a 64 KiB output buffer, the way such
/// a middleware would. One `inflate()` call per output buffer-full, never per byte.
public final class GzipCounter {
    private let stream: UnsafeMutablePointer<z_stream>
    private let output: UnsafeMutableRawBufferPointer
    private var finished = false
    /// Decompressed bytes so far.
    public private(set) var count = 0

    public init() throws {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        output = .allocate(byteCount: 64 << 10, alignment: 16)
        // 15 + 16: a gzip wrapper (RFC 1952) around a 32 KiB window.
        guard cbench_inflateInit2(stream, 15 + 16) == Z_OK else {
            output.deallocate()
            stream.deallocate()
            throw BenchError("inflateInit2 failed")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        output.deallocate()
    }

    /// Inflates `input` completely.
    public func feed(_ input: UnsafeRawBufferPointer) throws {
        guard input.count > 0 else { return }
        guard !finished else { throw BenchError("bytes after the end of the gzip stream") }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        repeat {
            stream.pointee.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(output.count)
            let status = inflate(stream, Z_NO_FLUSH)
            count += output.count - Int(stream.pointee.avail_out)
            if status == Z_STREAM_END {
                finished = true
                break
            }
            if status == Z_BUF_ERROR { break }  // no progress possible: needs more input
            guard status == Z_OK else { throw BenchError("inflate failed with \(status)") }
        } while stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0
    }

    public func feed(_ input: ArraySlice<UInt8>) throws {
        try input.withUnsafeBytes { try feed($0) }
    }

    /// Throws unless the whole gzip stream arrived.
    public func finish() throws -> Int {
        guard finished else { throw BenchError("the gzip stream was truncated") }
        return count
    }
}
