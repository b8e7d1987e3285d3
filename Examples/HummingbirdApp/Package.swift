// swift-tools-version:6.1
// SPDX-License-Identifier: Apache-2.0

import PackageDescription

// An example Hummingbird app that caches its own routes with ResponseCacheMiddleware and keeps
// visit counters in TieredPersistDriver. It builds against the repository by path.
let package = Package(
    name: "HummingbirdApp",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LayeredCache", path: "../..", traits: ["Hummingbird"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0", traits: []),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
    ],
    targets: [
        .target(
            name: "App",
            dependencies: [
                .product(name: "HummingbirdLayeredCache", package: "LayeredCache"),
                .product(name: "CacheTiers", package: "LayeredCache"),
                .product(name: "HTTPCaching", package: "LayeredCache"),
                .product(name: "CachingClient", package: "LayeredCache"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        .executableTarget(name: "AppMain", dependencies: ["App"]),
        .testTarget(
            name: "AppTests",
            dependencies: [
                "App",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
