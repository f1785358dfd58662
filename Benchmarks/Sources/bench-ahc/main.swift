import AsyncHTTPClient
import BenchCore
import NIOCore
import NIOFileSystem
import NIOSSL

/// async-http-client as its README shows it: `HTTPClient(eventLoopGroupProvider: .singleton)`, `execute`,
/// and the body read as an async sequence of `ByteBuffer`s.
struct AHCDriver: BenchDriver {
    let client: HTTPClient

    init(_ options: Options) throws {
        var configuration = HTTPClient.Configuration()
        // HTTP/1.1 only, as AsyncHTTP (nginx here offers no h2 either; this just skips ALPN differences).
        configuration.httpVersion = .http1Only
        configuration.connectionPool = .init(idleTimeout: .seconds(60),
                                             concurrentHTTP1ConnectionsPerHostSoftLimit: options.connectionsPerHost)
        if options.scenario == .gzip {
            configuration.decompression = .enabled(limit: .none)
        }
        if let cacert = options.cacert {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(cacert)
            configuration.tlsConfiguration = tls
        }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func get(_ url: String, newConnection: Bool) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        if newConnection { request.headers.add(name: "Connection", value: "close") }
        let response = try await client.execute(request, timeout: .seconds(60))
        var bytes = 0
        for try await buffer in response.body { bytes += buffer.readableBytes }
        guard response.status.code == 200 else { throw BenchError("GET \(url): status \(response.status.code)") }
        return bytes
    }

    func getDecompressed(_ url: String) async throws -> Int {
        // The decompression configuration adds Accept-Encoding and inflates.
        try await get(url, newConnection: false)
    }

    func put(_ url: String, chunk: [UInt8], total: Int) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .PUT
        let buffer = ByteBuffer(bytes: chunk)
        request.body = .stream(RepeatedChunks(buffer, count: total / chunk.count), length: .known(Int64(total)))
        let response = try await client.execute(request, timeout: .seconds(120))
        for try await _ in response.body {}
        guard (200..<300).contains(response.status.code) else { throw BenchError("PUT \(url): status \(response.status.code)") }
        return total
    }

    /// AHC has no file body of its own: its documentation streams one with NIOFileSystem's `readChunks`.
    /// AHC has no multipart builder either; the part's head and tail are sent around the file's chunks.
    func putFile(_ url: String, path: String, multipart: Bool) async throws -> Int {
        try await FileSystem.shared.withFileHandle(forReadingAt: FilePath(path)) { handle in
            let size = Int(try await handle.info().size)
            var request = HTTPClientRequest(url: url)
            request.method = .PUT
            let chunks = handle.readChunks(in: 0..<Int64(size), chunkLength: .kibibytes(128))
            if multipart {
                let boundary = "AHCBench\(UInt64.random(in: 0...UInt64.max))"
                let head = ByteBuffer(string: "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; "
                    + "filename=\"upload.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n")
                let tail = ByteBuffer(string: "\r\n--\(boundary)--\r\n")
                request.headers.add(name: "Content-Type", value: "multipart/form-data; boundary=\(boundary)")
                request.body = .stream(
                    Framed(head: head, chunks: chunks, tail: tail),
                    length: .known(Int64(head.readableBytes + size + tail.readableBytes)))
            } else {
                request.body = .stream(chunks, length: .known(Int64(size)))
            }
            let response = try await client.execute(request, timeout: .seconds(120))
            for try await _ in response.body {}
            guard (200..<300).contains(response.status.code) else {
                throw BenchError("PUT \(url): status \(response.status.code)")
            }
            return size
        }
    }

    /// AHC's own way to download to disk: `FileDownloadDelegate` on the delegate API.
    func download(_ url: String, to path: String) async throws -> Int {
        let delegate = try FileDownloadDelegate(path: path)
        let request = try HTTPClient.Request(url: url)
        let response = try await client.execute(request: request, delegate: delegate, deadline: .now() + .seconds(120)).get()
        guard response.head.status.code == 200 else { throw BenchError("GET \(url): status \(response.head.status.code)") }
        return response.receivedBytes
    }

    func shutdown() async throws {
        try await client.shutdown()
    }
}

/// `head`, then every chunk of `chunks`, then `tail`: a multipart body around a file's chunks.
struct Framed<Chunks: AsyncSequence & Sendable>: AsyncSequence, Sendable where Chunks.Element == ByteBuffer {
    typealias Element = ByteBuffer
    let head: ByteBuffer
    let chunks: Chunks
    let tail: ByteBuffer

    struct AsyncIterator: AsyncIteratorProtocol {
        enum Stage { case head, body, done }
        var stage = Stage.head
        let head: ByteBuffer
        var inner: Chunks.AsyncIterator
        let tail: ByteBuffer

        mutating func next() async throws -> ByteBuffer? {
            switch stage {
            case .head:
                stage = .body
                return head
            case .body:
                if let chunk = try await inner.next() { return chunk }
                stage = .done
                return tail
            case .done:
                return nil
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(head: head, inner: chunks.makeAsyncIterator(), tail: tail)
    }
}

await Bench.main(client: "ahc") { options in try AHCDriver(options) }
