// swift-tools-version:6.1
import PackageDescription

// The library depends on system OpenSSL 3 and zlib plus two small Apple packages.
//
// Three layers, each a target, so that an arrow the design forbids does not compile (docs/architecture.md):
//   AsyncHTTP1      sans-IO HTTP/1.x: parser, encoder, the connection's state; HTTPTypes only, no OS, no client
//   AsyncHTTPCore   vocabulary every layer shares: errors, URL, deadlines, configuration values
//   AsyncHTTP       the library users import: IO, pool, transport, middleware, client (re-exports the two)
// Linux only for now: the event loop is epoll. A kqueue backend is one file in IO/ (see IO/EventLoop.swift);
// until one exists and has run, no Apple platform is declared.
// SwiftNIO and swift-nio-ssl are test-only: they power an independent in-process server.
// Heavy comparison clients (async-http-client) live in Benchmarks/' own package.
let package = Package(
    name: "AsyncHTTP",
    products: [
        .library(name: "AsyncHTTP", targets: ["AsyncHTTP"]),
        .executable(name: "ahttp", targets: ["ahttp"]),
        // AsyncHTTPWebArchive: whole web pages for offline reading (ASIWebPageRequest); links libxml2.
        .library(name: "AsyncHTTPWebArchive", targets: ["AsyncHTTPWebArchive"]),
        // AsyncHTTPS3: AWS Signature Version 4 and Amazon S3 operations (docs/s3.md).
        .library(name: "AsyncHTTPS3", targets: ["AsyncHTTPS3"]),
        // Telemetry adapters (issue 18), each its own product so the core links neither dependency.
        .library(name: "AsyncHTTPTracing", targets: ["AsyncHTTPTracing"]),
        .library(name: "AsyncHTTPMetrics", targets: ["AsyncHTTPMetrics"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // Documentation (scripts/docs.sh): `swift package generate-documentation`, a command plugin that no
        // target links; it builds nothing unless the command is run.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Telemetry adapters: AsyncHTTPTracing and AsyncHTTPMetrics.
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // ahttp (the CLI) only: its argument parsing, help and shell completions. The library does not link it.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // libxml2, for the layers that read markup (S3's XML, the web archive's HTML); the core does not link it.
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // Linux readiness APIs (epoll, eventfd) that Glibc's Swift module does not export.
        .systemLibrary(name: "CEpoll"),
        // CRC-32 folded with carry-less multiplication (x86-64), zlib's crc32_z elsewhere: the gzip trailer's check,
        // which zlib's own table code made 14 % of the client's CPU on gzip bodies (docs/performance.md).
        .target(
            name: "CCRC32",
            linkerSettings: [.linkedLibrary("z")]
        ),
        // Compiler intrinsics without a Swift spelling (a cache prefetch for the parser), as static inline C.
        .systemLibrary(name: "CIntrinsics"),
        .target(
            name: "AsyncHTTP1",
            dependencies: [
                "CIntrinsics",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .target(
            name: "AsyncHTTPCore",
            dependencies: [
                "AsyncHTTP1",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .target(
            name: "AsyncHTTP",
            dependencies: [
                "AsyncHTTP1",
                "AsyncHTTPCore",
                "COpenSSL",
                "CEpoll",
                "CZlib",
                "CCRC32",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The Public Suffix List for the cookie jar, with its MPL-2.0 licence and where it came from. It is
            // compiled in (Generated/PublicSuffixListData.swift, made by scripts/embed-psl.sh), not a resource:
            // a resource's generated `Bundle.module` accessor would link Foundation into every user's program.
            exclude: ["Resources"]
        ),
        // AsyncHTTPWebArchive: a page with its images, stylesheets, scripts and frames, for offline reading.
        .target(
            name: "AsyncHTTPWebArchive",
            dependencies: ["AsyncHTTP", "CLibXML2"]
        ),
        // AsyncHTTPS3: SigV4 over OpenSSL's digests, S3's XML through libxml2; no Foundation (FoundationEssentials).
        .target(
            name: "AsyncHTTPS3",
            dependencies: ["AsyncHTTP", "CLibXML2", "COpenSSL"]
        ),
        // Telemetry adapters (issue 18): swift-distributed-tracing spans and swift-metrics instruments over the
        // core's middleware and observer hooks. Neither links Foundation.
        .target(
            name: "AsyncHTTPTracing",
            dependencies: [
                "AsyncHTTP",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "AsyncHTTPMetrics",
            dependencies: [
                "AsyncHTTP",
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .executableTarget(
            name: "ahttp",
            dependencies: [
                "AsyncHTTP",
                "AsyncHTTPWebArchive",
                "AsyncHTTPS3",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "AsyncHTTPTests",
            dependencies: [
                "AsyncHTTP",
                "AsyncHTTP1",
                "AsyncHTTPCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                "AsyncHTTPWebArchive",
                "AsyncHTTPS3",
                // CLibXML2: the loader of libxml2's table, tested directly (LibXML2LoaderTests).
                "CLibXML2",
                // AsyncHTTPOpenAPI: the transport, and the runtime its generated test client (OpenAPIGenerated/) imports.
                "AsyncHTTPOpenAPI",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                "AsyncHTTPTracing",
                "AsyncHTTPMetrics",
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                // ahttp's pure parts (config files, -w, headers, URL targets) as unit tests.
                "ahttp",
            ],
            resources: [.copy("Resources")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// AsyncHTTPOpenAPI: a swift-openapi-runtime `ClientTransport` over `HTTPClient` (docs/openapi.md), its own
// product so the core links nothing of OpenAPI. The runtime without its `FullFoundation` trait: on Linux it then
// needs FoundationEssentials only, as the core does.
package.dependencies.append(
    .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4", traits: []))
package.products.append(.library(name: "AsyncHTTPOpenAPI", targets: ["AsyncHTTPOpenAPI"]))
package.targets.append(
    .target(
        name: "AsyncHTTPOpenAPI",
        dependencies: [
            "AsyncHTTP",
            .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ]
    ))

// libFuzzer targets (Fuzz/, docs/fuzzing.md), built only by scripts/fuzz.sh, which sets ASYNCHTTP_FUZZ and
// passes -sanitize=fuzzer,address: without the variable they do not exist, so `swift build` and `swift test`
// never see them. They live in this package because they reach the targets' `package` (and, with
// -enable-testing, internal) API.
if Context.environment["ASYNCHTTP_FUZZ"] != nil {
    package.targets.append(
        .target(
            name: "FuzzSupport",
            dependencies: ["AsyncHTTP1", .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Fuzz/Sources/FuzzSupport"
        ))
    for name in [
        "FuzzResponseParser", "FuzzChunked", "FuzzURL", "FuzzCookie", "FuzzAuthChallenge", "FuzzPublicSuffix",
        "FuzzInflate",
    ] {
        package.targets.append(
            .executableTarget(
                name: name,
                dependencies: ["FuzzSupport", "AsyncHTTP", "AsyncHTTP1", "AsyncHTTPCore"],
                path: "Fuzz/Sources/" + name
            ))
    }
}
