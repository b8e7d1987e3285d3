// SPDX-License-Identifier: Apache-2.0

import ArgumentParser
import CacheTiers

/// `cache-tool`: inspect and maintain a LayeredCache disk directory.
@main
struct CacheTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache-tool",
        abstract: "Inspect and maintain a LayeredCache disk directory.",
        discussion: """
            Every subcommand but verify takes the directory's lock: it fails with a clear error while \
            another process has the cache open.
            """,
        subcommands: [Put.self, Get.self, Remove.self, List.self, Stats.self, Verify.self, Compact.self]
    )
}

/// Options shared by the subcommands that open the cache.
struct StoreOptions: ParsableArguments {
    @Argument(help: "The cache directory.")
    var directory: String

    @Option(help: "Disk capacity in bytes (the oldest segments are retired past it).")
    var capacity: Int = 512 << 20

    @Option(help: "When to fsync: never, rotation, or a number of milliseconds.")
    var fsync: String = "rotation"

    func fsyncPolicy() throws -> FsyncPolicy {
        switch fsync {
        case "never": return .never
        case "rotation": return .onRotation
        default:
            guard let milliseconds = Int(fsync), milliseconds > 0 else {
                throw ValidationError("--fsync takes never, rotation, or a positive number of milliseconds")
            }
            return .every(.milliseconds(milliseconds))
        }
    }

    func configuration() throws -> DiskTier.Configuration {
        guard capacity > 0 else { throw ValidationError("--capacity must be positive") }
        return DiskTier.Configuration(directory: directory, capacityBytes: capacity, fsync: try fsyncPolicy())
    }
}
