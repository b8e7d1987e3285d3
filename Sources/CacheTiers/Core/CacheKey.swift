// SPDX-License-Identifier: Apache-2.0

/// A cache key: a string, hashed once to a stable 64-bit digest.
///
/// Both tiers index entries by `digest` and keep the full key beside it, so that two keys with
/// the same digest can never return each other's bytes: a digest collision makes one of them a
/// miss, never a wrong answer. The digest is stable across processes and machines, because the
/// disk tier writes it into its index snapshot.
///
/// Build a key once and reuse it for the tiers: that is the only place its bytes are hashed.
public struct CacheKey: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The key as given.
    public let string: String
    /// The stable 64-bit digest of the key's UTF-8 bytes (never zero).
    package let digest: UInt64

    /// Creates a key from a string; any string is a valid key.
    public init(_ string: String) {
        self.string = string
        self.digest = KeyDigest.digest(of: string)
    }

    /// Creates a key with a chosen digest, so that tests can force two keys to collide.
    package init(string: String, digest: UInt64) {
        self.string = string
        self.digest = digest
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public var description: String { string }

    public static func == (lhs: CacheKey, rhs: CacheKey) -> Bool {
        lhs.digest == rhs.digest && lhs.string == rhs.string
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }
}

/// A fast, stable 64-bit hash of bytes (a multiply-rotate mix over 8-byte words with a final
/// avalanche, in the family of MurmurHash3 and wyhash). Not cryptographic: the tiers verify the
/// full key on every hit, so a collision costs a miss and nothing more.
package enum KeyDigest {
    private static let k1: UInt64 = 0x87C3_7B91_1142_53D5
    private static let k2: UInt64 = 0x4CF5_AD43_2745_937F

    /// The digest of `string`'s UTF-8 bytes; never zero, so tables can use zero for "empty".
    package static func digest(of string: String, seed: UInt64 = 0) -> UInt64 {
        var string = string
        return string.withUTF8 { digest(of: UnsafeRawBufferPointer($0), seed: seed) }
    }

    /// The digest of `bytes`; never zero.
    package static func digest(of bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        let count = bytes.count
        var h = seed ^ (UInt64(truncatingIfNeeded: count) &* k2) ^ 0x9E37_79B9_7F4A_7C15
        var index = 0
        while index + 8 <= count {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            h = mixWord(h, word)
            index += 8
        }
        if index < count {
            // The last 1...7 bytes as a little-endian word, zero above them: when the key has a
            // full word, one load of its last eight bytes shifted down (no byte loop).
            let remaining = count - index
            let tail: UInt64
            if count >= 8 {
                let last = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
                tail = last >> UInt64(truncatingIfNeeded: (8 - remaining) * 8)
            } else {
                var word: UInt64 = 0
                withUnsafeMutableBytes(of: &word) {
                    $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[index...]))
                }
                tail = UInt64(littleEndian: word)
            }
            h = mixWord(h, tail)
        }
        let result = avalanche(h)
        return result == 0 ? 1 : result
    }

    @inline(__always)
    private static func mixWord(_ h: UInt64, _ word: UInt64) -> UInt64 {
        var k = word &* k1
        k = (k << 31) | (k >> 33)
        k = k &* k2
        var h = h ^ k
        h = (h << 27) | (h >> 37)
        return h &* 5 &+ 0x52DC_E729
    }

    @inline(__always)
    private static func avalanche(_ value: UInt64) -> UInt64 {
        var h = value
        h ^= h >> 33
        h = h &* 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        h = h &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 33
        return h
    }
}
