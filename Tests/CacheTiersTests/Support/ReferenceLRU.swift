// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

/// The memory tier's rules written as plainly as possible: an array ordered from the most to the
/// least recently used, searched linearly. The random-sequence tests check the real shard and
/// tier against it after every operation.
struct ReferenceLRU {
    struct Item {
        var key: CacheKey
        var entry: CacheEntry
        var cost: Int
    }

    let costLimit: Int
    let countLimit: Int
    let maximumEntryCost: Int
    /// Most recently used first.
    private(set) var items: [Item] = []
    private(set) var hits = 0
    private(set) var misses = 0
    private(set) var evictions = 0
    private(set) var admissionRefusals = 0

    init(costLimit: Int, countLimit: Int, maximumEntryCost: Int) {
        self.costLimit = costLimit
        self.countLimit = countLimit
        self.maximumEntryCost = min(maximumEntryCost, costLimit)
    }

    var totalCost: Int { items.reduce(0) { $0 + $1.cost } }
    var keys: [CacheKey] { items.map(\.key) }

    private func position(of key: CacheKey) -> Int? {
        items.firstIndex { $0.key.digest == key.digest && $0.key.string == key.string }
    }

    mutating func entry(for key: CacheKey) -> CacheEntry? {
        guard let position = position(of: key) else {
            misses += 1
            return nil
        }
        hits += 1
        let item = items.remove(at: position)
        items.insert(item, at: 0)
        return item.entry
    }

    mutating func set(_ entry: CacheEntry, for key: CacheKey) -> Bool {
        let cost = key.string.utf8.count + entry.value.count + entry.metadata.count + 64
        if cost > maximumEntryCost || countLimit == 0 {
            admissionRefusals += 1
            remove(key)
            return false
        }
        // A key with the same digest, equal or not, is replaced.
        items.removeAll { $0.key.digest == key.digest }
        while !items.isEmpty, totalCost + cost > costLimit || items.count >= countLimit {
            items.removeLast()
            evictions += 1
        }
        items.insert(Item(key: key, entry: entry, cost: cost), at: 0)
        return true
    }

    @discardableResult
    mutating func remove(_ key: CacheKey) -> CacheEntry? {
        guard let position = position(of: key) else { return nil }
        return items.remove(at: position).entry
    }

    mutating func removeAll() {
        items.removeAll()
    }

    mutating func removeEntries(storedSince date: Date) -> Int {
        let before = items.count
        items.removeAll { $0.entry.storedAt >= date }
        return before - items.count
    }
}

/// What the random-sequence tests need of a reference model.
protocol ReferenceCache {
    mutating func entry(for key: CacheKey) -> CacheEntry?
    mutating func set(_ entry: CacheEntry, for key: CacheKey) -> Bool
    mutating func remove(_ key: CacheKey) -> CacheEntry?
    mutating func removeAll()
    mutating func removeEntries(storedSince date: Date) -> Int
}

extension ReferenceLRU: ReferenceCache {}
extension ReferenceS3FIFO: ReferenceCache {}

/// One step of a random operation sequence.
enum RandomOperation: CustomStringConvertible {
    case get(CacheKey)
    case set(CacheKey, CacheEntry)
    case remove(CacheKey)
    case removeAll
    case removeEntries(storedSince: Date)

    var description: String {
        switch self {
        case .get(let key): "get \(key)"
        case .set(let key, let entry): "set \(key) (\(entry.value.count) bytes)"
        case .remove(let key): "remove \(key)"
        case .removeAll: "removeAll"
        case .removeEntries(let date): "removeEntries(storedSince: \(date.timeIntervalSince1970))"
        }
    }

    /// Applies the operation to `shard` and to `reference`, expecting the same answers.
    func apply(to shard: inout MemoryShard, and reference: inout some ReferenceCache, step: Int) {
        switch self {
        case .get(let key):
            #expect(shard.entry(for: key) == reference.entry(for: key), "step \(step): \(self)")
        case .set(let key, let entry):
            #expect(shard.set(entry, for: key).stored == reference.set(entry, for: key), "step \(step)")
        case .remove(let key):
            #expect(shard.remove(key) == reference.remove(key), "step \(step): \(self)")
        case .removeAll:
            shard.removeAll()
            reference.removeAll()
        case .removeEntries(let date):
            #expect(shard.removeEntries(storedSince: date) == reference.removeEntries(storedSince: date))
        }
    }

    /// Applies the operation to `tier` and to `reference`, expecting the same answers.
    func apply(to tier: MemoryTier, and reference: inout some ReferenceCache, step: Int) {
        switch self {
        case .get(let key):
            #expect(tier.entry(for: key) == reference.entry(for: key), "step \(step): \(self)")
        case .set(let key, let entry):
            #expect(tier.set(entry, for: key) == reference.set(entry, for: key), "step \(step): \(self)")
        case .remove(let key):
            #expect(tier.remove(key) == reference.remove(key), "step \(step): \(self)")
        case .removeAll:
            tier.removeAll()
            reference.removeAll()
        case .removeEntries(let date):
            #expect(tier.removeEntries(storedSince: date) == reference.removeEntries(storedSince: date))
        }
    }

    /// Draws operations over `keys`: mostly gets and sets, some removes, rarely a bulk removal.
    /// Values are 0 to `maximumValueBytes` bytes, some of them too large for admission.
    static func next(
        keys: [CacheKey],
        maximumValueBytes: Int,
        using generator: inout SplitMix64
    ) -> RandomOperation {
        let key = keys[Int(generator.next() % UInt64(keys.count))]
        let roll = generator.next() % 1000
        switch roll {
        case 0..<450:
            return .get(key)
        case 450..<900:
            let count = Int(generator.next() % UInt64(maximumValueBytes + 1))
            let storedAt = Date(timeIntervalSince1970: Double(generator.next() % 100))
            let value = [UInt8](repeating: UInt8(truncatingIfNeeded: generator.next()), count: count)
            return .set(key, CacheEntry(value: value, metadata: [UInt8(count & 0xFF)], storedAt: storedAt))
        case 900..<985:
            return .remove(key)
        case 985..<997:
            return .removeEntries(storedSince: Date(timeIntervalSince1970: Double(generator.next() % 100)))
        default:
            return .removeAll
        }
    }
}

/// Keys for the random sequences: ordinary keys, plus pairs of different keys forced to share a
/// digest so that collisions come up often.
func randomSequenceKeys(count: Int) -> [CacheKey] {
    var keys = (0..<count).map { CacheKey("https://example.com/items/\($0)") }
    for pair in 0..<4 {
        let digest = 0xC011_1DE0_0000_0000 | UInt64(pair + 1)
        keys.append(CacheKey(string: "collision-\(pair)-a", digest: digest))
        keys.append(CacheKey(string: "collision-\(pair)-b", digest: digest))
    }
    return keys
}
