// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Real crashes: a child process writes until it is killed with SIGKILL, then the directory is
/// reopened and checked byte for byte against what the child acknowledged.
@Suite struct CrashRecoveryTests {
    static var crashWriterPath: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("CrashWriter").path
    }

    /// The same crashes on a plain and on an encrypted directory.
    @Test(arguments: [false, true])
    func killedWritersNeverLeaveCorruptOrWrongData(encrypted: Bool) async throws {
        let writer = Self.crashWriterPath
        try #require(FileManager.default.isExecutableFile(atPath: writer), "build CrashWriter first: \(writer)")
        let crash = try CrashTestDirectory(
            "crash",
            key: EncryptionKey(bytes: (0..<32).map { UInt8($0 * 7 + 3) }),
            encrypted: encrypted
        )
        defer { crash.directory.remove() }
        let (path, keyFile, encryption) = (crash.path, crash.keyFile, crash.encryption)
        var model: [String: (version: Int, size: Int)] = [:]  // acknowledged state; absent = nothing
        var generator = SplitMix64(seed: 2026)
        let rounds = 24
        var replayedRounds = 0
        var truncatedBytes = 0
        for round in 0..<rounds {
            let killAfter = 20 + Int(generator.next() % 1500)
            let (lines, inFlight) = try await runAndKill(writer, path, seed: UInt64(round + 1), afterAcks: killAfter)
            #expect(lines >= killAfter)

            let before = try DiskStore.verify(directory: path, encryption: encryption)
            #expect(before.corruptRecords == 0 && before.unauthenticatedRecords == 0, "round \(round): \(before)")
            #expect(before.encrypted == encrypted)

            let store = try DiskStore(
                configuration: DiskTier.Configuration(
                    directory: path,
                    capacityBytes: 16 << 20,
                    segmentBytes: 512 << 10,
                    encryption: encryption
                )
            )
            let readers = ConcurrentReaders(store.reader, keys: (0..<64).map { CacheKey("key\($0)") }) { key, found in
                ConcurrentReaders.isVersionedValue(key, found) && found.metadata == Array(key.string.utf8)
            }
            for index in 0..<64 {
                let key = "key\(index)"
                let found = store.entry(for: CacheKey(key))
                let acknowledged = model[key]
                var allowed: [(version: Int, size: Int)?] = [acknowledged]
                if let inFlight, inFlight.key == key {
                    allowed.append(inFlight.version < 0 ? nil : (inFlight.version, inFlight.size))
                }
                let matched = allowed.first { candidate in
                    guard let candidate else { return found == nil }
                    return found?.value
                        == SampleData.versioned(key: key, version: candidate.version, size: candidate.size)
                        && found?.metadata == Array(key.utf8)
                }
                #expect(matched != nil, "round \(round), \(key): unexpected bytes")
                if let matched {
                    model[key] = matched.map { ($0.version, $0.size) }
                }
            }
            #expect(readers.stop().wrong == 0, "round \(round): a concurrent reader met wrong bytes")
            #expect(store.statistics.corruptRecords == 0 && store.statistics.authenticationFailures == 0)
            if store.recovery.replayedRecords > 0 { replayedRounds += 1 }
            truncatedBytes += store.recovery.truncatedBytes
            try store.close()
            let after = try DiskStore.verify(directory: path)
            #expect(after.corruptRecords == 0 && after.tornRecords == 0, "round \(round): \(after)")
            #expect(after.snapshotValid)
        }
        // The kills landed while the log was growing past its last snapshot.
        #expect(replayedRounds > rounds / 2)
        print(
            "crash test (encrypted: \(encrypted)): \(rounds) kills, \(replayedRounds) replayed a tail, \(truncatedBytes) torn bytes cut"
        )

        /// Runs the writer until it has acknowledged `afterAcks` operations, kills it, and replays
        /// its log into `model`. Returns the acknowledged count and the operation in flight.
        func runAndKill(
            _ writer: String,
            _ path: String,
            seed: UInt64,
            afterAcks: Int
        ) async throws -> (Int, (key: String, version: Int, size: Int)?) {
            let arguments = [path, String(seed)] + (encrypted ? [keyFile] : [])
            let buffer = try await runUntilKilled(writer, arguments, afterAcks: afterAcks)
            var inFlight: (key: String, version: Int, size: Int)?
            var acknowledged = 0
            for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n") {
                let parts = line.split(separator: " ")
                guard parts.count == 4, let version = Int(parts[2]), let size = Int(parts[3]) else { continue }
                let key = String(parts[1])
                if parts[0] == "B" {
                    inFlight = (key, version, size)
                } else {
                    inFlight = nil
                    acknowledged += 1
                    model[key] = version < 0 ? nil : (version, size)
                }
            }
            return (acknowledged, inFlight)
        }
    }
}
