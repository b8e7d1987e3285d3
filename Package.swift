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
        .library(name: "EntityCaching", targets: ["EntityCaching"]),
        .library(name: "AsyncHTTPClientTransport", targets: ["AsyncHTTPClientTransport"]),
        .library(name: "PostgresCacheTier", targets: ["PostgresCacheTier"]),
        .library(name: "HummingbirdLayeredCache", targets: ["HummingbirdLayeredCache"]),
        .library(name: "VaporLayeredCache", targets: ["VaporLayeredCache"]),
        .executable(name: "cache-tool", targets: ["cache-tool"]),
        .executable(name: "Benchmarks", targets: ["Benchmarks"]),
        .executable(name: "cache-proxy", targets: ["cache-proxy"]),
    ],
    // The core products (CacheTiers, HTTPCaching, CachingClient) need only the core packages; each
    // integration is a trait, so that a consumer resolves only what it enables (README, "Traits").
    traits: [
        .trait(
            name: "AsyncHTTPClient",
            description: "AsyncHTTPClientTransport: CachingHTTPClient's transport over AsyncHTTPClient and SwiftNIO."
        ),
        .trait(
            name: "Hummingbird",
            description: "HummingbirdLayeredCache: a response-cache middleware and a persist driver for Hummingbird 2."
        ),
        .trait(
            name: "Vapor",
            description:
                "VaporLayeredCache: a Vapor Cache driver, an HTTP-cache middleware and a lifecycle handler for Vapor 4."
        ),
        .trait(
            name: "PostgreSQL",
            description: "PostgresCacheTier: a tier shared by many instances on PostgreSQL (postgres-nio)."
        ),
        .trait(
            name: "Proxy",
            description: "cache-proxy and CacheProxyCore: the caching reverse proxy (HummingbirdCore, AsyncHTTPClient; "
                + "--postgres shares its cache through PostgreSQL).",
            enabledTraits: ["AsyncHTTPClient", "PostgreSQL"]
        ),
        .trait(
            name: "OpenSSL",
            description: "Encrypted disk hits opened on Linux through BoringSSL's AEAD as swift-crypto links it (the "
                + "OpenSSL family; no system library): a cipher context keyed once per key and shared by every reader, "
                + "about 1.5 µs less per small hit than swift-crypto's per-call context."
        ),
        .trait(
            name: "Tools",
            description: "cache-tool and Benchmarks (argument-parser, hdrhistogram), and every other trait they use.",
            enabledTraits: ["AsyncHTTPClient", "Hummingbird", "PostgreSQL", "Proxy", "OpenSSL"]
        ),
        // Most apps that fetch through the cache want a transport; nothing else is on by default.
        .default(enabledTraits: ["AsyncHTTPClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-system.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
        // RawStructuredFieldValues: RFC 8941 fields (CDN-Cache-Control), no other dependency.
        .package(url: "https://github.com/apple/swift-http-structured-headers.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        // NIOHTTPTypes only: the HTTP parts CacheProxyCore's channel handler reads (HummingbirdCore's own).
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.24.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        // HummingbirdCore only (the HTTP/1.1 server), without the swift-configuration trait.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0", traits: []),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.115.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.25.0"),
        // HTTP/2 on cache-proxy's listener (AsyncHTTPClient and HummingbirdCore already build it).
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.45.0"),
        // cache-proxy's /metrics (the Prometheus text format).
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.1.0"),
        // The DocC plugin behind `make docs`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.4.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        // BoringSSL's AEAD interface as swift-crypto links it on Linux (declarations only), under the
        // OpenSSL trait: AES-GCM with a context keyed once, for encrypted disk hits (swift-crypto
        // makes and keys a new context on every call; see GCMOpener.swift).
        .target(name: "CCryptoAEAD"),
        // Hardware CRC-32C (SSE 4.2, the arm64 CRC extension), chosen at run time by CacheTiers.
        .target(name: "CCRC32C"),
        // The processor a thread runs on (sched_getcpu, pthread_cpu_number_np), which the memory
        // tier's reader locks are chosen by.
        .target(name: "CCurrentProcessor"),
        // What the executables do when built without their trait: run again with every trait.
        .target(name: "TraitTrampoline"),
        .target(
            name: "CacheTiers",
            dependencies: [
                "CLZ4", "CCRC32C", "CCurrentProcessor",
                .target(name: "CCryptoAEAD", condition: .when(platforms: [.linux], traits: ["OpenSSL"])),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The shared tier on PostgreSQL: the only module that imports PostgresNIO.
        .target(
            name: "PostgresCacheTier",
            dependencies: [
                "CacheTiers",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(
                    name: "NIOConcurrencyHelpers",
                    package: "swift-nio",
                    condition: .when(traits: ["PostgreSQL"])
                ),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HTTPCaching",
            dependencies: [
                "CacheTiers",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "CachingClient",
            dependencies: [
                "HTTPCaching", "CacheTiers",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // Entities by ID and query indexes over them: the offline-first data layer, on TieredCache
        // and the client's read policies (no HTTP in its names; the app's fetcher speaks to the API).
        .target(
            name: "EntityCaching",
            dependencies: [
                "CacheTiers", "CachingClient", "HTTPCaching",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The only module that imports AsyncHTTPClient.
        .target(
            name: "AsyncHTTPClientTransport",
            dependencies: [
                "CachingClient", "NIOTransportSupport",
                .product(
                    name: "AsyncHTTPClient",
                    package: "async-http-client",
                    condition: .when(traits: ["AsyncHTTPClient"])
                ),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
            ]
        ),
        // What both HTTP transports (AsyncHTTPClient's and cache-proxy's own) share of SwiftNIO: how
        // its connection errors map to the client's codes.
        .target(
            name: "NIOTransportSupport",
            dependencies: [
                "CachingClient",
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
            ]
        ),
        // A programmable HTTP/1.1 origin on loopback for the client and proxy tests.
        .target(
            name: "TestOriginSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["AsyncHTTPClient"])),
            ]
        ),
        // The caching reverse proxy: a CachingHTTPClient behind a HummingbirdCore HTTP/1.1 server
        // and its own HTTP/2 connections (NIOHTTP2),
        // over any HTTPTransport (the executable brings AsyncHTTPClient's).
        .target(
            name: "CacheProxyCore",
            dependencies: [
                "CachingClient", "HTTPCaching", "NIOTransportSupport",
                .product(name: "HummingbirdCore", package: "hummingbird", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOHTTP2", package: "swift-nio-http2", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOHPACK", package: "swift-nio-http2", condition: .when(traits: ["Proxy"])),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: ["Proxy"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOTLS", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .executableTarget(
            name: "cache-proxy",
            dependencies: [
                "CacheProxyCore", "TraitTrampoline", "HTTPCaching", "CacheTiers", "CachingClient",
                "AsyncHTTPClientTransport", "PostgresCacheTier",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Proxy"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["Proxy"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Proxy"])),
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
                "CacheTiers", "TraitTrampoline",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["Tools"])),
                // To silence the disk tier's log, which defaults to the task-local logger.
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "Benchmarks",
            dependencies: [
                "CacheTiers", "TraitTrampoline", "HTTPCaching", "CachingClient", "CLZ4", "CacheTestSupport",
                "AsyncHTTPClientTransport", "TestOriginSupport", "PostgresCacheTier", "HummingbirdLayeredCache",
                "EntityCaching",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Tools"])),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Tools"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Tools"])),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["Tools"])),
                .product(name: "Histogram", package: "hdrhistogram-swift", condition: .when(traits: ["Tools"])),
            ],
            path: "Benchmarks"
        ),
        // A child process for the crash tests: writes to a disk tier until it is killed.
        .executableTarget(
            name: "CrashWriter",
            dependencies: ["CacheTiers", "CacheTestSupport"],
            path: "Tests/CrashWriter"
        ),
        // A child process for the entity store's crash test: refreshes a query until it is killed.
        .executableTarget(
            name: "EntityCrashWriter",
            dependencies: ["CacheTiers", "EntityCaching"],
            path: "Tests/EntityCrashWriter"
        ),
        .testTarget(
            name: "EntityCachingTests",
            dependencies: [
                "EntityCaching", "CacheTiers", "CachingClient", "CacheTestSupport", "TestOriginSupport",
                "AsyncHTTPClientTransport", "EntityCrashWriter",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
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
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "PostgresCacheTierTests",
            dependencies: [
                "PostgresCacheTier", "CacheTiers", "CacheTestSupport", "HTTPCaching",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
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
                .product(
                    name: "AsyncHTTPClient",
                    package: "async-http-client",
                    condition: .when(traits: ["AsyncHTTPClient"])
                ),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "CacheProxyTests",
            dependencies: [
                "CacheProxyCore", "CachingClient", "HTTPCaching", "CacheTiers", "TestOriginSupport", "CacheTestSupport",
                "AsyncHTTPClientTransport", "cache-proxy", "PostgresCacheTier",
                // The three-door privacy property test drives the Hummingbird middleware too.
                .target(name: "HummingbirdLayeredCache", condition: .when(traits: ["Hummingbird"])),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Proxy"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOTLS", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOHTTP2", package: "swift-nio-http2", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras", condition: .when(traits: ["Proxy"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // A response-caching middleware and a PersistDriver for Hummingbird apps.
        .target(
            name: "HummingbirdLayeredCache",
            dependencies: [
                "HTTPCaching", "CacheTiers",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Hummingbird"])),
                .product(
                    name: "NIOConcurrencyHelpers",
                    package: "swift-nio",
                    condition: .when(traits: ["Hummingbird"])
                ),
            ]
        ),
        .testTarget(
            name: "HummingbirdLayeredCacheTests",
            dependencies: [
                "HummingbirdLayeredCache", "CachingClient", "HTTPCaching", "CacheTiers", "CacheTestSupport",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Hummingbird"])),
            ]
        ),
        // A Cache driver, an HTTP-cache middleware and a lifecycle handler for Vapor apps.
        .target(
            name: "VaporLayeredCache",
            dependencies: [
                "HTTPCaching", "CacheTiers",
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "VaporLayeredCacheTests",
            dependencies: [
                "VaporLayeredCache", "HTTPCaching", "CacheTiers", "CacheTestSupport",
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
                .product(name: "VaporTesting", package: "vapor", condition: .when(traits: ["Vapor"])),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // Every Swift example in README.md and docs/*.md, extracted by scripts/snippets.py: it
        // compiles with the tests, so an example cannot drift from the API.
        .testTarget(
            name: "DocSnippetsTests",
            dependencies: [
                "CacheTiers", "HTTPCaching", "CachingClient", "AsyncHTTPClientTransport", "HummingbirdLayeredCache",
                "PostgresCacheTier", "CacheProxyCore", "VaporLayeredCache", "EntityCaching",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Tools"])),
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Tools"])),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The libFuzzer targets (docs/fuzzing.md), only when `make fuzz` asks for them with
// LAYEREDCACHE_FUZZ=1: a build or test without it neither sees nor builds them. Then the package's
// own modules are compiled with coverage for libFuzzer and with AddressSanitizer, optimized (-O:
// bounds and overflow checks stay), while the dependencies are built as `make test` builds them,
// so that a fuzz build over `make test`'s build folder recompiles only this package's modules.
// LAYEREDCACHE_FUZZ=unoptimized leaves out -O: a build in about half the time, for CI's few
// seconds per target, where the build costs more than the executions it would speed up.
let fuzzMode = Context.environment["LAYEREDCACHE_FUZZ"]
if fuzzMode == "1" || fuzzMode == "unoptimized" {
    package.targets.append(contentsOf: [
        // libFuzzer's driver, declared for Swift: the fuzz executable's main calls it.
        .target(name: "CFuzzDriver", path: "Fuzz/Sources/CFuzzDriver"),
        .executableTarget(
            name: "LayeredCacheFuzz",
            dependencies: [
                "CFuzzDriver", "CacheTiers", "HTTPCaching", "CachingClient", "CacheProxyCore", "PostgresCacheTier",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOEmbedded", package: "swift-nio", condition: .when(traits: ["Proxy"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Proxy"])),
            ],
            path: "Fuzz/Sources/LayeredCacheFuzz",
            linkerSettings: [.unsafeFlags(["-sanitize=fuzzer,address", "-use-ld=lld"])]
        ),
    ])
    let instrumented: Set<String> = [
        "CacheTiers", "HTTPCaching", "CachingClient", "CacheProxyCore", "PostgresCacheTier", "LayeredCacheFuzz",
    ]
    for target in package.targets where instrumented.contains(target.name) {
        let optimization = fuzzMode == "unoptimized" ? [] : ["-O"]
        let flags = ["-sanitize=fuzzer,address"] + optimization
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(flags)]
    }
}

// One place for the upcoming features every Swift target builds with.
for target in package.targets
where [.regular, .executable, .test].contains(target.type) && !["CCRC32C", "CCurrentProcessor"].contains(target.name) {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}

// Every product of a package outside the core is a dependency only under the trait of the target
// that uses it (stated where the target is declared), so that a consumer that does not enable the
// trait neither builds nor resolves it (SwiftPM prunes a package that only disabled traits use).
// The targets' sources are wrapped in `#if Trait` to match, so that a build without the trait
// compiles them empty. This checks that no declaration forgot its condition.
let corePackages: Set<String> = [
    "swift-system", "swift-log", "swift-metrics", "swift-http-types", "swift-http-structured-headers",
    "swift-service-lifecycle", "swift-crypto", "swift-distributed-tracing", "swift-service-context",
]
for target in package.targets {
    for case .productItem(_, let packageName?, _, nil) in target.dependencies where !corePackages.contains(packageName)
    {
        fatalError("\(target.name) uses \(packageName), which is not a core package, without a trait condition")
    }
}
