// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

@Suite struct RecordFormatTests {
    @Test func crc32cMatchesTheKnownVector() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([]) == 0)
        let bytes = SampleData.random(count: 1000)
        let whole = CRC32C.checksum(bytes)
        let head = bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[..<333])) }
        let tail = bytes.withUnsafeBytes {
            CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[333...]), continuing: head)
        }
        #expect(whole == tail)
    }

    enum Value: String, CaseIterable {
        case empty, tiny, json, random
        var bytes: [UInt8] {
            switch self {
            case .empty: []
            case .tiny: [1, 2, 3]
            case .json: SampleData.json(approximateBytes: 8192)
            case .random: SampleData.random(count: 4096)
            }
        }
    }

    @Test(arguments: Value.allCases)
    func putRoundTrips(_ value: Value) throws {
        let key = CacheKey("https://example.com/users?page=2")
        let metadata: [UInt8] = Array("meta".utf8)
        let record = try RecordFormat.encodePut(
            key: key,
            metadata: metadata,
            value: value.bytes,
            storedAtMillis: 1_700_000_000_123
        )
        try record.withUnsafeBytes { bytes in
            let header = try #require(RecordFormat.verifiedHeader(bytes))
            #expect(RecordFormat.recordKey(bytes, header: header, equals: key))
            #expect(
                !RecordFormat.recordKey(bytes, header: header, equals: CacheKey("https://example.com/users?page=1"))
            )
            let entry = try RecordFormat.decodeEntry(bytes, header: header)
            #expect(entry.value == value.bytes)
            #expect(entry.metadata == metadata)
            #expect(entry.storedAt.millisecondsSince1970 == 1_700_000_000_123)
            #expect(header.flags.contains(.compressed) == (value == .json))
        }
    }

    /// Every single-byte change and every truncation of a record is detected.
    @Test func everyByteFlipAndTruncationIsDetected() throws {
        let record = try RecordFormat.encodePut(
            key: "k",
            metadata: [9, 9],
            value: SampleData.json(approximateBytes: 600),
            storedAtMillis: 42
        )
        var mutated = record
        for index in record.indices {
            for mask: UInt8 in [0x01, 0x80, 0xFF, 0x5A] {
                mutated[index] = record[index] ^ mask
                #expect(mutated.withUnsafeBytes { RecordFormat.verifiedHeader($0) } == nil, "flip at \(index)")
            }
            mutated[index] = record[index]
        }
        for length in 0..<record.count {
            #expect(Array(record[..<length]).withUnsafeBytes { RecordFormat.verifiedHeader($0) } == nil)
        }
    }

    @Test func tombstoneAndClearRoundTrip() throws {
        let key = CacheKey("gone")
        let tombstone = try RecordFormat.encodeTombstone(digest: key.digest, storedAtMillis: 5)
        tombstone.withUnsafeBytes { bytes in
            let header = RecordFormat.verifiedHeader(bytes)
            #expect(header?.flags == .tombstone)
            #expect(RecordFormat.tombstoneDigest(bytes) == key.digest)
        }
        let clear = try RecordFormat.encodeClear(storedAtMillis: 5)
        #expect(clear.count == RecordFormat.headerSize)
        #expect(clear.withUnsafeBytes { RecordFormat.verifiedHeader($0) }?.flags == .clear)
    }

    @Test func oversizedKeyIsAThrownError() {
        let key = CacheKey(String(repeating: "k", count: RecordFormat.maximumKeyLength + 1))
        #expect(throws: CacheError.self) {
            try RecordFormat.encodePut(key: key, metadata: [], value: [], storedAtMillis: 0)
        }
    }

    @Test func scannerSkipsDamageAndReportsTheTail() throws {
        var log: [UInt8] = []
        for index in 0..<5 {
            log += try RecordFormat.encodePut(
                key: CacheKey("key\(index)"),
                metadata: [],
                value: Array(repeating: UInt8(index), count: 100),
                storedAtMillis: 0
            )
        }
        let recordLength = log.count / 5
        log[recordLength + 50] ^= 0x10  // damage record 1
        log += Array(repeating: 0xAB, count: 30)  // a torn tail
        let result = log.withUnsafeBytes { RecordScanner.scan($0) { _, _, _ in } }
        #expect(result.validRecords == 4)
        #expect(result.corruptRegions == 1)
        #expect(result.damagedTail)
        #expect(result.validEnd == recordLength * 5)
    }
}
