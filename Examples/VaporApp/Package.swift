// swift-tools-version:6.2
// SPDX-License-Identifier: Apache-2.0

import PackageDescription

// An example Vapor app: `app.cache` on LayeredCache's tiers, its own routes cached by
// HTTPCacheMiddleware, both closed at shutdown, and traces exported through swift-otel (OTLP/HTTP)
// when an OTLP endpoint is set. It builds against the repository by path.
let package = Package(
    name: "VaporApp",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LayeredCache", path: "../..", traits: ["Vapor"]),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.115.0"),
        // The OTLP/HTTP exporter only: no gRPC stack to build.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.0.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
    ],
    targets: [
        .target(
            name: "App",
            dependencies: [
                .product(name: "VaporLayeredCache", package: "LayeredCache"),
                .product(name: "CacheTiers", package: "LayeredCache"),
                .product(name: "HTTPCaching", package: "LayeredCache"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .executableTarget(
            name: "AppMain",
            dependencies: [
                "App",
                .product(name: "Vapor", package: "vapor"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "AppTests",
            dependencies: [
                "App",
                .product(name: "CacheTiers", package: "LayeredCache"),
                .product(name: "VaporTesting", package: "vapor"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
