// swift-tools-version:6.1
// SPDX-License-Identifier: Apache-2.0

import PackageDescription

let package = Package(
    name: "LayeredCache",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CacheTiers", targets: ["CacheTiers"]),
        .library(name: "HTTPCaching", targets: ["HTTPCaching"]),
        .library(name: "CachingClient", targets: ["CachingClient"]),
        .library(name: "AsyncHTTPClientTransport", targets: ["AsyncHTTPClientTransport"]),
        .executable(name: "cache-tool", targets: ["cache-tool"]),
        .executable(name: "Benchmarks", targets: ["Benchmarks"]),
        .executable(name: "cache-proxy", targets: ["cache-proxy"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-system.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        // NIOHTTPTypes only: the HTTP parts CacheProxyCore's channel handler reads (HummingbirdCore's own).
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.24.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        // HummingbirdCore only (the HTTP/1.1 server), without the swift-configuration trait.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0", traits: []),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        // Hardware CRC-32C (SSE 4.2, the arm64 CRC extension), chosen at run time by CacheTiers.
        .target(name: "CCRC32C"),
        .target(
            name: "CacheTiers",
            dependencies: [
                "CLZ4", "CCRC32C",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "HTTPCaching",
            dependencies: [
                "CacheTiers",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CachingClient",
            dependencies: [
                "HTTPCaching", "CacheTiers",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The only module that imports AsyncHTTPClient.
        .target(
            name: "AsyncHTTPClientTransport",
            dependencies: [
                "CachingClient",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // A programmable HTTP/1.1 origin on loopback for the client and proxy tests.
        .target(
            name: "TestOriginSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The caching reverse proxy: a CachingHTTPClient behind a HummingbirdCore HTTP/1.1 server,
        // over any HTTPTransport (the executable brings AsyncHTTPClient's).
        .target(
            name: "CacheProxyCore",
            dependencies: [
                "CachingClient", "HTTPCaching", "CacheTiers",
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "cache-proxy",
            dependencies: [
                "CacheProxyCore", "HTTPCaching", "CacheTiers", "CachingClient", "AsyncHTTPClientTransport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "CacheTestSupport",
            dependencies: []
        ),
        .executableTarget(
            name: "cache-tool",
            dependencies: [
                "CacheTiers",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "Benchmarks",
            dependencies: [
                "CacheTiers", "HTTPCaching", "CachingClient", "CLZ4", "CacheTestSupport",
                "AsyncHTTPClientTransport", "TestOriginSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Benchmarks"
        ),
        // A child process for the crash tests: writes to a disk tier until it is killed.
        .executableTarget(
            name: "CrashWriter",
            dependencies: ["CacheTiers", "CacheTestSupport"],
            path: "Tests/CrashWriter"
        ),
        // A child process for the memory-budget test: fills a ResponseCache and reports its RSS.
        .executableTarget(
            name: "MemoryFootprint",
            dependencies: [
                "CacheTiers", "HTTPCaching",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Tests/MemoryFootprint"
        ),
        .testTarget(
            name: "CacheTiersTests",
            dependencies: [
                "CacheTiers", "CacheTestSupport", "CrashWriter", "cache-tool",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HTTPCachingTests",
            dependencies: [
                "HTTPCaching", "CacheTiers", "CacheTestSupport", "MemoryFootprint",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "CachingClientTests",
            dependencies: [
                "CachingClient", "AsyncHTTPClientTransport", "HTTPCaching", "CacheTiers", "TestOriginSupport",
                "CacheTestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "CacheProxyTests",
            dependencies: [
                "CacheProxyCore", "CachingClient", "HTTPCaching", "CacheTiers", "TestOriginSupport", "CacheTestSupport",
                "AsyncHTTPClientTransport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// One place for the upcoming features every Swift target builds with.
for target in package.targets where [.regular, .executable, .test].contains(target.type) && target.name != "CCRC32C" {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}
