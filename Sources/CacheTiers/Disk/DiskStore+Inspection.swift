// SPDX-License-Identifier: Apache-2.0

import SystemPackage

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// What `verify` found in a directory.
package struct VerifyReport: Hashable, Sendable {
    package var segments = 0
    package var goodRecords = 0
    /// Damaged regions: inside a segment, or at the end of any segment but the newest.
    package var corruptRecords = 0
    /// Damage at the end of the newest segment: a write torn by a crash, cut at the next open.
    package var tornRecords = 0
    package var bytes = 0
    /// Whether an index snapshot is present, and whether it is intact.
    package var snapshotPresent = false
    package var snapshotValid = false
    /// Whether the directory has a key check file: its records are encrypted.
    package var encrypted = false
    /// Put records that did not authenticate with the keys given (checked only when keys are given).
    package var unauthenticatedRecords = 0
}

/// One live entry, as `cache-tool list` shows it.
package struct ListedEntry: Hashable, Sendable {
    package var key: String
    /// The value's decoded size.
    package var valueBytes: Int
    /// The value's size as stored (compressed or raw).
    package var storedValueBytes: Int
    /// The whole record's size on disk.
    package var storedBytes: Int
    package var storedAt: Date
}

extension DiskStore {
    /// Reads every record of every segment in `directory` and checks every checksum, without
    /// taking the lock or changing anything. Given the keys, it checks them against the key check
    /// and authenticates every encrypted record too.
    /// - Throws: ``CacheError/Code/wrongKey`` or ``CacheError/Code/encryptionMismatch`` when the
    ///   keys given do not fit the directory; I/O errors.
    package static func verify(directory path: String, encryption: DiskEncryption? = nil) throws -> VerifyReport {
        let directory = try CacheDirectory(path: FilePath(path), lock: false, create: false)
        var report = VerifyReport()
        report.encrypted = try directory.readIfPresent(KeyCheckFile.fileName) != nil
        let cipher = try encryption.flatMap { _ in
            try KeyCheckFile.open(directory, encryption: encryption, create: false)
        }
        let sequences = try directory.segmentSequences()
        for sequence in sequences {
            let file = try CacheFile.open(directory.segmentPath(sequence), create: false, readOnly: true)
            defer { file.close() }
            let size = Int(try file.size())
            report.segments += 1
            report.bytes += size
            guard size > segmentHeaderSize, let bytes = try file.read(count: size - segmentHeaderSize, at: 16) else {
                continue
            }
            let result = bytes.withUnsafeBytes { bytes in
                RecordScanner.scanCommitted(bytes) { header, record, _ in
                    guard let cipher, header.flags.isDisjoint(with: [.tombstone, .clear]) else { return }
                    if RecordFormat.unseal(record, header: header, cipher: cipher) == nil {
                        report.unauthenticatedRecords += 1
                    }
                }
            }
            report.goodRecords += result.validRecords
            report.corruptRecords += result.corruptRegions
            if result.damagedTail {
                if sequence == sequences.last { report.tornRecords += 1 } else { report.corruptRecords += 1 }
            }
        }
        if let file = try? CacheFile.open(directory.snapshotPath, create: false, readOnly: true) {
            defer { file.close() }
            report.snapshotPresent = true
            if let size = try? file.size(), let bytes = try? file.read(count: Int(size), at: 0) {
                report.snapshotValid = bytes.withUnsafeBytes { SnapshotFormat.decode($0) { _, _ in false } } != nil
            }
        }
        return report
    }

    /// Every live entry's key, sizes and date, read from its record (a damaged record is dropped).
    package func listEntries() -> [ListedEntry] {
        var listed: [ListedEntry] = []
        forEachLiveRecord { header, key in
            listed.append(
                ListedEntry(
                    key: key,
                    valueBytes: header.originalValueLength,
                    storedValueBytes: header.storedValueLength,
                    storedBytes: header.recordLength,
                    storedAt: Date(millisecondsSince1970: header.storedAtMillis)
                )
            )
        }
        return listed.sorted { $0.key < $1.key }
    }

    /// The live keys that start with `prefix` (UTF-8, byte for byte), read from their records:
    /// the index keeps digests, not keys (a damaged record is dropped).
    /// - Complexity: O(bytes of the live records): each is read, and opened when encrypted.
    package func keys(withPrefix prefix: String) -> [CacheKey] {
        var found: [CacheKey] = []
        forEachLiveRecord { _, key in
            if key.utf8.starts(with: prefix.utf8) { found.append(CacheKey(key)) }
        }
        return found
    }

    /// Calls `body` with the header and key of every live record, read and opened.
    private func forEachLiveRecord(_ body: (RecordHeader, String) -> Void) {
        for location in index.filter({ _ in true }) {
            guard let record = readPlainRecord(location) else { continue }
            record.withUnsafeBytes { bytes in
                guard let header = RecordFormat.parseHeader(bytes),
                    let key = RecordFormat.recordKeyString(bytes, header: header)
                else { return }
                body(header, key)
            }
        }
    }
}
