// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

/// Encryption at rest: nothing readable on disk, the wrong key a clear error, tampering a miss,
/// rotation, close and reopen, reset.
@Suite struct EncryptionTests {
    static let keyA = try! EncryptionKey(bytes: (0..<32).map { UInt8($0) })
    static let keyB = try! EncryptionKey(bytes: (0..<32).map { UInt8(200 - $0) })
    static let marker = "ZQX-PRIVATE-MARKER-7731"

    func configuration(_ directory: TemporaryDirectory, _ encryption: DiskEncryption?) -> DiskTier.Configuration {
        var configuration = diskConfiguration(directory, segment: 64 << 10)
        configuration.encryption = encryption
        return configuration
    }

    /// Keys, metadata and values that hold the marker: compressible, incompressible, short.
    static func markedEntries() -> [(key: String, entry: CacheEntry)] {
        (0..<120).map { index in
            let key = "https://api.example.com/users/\(marker)/\(index)"
            let value: [UInt8]
            switch index % 3 {
            case 0: value = Array(String(repeating: "{\"name\":\"\(marker)\"},", count: 40 + index).utf8)
            case 1: value = SampleData.random(count: 3000, seed: UInt64(index)) + Array(marker.utf8)
            default: value = Array(marker.utf8)
            }
            return (key, entry(value, metadata: Array("x-user: \(marker)".utf8)))
        }
    }

    /// Every file in the directory, by name.
    func files(_ directory: TemporaryDirectory) throws -> [String: Data] {
        var contents: [String: Data] = [:]
        for name in directory.files(in: "cache") {
            contents[name] = try Data(contentsOf: URL(fileURLWithPath: directory.appending("cache/" + name)))
        }
        return contents
    }

    /// Writes, removes, compacts and closes; returns what is left.
    func fillMarked(_ configuration: DiskTier.Configuration) throws -> [(key: String, entry: CacheEntry)] {
        let store = try DiskStore(configuration: configuration)
        let entries = Self.markedEntries()
        for (key, entry) in entries { try store.set(entry, for: CacheKey(key)) }
        for (key, _) in entries.prefix(30) { try store.remove(CacheKey(key)) }
        try store.compact(threshold: 0.9)
        try store.close()
        return Array(entries.dropFirst(30))
    }

    @Test func noFileOfAnEncryptedCacheHoldsTheMarkerOrAPlainDigest() throws {
        let directory = TemporaryDirectory("crypto")
        defer { directory.remove() }
        let encrypted = configuration(directory, DiskEncryption(key: Self.keyA))
        let kept = try fillMarked(encrypted)
        let contents = try files(directory)
        #expect(contents.keys.contains(KeyCheckFile.fileName))
        #expect(contents.keys.contains(CacheDirectory.snapshotFileName))
        #expect(contents.keys.filter { $0.hasPrefix("segment-") }.count > 1)
        let marker = Data(Self.marker.utf8)
        for (name, bytes) in contents {
            #expect(bytes.range(of: marker) == nil, "\(name) holds the marker")
            for (key, _) in Self.markedEntries() {
                let plainDigest = withUnsafeBytes(of: KeyDigest.digest(of: key).littleEndian) { Data($0) }
                #expect(bytes.range(of: plainDigest) == nil, "\(name) holds the plain digest of \(key)")
            }
        }
        // Everything reads back with the key.
        let store = try DiskStore(configuration: encrypted)
        for (key, entry) in kept { #expect(store.entry(for: CacheKey(key)) == entry) }
        #expect(store.statistics.authenticationFailures == 0)
        try store.close()

        // The check can fail: a plain cache of the same entries shows the marker.
        let plainDirectory = TemporaryDirectory("plain")
        defer { plainDirectory.remove() }
        _ = try fillMarked(configuration(plainDirectory, nil))
        #expect(try files(plainDirectory).values.contains { $0.range(of: marker) != nil })
    }

    @Test func wrongKeyOrMissingKeyIsAClearErrorAndTheDirectoryStaysIntact() throws {
        let directory = TemporaryDirectory("crypto")
        defer { directory.remove() }
        let kept = try fillMarked(configuration(directory, DiskEncryption(key: Self.keyA)))
        let before = try files(directory)

        let wrong = #expect(throws: CacheError.self) {
            try DiskStore(configuration: configuration(directory, DiskEncryption(key: Self.keyB)))
        }
        #expect(wrong?.code == .wrongKey)
        #expect(wrong?.message.contains("none of the 1 given keys") == true)
        let missing = #expect(throws: CacheError.self) { try DiskStore(configuration: configuration(directory, nil)) }
        #expect(missing?.code == .encryptionMismatch)
        #expect(try files(directory) == before)

        let store = try DiskStore(configuration: configuration(directory, DiskEncryption(key: Self.keyA)))
        for (key, entry) in kept { #expect(store.entry(for: CacheKey(key)) == entry) }
        try store.close()

        // A plain cache opened with a key: a clear error too, nothing changed.
        let plain = TemporaryDirectory("plain")
        defer { plain.remove() }
        _ = try fillMarked(configuration(plain, nil))
        let plainBefore = try files(plain)
        let mismatch = #expect(throws: CacheError.self) {
            try DiskStore(configuration: configuration(plain, DiskEncryption(key: Self.keyA)))
        }
        #expect(mismatch?.code == .encryptionMismatch)
        #expect(try files(plain) == plainBefore)
    }

    @Test func aDamagedKeyCheckIsAClearError() throws {
        let directory = TemporaryDirectory("crypto")
        defer { directory.remove() }
        _ = try fillMarked(configuration(directory, DiskEncryption(key: Self.keyA)))
        try FileSurgery.flip(directory.appending("cache/" + KeyCheckFile.fileName), at: 40)
        let error = #expect(throws: CacheError.self) {
            try DiskStore(configuration: configuration(directory, DiskEncryption(key: Self.keyA)))
        }
        #expect(error?.code == .corruptData)
    }

    /// A byte changed in the authenticated header, the keyed digest, the nonce, the ciphertext or
    /// the tag, with the CRC fixed up so that only the AEAD can tell: a miss, counted, dropped.
    @Test(arguments: [24, 44, 50, 70, -1])
    func tamperedRecordIsACountedMissNeverBytes(offsetInRecord: Int) async throws {
        let directory = TemporaryDirectory("crypto")
        defer { directory.remove() }
        let configuration = configuration(directory, DiskEncryption(key: Self.keyA))
        let store = try DiskStore(configuration: configuration)
        let keys = (0..<3).map { CacheKey("k\($0)") }
        for (index, key) in keys.enumerated() {
            try store.set(entry(SampleData.json(approximateBytes: 2000, seed: UInt64(index))), for: key)
        }
        try store.close()

        let segment = directory.appending("cache/" + CacheDirectory.segmentFileName(1))
        var bytes = try FileSurgery.read(segment)
        var records: [Range<Int>] = []
        _ = bytes.withUnsafeBytes { bytes in
            RecordScanner.scan(UnsafeRawBufferPointer(rebasing: bytes[DiskStore.segmentHeaderSize...])) {
                _,
                record,
                at in
                let start = DiskStore.segmentHeaderSize + at
                records.append(start..<(start + record.count))
            }
        }
        let target = records[1]
        let position = offsetInRecord >= 0 ? target.lowerBound + offsetInRecord : target.upperBound + offsetInRecord
        bytes[position] ^= 0x5A
        bytes.withUnsafeMutableBytes { bytes in
            let record = UnsafeMutableRawBufferPointer(rebasing: bytes[target])
            let checksum = RecordFormat.computeChecksum(UnsafeRawBufferPointer(record))
            record.storeBytes(of: checksum.littleEndian, toByteOffset: RecordFormat.checksumOffset, as: UInt32.self)
        }
        try FileSurgery.write(bytes, to: segment)

        let tier = try DiskTier(configuration: configuration)
        #expect(await tier.entry(for: keys[1]) == nil)
        #expect(await tier.entry(for: keys[1]) == nil)
        #expect(await tier.statistics.authenticationFailures == 1)
        #expect(await tier.statistics.corruptRecords == 0)
        #expect(await tier.usage.entryCount == 2)
        for index in [0, 2] {
            #expect(
                await tier.entry(for: keys[index])?.value
                    == SampleData.json(approximateBytes: 2000, seed: UInt64(index))
            )
        }
        let report = try DiskStore.verify(directory: configuration.directory, encryption: configuration.encryption)
        #expect(report.unauthenticatedRecords == 1 && report.corruptRecords == 0)
        try await tier.close()
    }

    @Test func rotationThenTheNewKeyAloneReadsEverything() async throws {
        let directory = TemporaryDirectory("crypto")
        defer { directory.remove() }
        let kept = try fillMarked(configuration(directory, DiskEncryption(key: Self.keyA)))
        let rotating = DiskEncryption(key: Self.keyB, previousKeys: [Self.keyA])

        // Until the rotation is done, the old key is still needed.
        let tier = try DiskTier(configuration: configuration(directory, rotating))
        for (key, entry) in kept.prefix(10) { #expect(await tier.entry(for: CacheKey(key)) == entry) }
        try await tier.set(entry([1, 2, 3], metadata: [4]), for: "new")
        try await tier.close()
        let early = #expect(throws: CacheError.self) {
            try DiskStore(configuration: configuration(directory, DiskEncryption(key: Self.keyB)))
        }
        #expect(early?.code == .wrongKey)

        try await tier.reopen(encryption: rotating)
        let resealed = try await tier.rekey()
        #expect(resealed == kept.count)
        #expect(await tier.statistics.resealedRecords == kept.count)
        try await tier.close()

        let store = try DiskStore(configuration: configuration(directory, DiskEncryption(key: Self.keyB)))
        for (key, entry) in kept { #expect(store.entry(for: CacheKey(key)) == entry) }
        #expect(store.entry(for: "new") == entry([1, 2, 3], metadata: [4]))
        #expect(store.statistics.authenticationFailures == 0)
        try store.close()
        // No record on disk is sealed with the old key any more.
        for name in directory.files(in: "cache") where name.hasPrefix("segment-") {
            let bytes = try FileSurgery.read(directory.appending("cache/" + name))
            _ = bytes.withUnsafeBytes { bytes in
                RecordScanner.scan(UnsafeRawBufferPointer(rebasing: bytes[DiskStore.segmentHeaderSize...])) {
                    header,
                    _,
                    _ in
                    #expect(
                        !header.flags.contains(.encrypted) || header.keyID == UInt32(truncatingIfNeeded: Self.keyB.id)
                    )
                }
            }
        }
        let old = #expect(throws: CacheError.self) {
            try DiskStore(configuration: configuration(directory, DiskEncryption(key: Self.keyA)))
        }
        #expect(old?.code == .wrongKey)
    }

    @Test func compactionResealsRecordsOfThePreviousKey() throws {
        let directory = TemporaryDirectory("crypto")
        defer { directory.remove() }
        let kept = try fillMarked(configuration(directory, DiskEncryption(key: Self.keyA)))
        let rotating = configuration(directory, DiskEncryption(key: Self.keyB, previousKeys: [Self.keyA]))
        let store = try DiskStore(configuration: rotating)
        for (key, _) in kept.enumerated().filter({ $0.offset % 4 == 0 }).map(\.element) {
            try store.remove(CacheKey(key))
        }
        #expect(try store.compact(threshold: 1.0) > 0)
        #expect(store.statistics.resealedRecords > 0)
        #expect(store.statistics.authenticationFailures == 0)
        try store.close()
        let reopened = try DiskStore(configuration: rotating)
        for (index, (key, entry)) in kept.enumerated() {
            #expect(reopened.entry(for: CacheKey(key)) == (index % 4 == 0 ? nil : entry))
        }
        try reopened.close()
    }

    @Test func closeReopenWithTheKeyAndResetWhileClosed() async throws {
        let directory = TemporaryDirectory("crypto")
        defer { directory.remove() }
        let encryption = DiskEncryption(key: Self.keyA)
        let tier = try DiskTier(configuration: configuration(directory, encryption))
        try await tier.set(entry([9, 8, 7]), for: "a")
        try await tier.close()
        #expect(await !tier.isOpen)
        #expect(await tier.entry(for: "a") == nil)
        await #expect(throws: CacheError.self) { try await tier.set(entry([1]), for: "b") }

        let wrong = await #expect(throws: CacheError.self) {
            try await tier.reopen(encryption: DiskEncryption(key: Self.keyB))
        }
        #expect(wrong?.code == .wrongKey)
        #expect(await !tier.isOpen)
        try await tier.reopen(encryption: encryption)
        #expect(await tier.entry(for: "a")?.value == [9, 8, 7])

        // Reset refuses an open directory, then removes the closed one.
        let locked = #expect(throws: CacheError.self) { try DiskTier.reset(directory: tier.configuration.directory) }
        #expect(locked?.code == .directoryLocked)
        try await tier.close()
        try DiskTier.reset(directory: tier.configuration.directory)
        #expect(!FileManager.default.fileExists(atPath: tier.configuration.directory))
        try DiskTier.reset(directory: tier.configuration.directory)
        // A fresh start, with another key.
        try await tier.reopen(encryption: DiskEncryption(key: Self.keyB))
        #expect(await tier.entry(for: "a") == nil)
        try await tier.close()
    }

    @Test func keysAreExactly32BytesAndNeverPrinted() throws {
        for count in [0, 16, 31, 33, 64] {
            let error = #expect(throws: CacheError.self) {
                try EncryptionKey(bytes: [UInt8](repeating: 1, count: count))
            }
            #expect(error?.code == .invalidArgument)
        }
        #expect(!Self.keyA.description.contains("0001020304"))
        #expect(EncryptionKey.random().id != EncryptionKey.random().id)
        let duplicate = #expect(throws: CacheError.self) {
            try RecordCipher(DiskEncryption(key: Self.keyA, previousKeys: [Self.keyA]), digestSecret: [])
        }
        #expect(duplicate?.code == .invalidArgument)
    }
}
