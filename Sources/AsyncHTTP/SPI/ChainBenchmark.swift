// A door into the built-in middleware chain for `bench-asynchttp --chain` (Benchmarks/): what each built-in
// step costs a request, with no I/O. The terminal answers every request with the same response (the head the
// benchmark's nginx sends for its 1 KiB file, the body whole), so the figures are the steps' own CPU time.
// SPI rather than public API, as `ParserBenchmark` is.

import HTTPTypes

/// Runs requests through the default client's built-in middleware, or some of its steps, over a terminal that
/// answers at once.
@_spi(Benchmarks)
public enum ChainBenchmark {
    /// The step names of the default configuration's chain, outermost first.
    public static var stepNames: [String] {
        defaultSteps().map { String(describing: type(of: $0)) }
    }

    /// The built-in steps of a client with the default configuration.
    private static func defaultSteps() -> [any HTTPClientMiddleware] {
        let configuration = HTTPClient.Configuration()
        return HTTPClient.builtInMiddleware(
            configuration, authenticator: Authenticator(configuration: configuration.authentication, logger: configuration.logger),
            proxies: ProxyRouter(configuration.proxy, environmentProxy: configuration.environmentProxy))
    }

    /// Sends `iterations` GETs of `url` through the steps at `steps` (indices into ``stepNames``; nil for all)
    /// and reads each body; returns the nanoseconds per request.
    public static func run(url: String, steps: [Int]?, iterations: Int) async throws -> Double {
        let all = defaultSteps()
        let chosen = steps.map { $0.map { all[$0] } } ?? all
        let body = [UInt8](repeating: 0x61, count: 1024)[...]
        let headers: HTTPFields = [
            .server: "nginx/1.22.1", .date: "Fri, 27 Nov 2026 09:00:00 GMT", .contentType: "application/octet-stream",
            .contentLength: "1024", .lastModified: "Fri, 27 Nov 2026 08:00:00 GMT", .connection: "keep-alive",
            HTTPField.Name("ETag")!: "\"6566a0c0-400\"", .acceptRanges: "bytes",
        ]
        let chain = composeChain(chosen) { request in
            HTTPClientResponse(status: .ok, headers: headers, body: .init(storage: .chunk(body)), url: try request.httpURL())
        }
        let start = ContinuousClock.now
        var bytes = 0
        for _ in 0..<iterations {
            let response = try await chain(HTTPClientRequest(url: url))
            for try await chunk in response.body { bytes += chunk.count }
        }
        let elapsed = ContinuousClock.now - start
        precondition(bytes == iterations * body.count)
        return (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9) / Double(iterations)
    }
}
