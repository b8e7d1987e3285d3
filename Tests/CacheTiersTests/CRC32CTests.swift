// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Testing

@testable import CacheTiers

@Suite struct CRC32CTests {
    /// Known vectors (RFC 3720 appendix B.4 and the "123456789" check value).
    static let vectors: [([UInt8], UInt32)] = [
        (Array("123456789".utf8), 0xE306_9283),
        ([], 0),
        ([UInt8](repeating: 0, count: 32), 0x8A91_36AA),
        ([UInt8](repeating: 0xFF, count: 32), 0x62A8_AB43),
        ((0..<32).map { UInt8($0) }, 0x46DD_794E),
        ((0..<32).map { UInt8(31 - $0) }, 0x113F_DB5C),
    ]

    @Test func bothImplementationsMatchTheKnownVectors() {
        for (bytes, expected) in Self.vectors {
            #expect(CRC32C.checksum(bytes) == expected)
            #expect(bytes.withUnsafeBytes { CRC32C.portableChecksum($0) } == expected)
            if CRC32C.usesHardware {
                #expect(bytes.withUnsafeBytes { CRC32C.hardwareChecksum($0) } == expected)
            }
        }
    }

    /// Every length and alignment up to 80 bytes, and continuation at every split, agree.
    @Test func hardwareAgreesWithPortableOnEveryLengthAndAlignment() {
        let bytes = SampleData.random(count: 200)
        bytes.withUnsafeBytes { all in
            for start in 0..<8 {
                for length in 0...80 {
                    let slice = UnsafeRawBufferPointer(rebasing: all[start..<(start + length)])
                    let portable = CRC32C.portableChecksum(slice)
                    #expect(CRC32C.checksum(slice) == portable)
                    let split = length / 3
                    let head = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: slice[..<split]))
                    #expect(
                        CRC32C.checksum(UnsafeRawBufferPointer(rebasing: slice[split...]), continuing: head) == portable
                    )
                }
            }
        }
    }
}
