// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Testing

@testable import CacheTiers

/// The key digest is part of the plain disk format (and the shared tier's rows): a faster way of
/// computing it must give the same value for every input.
struct KeyDigestTests {
    @Test func knownValuesAreStable() {
        // Computed by an independent port of the algorithm (Python, arbitrary-precision integers
        // masked to 64 bits).
        #expect(KeyDigest.digest(of: "") == 0x9CA0_66F1_A4AB_2EEA)
        #expect(KeyDigest.digest(of: "abc") == 0x6458_E30D_981D_4A24)
        #expect(KeyDigest.digest(of: "GET https://example.com/") == 0xE3C7_F80B_0CCD_6519)
        #expect(KeyDigest.digest(of: "GET https://api.example.com/v1/items/7?fields=all") == 0xCF93_5600_80F9_A4BE)
    }

    @Test func everyLengthMatchesTheByteByByteDefinition() {
        var generator = SplitMix64(seed: 37)
        for length in 0...80 {
            for _ in 0..<20 {
                let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                // An offset into a larger buffer, so that unaligned starts are covered too.
                let padded = [0xAA] + bytes + [0x55]
                padded.withUnsafeBytes { buffer in
                    let slice = UnsafeRawBufferPointer(rebasing: buffer[1..<(1 + length)])
                    #expect(KeyDigest.digest(of: slice) == Self.reference(slice), "length \(length)")
                    #expect(KeyDigest.digest(of: slice, seed: 7) == Self.reference(slice, seed: 7))
                }
            }
        }
    }

    /// The digest as first written: the tail's bytes gathered one by one.
    static func reference(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        let k1: UInt64 = 0x87C3_7B91_1142_53D5
        let k2: UInt64 = 0x4CF5_AD43_2745_937F
        func mix(_ h: UInt64, _ word: UInt64) -> UInt64 {
            var k = word &* k1
            k = (k << 31) | (k >> 33)
            k = k &* k2
            var h = h ^ k
            h = (h << 27) | (h >> 37)
            return h &* 5 &+ 0x52DC_E729
        }
        var h = seed ^ (UInt64(bytes.count) &* k2) ^ 0x9E37_79B9_7F4A_7C15
        var index = 0
        while index + 8 <= bytes.count {
            var word: UInt64 = 0
            for byte in 0..<8 { word |= UInt64(bytes[index + byte]) << (8 * UInt64(byte)) }
            h = mix(h, word)
            index += 8
        }
        if index < bytes.count {
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count {
                tail |= UInt64(bytes[index]) << shift
                shift += 8
                index += 1
            }
            h = mix(h, tail)
        }
        h ^= h >> 33
        h = h &* 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        h = h &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 33
        return h == 0 ? 1 : h
    }
}
