// swift-tools-version:6.1
// SPDX-License-Identifier: Apache-2.0

import PackageDescription

// An example of EntityCaching: a task list and a task detail, kept offline-first by an
// EntityStore, against a small task API (a Hummingbird app on loopback). It builds against the
// repository by path.
let package = Package(
    name: "TaskListApp",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LayeredCache", path: "../..", traits: ["AsyncHTTPClient"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0", traits: []),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
    ],
    targets: [
        .target(
            name: "TaskList",
            dependencies: [
                .product(name: "EntityCaching", package: "LayeredCache"),
                .product(name: "CacheTiers", package: "LayeredCache"),
                .product(name: "CachingClient", package: "LayeredCache"),
                .product(name: "AsyncHTTPClientTransport", package: "LayeredCache"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .executableTarget(name: "TaskListMain", dependencies: ["TaskList"]),
        .testTarget(
            name: "TaskListTests",
            dependencies: [
                "TaskList",
                .product(name: "EntityCaching", package: "LayeredCache"),
                .product(name: "CacheTiers", package: "LayeredCache"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
