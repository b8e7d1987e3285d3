// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

/// Real crashes in the middle of batches: a child process commits batches over groups of four
/// keys (`CrashWriter --batches`) until it is killed with SIGKILL; reopened, every group holds
/// one batch whole (the acknowledged one, or the one in flight), never keys of two batches.
@Suite struct DiskBatchCrashTests {
    @Test(arguments: [false, true])
    func killedBatchesAreWholeOrAbsent(encrypted: Bool) async throws {
        let writer = CrashRecoveryTests.crashWriterPath
        try #require(FileManager.default.isExecutableFile(atPath: writer), "build CrashWriter first: \(writer)")
        let crash = try CrashTestDirectory(
            "batch-crash",
            key: EncryptionKey(bytes: (0..<32).map { UInt8($0 * 5 + 1) }),
            encrypted: encrypted
        )
        defer { crash.directory.remove() }
        let (path, keyFile, encryption) = (crash.path, crash.keyFile, crash.encryption)
        var model: [String: Int] = [:]  // acknowledged version of each group; -1: none stored
        var generator = SplitMix64(seed: 37)
        var inFlightRounds = 0
        var truncatedBytes = 0
        for round in 0..<10 {
            let killAfter = 10 + Int(generator.next() % 300)
            let arguments = ["--batches", path, String(round + 1)] + (encrypted ? [keyFile] : [])
            let output = try await runUntilKilled(writer, arguments, afterAcks: killAfter)
            var inFlight: (group: String, version: Int)?
            for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
                let parts = line.split(separator: " ")
                guard parts.count == 3, let version = Int(parts[2]) else { continue }
                if parts[0] == "B" {
                    inFlight = (String(parts[1]), version)
                } else {
                    inFlight = nil
                    model[String(parts[1])] = max(version, -1)
                }
            }
            let store = try DiskStore(
                configuration: DiskTier.Configuration(
                    directory: path,
                    capacityBytes: 16 << 20,
                    segmentBytes: 512 << 10,
                    encryption: encryption
                )
            )
            for group in (0..<16).map({ "g\($0)" }) {
                let found = Self.state(of: group, in: store)
                var allowed = [model[group] ?? -1]
                if let inFlight, inFlight.group == group { allowed.append(max(inFlight.version, -1)) }
                let matched = allowed.first { $0 == found }
                #expect(matched != nil, "round \(round), \(group): \(String(describing: found)), allowed \(allowed)")
                if let matched, matched != allowed.first { inFlightRounds += 1 }
                if let matched { model[group] = matched }
            }
            truncatedBytes += store.recovery.truncatedBytes
            #expect(store.statistics.corruptRecords == 0 && store.statistics.authenticationFailures == 0)
            try store.close()
            let after = try DiskStore.verify(directory: path, encryption: encryption)
            #expect(after.corruptRecords == 0 && after.tornRecords == 0, "round \(round): \(after)")
        }
        print(
            "batch crash test (encrypted: \(encrypted)): 10 kills, \(inFlightRounds) found the batch in flight, "
                + "\(truncatedBytes) torn bytes cut"
        )
    }

    /// The group's state: -1 when none of its keys is stored, v when all four hold version v's
    /// bytes, nil (a mix, or wrong bytes) otherwise.
    static func state(of group: String, in store: DiskStore) -> Int? {
        let found = (0..<4).map { store.entry(for: CacheKey("\(group)-k\($0)")) }
        if found.allSatisfy({ $0 == nil }) { return -1 }
        guard let first = found[0], let version = Self.version(in: first.value, key: "\(group)-k0") else { return nil }
        for (index, entry) in found.enumerated() {
            let key = "\(group)-k\(index)"
            let size = SampleData.batchValueSize(version: version, index: index)
            guard let entry, Bytes.equal(entry.value, SampleData.versioned(key: key, version: version, size: size)),
                entry.metadata == Array(key.utf8)
            else { return nil }
        }
        return version
    }

    /// The version a value made by `SampleData.versioned` names.
    static func version(in value: [UInt8], key: String) -> Int? {
        let prefix = Array("\(key)#".utf8)
        guard value.starts(with: prefix), let bar = value[prefix.count...].firstIndex(of: UInt8(ascii: "|")) else {
            return nil
        }
        return Int(String(decoding: value[prefix.count..<bar], as: UTF8.self))
    }
}
