// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
package import CacheTiers

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One row of the shared table, as its columns hold it (see docs/shared-tier.md, "Schema"):
/// pure values, encoded and checked without a database.
///
/// A plain row keeps the key, the metadata and the value (LZ4-compressed when that is smaller) in
/// clear, under a CRC-32C over every column. A sealed row keeps none of them in clear: `value`
/// holds the AES-256-GCM seal of key, metadata and stored value, the digest is keyed, and the
/// other columns are the seal's associated data, so a changed byte anywhere fails to open.
package struct SharedRow: Hashable, Sendable {
    package struct Flags: OptionSet, Hashable, Sendable {
        package let rawValue: Int16
        package init(rawValue: Int16) { self.rawValue = rawValue }
        /// `value` is an LZ4 block that decodes to `valueLength` bytes.
        static let compressed = Flags(rawValue: 1)
        /// `value` is an AES-GCM seal (nonce, ciphertext, tag); `key` and `metadata` are empty.
        static let sealed = Flags(rawValue: 2)
    }

    package var digest: Int64
    package var key: [UInt8]
    package var metadata: [UInt8]
    package var value: [UInt8]
    package var flags: Flags
    /// The value's decoded length.
    package var valueLength: Int32
    package var storedAtMillis: Int64
    package var expiresAtMillis: Int64
    package var checksum: Int64

    /// The bytes the row counts against the budget: its byte columns and a fixed 64 for the rest.
    package var size: Int32 { Int32(clamping: key.count + metadata.count + value.count + 64) }

    /// Encodes `entry` for `key`, expiring at `expiresAt`, sealed when `sealer` is given.
    /// - Throws: `CacheError` when the value is larger than LZ4 or AES-GCM accept.
    package static func encode(
        _ entry: CacheEntry,
        for key: CacheKey,
        expiresAtMillis: Int64,
        sealer: RowSealer?
    ) throws -> SharedRow {
        let keyBytes = Array(key.string.utf8)
        var flags: Flags = []
        var stored = entry.value
        if let compressed = try entry.value.withUnsafeBytes({ try LZ4Codec.compressIfSmaller($0) }) {
            stored = compressed
            flags.insert(.compressed)
        }
        var row = SharedRow(
            digest: sealer?.digest(of: keyBytes) ?? Int64(bitPattern: key.digest),
            key: keyBytes,
            metadata: entry.metadata,
            value: stored,
            flags: flags,
            valueLength: Int32(clamping: entry.value.count),
            storedAtMillis: entry.storedAt.millisecondsSince1970,
            expiresAtMillis: expiresAtMillis,
            checksum: 0
        )
        if let sealer {
            row.flags.insert(.sealed)
            row.value = try sealer.seal(
                Self.payload(key: keyBytes, metadata: entry.metadata, value: stored),
                header: row.header
            )
            row.key = []
            row.metadata = []
        }
        row.checksum = row.computeChecksum()
        return row
    }

    /// Why a row could not be used.
    package enum Failure: Error, Hashable {
        /// The checksum or the seal did not verify, or the bytes do not parse: the row is damaged.
        case damaged
        /// The row holds another key with the same digest.
        case otherKey
    }

    /// The entry the row holds for `key`.
    /// - Throws: ``Failure/damaged`` for a row that does not verify, ``Failure/otherKey`` for a
    ///   digest collision.
    package func decode(for key: CacheKey, sealer: RowSealer?) throws(Failure) -> CacheEntry {
        guard checksum == computeChecksum(), valueLength >= 0 else { throw .damaged }
        var keyBytes = self.key
        var metadata = self.metadata
        var stored = self.value
        if flags.contains(.sealed) {
            guard let sealer, let payload = sealer.open(value, header: header),
                let parts = Self.parts(of: payload)
            else { throw .damaged }
            (keyBytes, metadata, stored) = parts
        } else if sealer != nil {
            throw .damaged  // an encrypted cache takes no plain row
        }
        guard keyBytes.elementsEqual(key.string.utf8) else { throw .otherKey }
        var value = stored
        if flags.contains(.compressed) {
            guard let decoded = try? LZ4Codec().decompress(stored, originalLength: Int(valueLength)) else {
                throw .damaged
            }
            value = decoded
        } else if stored.count != Int(valueLength) {
            throw .damaged
        }
        return CacheEntry(value: value, metadata: metadata, storedAt: Date(millisecondsSince1970: storedAtMillis))
    }

    /// The key inside a sealed row, or nil when the row is not sealed, fails its checksum or does
    /// not open with `sealer`'s keys.
    package func sealedKey(sealer: RowSealer) -> [UInt8]? {
        guard flags.contains(.sealed), checksum == computeChecksum(),
            let payload = sealer.open(value, header: header)
        else { return nil }
        return Self.parts(of: payload)?.key
    }

    /// The fixed-width columns, as the checksum and the seal's associated data take them.
    var header: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(30)
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        append(digest)
        append(flags.rawValue)
        append(valueLength)
        append(storedAtMillis)
        append(expiresAtMillis)
        return bytes
    }

    /// CRC-32C over the header and every byte column, each with its length.
    func computeChecksum() -> Int64 {
        var crc = CRC32C.checksum(header)
        for column in [key, metadata, value] {
            withUnsafeBytes(of: UInt32(column.count).littleEndian) { crc = CRC32C.checksum($0, continuing: crc) }
            column.withUnsafeBytes { crc = CRC32C.checksum($0, continuing: crc) }
        }
        return Int64(crc)
    }

    /// What a sealed row seals: key and metadata, each after its 32-bit length, then the value.
    static func payload(key: [UInt8], metadata: [UInt8], value: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(8 + key.count + metadata.count + value.count)
        withUnsafeBytes(of: UInt32(key.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: key)
        withUnsafeBytes(of: UInt32(metadata.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: metadata)
        bytes.append(contentsOf: value)
        return bytes
    }

    /// Splits an opened payload; nil when its lengths do not fit.
    static func parts(of payload: [UInt8]) -> (key: [UInt8], metadata: [UInt8], value: [UInt8])? {
        var offset = 0
        func length() -> Int? {
            guard payload.count - offset >= 4 else { return nil }
            let value = payload.withUnsafeBytes {
                UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            }
            offset += 4
            return Int(value) <= payload.count - offset ? Int(value) : nil
        }
        guard let keyCount = length() else { return nil }
        let key = Array(payload[offset..<(offset + keyCount)])
        offset += keyCount
        guard let metadataCount = length() else { return nil }
        let metadata = Array(payload[offset..<(offset + metadataCount)])
        offset += metadataCount
        return (key, metadata, Array(payload[offset...]))
    }
}
#endif
