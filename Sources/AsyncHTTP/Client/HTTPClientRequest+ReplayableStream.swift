extension HTTPClientRequest.Body {
    /// A stream of byte chunks that can be sent again: `makeChunks` makes a new sequence for each send, from
    /// the first byte. A redirect (307/308), an authentication retry or a stale-connection retry sends the body
    /// again instead of failing with `HTTPClientError/Code/bodyNotReplayable` as a one-shot
    /// ``stream(_:length:)`` does.
    ///
    /// For sources that can start over: a buffer in memory sent in pieces, a generator, a swift-openapi-runtime
    /// `HTTPBody` whose `iterationBehavior` is `.multiple` (the AsyncHTTPOpenAPI transport uses this).
    ///
    /// ```swift
    /// let bytes = [UInt8](repeating: 0, count: 1 << 20)
    /// request.body = .replayableStream(length: .known(bytes.count)) {
    ///     AsyncStream { continuation in      // made afresh for each send
    ///         for start in stride(from: 0, to: bytes.count, by: 65_536) {
    ///             continuation.yield(bytes[start..<min(start + 65_536, bytes.count)])
    ///         }
    ///         continuation.finish()
    ///     }
    /// }
    /// ```
    ///
    /// Each sequence is iterated as a one-shot stream's is (a child task of the request, read ahead at most
    /// 1 MiB); with a known length, the sequence must yield exactly that many bytes.
    public static func replayableStream<Chunks: AsyncSequence & Sendable>(
        length: Length = .unknown, _ makeChunks: @escaping @Sendable () -> Chunks
    ) -> HTTPClientRequest.Body where Chunks.Element: Collection<UInt8> {
        let knownLength: Int? = if case .known(let n) = length { n } else { nil }
        return HTTPClientRequest.Body(storage: .stream(length: knownLength, replayable: true, makeSource: { () throws(HTTPClientError) in
            var iterator = makeChunks().makeAsyncIterator()
            return BodyChunkSource {
                guard let element = try await iterator.next() else { return nil }
                if let slice = element as? ArraySlice<UInt8> { return slice }
                if let array = element as? [UInt8] { return array[...] }
                return Array(element)[...]
            }
        }))
    }
}
