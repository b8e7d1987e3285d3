// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Testing

@testable import CacheTiers

/// The memory shard's digest index against `Dictionary` as the reference model.
@Suite struct DigestTableTests {
    /// Random inserts, overwrites and removals over digests that crowd a few home slots (long
    /// runs that wrap around the table's end, so that backward-shift removal is exercised), with
    /// growth along the way: the table answers as the dictionary does after every step.
    @Test(arguments: [1, 2, 3])
    func randomOperationsMatchADictionary(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        var table = DigestTable()
        var model: [UInt64: Int32] = [:]
        // Low bits from a small set (crowded runs, many near the table's end); high bits vary and
        // are never all zero (zero shares one's entry: see the next test).
        func digest() -> UInt64 {
            let low = [0, 1, 2, 13, 14, 15, 31, 63, 127][Int(generator.next() % 9)]
            return (generator.next() % 64 + 1) << 32 | UInt64(low) | (generator.next() % 4) << 8
        }
        // The first step where the table and the model disagree, if any.
        var firstMismatch: Int?
        for step in 0..<20_000 where firstMismatch == nil {
            let key = digest()
            switch generator.next() % 3 {
            case 0, 1:
                let value = Int32(truncatingIfNeeded: generator.next())
                table[key] = value
                model[key] = value
            default:
                table[key] = nil
                model[key] = nil
            }
            let agrees =
                table.count == model.count && table[key] == model[key]
                && (step % 997 != 0 || model.allSatisfy { table[$0.key] == $0.value })
            if !agrees { firstMismatch = step }
        }
        #expect(firstMismatch == nil)
        #expect(model.allSatisfy { table[$0.key] == $0.value })
        table.removeAll()
        #expect(table.isEmpty && table[digest()] == nil)
    }

    /// Digest zero shares its entry with digest one (the empty-slot marker), as two colliding
    /// digests do.
    @Test func digestZeroIsStoredAsOne() {
        var table = DigestTable()
        table[0] = 7
        #expect(table[0] == 7 && table[1] == 7 && table.count == 1)
        table[1] = nil
        #expect(table[0] == nil && table.isEmpty)
    }
}
