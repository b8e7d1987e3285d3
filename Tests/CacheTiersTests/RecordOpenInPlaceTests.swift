// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Dispatch
import Synchronization
import Testing

@testable import CacheTiers

/// `RecordFormat.openInPlace`, the disk read path's opener: it decrypts over the bytes read and
/// writes the plain header in front of them. It must give the record that was sealed, refuse a
/// changed bit anywhere the AEAD covers, and open concurrently through one cipher.
@Suite struct RecordOpenInPlaceTests {
    let cipher: RecordCipher

    init() throws {
        cipher = try RecordCipher(
            DiskEncryption(key: EncryptionTests.keyA, previousKeys: [EncryptionTests.keyB]),
            digestSecret: RecordCipher.randomSecret()
        )
    }

    /// A put record of `value` and the same record sealed.
    func sealedRecord(_ value: [UInt8], key: CacheKey = "https://example.com/in-place") throws -> Sealed {
        let plain = try RecordFormat.encodePut(key: key, metadata: [4, 5, 6], value: value, storedAtMillis: 7)
        let sealed = try RecordFormat.seal(plain, digest: cipher.digest(of: key), cipher: cipher)
        return Sealed(plain: plain, sealed: sealed)
    }

    struct Sealed {
        var plain: [UInt8]
        var sealed: [UInt8]
        var pair: ([UInt8], [UInt8]) { (plain, sealed) }
    }

    /// The plain record without its checksum field, which the plain form does not keep.
    static func withoutChecksum(_ record: some Collection<UInt8>) -> [UInt8] {
        let bytes = Array(record)
        return Array(bytes[..<RecordFormat.checksumOffset]) + Array(bytes[(RecordFormat.checksumOffset + 4)...])
    }

    /// Opens a copy of `sealed` in place: the plain record and its header, or nil.
    func open(_ sealed: [UInt8]) -> (plain: [UInt8], header: RecordHeader)? {
        var bytes = sealed
        return bytes.withUnsafeMutableBytes { record in
            guard let header = RecordFormat.parseHeader(UnsafeRawBufferPointer(record)) else { return nil }
            let opened = RecordFormat.openInPlace(record, header: header, cipher: cipher)
            return opened.map { ([UInt8]($0.plain), $0.header) }
        }
    }

    /// Values small and large (past 16 KB, where the libcrypto opener before this one handed over
    /// to swift-crypto), compressed and stored raw, empty and one byte.
    static let values: [[UInt8]] = [
        [], [7], SampleData.json(approximateBytes: 4096), SampleData.random(count: 5000),
        SampleData.random(count: 20_000), SampleData.repetitive(count: 70_000),
    ]

    @Test(arguments: values.indices)
    func opensToThePlainRecordThatWasSealed(index: Int) throws {
        let (plain, sealed) = try sealedRecord(Self.values[index]).pair
        let (opened, header) = try #require(open(sealed))
        #expect(Self.withoutChecksum(opened) == Self.withoutChecksum(plain))
        #expect(!header.flags.contains(.encrypted) && header.keyID == 0)
        #expect(opened.withUnsafeBytes { RecordFormat.parseHeader($0) } == header)
        let entry = try opened.withUnsafeBytes { try RecordFormat.decodeEntry($0, header: header) }
        #expect(entry.value == Self.values[index] && entry.metadata == [4, 5, 6])
        // The copying form agrees.
        let unsealed = sealed.withUnsafeBytes { bytes in
            RecordFormat.parseHeader(bytes).flatMap { RecordFormat.unseal(bytes, header: $0, cipher: cipher) }
        }
        #expect(unsealed == opened)
    }

    /// Every single-bit change is refused, except in the checksum field, which the AEAD does not
    /// cover (it is zero in the associated data): there a change still opens to the same,
    /// authentic bytes. A small record and one past 16 KB.
    @Test(arguments: [300, 20_000])
    func refusesEveryChangedBitOutsideTheChecksumField(valueBytes: Int) throws {
        let (plain, sealed) = try sealedRecord(SampleData.random(count: valueBytes, seed: UInt64(valueBytes))).pair
        let checksumField = RecordFormat.checksumOffset..<(RecordFormat.checksumOffset + 4)
        // Every bit of a small record; past 16 KB, every bit of the first and last 256 bytes and
        // one bit in 61 between (each open of 20 KB in a debug build costs a few microseconds).
        let positions = sealed.indices.filter { position in
            sealed.count < 1024 || position < 256 || position >= sealed.count - 256 || position % 61 == 0
        }
        var wrongly: [Int] = []
        for position in positions {
            for bit in 0..<8 {
                var damaged = sealed
                damaged[position] ^= 1 << bit
                let opened = open(damaged)
                if checksumField.contains(position) {
                    if opened.map({ Self.withoutChecksum($0.plain) }) != Self.withoutChecksum(plain) {
                        wrongly.append(position)
                    }
                } else if opened != nil {
                    wrongly.append(position)
                }
            }
        }
        #expect(wrongly.isEmpty, "bytes \(wrongly)")
    }

    /// A record cut short or grown by a byte, or of a key not given, does not open.
    @Test func refusesAWrongLengthAndAKeyNotGiven() throws {
        let sealed = try sealedRecord(SampleData.json(approximateBytes: 2000)).sealed
        var bytes = sealed
        let header = try #require(bytes.withUnsafeBytes { RecordFormat.parseHeader($0) })
        let shorter = bytes.withUnsafeMutableBytes { record in
            let cut = UnsafeMutableRawBufferPointer(rebasing: record.dropLast())
            return RecordFormat.openInPlace(cut, header: header, cipher: cipher)
        }
        #expect(shorter == nil)
        bytes.append(0)
        let longer = bytes.withUnsafeMutableBytes { RecordFormat.openInPlace($0, header: header, cipher: cipher) }
        #expect(longer == nil)
        let stranger = try RecordCipher(DiskEncryption(key: .random()), digestSecret: RecordCipher.randomSecret())
        var again = sealed
        let foreign = again.withUnsafeMutableBytes { RecordFormat.openInPlace($0, header: header, cipher: stranger) }
        #expect(foreign == nil)
    }

    /// Eight threads open copies of sealed records at once through one cipher (one shared opener
    /// context), each getting its own record back.
    @Test func concurrentOpensEachGetTheirOwnRecord() throws {
        let records = try (0..<8).map { index in
            try sealedRecord(
                index % 4 == 3
                    ? SampleData.random(count: 20_000, seed: UInt64(index))
                    : SampleData.json(approximateBytes: 1500 + 500 * index, seed: UInt64(index)),
                key: CacheKey("https://example.com/concurrent/\(index)")
            )
        }
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for round in 0..<200 {
                let index = (thread + round) % records.count
                let opened = open(records[index].sealed)
                if opened.map({ Self.withoutChecksum($0.plain) }) != Self.withoutChecksum(records[index].plain) {
                    failures.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
    }
}
