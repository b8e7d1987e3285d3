// SPDX-License-Identifier: Apache-2.0

#if Tools
import ArgumentParser
import CacheTiers
import Foundation
import Logging

/// `cache-tool`: inspect and maintain a LayeredCache disk directory.
@main
struct CacheTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache-tool",
        abstract: "Inspect and maintain a LayeredCache disk directory.",
        discussion: """
            Every subcommand but verify takes the directory's lock: it fails with a clear error while \
            another process has the cache open. An encrypted cache needs --key-file FILE (32 raw bytes) \
            on every subcommand; rekey re-seals it with that key, given the old one with --previous-key-file.
            """,
        subcommands: [
            Put.self, Get.self, Remove.self, List.self, Stats.self, Verify.self, Compact.self, Evict.self, Rekey.self,
        ]
    )
}

/// The keys of an encrypted cache, for every subcommand.
struct KeyOptions: ParsableArguments {
    @Option(help: "The file holding the cache's 256-bit encryption key: exactly 32 raw bytes.")
    var keyFile: String?

    @Option(help: "A key the cache was encrypted with before (repeatable), during a key rotation.")
    var previousKeyFile: [String] = []

    /// The keys given, or nil for a plain cache.
    func encryption() throws -> DiskEncryption? {
        guard let keyFile else {
            guard previousKeyFile.isEmpty else { throw ValidationError("--previous-key-file needs --key-file") }
            return nil
        }
        return DiskEncryption(key: try Self.key(keyFile), previousKeys: try previousKeyFile.map(Self.key))
    }

    private static func key(_ path: String) throws -> EncryptionKey {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ValidationError("cannot read the key file \(path): \(error.localizedDescription)")
        }
        guard data.count == EncryptionKey.byteCount else {
            throw ValidationError(
                "the key file \(path) holds \(data.count) bytes; a key file holds exactly \(EncryptionKey.byteCount) raw bytes"
            )
        }
        return try EncryptionKey(bytes: data)
    }
}

/// Options shared by the subcommands that open the cache.
struct StoreOptions: ParsableArguments {
    @Argument(help: "The cache directory.")
    var directory: String

    @OptionGroup var keys: KeyOptions

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
        return DiskTier.Configuration(
            directory: directory,
            capacityBytes: capacity,
            fsync: try fsyncPolicy(),
            // The tool reports failures itself, through its errors and exit status; the tier's log
            // (which defaults to the task-local logger) would only repeat them on standard error.
            logger: Logger(label: "cache-tool", factory: { _ in SwiftLogNoOpLogHandler() }),
            encryption: try keys.encryption()
        )
    }
}
#endif
