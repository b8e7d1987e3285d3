// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

@Suite struct MemoryShardTests {
    /// An entry for a one-character key that costs exactly `cost` bytes (key + value + overhead).
    static func entry(cost: Int, storedAt seconds: Double = 0) -> CacheEntry {
        CacheEntry(
            value: [UInt8](repeating: 0xAB, count: cost - 1 - CacheEntry.overheadBytes),
            storedAt: Date(timeIntervalSince1970: seconds)
        )
    }

    enum Step: Sendable, CustomStringConvertible {
        /// Sets a one-character key to an entry of that cost, stored at that second.
        case set(String, cost: Int, storedAt: Double = 0)
        case get(String)
        case remove(String)
        case removeAll
        case removeEntries(storedSince: Double)

        var description: String {
            switch self {
            case .set(let key, let cost, _): "set \(key)=\(cost)"
            case .get(let key): "get \(key)"
            case .remove(let key): "remove \(key)"
            case .removeAll: "removeAll"
            case .removeEntries(let seconds): "removeSince \(Int(seconds))"
            }
        }
    }

    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        var costLimit = 300
        var countLimit = 10
        var maximumEntryCost: Int?
        var steps: [Step]
        /// Most recently used first.
        var keys: [String]
        var cost: Int
        var evictions = 0
        var hits = 0
        var misses = 0
        var refusals = 0

        var testDescription: String { name }
    }

    static let scenarios: [Scenario] = [
        Scenario(
            name: "bytes: the least recently set goes first",
            steps: [.set("a", cost: 100), .set("b", cost: 100), .set("c", cost: 100), .set("d", cost: 100)],
            keys: ["d", "c", "b"],
            cost: 300,
            evictions: 1
        ),
        Scenario(
            name: "bytes: a large entry evicts as many as it needs",
            steps: [.set("a", cost: 100), .set("b", cost: 100), .set("c", cost: 100), .set("d", cost: 250)],
            keys: ["d"],
            cost: 250,
            evictions: 3
        ),
        Scenario(
            name: "bytes: exactly at the limit evicts nothing",
            steps: [.set("a", cost: 100), .set("b", cost: 200)],
            keys: ["b", "a"],
            cost: 300
        ),
        Scenario(
            name: "count: the least recently set goes first",
            costLimit: 10_000,
            countLimit: 2,
            steps: [.set("a", cost: 100), .set("b", cost: 100), .set("c", cost: 100)],
            keys: ["c", "b"],
            cost: 200,
            evictions: 1
        ),
        Scenario(
            name: "count: a get refreshes recency",
            costLimit: 10_000,
            countLimit: 3,
            steps: [.set("a", cost: 70), .set("b", cost: 80), .set("c", cost: 90), .get("a"), .set("d", cost: 100)],
            keys: ["d", "a", "c"],
            cost: 260,
            evictions: 1,
            hits: 1
        ),
        Scenario(
            name: "bytes: a get refreshes recency",
            steps: [.set("a", cost: 100), .set("b", cost: 100), .set("c", cost: 100), .get("a"), .set("d", cost: 100)],
            keys: ["d", "a", "c"],
            cost: 300,
            evictions: 1,
            hits: 1
        ),
        Scenario(
            name: "a miss changes nothing",
            steps: [.set("a", cost: 100), .set("b", cost: 100), .get("z"), .get("z")],
            keys: ["b", "a"],
            cost: 200,
            misses: 2
        ),
        Scenario(
            name: "overwrite adjusts the cost and refreshes recency",
            steps: [.set("a", cost: 100), .set("b", cost: 100), .set("a", cost: 150)],
            keys: ["a", "b"],
            cost: 250
        ),
        Scenario(
            name: "overwrite with a smaller entry",
            steps: [.set("a", cost: 200), .set("b", cost: 100), .set("a", cost: 70)],
            keys: ["a", "b"],
            cost: 170
        ),
        Scenario(
            name: "overwrite that needs room evicts others, not itself",
            steps: [.set("a", cost: 100), .set("b", cost: 100), .set("c", cost: 100), .set("a", cost: 200)],
            keys: ["a", "c"],
            cost: 300,
            evictions: 1
        ),
        Scenario(
            name: "remove frees its cost",
            steps: [.set("a", cost: 100), .set("b", cost: 90), .set("c", cost: 80), .remove("b"), .remove("z")],
            keys: ["c", "a"],
            cost: 180
        ),
        Scenario(
            name: "a removed slot is reused",
            steps: [
                .set("a", cost: 100), .set("b", cost: 100), .remove("a"), .set("c", cost: 100), .set("d", cost: 100),
            ],
            keys: ["d", "c", "b"],
            cost: 300
        ),
        Scenario(
            name: "removeAll empties, keeps counting",
            steps: [.set("a", cost: 100), .get("a"), .removeAll, .get("a"), .set("b", cost: 100)],
            keys: ["b"],
            cost: 100,
            hits: 1,
            misses: 1
        ),
        Scenario(
            name: "removeEntries(storedSince:) keeps the older ones in order",
            steps: [
                .set("a", cost: 70, storedAt: 1), .set("b", cost: 70, storedAt: 2), .set("c", cost: 70, storedAt: 3),
                .set("d", cost: 70, storedAt: 0), .removeEntries(storedSince: 2),
            ],
            keys: ["d", "a"],
            cost: 140
        ),
        Scenario(
            name: "an entry above the maximum cost is refused and drops the older value",
            maximumEntryCost: 150,
            steps: [.set("a", cost: 100), .set("b", cost: 100), .set("a", cost: 151), .get("a")],
            keys: ["b"],
            cost: 100,
            misses: 1,
            refusals: 1
        ),
        Scenario(
            name: "an entry above the cost limit is refused",
            steps: [.set("a", cost: 100), .set("b", cost: 301)],
            keys: ["a"],
            cost: 100,
            refusals: 1
        ),
        Scenario(
            name: "zero cost limit stores nothing",
            costLimit: 0,
            steps: [.set("a", cost: 65), .get("a")],
            keys: [],
            cost: 0,
            misses: 1,
            refusals: 1
        ),
        Scenario(
            name: "zero count limit stores nothing",
            countLimit: 0,
            steps: [.set("a", cost: 65), .get("a")],
            keys: [],
            cost: 0,
            misses: 1,
            refusals: 1
        ),
    ]

    @Test(arguments: scenarios)
    func lruOrderAndCost(_ scenario: Scenario) {
        var shard = MemoryShard(
            costLimit: scenario.costLimit,
            countLimit: scenario.countLimit,
            maximumEntryCost: scenario.maximumEntryCost
        )
        var reference = ReferenceLRU(
            costLimit: scenario.costLimit,
            countLimit: scenario.countLimit,
            maximumEntryCost: scenario.maximumEntryCost ?? scenario.costLimit
        )
        for step in scenario.steps {
            switch step {
            case .set(let key, let cost, let seconds):
                let entry = Self.entry(cost: cost, storedAt: seconds)
                #expect(entry.cost(keyByteCount: 1) == cost)
                #expect(shard.set(entry, for: CacheKey(key)).stored == reference.set(entry, for: CacheKey(key)))
            case .get(let key):
                #expect(shard.entry(for: CacheKey(key)) == reference.entry(for: CacheKey(key)))
            case .remove(let key):
                #expect(shard.remove(CacheKey(key)) == reference.remove(CacheKey(key)))
            case .removeAll:
                shard.removeAll()
                reference.removeAll()
            case .removeEntries(let seconds):
                let date = Date(timeIntervalSince1970: seconds)
                #expect(shard.removeEntries(storedSince: date) == reference.removeEntries(storedSince: date))
            }
        }
        #expect(shard.keysByRecency.map(\.string) == scenario.keys)
        #expect(shard.totalCost == scenario.cost)
        #expect(shard.count == scenario.keys.count)
        #expect(shard.evictions == scenario.evictions)
        #expect(shard.hits == scenario.hits)
        #expect(shard.misses == scenario.misses)
        #expect(shard.admissionRefusals == scenario.refusals)
        // The table agrees with the reference model too.
        #expect(reference.keys.map(\.string) == scenario.keys)
        #expect(reference.totalCost == scenario.cost)
    }

    @Test func setReportsItsEvictions() {
        var shard = MemoryShard(costLimit: 300, countLimit: 10)
        #expect(shard.set(Self.entry(cost: 100), for: "a") == .init(stored: true, evictions: 0))
        #expect(shard.set(Self.entry(cost: 100), for: "b") == .init(stored: true, evictions: 0))
        #expect(shard.set(Self.entry(cost: 300), for: "c") == .init(stored: true, evictions: 2))
        #expect(shard.set(Self.entry(cost: 301), for: "d") == .init(stored: false, evictions: 0))
    }

    @Test func peekDoesNotTouchRecencyOrCounters() {
        var shard = MemoryShard(costLimit: 300, countLimit: 10)
        shard.set(Self.entry(cost: 100), for: "a")
        shard.set(Self.entry(cost: 100), for: "b")
        #expect(shard.peek("a") == Self.entry(cost: 100))
        #expect(shard.peek("z") == nil)
        #expect(shard.keysByRecency == ["b", "a"])
        #expect(shard.hits == 0 && shard.misses == 0)
    }

    // MARK: Digest collisions

    static let alpha = CacheKey(string: "alpha", digest: 42)
    static let beta = CacheKey(string: "beta", digest: 42)
    static let alphaEntry = CacheEntry(value: Array("alpha's bytes".utf8), storedAt: .distantPast)
    static let betaEntry = CacheEntry(value: Array("beta's bytes".utf8), storedAt: .distantPast)

    @Test func collidingKeyIsAMissNeverTheOtherKeysBytes() {
        var shard = MemoryShard(costLimit: 10_000, countLimit: 10)
        #expect(Self.alpha.digest == Self.beta.digest && Self.alpha != Self.beta)
        shard.set(Self.alphaEntry, for: Self.alpha)
        #expect(shard.entry(for: Self.beta) == nil)
        #expect(shard.peek(Self.beta) == nil)
        #expect(shard.remove(Self.beta) == nil)
        #expect(shard.entry(for: Self.alpha) == Self.alphaEntry)
        #expect(shard.misses == 1 && shard.hits == 1)
    }

    @Test func collidingSetReplacesTheOlderKey() {
        var shard = MemoryShard(costLimit: 10_000, countLimit: 10)
        shard.set(Self.alphaEntry, for: Self.alpha)
        shard.set(Self.entry(cost: 100), for: "other")
        #expect(shard.set(Self.betaEntry, for: Self.beta).stored)
        #expect(shard.entry(for: Self.alpha) == nil)
        #expect(shard.entry(for: Self.beta) == Self.betaEntry)
        #expect(shard.keysByRecency == [Self.beta, "other"])
        #expect(shard.totalCost == Self.betaEntry.cost(keyByteCount: 4) + Self.entry(cost: 100).cost(keyByteCount: 5))
        #expect(shard.evictions == 0)
    }

    @Test func refusedCollidingSetLeavesTheOtherKeyAlone() {
        var shard = MemoryShard(costLimit: 10_000, countLimit: 10, maximumEntryCost: 200)
        shard.set(Self.alphaEntry, for: Self.alpha)
        let large = CacheEntry(value: [UInt8](repeating: 1, count: 500), storedAt: .distantPast)
        #expect(!shard.set(large, for: Self.beta).stored)
        #expect(shard.entry(for: Self.alpha) == Self.alphaEntry)
    }

    // MARK: Random sequences

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomSequenceMatchesReference(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        let keys = randomSequenceKeys(count: 40)
        var shard = MemoryShard(costLimit: 4000, countLimit: 12, maximumEntryCost: 900)
        var reference = ReferenceLRU(costLimit: 4000, countLimit: 12, maximumEntryCost: 900)
        for step in 0..<5000 {
            let operation = RandomOperation.next(keys: keys, maximumValueBytes: 1000, using: &generator)
            operation.apply(to: &shard, and: &reference, step: step)
            guard shard.keysByRecency == reference.keys, shard.totalCost == reference.totalCost else {
                Issue.record("step \(step) (\(operation)): shard and reference differ")
                return
            }
            #expect(shard.totalCost <= 4000 && shard.count <= 12)
        }
        #expect(shard.hits == reference.hits)
        #expect(shard.misses == reference.misses)
        #expect(shard.evictions == reference.evictions)
        #expect(shard.admissionRefusals == reference.admissionRefusals)
        #expect(shard.evictions > 0 && shard.admissionRefusals > 0 && shard.hits > 0)
    }
}
