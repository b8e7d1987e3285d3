// swift-tools-version:6.1
// SPDX-License-Identifier: Apache-2.0

import PackageDescription

let package = Package(
    name: "LayeredCache",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CacheTiers", targets: ["CacheTiers"]),
        .executable(name: "Benchmarks", targets: ["Benchmarks"]),
    ],
    dependencies: [],
    targets: [
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        .target(
            name: "CacheTiers",
            dependencies: ["CLZ4"]
        ),
        .target(
            name: "CacheTestSupport",
            dependencies: []
        ),
        .executableTarget(
            name: "Benchmarks",
            dependencies: ["CacheTiers", "CLZ4", "CacheTestSupport"],
            path: "Benchmarks"
        ),
        .testTarget(
            name: "CacheTiersTests",
            dependencies: ["CacheTiers", "CacheTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// One place for the upcoming features every Swift target builds with.
for target in package.targets where [.regular, .executable, .test].contains(target.type) {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}
