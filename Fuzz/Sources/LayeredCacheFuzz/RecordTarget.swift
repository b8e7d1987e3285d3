// SPDX-License-Identifier: Apache-2.0

@testable import CacheTiers

/// The disk record format (`RecordFormat`): any bytes parse or are refused without a crash; a
/// record that verifies decodes to the lengths its header gives; a record encoded from values
/// decodes to exactly those values; one flipped bit anywhere in it is detected.
enum RecordTarget {
    static func run(_ data: UnsafeRawBufferPointer) {
        decodeArbitrary(data)
        roundTrip(FuzzInput(data))
    }

    private static func decodeArbitrary(_ data: UnsafeRawBufferPointer) {
        if let header = RecordFormat.parseHeader(data) {
            check(header.recordLength >= RecordFormat.headerSize, "a parsed header's length is at least a header")
        }
        guard let header = RecordFormat.verifiedHeader(data) else { return }
        check(header.recordLength == data.count, "a verified record is exactly its bytes")
        if header.flags.contains(.tombstone) {
            _ = RecordFormat.tombstoneDigest(data)
            return
        }
        guard !header.flags.contains(.clear), !header.flags.contains(.encrypted) else { return }
        _ = RecordFormat.recordKeyString(data, header: header)
        if let entry = try? RecordFormat.decodeEntry(data, header: header) {
            check(entry.value.count == header.originalValueLength, "the value has its declared length")
            check(entry.metadata.count == header.metadataLength, "the metadata has its declared length")
        }
    }

    private static func roundTrip(_ input: FuzzInput) {
        var input = input
        let key = CacheKey(input.string(upTo: 96))
        let metadata = input.bytes(upTo: 200)
        let storedAt = input.integer(Int64.self)
        let allowCompression = input.bool()
        let flip = (offset: input.integer(UInt32.self), bit: input.byte() % 8)
        let value = input.rest()
        guard
            let record = try? RecordFormat.encodePut(
                key: key,
                metadata: metadata,
                value: value,
                storedAtMillis: storedAt,
                allowCompression: allowCompression
            )
        else {
            check(false, "a record within the limits encodes")
            return
        }
        record.withUnsafeBytes { bytes in
            guard let header = RecordFormat.verifiedHeader(bytes) else {
                check(false, "an encoded record verifies")
                return
            }
            check(RecordFormat.recordKey(bytes, header: header, equals: key), "the key comes back")
            check(header.storedAtMillis == storedAt, "the time comes back")
            let entry = try? RecordFormat.decodeEntry(bytes, header: header)
            check(entry?.value == value && entry?.metadata == metadata, "decode(encode(x)) == x")
            var found = 0
            _ = RecordScanner.scan(bytes) { _, _, _ in found += 1 }
            check(found == 1, "the scanner finds the one record")
        }
        var damaged = record
        damaged[Int(flip.offset) % damaged.count] ^= 1 << flip.bit
        damaged.withUnsafeBytes { bytes in
            check(RecordFormat.verifiedHeader(bytes) == nil, "a flipped bit is detected")
            check(RecordScanner.validRecord(in: bytes, at: 0) == nil, "the scanner skips a flipped record")
        }
        let tombstone = try? RecordFormat.encodeTombstone(digest: key.digest, storedAtMillis: storedAt)
        tombstone?.withUnsafeBytes { bytes in
            check(
                RecordFormat.verifiedHeader(bytes).map { _ in RecordFormat.tombstoneDigest(bytes) } == key.digest,
                "a tombstone names its digest"
            )
        }
    }

    static func seeds() throws -> [[UInt8]] {
        let values: [(String, [UInt8], [UInt8])] = [
            ("https://example.com/a", [2, 0, 1], Array("hello".utf8)),
            ("k", [], Array(repeating: 0x61, count: 200)),
            ("GET https://example.com/b?q=1", Array(repeating: 7, count: 40), incompressible(300, seed: 9)),
        ]
        var seeds = try values.map { key, metadata, value in
            try RecordFormat.encodePut(
                key: CacheKey(key),
                metadata: metadata,
                value: value,
                storedAtMillis: 1_790_000_000_000
            )
        }
        seeds.append(try RecordFormat.encodeTombstone(digest: CacheKey("k").digest, storedAtMillis: 1))
        seeds.append(try RecordFormat.encodeClear(storedAtMillis: 1))
        // Inputs for the round trip: key, metadata, time, compression, flip, value.
        seeds.append(
            [3] + Array("abc".utf8) + [2, 1, 2] + Array(repeating: 1, count: 8) + [1, 5, 0, 0, 0, 3]
                + Array(repeating: 0x62, count: 64)
        )
        return seeds
    }
}
