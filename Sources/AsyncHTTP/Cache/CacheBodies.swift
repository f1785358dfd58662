import HTTPTypes
import Synchronization

/// Records a response body into the cache as the caller reads it, and commits the entry only at its clean
/// end (RFC 9111 §3.3: an incomplete response is not stored as complete). An error, a length that does not
/// match `Content-Length`, a body past ``HTTPCache/maxEntrySize``, or the caller dropping the body before
/// its end all discard what was written.
final class CacheRecorder: Sendable {
    private enum State {
        /// Small so far: kept in memory, to be stored inline.
        case buffering([UInt8])
        /// Spilled to a temporary file in the entry's directory.
        case writing(CacheWriteFile, length: Int, crc: UInt32)
        case finished
    }

    private let cache: HTTPCache
    private let head: CachedResponseHead
    private let storage: HTTPCacheStoragePolicy
    private let expectedLength: Int?
    private let state = Locked(State.buffering([]))

    init(cache: HTTPCache, head: CachedResponseHead, storage: HTTPCacheStoragePolicy, expectedLength: Int?) {
        self.cache = cache
        self.head = head
        self.storage = storage
        self.expectedLength = expectedLength
    }

    func record(_ chunk: ArraySlice<UInt8>) {
        state.withLock { state in
            switch state {
            case .finished:
                return
            case .buffering(var bytes):
                guard bytes.count + chunk.count <= cache.maxEntrySize else { return abandon(&state, "larger than maxEntrySize", replacesStored: true) }
                if bytes.count + chunk.count <= HTTPCache.inlineBodyLimit {
                    state = .finished  // release the buffer before appending, so it is not copied
                    bytes.append(contentsOf: chunk)
                    state = .buffering(bytes)
                    return
                }
                do {
                    let file = try cache.temporaryBodyFile(key: head.key, storage: storage)
                    try file.append(bytes[...])
                    try file.append(chunk)
                    let crc = CRC32.checksum(chunk, continuing: CRC32.checksum(bytes[...]))
                    state = .writing(file, length: bytes.count + chunk.count, crc: crc)
                } catch {
                    abandon(&state, "\(error)")
                }
            case .writing(let file, let length, let crc):
                guard length + chunk.count <= cache.maxEntrySize else { return abandon(&state, "larger than maxEntrySize", replacesStored: true) }
                do {
                    try file.append(chunk)
                    state = .writing(file, length: length + chunk.count, crc: CRC32.checksum(chunk, continuing: crc))
                } catch {
                    abandon(&state, "\(error)")
                }
            }
        }
    }

    /// The body ended cleanly: store the entry if it is whole.
    func finish() {
        let pending: HTTPCache.PendingBody? = state.withLock { state in
            defer { state = .finished }
            switch state {
            case .finished: return nil
            case .buffering(let bytes):
                guard expectedLength == nil || expectedLength == bytes.count else {
                    abandon(&state, "the body is shorter or longer than its Content-Length")
                    return nil
                }
                return .inline(bytes)
            case .writing(let file, let length, let crc):
                guard expectedLength == nil || expectedLength == length else {
                    abandon(&state, "the body is shorter or longer than its Content-Length")
                    return nil
                }
                return .file(file, length: length, crc: crc)
            }
        }
        guard let pending else { return }
        do {
            try cache.commit(head: head, body: pending, storage: storage)
        } catch {
            cache.logger.warning("cache: could not store a response", metadata: ["error": "\(error)"])
            if case .file(let file, _, _) = pending { file.discard() }
        }
    }

    /// The body failed: nothing is stored.
    func abandon() {
        state.withLock { abandon(&$0, nil) }
    }

    /// `replacesStored`: the body is a whole new response that only its size keeps out, so the entry stored before
    /// it is out of date and goes too (a body that failed or came short is no such evidence, and leaves it).
    private func abandon(_ state: inout State, _ why: String?, replacesStored: Bool = false) {
        if case .writing(let file, _, _) = state { file.discard() }
        state = .finished
        if replacesStored { cache.remove(key: head.key) }
        if let why { cache.logger.debug("cache: not storing a response", metadata: ["reason": "\(why)"]) }
    }
}

/// A response body passed through to the caller while a ``CacheRecorder`` keeps a copy.
struct RecordingBody: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let upstream: HTTPClientResponse.Body
    let recorder: CacheRecorder

    struct AsyncIterator: AsyncIteratorProtocol {
        var upstream: HTTPClientResponse.Body.AsyncIterator
        let recorder: CacheRecorder

        mutating func next() async throws -> ArraySlice<UInt8>? {
            do {
                guard let chunk = try await upstream.next() else {
                    recorder.finish()
                    return nil
                }
                recorder.record(chunk)
                return chunk
            } catch {
                recorder.abandon()
                throw error
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(upstream: upstream.makeAsyncIterator(), recorder: recorder)
    }
}

/// A stored body streamed from its file, 64 KiB at a time, never loaded whole. Its CRC-32 is checked as
/// it goes: a body that does not match fails at its end with `HTTPClientError.Code.ioFailure` (and the
/// entry is removed) instead of ending as if whole.
struct CachedFileBody: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let file: CacheReadFile
    let length: Int
    let crc: UInt32
    let onCorrupt: @Sendable () -> Void

    static let chunkSize = 64 * 1024

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: CachedFileBody
        var offset = 0
        var crc: UInt32 = 0
        var done = false

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard !done else { return nil }
            if offset >= body.length {
                done = true
                guard crc == body.crc else {
                    body.onCorrupt()
                    throw HTTPClientError(.ioFailure, "the cached body fails its checksum; the entry was removed")
                }
                return nil
            }
            let count = Swift.min(CachedFileBody.chunkSize, body.length - offset)
            let bytes = try body.file.read(at: offset, count: count)
            guard bytes.count == count else {
                done = true
                body.onCorrupt()
                throw HTTPClientError(.ioFailure, "the cached body is shorter than stored; the entry was removed")
            }
            offset += count
            crc = CRC32.checksum(bytes[...], continuing: crc)
            return bytes[...]
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }
}
