@testable import AsyncHTTP

/// `bytes` as one gzip member, made with the library's own `Deflater` (a test server's coded body).
func gzipped(_ bytes: [UInt8]) throws -> [UInt8] {
    let deflater = Deflater(encoding: .gzip)
    var output: [UInt8] = []
    try bytes.withUnsafeBytes { input in
        try deflater.compress(input) { output.append(contentsOf: $0) }
        try deflater.finish { output.append(contentsOf: $0) }
    }
    return output
}
