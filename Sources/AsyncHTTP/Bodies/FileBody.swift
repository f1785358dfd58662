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
    /// - A pipe or device (`/dev/stdin`, a FIFO) has no size: it is read until it ends, sent chunked, once.
    ///
    /// - Parameters:
    ///   - path: the file to send.
    ///   - offset: where in the file the body starts (0: the beginning).
    ///   - length: how many bytes to send from `offset`; nil: to the end of the file.
    public static func file(_ path: String, offset: Int = 0, length: Int? = nil) throws(HTTPClientError) -> Self {
        guard offset >= 0, (length ?? 0) >= 0 else {
            throw .invalidRequest("file body range of \(path) is negative (offset \(offset), length \(length ?? 0))")
        }
        let file = try LocalFile.openForReading(path, what: "request body file", checkOnly: true)
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
        return Self(storage: .stream(length: count, replayable: true, makeSource: { () throws(HTTPClientError) in
            try FileChunks.range(path: path, offset: offset, count: count)
        }))
    }
}

extension HTTPClientRequest.Body {
    /// A body streamed from the file at a `file:` URL; see ``file(_:offset:length:)``.
    public static func file(_ url: URL, offset: Int = 0, length: Int? = nil) throws(HTTPClientError) -> Self {
        guard url.isFileURL else { throw .invalidRequest("\(url) is not a file URL") }
        return try file(url.path, offset: offset, length: length)
    }
}

/// Chunk sources that read a file.
enum FileChunks {
    /// 256 KiB per read: large enough that a GiB costs 4096 `pread`s, small enough that the request's read-ahead
    /// (1 MiB, see `RequestBodyReadAhead`) holds a few chunks for one `sendmsg`. curl reads 64 KiB (its
    /// default upload buffer); larger reads measured no slower here and cost fewer syscalls.
    static let chunkSize = 256 * 1024

    /// `count` bytes of `path` from `offset`, opened now. Fails if the file is shorter than that now, and
    /// again if it shrinks while it is read: a body is never cut short silently.
    static func range(path: String, offset: Int, count: Int) throws(HTTPClientError) -> BodyChunkSource {
        let file = try LocalFile.openForReading(path, what: "request body file")
        let size = try file.status().size
        guard offset + count <= size else {
            throw .invalidRequest("request body file \(path) is \(size) bytes now, shorter than the \(offset + count) it had")
        }
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

    /// A pipe or device read until it ends.
    static func sequential(_ file: LocalFile) -> BodyChunkSource {
        BodyChunkSource {
            let chunk = try file.readSequential(upTo: chunkSize)
            if chunk.isEmpty {
                file.close()
                return nil
            }
            return chunk[...]
        }
    }
}
