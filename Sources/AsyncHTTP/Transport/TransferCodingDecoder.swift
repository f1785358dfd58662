/// Undoes the transfer coding applied under `chunked` (`Transfer-Encoding: gzip, chunked`) as the de-chunked
/// body passes through the connection (RFC 9112 §7: transfer codings are hop-by-hop, so the transport removes
/// them; the parser only reports which one, in ``HTTP1ResponseHead/transferCoding``).
///
/// The same zlib stream and decompression-bomb limits as the compression middleware (``Inflater``,
/// ``DecompressionLimits``): corrupt or truncated data is `HTTPClientError.Code.decompressionFailed`, a bomb
/// `HTTPClientError.Code.bodyLimitExceeded`. Coded bytes are fed in slices of
/// ``CompressionMiddleware/inputSliceSize``, so one step yields a bounded amount even at deflate's worst ratio.
///
/// Ownership: one per response, used by the task holding the connection's lease.
final class TransferCodingDecoder {
    let coding: HTTP1TransferCoding
    private let inflater: Inflater
    /// De-chunked, still coded bytes not yet inflated.
    private var pending: ArraySlice<UInt8> = []

    init(coding: HTTP1TransferCoding, limits: DecompressionLimits) {
        self.coding = coding
        inflater = Inflater(encoding: coding == .gzip ? .gzip : .deflate, limits: limits)
    }

    /// Hands over the next de-chunked bytes; call ``next()`` until it returns nil before feeding more.
    func feed(_ chunk: ArraySlice<UInt8>) {
        pending = chunk
    }

    /// The next decoded bytes from what was fed, or nil once it is all inflated (zlib may need more input).
    func next() throws(HTTPClientError) -> ArraySlice<UInt8>? {
        while !pending.isEmpty {
            let input = pending.prefix(CompressionMiddleware.inputSliceSize)
            pending = pending.dropFirst(input.count)
            var decoded: [UInt8] = []
            let inflater = self.inflater
            let result = input.withUnsafeBytes { bytes in
                Result { () throws(HTTPClientError) in try inflater.decompress(bytes) { decoded.append(contentsOf: $0) } }
            }
            do {
                try result.get()
            } catch {
                throw named(error)
            }
            if !decoded.isEmpty { return decoded[...] }
        }
        return nil
    }

    /// The chunked body ended: the coded stream must have ended too, or the body was cut short.
    func finish() throws(HTTPClientError) {
        do {
            try inflater.finish()
        } catch {
            throw named(error)
        }
    }

    /// Says that the failure is in the transfer coding, not a content coding.
    private func named(_ error: HTTPClientError) -> HTTPClientError {
        var error = error
        error.message = "Transfer-Encoding \(coding.rawValue): " + error.message
        return error
    }
}
