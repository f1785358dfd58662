import AsyncHTTPClient
import BenchCore
import NIOCore
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
                                             concurrentHTTP1ConnectionsPerHostSoftLimit: options.concurrency)
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

    func shutdown() async throws {
        try await client.shutdown()
    }
}

await Bench.main(client: "ahc") { options in try AHCDriver(options) }
