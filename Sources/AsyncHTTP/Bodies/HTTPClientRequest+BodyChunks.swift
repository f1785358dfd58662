// A door for the product targets of this package (AsyncHTTPS3) into a request body's chunks, which the core
// keeps internal: AWS Signature Version 4 signs the SHA-256 of the payload, so the signing middleware must read
// a body before it is sent, and re-frame a one-shot stream as signed `aws-chunked` chunks. `package`, not
// `public`: reading a body's bytes outside a send is not part of the library's promise to its users.

extension HTTPClientRequest.Body {
    /// The bytes, when the body is held in memory (`.bytes`); nil for files, forms and streams.
    package var bytesInMemory: [UInt8]? {
        if case .bytes(let bytes) = storage { return bytes }
        return nil
    }

    /// A new reader over the body's chunks, as a send would make it: a file body opens its file again (and
    /// fails now, typed, if it has gone), in-memory bytes come as one chunk. Reading a one-shot stream here
    /// uses it up: check ``isReplayable`` first.
    package func makeChunkReader() throws(HTTPClientError) -> RequestBodyChunks {
        switch storage {
        case .bytes(let bytes):
            var sent = false
            return RequestBodyChunks {
                if sent || bytes.isEmpty { return nil }
                sent = true
                return bytes[...]
            }
        case .stream(_, _, let makeSource):
            return RequestBodyChunks(source: try makeSource())
        }
    }

    /// The same body with each send's chunks passed through `transform`, keeping whether it can be sent again;
    /// `length` is the transformed body's length (nil: unknown, sent chunked). See `mappingSource(length:_:)`.
    package func mappingChunks(
        length: Int?, _ transform: @escaping @Sendable (RequestBodyChunks) -> RequestBodyChunks
    ) -> Self {
        mappingSource(length: length) { source in transform(RequestBodyChunks(source: source)).source }
    }
}

/// The chunks of one send of a request body, pulled by one task at a time (the ownership rule of the
/// internal `BodyChunkSource` it wraps, which makes it `Sendable`).
package struct RequestBodyChunks: Sendable {
    fileprivate let source: BodyChunkSource

    fileprivate init(source: BodyChunkSource) { self.source = source }

    /// A reader that calls `pull` for each chunk; nil from `pull` ends the body.
    package init(_ pull: @escaping () async throws -> ArraySlice<UInt8>?) {
        source = BodyChunkSource(pull)
    }

    /// The next chunk, or nil at the end of the body.
    package func next() async throws -> ArraySlice<UInt8>? { try await source.next() }
}
