// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Testing

@testable import CacheTiers

/// The encrypted record format: seal → unseal → the same plain record; any changed byte is caught
/// by the checksum or by the AEAD.
@Suite struct RecordSealingTests {
    let cipher: RecordCipher

    init() throws {
        cipher = try RecordCipher(
            DiskEncryption(key: EncryptionTests.keyA, previousKeys: [EncryptionTests.keyB]),
            digestSecret: RecordCipher.randomSecret()
        )
    }

    static let values: [[UInt8]] = [
        [], [7], SampleData.json(approximateBytes: 3000), SampleData.random(count: 5000),
        SampleData.repetitive(count: 70_000),
    ]

    @Test(arguments: values.indices)
    func sealThenUnsealGivesThePlainRecordBack(index: Int) throws {
        let key = CacheKey("https://example.com/v/\(index)")
        let plain = try RecordFormat.encodePut(
            key: key,
            metadata: [1, 2, 3],
            value: Self.values[index],
            storedAtMillis: 42
        )
        let digest = cipher.digest(of: key)
        let sealed = try RecordFormat.seal(plain, digest: digest, cipher: cipher)
        #expect(sealed.count == plain.count + RecordFormat.sealOverhead)
        // Random nonces: sealing twice never gives the same bytes.
        #expect(try RecordFormat.seal(plain, digest: digest, cipher: cipher) != sealed)
        let opened = try sealed.withUnsafeBytes { bytes in
            let header = try #require(RecordFormat.verifiedHeader(bytes))
            #expect(header.flags.contains(.encrypted))
            #expect(header.keyID == cipher.current.recordID)
            #expect(RecordFormat.indexDigest(bytes, header: header) == digest)
            return RecordFormat.unseal(bytes, header: header, cipher: cipher)
        }
        let expected = plain.withUnsafeBytes { bytes in
            // The plain form carries no checksum: compare everything else.
            [UInt8](bytes[..<RecordFormat.checksumOffset]) + [UInt8](bytes[(RecordFormat.checksumOffset + 4)...])
        }
        let got = try #require(opened)
        #expect(
            [UInt8](got[..<RecordFormat.checksumOffset]) + [UInt8](got[(RecordFormat.checksumOffset + 4)...])
                == expected
        )
    }

    @Test func everyChangedByteIsDetected() throws {
        let key = CacheKey("k")
        let plain = try RecordFormat.encodePut(
            key: key,
            metadata: [9],
            value: SampleData.json(approximateBytes: 300),
            storedAtMillis: 1
        )
        let sealed = try RecordFormat.seal(plain, digest: cipher.digest(of: key), cipher: cipher)
        for position in sealed.indices {
            var damaged = sealed
            damaged[position] ^= 0x01
            let detectedByChecksum = damaged.withUnsafeBytes { RecordFormat.verifiedHeader($0) == nil }
            #expect(detectedByChecksum, "byte \(position)")
            // With the checksum fixed up, the AEAD still refuses it (the checksum field aside).
            guard !(RecordFormat.checksumOffset..<(RecordFormat.checksumOffset + 4)).contains(position) else {
                continue
            }
            damaged.withUnsafeMutableBytes { bytes in
                let checksum = RecordFormat.computeChecksum(UnsafeRawBufferPointer(bytes))
                bytes.storeBytes(of: checksum.littleEndian, toByteOffset: RecordFormat.checksumOffset, as: UInt32.self)
            }
            let opened: [UInt8]? = damaged.withUnsafeBytes { bytes in
                guard let header = RecordFormat.verifiedHeader(bytes) else { return nil }
                return RecordFormat.unseal(bytes, header: header, cipher: cipher)
            }
            #expect(opened == nil, "byte \(position)")
        }
    }

    @Test func aRecordOfAKeyNotGivenDoesNotOpen() throws {
        let other = try RecordCipher(
            DiskEncryption(key: EncryptionKey.random()),
            digestSecret: RecordCipher.randomSecret()
        )
        let plain = try RecordFormat.encodePut(key: "k", metadata: [], value: [1, 2, 3], storedAtMillis: 1)
        let sealed = try RecordFormat.seal(plain, digest: 5, cipher: other)
        let opened = sealed.withUnsafeBytes { bytes in
            RecordFormat.verifiedHeader(bytes).flatMap { RecordFormat.unseal(bytes, header: $0, cipher: cipher) }
        }
        #expect(opened == nil)
    }

    /// The test vectors of the SipHash paper (appendix A) and its reference implementation.
    @Test func sipHashMatchesTheReferenceVectors() {
        let hasher = SipHash24(key: (0..<16).map { UInt8($0) })
        let message = (0..<64).map { UInt8($0) }
        let expected: [Int: UInt64] = [0: 0x726F_DB47_DD0E_0E31, 1: 0x74F8_39C5_93DC_67FD, 15: 0xA129_CA61_49BE_45E5]
        for (count, digest) in expected {
            #expect(message.withUnsafeBytes { hasher.hash(UnsafeRawBufferPointer(rebasing: $0[..<count])) } == digest)
        }
    }

    /// Two ciphers (two opens of one directory) seal 10,000 records each: no nonce repeats.
    @Test func noncesNeverRepeat() throws {
        let plain = try RecordFormat.encodePut(key: "k", metadata: [], value: [1, 2, 3], storedAtMillis: 1)
        let other = try RecordCipher(
            DiskEncryption(key: EncryptionTests.keyA),
            digestSecret: RecordCipher.randomSecret()
        )
        var seen = Set<[UInt8]>()
        for sealer in [cipher, other] {
            for _ in 0..<10_000 {
                let sealed = try RecordFormat.seal(plain, digest: 1, cipher: sealer)
                seen.insert(Array(sealed[(RecordFormat.headerSize + 8)..<(RecordFormat.headerSize + 20)]))
            }
        }
        #expect(seen.count == 20_000)
    }
}
