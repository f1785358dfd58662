#if canImport(FoundationEssentials)
import FoundationEssentials
#elseif canImport(Foundation)
import Foundation
#endif

extension HTTPClientRequest.Body {
    /// A body streamed from a file on disk (ASIHTTPRequest's `setShouldStreamPostDataFromDisk:` with
    /// `appendPostDataFromFile:`; curl's `-T` and `--data-binary @file`), never read into memory whole.
    ///
    /// ```swift
    /// var request = HTTPClientRequest(url: "https://example.com/upload/disk.img")
    /// request.method = .put
    /// request.body = try .file("/tmp/disk.img")
    /// let response = try await client.send(request)
    /// ```
    ///
    /// - The file is opened here once to check it: a missing, unreadable or directory path, or a range past
    ///   its end, throws `HTTPClientError.Code.invalidRequest` now, before anything is sent.
    /// - A regular file goes out with `Content-Length` (its size, or `length`) and is replayable: each send
    ///   opens it again and starts from `offset`, so a redirect, an authentication retry or a stale-connection
    ///   retry sends the same bytes again. If the file is shorter than that when it is sent, the request fails
    ///   with `HTTPClientError.Code.invalidRequest` instead of sending a truncated body.
    /// - A pipe or device (`/dev/stdin`, a FIFO) has no size: it is read until it ends, sent chunked, once. A FIFO
    ///   waits for its writer within the request's total deadline (``HTTPClientRequest/timeout``) and cancellation.
    ///
    /// - Parameters:
    ///   - path: the file to send.
    ///   - offset: where in the file the body starts (0: the beginning).
    ///   - length: how many bytes to send from `offset`; nil: to the end of the file.
    public static func file(_ path: String, offset: Int = 0, length: Int? = nil) throws(HTTPClientError) -> Self {
        guard offset >= 0, (length ?? 0) >= 0 else {
            throw .invalidRequest("file body range of \(path) is negative (offset \(offset), length \(length ?? 0))")
        }
        let file = try LocalFile.openForReading(path, what: "request body file")
        defer { file.close() }
        let (size, isRegular) = try file.status()
        guard isRegular else {
            guard offset == 0, length == nil else {
                throw .invalidRequest("\(path) is not a regular file: it cannot be sent from an offset or with a length")
            }
            return Self(storage: .stream(length: nil, replayable: false, makeSource: { () throws(HTTPClientError) in
                FileChunks.sequential(try LocalFile.openForReading(path, what: "request body file"))
            }))
        }
        guard offset <= size else {
            throw .invalidRequest("file body offset \(offset) is past the end of \(path) (\(size) bytes)")
        }
        let count = length ?? (size - offset)
        guard count <= size - offset else {
            throw .invalidRequest("file body range \(offset)+\(count) is past the end of \(path) (\(size) bytes)")
        }
        let slice = FileSlice(path: path, offset: offset, count: count)
        return Self(
            storage: .stream(length: count, replayable: true, makeSource: { () throws(HTTPClientError) in
                try FileChunks.range(slice)
            }),
            directPieces: [.file(slice)])
    }
}

extension HTTPClientRequest.Body {
    /// A body streamed from the file at a `file:` URL; see ``file(_:offset:length:)``.
    public static func file(_ url: URL, offset: Int = 0, length: Int? = nil) throws(HTTPClientError) -> Self {
        guard url.isFileURL else { throw .invalidRequest("\(url) is not a file URL") }
        return try file(url.path, offset: offset, length: length)
    }
}

/// A byte range of a regular file that a body sends as it is (``HTTPClientRequest/Body/file(_:offset:length:)``).
/// Plain TCP sends it with `sendfile` (``DirectPiece``); TLS, a bandwidth limit or a transform read it in chunks
/// (``FileChunks``).
struct FileSlice: Sendable {
    let path: String
    let offset: Int
    let count: Int

    /// Opens the file for one send and checks that it still holds the range (it may have shrunk since the body
    /// was made).
    func open() throws(HTTPClientError) -> LocalFile {
        let file = try LocalFile.openForReading(path, what: "request body file")
        let size = try file.status().size
        guard offset + count <= size else {
            file.close()
            throw .invalidRequest("request body file \(path) is \(size) bytes now, shorter than the \(offset + count) it had")
        }
        return file
    }
}

/// One piece of a body that can go out without being read into memory: bytes as they are, or a regular file's
/// range for `sendfile` (``HTTPClientRequest/Body/directPieces``).
enum DirectPiece: Sendable {
    case bytes([UInt8])
    case file(FileSlice)
}

/// Chunk sources that read a file.
enum FileChunks {
    /// 256 KiB per read: large enough that a GiB costs 4096 `pread`s, small enough that the request's read-ahead
    /// (1 MiB, see `RequestBodyReadAhead`) holds a few chunks for one `sendmsg`. curl reads 64 KiB (its
    /// default upload buffer); larger reads measured no slower here and cost fewer syscalls.
    static let chunkSize = 256 * 1024

    /// The slice's bytes, opened now. Fails if the file is shorter than that now, and again if it shrinks
    /// while it is read: a body is never cut short silently.
    static func range(_ slice: FileSlice) throws(HTTPClientError) -> BodyChunkSource {
        let file = try slice.open()
        let (path, offset, count) = (slice.path, slice.offset, slice.count)
        var position = offset
        let end = offset + count
        return BodyChunkSource {
            guard position < end else {
                file.close()
                return nil
            }
            let chunk = try file.read(upTo: min(chunkSize, end - position), at: position)
            guard !chunk.isEmpty else {
                file.close()
                throw HTTPClientError.invalidRequest(
                    "request body file \(path) ended after \(position - offset) of its \(count) bytes (it shrank while being sent)")
            }
            position += chunk.count
            return chunk[...]
        }
    }

    /// A pipe or device read until it ends. A FIFO is read as it becomes readable, waiting on the event loop (a
    /// blocking `read` would hold a cooperative thread while its writer is silent, out of reach of the request's
    /// deadline and cancellation); the first read waits first, since before a writer opens it a FIFO reads as ended.
    static func sequential(_ file: LocalFile) -> BodyChunkSource {
        guard file.isFIFO else {
            return BodyChunkSource {
                let chunk = try file.readSequential(upTo: chunkSize)
                if chunk.isEmpty {
                    file.close()
                    return nil
                }
                return chunk[...]
            }
        }
        var readable = false
        return BodyChunkSource {
            do {
                while true {
                    if !readable {
                        try await file.waitUntilReadable()
                        readable = true
                    }
                    switch try file.readAvailable(upTo: chunkSize) {
                    case .bytes(let chunk):
                        return chunk[...]
                    case .end:
                        file.close()
                        return nil
                    case .wouldBlock:
                        readable = false
                    }
                }
            } catch {
                file.close()
                throw error
            }
        }
    }
}
