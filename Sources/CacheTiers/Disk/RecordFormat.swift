// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a record is, beyond its bytes.
package struct RecordFlags: OptionSet, Hashable, Sendable {
    package var rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The value is an LZ4 block; `originalLength` is its decoded length.
    package static let compressed = RecordFlags(rawValue: 0x01)
    /// The key was removed; no metadata and no value follow.
    package static let tombstone = RecordFlags(rawValue: 0x02)
    /// Key, metadata and value are sealed with AES-256-GCM (see `RecordFormat+Sealing.swift`).
    package static let encrypted = RecordFlags(rawValue: 0x04)
    /// Everything before this record is void (`removeAll`); no key, metadata or value.
    package static let clear = RecordFlags(rawValue: 0x08)
    /// The start of a batch (``DiskStore/commit(_:)``): the records that follow, as many as the
    /// header's original value length, count only when every one of them is there, whole and in
    /// order. Its key field holds the byte length of those records; no metadata or value.
    package static let batch = RecordFlags(rawValue: 0x10)
    /// A put or tombstone written in a batch: it counts only inside its whole batch, never alone
    /// (a batch whose marker was lost is dropped whole).
    package static let inBatch = RecordFlags(rawValue: 0x20)

    static let known: RecordFlags = [.compressed, .tombstone, .encrypted, .clear, .batch, .inBatch]
}

/// The fixed 40-byte header at the start of every record (little-endian; see docs/disk-format.md).
///
/// ```
/// 0   4  magic "LCRD"           20  4  original value length
/// 4   1  format version (1)     24  8  stored at, ms since 1970
/// 5   1  flags                  32  4  CRC-32C of the record, this field skipped
/// 6   2  reserved (0)           36  4  key id (encrypted records; else 0)
/// 8   4  key length
/// 12  4  metadata length
/// 16  4  stored value length
/// ```
/// Then the key (UTF-8), the metadata, and the value as stored; sealed in an encrypted record,
/// whose lengths are those of the plaintext.
package struct RecordHeader: Hashable, Sendable {
    package var flags: RecordFlags
    package var keyLength: Int
    package var metadataLength: Int
    package var storedValueLength: Int
    package var originalValueLength: Int
    package var storedAtMillis: Int64
    package var checksum: UInt32
    /// The low 32 bits of the id of the key that sealed an encrypted record; 0 otherwise.
    package var keyID: UInt32 = 0

    /// Header plus key, metadata and stored value, and the sealing overhead of an encrypted record.
    package var recordLength: Int {
        RecordFormat.headerSize + keyLength + metadataLength + storedValueLength
            + (flags.contains(.encrypted) ? RecordFormat.sealOverhead : 0)
    }
}

/// Encoding and decoding of records. Pure functions over bytes: no I/O.
package enum RecordFormat {
    package static let magic: UInt32 = 0x4452_434C  // "LCRD" in file order
    package static let version: UInt8 = 1
    package static let headerSize = 40
    package static let checksumOffset = 32

    package static let maximumKeyLength = 64 << 10
    package static let maximumMetadataLength = 16 << 20
    package static let maximumValueLength = 1 << 30
    /// The largest record any writer produces; a header claiming more is corrupt.
    package static let maximumRecordLength = headerSize + maximumKeyLength + maximumMetadataLength + maximumValueLength

    // MARK: Encoding

    /// Encodes a put record, compressing the value when that makes it strictly smaller.
    /// - Throws: ``CacheError/Code/valueTooLarge`` when the key, metadata or value is over its maximum.
    package static func encodePut(
        key: CacheKey,
        metadata: [UInt8],
        value: [UInt8],
        storedAtMillis: Int64,
        allowCompression: Bool = true,
        checksummed: Bool = true
    ) throws -> [UInt8] {
        var key = key.string
        return try key.withUTF8 { keyBytes in
            try metadata.withUnsafeBytes { metadataBytes in
                try value.withUnsafeBytes { valueBytes in
                    try encode(
                        flags: [],
                        key: UnsafeRawBufferPointer(keyBytes),
                        metadata: metadataBytes,
                        value: valueBytes,
                        storedAtMillis: storedAtMillis,
                        allowCompression: allowCompression,
                        checksummed: checksummed
                    )
                }
            }
        }
    }

    /// Encodes a tombstone for the key with `digest`. A tombstone's key field holds the 8-byte
    /// digest (little-endian) rather than the key: removal works on digests, and so needs no read.
    package static func encodeTombstone(digest: UInt64, storedAtMillis: Int64) throws -> [UInt8] {
        try withUnsafeBytes(of: digest.littleEndian) { digestBytes in
            try encode(
                flags: .tombstone,
                key: digestBytes,
                metadata: UnsafeRawBufferPointer(start: nil, count: 0),
                value: UnsafeRawBufferPointer(start: nil, count: 0),
                storedAtMillis: storedAtMillis,
                allowCompression: false
            )
        }
    }

    /// The digest a verified tombstone removes.
    package static func tombstoneDigest(_ record: UnsafeRawBufferPointer) -> UInt64 {
        UInt64(littleEndian: record.loadUnaligned(fromByteOffset: headerSize, as: UInt64.self))
    }

    /// Encodes a clear marker: every record before it is void.
    package static func encodeClear(storedAtMillis: Int64) throws -> [UInt8] {
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        return try encode(
            flags: .clear,
            key: empty,
            metadata: empty,
            value: empty,
            storedAtMillis: storedAtMillis,
            allowCompression: false
        )
    }

    /// The length of a batch marker: a header and the 8-byte length of the batch's records.
    package static let batchMarkerSize = headerSize + 8

    /// Encodes the marker that starts a batch of `count` records taking `bytes` bytes.
    package static func encodeBatchMarker(count: Int, bytes: Int, storedAtMillis: Int64) -> [UInt8] {
        precondition(count > 0 && count <= UInt32.max && bytes > 0)
        var record = [UInt8](repeating: 0, count: batchMarkerSize)
        record.withUnsafeMutableBytes { record in
            write(
                RecordHeader(
                    flags: .batch,
                    keyLength: 8,
                    metadataLength: 0,
                    storedValueLength: 0,
                    originalValueLength: count,
                    storedAtMillis: storedAtMillis,
                    checksum: 0
                ),
                into: record
            )
            record.storeBytes(of: UInt64(bytes).littleEndian, toByteOffset: headerSize, as: UInt64.self)
            let checksum = computeChecksum(UnsafeRawBufferPointer(record))
            record.storeBytes(of: checksum.littleEndian, toByteOffset: checksumOffset, as: UInt32.self)
        }
        return record
    }

    /// The byte length of the records a verified batch marker starts.
    package static func batchLength(_ marker: UnsafeRawBufferPointer) -> Int {
        Int(truncatingIfNeeded: UInt64(littleEndian: marker.loadUnaligned(fromByteOffset: headerSize, as: UInt64.self)))
    }

    /// Marks a plain put or tombstone record as written in a batch (``RecordFlags/inBatch``), and
    /// checksums it again when `checksummed` (a record to be sealed gets its checksum then).
    package static func markInBatch(_ record: inout [UInt8], checksummed: Bool) {
        record.withUnsafeMutableBytes { bytes in
            bytes[5] |= RecordFlags.inBatch.rawValue
            guard checksummed else { return }
            let checksum = computeChecksum(UnsafeRawBufferPointer(bytes))
            bytes.storeBytes(of: checksum.littleEndian, toByteOffset: checksumOffset, as: UInt32.self)
        }
    }

    private static func encode(
        flags: RecordFlags,
        key: UnsafeRawBufferPointer,
        metadata: UnsafeRawBufferPointer,
        value: UnsafeRawBufferPointer,
        storedAtMillis: Int64,
        allowCompression: Bool,
        checksummed: Bool = true
    ) throws -> [UInt8] {
        guard key.count <= maximumKeyLength else {
            throw CacheError(code: .valueTooLarge, message: "key of \(key.count) bytes exceeds \(maximumKeyLength)")
        }
        guard metadata.count <= maximumMetadataLength else {
            throw CacheError(
                code: .valueTooLarge,
                message: "metadata of \(metadata.count) bytes exceeds \(maximumMetadataLength)"
            )
        }
        guard value.count <= maximumValueLength else {
            throw CacheError(
                code: .valueTooLarge,
                message: "value of \(value.count) bytes exceeds \(maximumValueLength)"
            )
        }
        let valueOffset = headerSize + key.count + metadata.count
        return try [UInt8](unsafeUninitializedCapacity: valueOffset + value.count) { buffer, initialized in
            let record = UnsafeMutableRawBufferPointer(buffer)
            copy(key, into: record, at: headerSize)
            copy(metadata, into: record, at: headerSize + key.count)
            var flags = flags
            var storedLength = value.count
            let valueRegion = UnsafeMutableRawBufferPointer(rebasing: record[valueOffset...])
            if allowCompression, value.count > 16,
                let written = try LZ4Codec.compress(
                    value,
                    into: UnsafeMutableRawBufferPointer(rebasing: valueRegion[..<(value.count - 1)])
                )
            {
                flags.insert(.compressed)
                storedLength = written
            } else {
                copy(value, into: record, at: valueOffset)
            }
            let header = RecordHeader(
                flags: flags,
                keyLength: key.count,
                metadataLength: metadata.count,
                storedValueLength: storedLength,
                originalValueLength: value.count,
                storedAtMillis: storedAtMillis,
                checksum: 0
            )
            let length = header.recordLength
            write(header, into: record)
            if checksummed {
                let checksum = computeChecksum(UnsafeRawBufferPointer(rebasing: record[..<length]))
                record.storeBytes(of: checksum.littleEndian, toByteOffset: checksumOffset, as: UInt32.self)
            }
            initialized = length
        }
    }

    private static func copy(
        _ source: UnsafeRawBufferPointer,
        into record: UnsafeMutableRawBufferPointer,
        at offset: Int
    ) {
        guard !source.isEmpty else { return }
        UnsafeMutableRawBufferPointer(rebasing: record[offset..<(offset + source.count)]).copyMemory(from: source)
    }

    static func write(_ header: RecordHeader, into record: UnsafeMutableRawBufferPointer) {
        record.storeBytes(of: magic.littleEndian, toByteOffset: 0, as: UInt32.self)
        record.storeBytes(of: version, toByteOffset: 4, as: UInt8.self)
        record.storeBytes(of: header.flags.rawValue, toByteOffset: 5, as: UInt8.self)
        record.storeBytes(of: UInt16(0), toByteOffset: 6, as: UInt16.self)
        record.storeBytes(of: UInt32(header.keyLength).littleEndian, toByteOffset: 8, as: UInt32.self)
        record.storeBytes(of: UInt32(header.metadataLength).littleEndian, toByteOffset: 12, as: UInt32.self)
        record.storeBytes(of: UInt32(header.storedValueLength).littleEndian, toByteOffset: 16, as: UInt32.self)
        record.storeBytes(of: UInt32(header.originalValueLength).littleEndian, toByteOffset: 20, as: UInt32.self)
        record.storeBytes(of: header.storedAtMillis.littleEndian, toByteOffset: 24, as: Int64.self)
        record.storeBytes(of: header.checksum.littleEndian, toByteOffset: checksumOffset, as: UInt32.self)
        record.storeBytes(of: header.keyID.littleEndian, toByteOffset: 36, as: UInt32.self)
    }

    /// The CRC-32C of a whole record with its checksum field skipped.
    package static func computeChecksum(_ record: UnsafeRawBufferPointer) -> UInt32 {
        let head = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: record[..<checksumOffset]))
        return CRC32C.checksum(UnsafeRawBufferPointer(rebasing: record[(checksumOffset + 4)...]), continuing: head)
    }

    // MARK: Decoding

    /// Reads a header from the first ``headerSize`` bytes of `bytes`.
    /// - Returns: the header, or nil when the bytes are too short, the magic or version is wrong,
    ///   an unknown flag is set, or a length is impossible. The checksum is not checked here.
    package static func parseHeader(_ bytes: UnsafeRawBufferPointer) -> RecordHeader? {
        guard bytes.count >= headerSize,
            UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self)) == magic,
            bytes[4] == version
        else { return nil }
        let flags = RecordFlags(rawValue: bytes[5])
        let keyID = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 36, as: UInt32.self))
        guard RecordFlags.known.isSuperset(of: flags),
            bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self) == 0,
            keyID == 0 || flags.contains(.encrypted)
        else { return nil }
        let keyLength = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        let metadataLength = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
        let storedLength = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt32.self)))
        let originalLength = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 20, as: UInt32.self)))
        guard keyLength <= maximumKeyLength, metadataLength <= maximumMetadataLength,
            storedLength <= maximumValueLength, originalLength <= maximumValueLength
        else { return nil }
        if flags.contains(.batch) {
            // A batch marker: the count of the records it starts, and their length in the key field.
            guard flags == .batch, keyLength == 8, metadataLength == 0, storedLength == 0, originalLength > 0
            else { return nil }
        } else if flags.contains(.inBatch), flags.contains(.clear) {
            return nil
        } else if flags.contains(.compressed) {
            guard storedLength > 0, storedLength < originalLength else { return nil }
        } else {
            guard storedLength == originalLength else { return nil }
        }
        if flags.contains(.tombstone) || flags.contains(.clear) {
            guard metadataLength == 0, storedLength == 0, !flags.contains(.compressed), !flags.contains(.encrypted)
            else { return nil }
        }
        if flags.contains(.tombstone) {
            guard keyLength == 8, !flags.contains(.clear) else { return nil }
        }
        if flags.contains(.clear) {
            guard keyLength == 0 else { return nil }
        }
        return RecordHeader(
            flags: flags,
            keyLength: keyLength,
            metadataLength: metadataLength,
            storedValueLength: storedLength,
            originalValueLength: originalLength,
            storedAtMillis: Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 24, as: Int64.self)),
            checksum: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: checksumOffset, as: UInt32.self)),
            keyID: keyID
        )
    }

    /// Parses and verifies a whole record.
    /// - Returns: the header when `record` is exactly one record whose checksum matches; nil otherwise.
    package static func verifiedHeader(_ record: UnsafeRawBufferPointer) -> RecordHeader? {
        guard let header = parseHeader(record), header.recordLength == record.count,
            computeChecksum(record) == header.checksum
        else { return nil }
        return header
    }

    /// Whether the key stored in a verified record is `key`.
    package static func recordKey(_ record: UnsafeRawBufferPointer, header: RecordHeader, equals key: CacheKey) -> Bool
    {
        var key = key.string
        return key.withUTF8 { keyBytes in
            guard keyBytes.count == header.keyLength else { return false }
            guard header.keyLength > 0 else { return true }
            return memcmpEqual(
                UnsafeRawBufferPointer(rebasing: record[headerSize..<(headerSize + header.keyLength)]),
                UnsafeRawBufferPointer(keyBytes)
            )
        }
    }

    /// The key of a verified record, as a string (nil when it is not valid UTF-8).
    package static func recordKeyString(_ record: UnsafeRawBufferPointer, header: RecordHeader) -> String? {
        let bytes = UnsafeRawBufferPointer(rebasing: record[headerSize..<(headerSize + header.keyLength)])
        return String(validating: bytes, as: UTF8.self)
    }

    /// Decodes the metadata and value of a verified put record.
    /// - Throws: ``CacheError/Code/corruptData`` when the value does not decompress.
    package static func decodeEntry(_ record: UnsafeRawBufferPointer, header: RecordHeader) throws -> CacheEntry {
        let metadataStart = headerSize + header.keyLength
        let valueStart = metadataStart + header.metadataLength
        let metadata = [UInt8](UnsafeRawBufferPointer(rebasing: record[metadataStart..<valueStart]))
        let stored = UnsafeRawBufferPointer(rebasing: record[valueStart..<(valueStart + header.storedValueLength)])
        let value: [UInt8]
        if header.flags.contains(.compressed) {
            value = try LZ4Codec(maximumDecodedLength: maximumValueLength)
                .decompress(stored, originalLength: header.originalValueLength)
        } else {
            value = [UInt8](stored)
        }
        return CacheEntry(
            value: value,
            metadata: metadata,
            storedAt: Date(millisecondsSince1970: header.storedAtMillis)
        )
    }

    private static func memcmpEqual(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.elementsEqual(rhs)
    }
}
