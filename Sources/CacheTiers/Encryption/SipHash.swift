// SPDX-License-Identifier: Apache-2.0

/// SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit pseudorandom function built for
/// hash-table keys. Without the 128-bit key, its outputs say nothing about the inputs, so an
/// index of SipHash digests cannot be checked against guessed URLs. About 20× cheaper than
/// HMAC-SHA256 through swift-crypto on short keys, which matters on every disk lookup.
package struct SipHash24: Sendable {
    private let k0: UInt64
    private let k1: UInt64

    /// A hasher keyed with the first 16 bytes of `key` (little-endian).
    package init(key: [UInt8]) {
        precondition(key.count >= 16, "SipHash takes a 128-bit key")
        (k0, k1) = key.withUnsafeBytes {
            (
                UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }

    /// The 64-bit SipHash-2-4 of `bytes`.
    package func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var state = State(
            v0: 0x736F_6D65_7073_6575 ^ k0,
            v1: 0x646F_7261_6E64_6F6D ^ k1,
            v2: 0x6C79_6765_6E65_7261 ^ k0,
            v3: 0x7465_6462_7974_6573 ^ k1
        )
        let count = bytes.count
        var index = 0
        while index + 8 <= count {
            state.compress(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
            index += 8
        }
        var last = UInt64(truncatingIfNeeded: count) << 56
        var shift: UInt64 = 0
        while index < count {
            last |= UInt64(bytes[index]) << shift
            shift += 8
            index += 1
        }
        state.compress(last)
        state.v2 ^= 0xFF
        for _ in 0..<4 { state.round() }
        return state.v0 ^ state.v1 ^ state.v2 ^ state.v3
    }

    private struct State {
        var v0: UInt64
        var v1: UInt64
        var v2: UInt64
        var v3: UInt64

        @inline(__always)
        mutating func compress(_ word: UInt64) {
            v3 ^= word
            round()
            round()
            v0 ^= word
        }

        @inline(__always)
        mutating func round() {
            v0 &+= v1
            v1 = v1.rotatedLeft(13) ^ v0
            v0 = v0.rotatedLeft(32)
            v2 &+= v3
            v3 = v3.rotatedLeft(16) ^ v2
            v0 &+= v3
            v3 = v3.rotatedLeft(21) ^ v0
            v2 &+= v1
            v1 = v1.rotatedLeft(17) ^ v2
            v2 = v2.rotatedLeft(32)
        }
    }
}

extension UInt64 {
    @inline(__always)
    fileprivate func rotatedLeft(_ count: UInt64) -> UInt64 {
        (self << count) | (self >> (64 - count))
    }
}
