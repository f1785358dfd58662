import AsyncHTTP
import BenchCore
import HTTPTypes

#if canImport(Glibc)
import Glibc
#endif

/// AsyncHTTP as its README shows it: one `HTTPClient` with the default configuration (its built-in middleware
/// included), `send`, and the body read with `for try await`.
struct AsyncHTTPDriver: BenchDriver {
    let client: HTTPClient
    /// `--progress`: every request carries a progress handler that does nothing.
    let progress: HTTPProgressHandler?

    init(_ options: Options) throws {
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerHost = options.connectionsPerHost
        if let cacert = options.cacert {
            configuration.tls.trustRoots = .file(cacert)
        }
        if options.scenario == .cacheHit || options.scenario == .cacheRevalidate {
            // The download cache on disk (a tmpfs directory in run.sh), with its default policy.
            configuration.cache = try HTTPCache(directory: "\(options.directory)/asynchttp-cache-\(getpid())")
        }
        client = HTTPClient(configuration: configuration)
        progress = options.progress ? HTTPProgressHandler { _ in } : nil
    }

    func get(_ url: String, newConnection: Bool) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.persistentConnection = !newConnection
        if let progress { request.progressHandler = progress }
        return try await fetch(request)
    }

    func get(_ url: String, observingProgress: Bool) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        if observingProgress { request.progressHandler = Self.noProgress }
        return try await fetch(request)
    }

    /// Sends a GET, reads its whole body and returns its size; a status other than 200 is an error.
    private func fetch(_ request: HTTPClientRequest) async throws -> Int {
        let response = try await client.send(request)
        var bytes = 0
        for try await chunk in response.body { bytes += chunk.count }
        guard response.status.code == 200 else { throw BenchError("GET \(request.url): status \(response.status.code)") }
        return bytes
    }

    /// The handler of `--alternate-progress`'s watched half: does nothing, as `--progress`'s.
    static let noProgress = HTTPProgressHandler { _ in }

    func getDecompressed(_ url: String) async throws -> Int {
        // The built-in compression middleware (on by default) sends `Accept-Encoding: gzip, deflate` and
        // inflates the body as it streams in.
        let response = try await client.send(HTTPClientRequest(url: url))
        var bytes = 0
        for try await chunk in response.body { bytes += chunk.count }
        guard response.status.code == 200 else { throw BenchError("GET \(url): status \(response.status.code)") }
        guard response.isCompressed else { throw BenchError("GET \(url): the response was not compressed") }
        return bytes
    }

    func put(_ url: String, chunk: [UInt8], total: Int) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .put
        request.body = .stream(RepeatedChunks(chunk, count: total / chunk.count), length: .known(total))
        let response = try await client.send(request)
        for try await _ in response.body {}
        guard (200..<300).contains(response.status.code) else { throw BenchError("PUT \(url): status \(response.status.code)") }
        return total
    }

    /// The file as the body (`.file`: streamed from disk, replayable, with its length), or as the one file
    /// part of a `MultipartForm` (its length computed up front, so it goes out with `Content-Length` too).
    func putFile(_ url: String, path: String, multipart: Bool) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .put
        if multipart {
            var form = MultipartForm()
            try form.appendFile("file", path: path, filename: "upload.bin", contentType: "application/octet-stream")
            try request.setForm(form)
        } else {
            request.body = try .file(path)
        }
        let size = try HTTPClientRequest.Body.file(path).length ?? 0
        let response = try await client.send(request)
        for try await _ in response.body {}
        guard (200..<300).contains(response.status.code) else { throw BenchError("PUT \(url): status \(response.status.code)") }
        return size
    }

    /// `download(_:to:)`: a temporary file beside the destination, renamed into place when the body is complete.
    func download(_ url: String, to path: String) async throws -> Int {
        let result = try await client.download(HTTPClientRequest(url: url), to: path)
        guard result.status.code == 200, result.written else { throw BenchError("GET \(url): status \(result.status.code)") }
        return result.fileSize
    }

    func shutdown() async throws {
        await client.shutdown()
    }
}

await Bench.main(client: "asynchttp") { options in try AsyncHTTPDriver(options) }
