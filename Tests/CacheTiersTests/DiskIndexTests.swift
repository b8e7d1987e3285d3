// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Testing

@testable import CacheTiers

@Suite struct DiskIndexTests {
    /// An index digest of stripe 0 with tag `tag`.
    static func digest(_ tag: UInt64) -> UInt64 { tag << 33 }

    /// Random inserts, updates and removes against a Dictionary.
    @Test(arguments: [1, 2, 3])
    func matchesADictionary(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        var index = DiskIndex()
        var model: [UInt64: IndexEntry] = [:]
        // A small digest space forces long probe runs, wrap-around, displacement and backward shifts.
        // The steps are checked without `#expect`, whose cost in an unoptimized build would be
        // most of this test's: the first step that differs is reported.
        var firstDifference: String?
        for step in 0..<20_000 where firstDifference == nil {
            let digest = Self.digest(generator.next() % 3000 + 1)
            switch generator.next() % 3 {
            case 0, 1:
                let entry = IndexEntry(
                    digest: digest,
                    segment: UInt32(step % 7),
                    offset: UInt32(step),
                    length: 40 + step % 100,
                    accessed: step % 5 == 0
                )
                let (found, expected) = (index.update(entry), model.updateValue(entry, forKey: digest))
                if found != expected {
                    firstDifference =
                        "step \(step): update found \(String(describing: found)), not \(String(describing: expected))"
                }
            default:
                let (found, expected) = (index.remove(digest), model.removeValue(forKey: digest))
                if found != expected {
                    firstDifference =
                        "step \(step): remove found \(String(describing: found)), not \(String(describing: expected))"
                }
            }
            if index.count != model.count {
                firstDifference = "step \(step): \(index.count) entries, not \(model.count)"
            }
        }
        #expect(firstDifference == nil)
        #expect(model.allSatisfy { index[$0.key] == $0.value })
        var seen = 0
        var unknown = 0
        index.forEachEntry { entry in
            seen += 1
            if model[entry.digest] != entry { unknown += 1 }
        }
        #expect(unknown == 0)
        #expect(seen == model.count)
    }

    @Test func entriesRoundTripThroughTheirPackedSlot() {
        let entry = IndexEntry(
            digest: Self.digest(0x7FFF_FFFF),
            segment: IndexEntry.maximumSegment,
            offset: IndexEntry.maximumOffset,
            length: (1 << 31) - 1
        )
        var index = DiskIndex()
        index.update(entry)
        #expect(index[entry.digest] == entry)
        #expect(index[entry.digest]?.length ?? 0 >= (1 << 31) - 1)
    }

    @Test func accessBitIsKeptApartFromTheLength() {
        var index = DiskIndex()
        index.update(IndexEntry(digest: Self.digest(7), segment: 1, offset: 2, length: 1 << 30))
        #expect(index[Self.digest(7)]?.accessed == false)
        #expect(index.entryMarkingAccessed(Self.digest(7))?.accessed == false)
        #expect(index[Self.digest(7)]?.accessed == true)
        #expect(index[Self.digest(7)]?.length == 1 << 30)
    }

    /// A digest is reduced to its tag and stripe bits; two digests that differ only between them
    /// share a slot (the later replaces the earlier: a miss, never a wrong answer).
    @Test func digestsAreReducedToTagAndStripe() {
        let full: UInt64 = 0xDEAD_BEEF_1234_5678
        #expect(IndexEntry.indexDigest(full) == full & IndexEntry.digestMask)
        #expect(IndexEntry.indexDigest(0x3F) == 1 << 33 | 0x3F)
        #expect(IndexEntry.indexDigest(full) != 0)
    }

    @Test func sizeClassesCoverTheLengthWithinAnEighth() {
        var lengths = Array(0...4096)
        var length = 4096
        while length < 1 << 31 {
            lengths += [length - 1, length, length + 1, length + length / 3]
            length *= 2
        }
        for length in lengths where length < 1 << 31 {
            let covered = IndexEntry.length(ofClass: IndexEntry.sizeClass(of: length))
            #expect(covered >= length)
            #expect(covered <= max(8, length + length / 8 + 1))
        }
    }

    @Test func memoryPerEntryStaysAtOrUnder16Bytes() {
        var index = DiskIndex()
        var generator = SplitMix64(seed: 9)
        for count in 1...200_000 {
            index.update(IndexEntry(digest: generator.next() & ~0x3F, segment: 1, offset: 0, length: 64))
            if count % 10_000 == 0 {
                #expect(Double(index.memoryBytes) / Double(index.count) <= 16)
            }
        }
    }
}
