// SPDX-License-Identifier: Apache-2.0

import Foundation

/// A fresh directory under the system's temporary directory, removed by ``remove()``.
package struct TemporaryDirectory: Sendable {
    package let path: String

    package init(_ label: String = "test") {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/layeredcache-\(label)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A path inside the directory.
    package func appending(_ name: String) -> String { path + "/" + name }

    /// The names of the files inside `subdirectory` (or the directory itself), sorted.
    package func files(in subdirectory: String? = nil) -> [String] {
        let target = subdirectory.map(appending) ?? path
        return ((try? FileManager.default.contentsOfDirectory(atPath: target)) ?? []).sorted()
    }

    package func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with a fresh temporary directory and removes it afterwards.
package func withTemporaryDirectory<T>(
    _ label: String = "test",
    _ body: (TemporaryDirectory) async throws -> T
) async rethrows -> T {
    let directory = TemporaryDirectory(label)
    defer { directory.remove() }
    return try await body(directory)
}

/// File surgery for corruption tests.
package enum FileSurgery {
    /// The file's bytes.
    package static func read(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Replaces the file's bytes.
    package static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Flips bits of the byte at `offset`.
    package static func flip(_ path: String, at offset: Int, mask: UInt8 = 0xFF) throws {
        var bytes = try read(path)
        bytes[offset] ^= mask
        try write(bytes, to: path)
    }

    /// Cuts the file to `length` bytes.
    package static func truncate(_ path: String, to length: Int) throws {
        let bytes = try read(path)
        try write(Array(bytes.prefix(length)), to: path)
    }

    /// The file's size, or nil.
    package static func size(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
    }
}
