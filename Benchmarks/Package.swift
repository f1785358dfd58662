// swift-tools-version:6.1
import PackageDescription

// The benchmark harness: one executable per client, the same command line and one JSON line of output
// each, so `run.sh` can interleave them against one nginx. A package of its own so that `swift test` at the
// root never builds async-http-client and its SwiftNIO tree.
let package = Package(
    name: "AsyncHTTPBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "AsyncHTTP", path: ".."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Already in the graph through the two above; named so the benchmark may import their modules.
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        // What the clients share: command line, scenarios, timing, memory figures, JSON output.
        .target(name: "BenchCore"),
        .executableTarget(
            name: "bench-asynchttp",
            dependencies: [
                "BenchCore",
                .product(name: "AsyncHTTP", package: "AsyncHTTP"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .executableTarget(
            name: "bench-ahc",
            dependencies: [
                "BenchCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .executableTarget(
            name: "bench-urlsession",
            dependencies: ["BenchCore"]
        ),
        // 100,000 GETs at 256 concurrency through one client, with faults: errors by code, fds, RSS (load.sh).
        .executableTarget(
            name: "load-asynchttp",
            dependencies: ["BenchCore", .product(name: "AsyncHTTP", package: "AsyncHTTP")]
        ),
        .executableTarget(
            name: "bench-parser",
            dependencies: ["BenchCore", .product(name: "AsyncHTTP", package: "AsyncHTTP")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
