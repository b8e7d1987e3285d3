// SPDX-License-Identifier: Apache-2.0

/// Where a record lives, as the index knows it: in 12 bytes (see ``DiskIndex``).
///
/// - The key's *index digest*: the top 31 bits of its 64-bit digest (the tag) and the low 6 bits
///   (the index stripe); the bits between are not kept. Two keys that agree in those 37 bits
///   share a slot: the later one replaces the earlier, which becomes a miss — never a wrong answer,
///   because every read checks the full key stored in the record.
/// - The segment (26 bits: sequence numbers below 2^26) and the offset in it (30 bits: segments
///   are at most 1 GiB).
/// - A size class (8 bits): the record's length rounded up to 1/8 of its power of two, so that a
///   hit reads the whole record (and at most an eighth more) in one positional read; the exact
///   length is in the record's header, which the checksum covers.
/// - The access bit (second chance on retirement).
package struct IndexEntry: Hashable, Sendable {
    /// The key's index digest (``indexDigest(_:)``); never zero.
    package private(set) var digest: UInt64
    /// The segment's sequence number.
    package var segment: UInt32
    /// The record's offset in the segment.
    package var offset: UInt32
    /// The record's size class.
    package private(set) var sizeClass: UInt8
    /// Set when the entry was read since it was written: it earns a second chance when its segment
    /// is retired.
    package var accessed: Bool

    /// The largest segment sequence number an entry can name.
    package static let maximumSegment: UInt32 = (1 << 26) - 1
    /// The largest offset an entry can name.
    package static let maximumOffset: UInt32 = (1 << 30) - 1

    /// An entry for a record of `length` bytes; `digest` is reduced to an index digest.
    package init(digest: UInt64, segment: UInt32, offset: UInt32, length: Int, accessed: Bool = false) {
        precondition(length >= 0 && length < 1 << 31, "record length out of range")
        precondition(segment <= Self.maximumSegment, "segment sequence out of range")
        precondition(offset <= Self.maximumOffset, "offset out of range")
        self.digest = Self.indexDigest(digest)
        self.segment = segment
        self.offset = offset
        self.sizeClass = Self.sizeClass(of: length)
        self.accessed = accessed
    }

    /// Rebuilds an entry from its packed parts.
    init(digest: UInt64, segment: UInt32, offset: UInt32, sizeClass: UInt8, accessed: Bool) {
        self.digest = digest
        self.segment = segment
        self.offset = offset
        self.sizeClass = sizeClass
        self.accessed = accessed
    }

    /// The bytes a read of the record takes: its length rounded up to its size class.
    package var length: Int { Self.length(ofClass: sizeClass) }

    // MARK: Digests

    /// The bits of a digest the index keeps: the top 31 (the tag) and the low 6 (the stripe).
    package static let digestMask: UInt64 = 0xFFFF_FFFE_0000_003F

    /// `digest` reduced to what the index keeps; never zero, and its tag never zero.
    @inline(__always)
    package static func indexDigest(_ digest: UInt64) -> UInt64 {
        let reduced = digest & digestMask
        return reduced >> 33 == 0 ? reduced | 1 << 33 : reduced
    }

    // MARK: Size classes

    /// The smallest size class whose length is at least `length`: classes are `(8 + m) << e` for
    /// a 3-bit `m` and a 5-bit `e`, each at most an eighth above the length it rounds.
    package static func sizeClass(of length: Int) -> UInt8 {
        let bits = Int.bitWidth - length.leadingZeroBitCount
        var exponent = max(0, bits - 4)
        var quotient = max(8, (length + (1 << exponent) - 1) >> exponent)
        if quotient == 16 {
            exponent += 1
            quotient = 8
        }
        return UInt8(exponent << 3 | (quotient - 8))
    }

    /// The length of size class `sizeClass`.
    @inline(__always)
    package static func length(ofClass sizeClass: UInt8) -> Int {
        (8 + Int(sizeClass & 7)) << Int(sizeClass >> 3)
    }
}
