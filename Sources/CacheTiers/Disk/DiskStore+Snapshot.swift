// SPDX-License-Identifier: Apache-2.0

import Logging
import SystemPackage

/// The index snapshot file, `index.lcx` (little-endian; see docs/disk-format.md):
///
/// ```
/// header, 40 bytes:  magic "LCIX" | version u32 (2) | entry count u64 | covered segment u32 |
///                    covered offset u32 | written at ms i64 | reserved u64
/// entries, 16 bytes: index digest u64 | segment << 38 | offset << 8 | size class, u64
/// trailer, 8 bytes:  CRC-32C of everything before it u32 | magic "LCIE"
/// ```
/// "Covered" is the log position the snapshot reflects: every record before it. Opening loads the
/// snapshot and replays only what follows. A snapshot of another version is ignored (every
/// segment is replayed, and the next snapshot is of this version).
enum SnapshotFormat {
    static let magic: UInt32 = 0x5849_434C  // "LCIX"
    static let endMagic: UInt32 = 0x4549_434C  // "LCIE"
    static let version: UInt32 = 2
    static let headerSize = 40
    static let entrySize = 16
    static let trailerSize = 8

    struct Snapshot {
        /// The index, one table per stripe, built without locks; ``StripedIndex/replaceTables(_:)``
        /// installs it.
        var tables: [DiskIndex]
        var entryCount: Int
        var coveredSegment: UInt32
        var coveredOffset: Int
    }

    static func encode(
        entries: [IndexEntry],
        coveredSegment: UInt32,
        coveredOffset: Int,
        writtenAtMillis: Int64
    )
        -> [UInt8]
    {
        let length = headerSize + entries.count * entrySize + trailerSize
        return [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            let bytes = UnsafeMutableRawBufferPointer(buffer)
            bytes.storeBytes(of: magic.littleEndian, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: version.littleEndian, toByteOffset: 4, as: UInt32.self)
            bytes.storeBytes(of: UInt64(entries.count).littleEndian, toByteOffset: 8, as: UInt64.self)
            bytes.storeBytes(of: coveredSegment.littleEndian, toByteOffset: 16, as: UInt32.self)
            bytes.storeBytes(of: UInt32(coveredOffset).littleEndian, toByteOffset: 20, as: UInt32.self)
            bytes.storeBytes(of: writtenAtMillis.littleEndian, toByteOffset: 24, as: Int64.self)
            bytes.storeBytes(of: UInt64(0), toByteOffset: 32, as: UInt64.self)
            var position = headerSize
            for entry in entries {
                let word = UInt64(entry.segment) << 38 | UInt64(entry.offset) << 8 | UInt64(entry.sizeClass)
                bytes.storeBytes(of: entry.digest.littleEndian, toByteOffset: position, as: UInt64.self)
                bytes.storeBytes(of: word.littleEndian, toByteOffset: position + 8, as: UInt64.self)
                position += entrySize
            }
            let checksum = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<position]))
            bytes.storeBytes(of: checksum.littleEndian, toByteOffset: position, as: UInt32.self)
            bytes.storeBytes(of: endMagic.littleEndian, toByteOffset: position + 4, as: UInt32.self)
            initialized = length
        }
    }

    /// Decodes a snapshot straight into per-stripe tables, each sized once for its entries.
    /// - Parameter accept: whether to keep an entry at (segment, offset): its segment is present
    ///   and long enough.
    /// - Returns: nil when anything about the snapshot is wrong.
    static func decode(_ bytes: UnsafeRawBufferPointer, accept: (UInt32, UInt32) -> Bool) -> Snapshot? {
        guard bytes.count >= headerSize + trailerSize,
            UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self)) == magic,
            UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)) == version
        else { return nil }
        let count = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        guard count <= UInt64((bytes.count - headerSize - trailerSize) / entrySize),
            headerSize + Int(count) * entrySize + trailerSize == bytes.count
        else { return nil }
        let end = bytes.count - trailerSize
        let checksum = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: end, as: UInt32.self))
        guard UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: end + 4, as: UInt32.self)) == endMagic,
            CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<end])) == checksum
        else { return nil }
        let stripeMask = UInt64(StripedIndex.stripeCount - 1)
        var perStripe = [Int](repeating: 0, count: StripedIndex.stripeCount)
        for position in stride(from: headerSize, to: end, by: entrySize) {
            perStripe[Int(bytes[position] & UInt8(stripeMask))] += 1
        }
        var tables = perStripe.enumerated().map { DiskIndex(stripe: UInt64($0), minimumCapacity: $1) }
        let minimumClass = IndexEntry.sizeClass(of: RecordFormat.headerSize)
        var kept = 0
        for position in stride(from: headerSize, to: end, by: entrySize) {
            let digest = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self))
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: position + 8, as: UInt64.self))
            let sizeClass = UInt8(truncatingIfNeeded: word)
            guard digest != 0, IndexEntry.indexDigest(digest) == digest, sizeClass >= minimumClass, sizeClass < 0xF0
            else { return nil }
            let segment = UInt32(truncatingIfNeeded: word >> 38)
            let offset = UInt32(truncatingIfNeeded: word >> 8) & IndexEntry.maximumOffset
            guard accept(segment, offset) else { continue }
            let entry = IndexEntry(
                digest: digest,
                segment: segment,
                offset: offset,
                sizeClass: sizeClass,
                accessed: false
            )
            if tables[Int(digest & stripeMask)].update(entry) == nil { kept += 1 }
        }
        return Snapshot(
            tables: tables,
            entryCount: kept,
            coveredSegment: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt32.self)),
            coveredOffset: Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 20, as: UInt32.self)))
        )
    }
}

extension DiskStore {
    /// Writes the index snapshot: to a temporary file, flushed, then renamed over the old one, so
    /// that a crash leaves either the old snapshot or the new one, never half of one.
    package func writeSnapshot() throws {
        try checkOpen()
        // Nothing appended, retired or cut since the last snapshot: it is still exact.
        if let snapshotPosition, snapshotPosition == logPosition { return }
        try syncActive()
        guard let active = segments[activeSequence] else { return }
        let bytes = SnapshotFormat.encode(
            entries: index.allEntries(),
            coveredSegment: active.sequence,
            coveredOffset: active.size,
            writtenAtMillis: nowMillis()
        )
        try directory.replaceAtomically(CacheDirectory.snapshotFileName, with: bytes, faults: configuration.faults)
        snapshotBytes = bytes.count
        snapshotPosition = logPosition
    }

    /// Where the log stands: every append, retirement and cut moves it, so a snapshot taken at
    /// one position describes the store for as long as the position holds.
    var logPosition: LogPosition {
        LogPosition(
            firstSegment: order.first ?? 0,
            segmentCount: order.count,
            activeSegment: order.last ?? 0,
            activeSize: order.last.flatMap { segments[$0]?.size } ?? 0
        )
    }

    /// Loads the snapshot if it is present, intact and consistent with the segments on disk.
    func loadSnapshot() -> SnapshotFormat.Snapshot? {
        guard let file = try? CacheFile.open(directory.snapshotPath, create: false, readOnly: true) else { return nil }
        defer { file.close() }
        guard let size = try? file.size(), size > 0, let bytes = try? file.read(count: Int(size), at: 0) else {
            return nil
        }
        // The segments' sizes by sequence number, in one flat array: the check runs per entry.
        let first = order.first ?? 0
        var sizes = [Int](repeating: 0, count: order.isEmpty ? 0 : Int((order.last ?? 0) - first) + 1)
        for segment in segments.values { sizes[Int(segment.sequence - first)] = segment.size }
        let snapshot = bytes.withUnsafeBytes { bytes in
            SnapshotFormat.decode(bytes) { segment, offset in
                guard segment >= first, Int(segment - first) < sizes.count else { return false }
                return Int(offset) + RecordFormat.headerSize <= sizes[Int(segment - first)]
            }
        }
        guard let snapshot else {
            logger.warning("index snapshot is damaged; replaying every segment")
            return nil
        }
        var kept = snapshot
        if let covered = segments[snapshot.coveredSegment], covered.size < snapshot.coveredOffset {
            // The segment lost its tail after the snapshot was written. What the snapshot knows
            // still holds — above all which keys were removed: a full replay instead would bring
            // back every removed value whose tombstone was in the lost tail. Entries past the cut
            // were left out above; replay resumes at the segment's end (nothing is left there).
            logger.warning(
                "index snapshot is ahead of its segment (its tail was lost); keeping what it knows before the cut",
                metadata: [
                    "segment": "\(snapshot.coveredSegment)", "lostBytes": "\(snapshot.coveredOffset - covered.size)",
                ]
            )
            kept.coveredOffset = covered.size
        }
        return kept
    }
}
