// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation

@testable import CacheTiers

/// S3-FIFO written as plainly as possible from the paper (Yang et al., SOSP 2023, Algorithm 1):
/// arrays ordered from newest to oldest, searched linearly. The random-sequence tests check the
/// real shard against it after every operation.
///
/// The rules: a new key enters the small queue (10% of the budgets), or the main queue when its
/// digest is a ghost; a hit raises the frequency to at most 3. While over a budget: if the small
/// queue holds at least its share (or the main queue is empty), its oldest entry moves to the main
/// queue with frequency 0 when its frequency is above 1 (the main queue then evicts while over its
/// share and holding more than one entry), and is otherwise evicted and becomes the newest ghost;
/// else the main queue's oldest entry goes back to the head with its frequency decremented when
/// above 0, and is otherwise evicted. Ghosts are bounded by the main queue's budgets. A set of a
/// key already held keeps its queue and frequency.
struct ReferenceS3FIFO {
    struct Item {
        var key: CacheKey
        var entry: CacheEntry
        var cost: Int
        var frequency: Int
    }

    let costLimit: Int
    let countLimit: Int
    let maximumEntryCost: Int
    let smallCostLimit: Int
    let smallCountLimit: Int
    /// Newest first.
    private(set) var small: [Item] = []
    /// Newest first.
    private(set) var main: [Item] = []
    /// Oldest first.
    private(set) var ghosts: [(digest: UInt64, cost: Int)] = []
    private(set) var hits = 0
    private(set) var misses = 0
    private(set) var evictions = 0
    private(set) var admissionRefusals = 0

    init(costLimit: Int, countLimit: Int, maximumEntryCost: Int) {
        self.costLimit = costLimit
        self.countLimit = countLimit
        self.maximumEntryCost = min(maximumEntryCost, costLimit)
        smallCostLimit = costLimit / 10
        smallCountLimit = countLimit / 10
    }

    var totalCost: Int { (small + main).reduce(0) { $0 + $1.cost } }
    var count: Int { small.count + main.count }
    var smallKeys: [CacheKey] { small.map(\.key) }
    var mainKeys: [CacheKey] { main.map(\.key) }
    var ghostDigests: [UInt64] { ghosts.map(\.digest) }

    private static func matches(_ item: Item, _ key: CacheKey) -> Bool {
        item.key.digest == key.digest && item.key.string == key.string
    }

    mutating func entry(for key: CacheKey) -> CacheEntry? {
        if let position = small.firstIndex(where: { Self.matches($0, key) }) {
            hits += 1
            small[position].frequency = min(small[position].frequency + 1, 3)
            return small[position].entry
        }
        if let position = main.firstIndex(where: { Self.matches($0, key) }) {
            hits += 1
            main[position].frequency = min(main[position].frequency + 1, 3)
            return main[position].entry
        }
        misses += 1
        return nil
    }

    mutating func set(_ entry: CacheEntry, for key: CacheKey) -> Bool {
        let cost = key.string.utf8.count + entry.value.count + entry.metadata.count + 64
        if cost > maximumEntryCost || countLimit == 0 {
            admissionRefusals += 1
            remove(key)
            return false
        }
        var intoSmall = true
        var frequency = 0
        // A key with the same digest, equal or not, is replaced in its queue.
        if let position = small.firstIndex(where: { $0.key.digest == key.digest }) {
            frequency = small.remove(at: position).frequency
        } else if let position = main.firstIndex(where: { $0.key.digest == key.digest }) {
            frequency = main.remove(at: position).frequency
            intoSmall = false
        } else if let position = ghosts.firstIndex(where: { $0.digest == key.digest }) {
            ghosts.remove(at: position)
            intoSmall = false
        }
        while totalCost + cost > costLimit || count >= countLimit {
            let smallCost = small.reduce(0) { $0 + $1.cost }
            if !small.isEmpty, smallCost >= smallCostLimit || small.count >= smallCountLimit || main.isEmpty {
                evictSmall()
            } else {
                evictMain()
            }
        }
        let item = Item(key: key, entry: entry, cost: cost, frequency: frequency)
        if intoSmall { small.insert(item, at: 0) } else { main.insert(item, at: 0) }
        return true
    }

    private mutating func evictSmall() {
        while var item = small.popLast() {
            if item.frequency > 1 {
                item.frequency = 0
                main.insert(item, at: 0)
                while main.count > 1,
                    main.reduce(0, { $0 + $1.cost }) > costLimit - smallCostLimit
                        || main.count > countLimit - smallCountLimit
                {
                    evictMain()
                }
            } else {
                evictions += 1
                addGhost(item.key.digest, cost: item.cost)
                return
            }
        }
    }

    private mutating func evictMain() {
        while var item = main.popLast() {
            if item.frequency > 0 {
                item.frequency -= 1
                main.insert(item, at: 0)
            } else {
                evictions += 1
                return
            }
        }
    }

    private mutating func addGhost(_ digest: UInt64, cost: Int) {
        let limit = costLimit - smallCostLimit
        let countLimit = countLimit - smallCountLimit
        guard countLimit > 0, cost <= limit else { return }
        ghosts.removeAll { $0.digest == digest }
        ghosts.append((digest, cost))
        while ghosts.reduce(0, { $0 + $1.cost }) > limit || ghosts.count > countLimit {
            ghosts.removeFirst()
        }
    }

    @discardableResult
    mutating func remove(_ key: CacheKey) -> CacheEntry? {
        if let position = small.firstIndex(where: { Self.matches($0, key) }) {
            return small.remove(at: position).entry
        }
        if let position = main.firstIndex(where: { Self.matches($0, key) }) {
            return main.remove(at: position).entry
        }
        return nil
    }

    mutating func removeAll() {
        small.removeAll()
        main.removeAll()
        ghosts.removeAll()
    }

    mutating func removeEntries(storedSince date: Date) -> Int {
        let before = count
        small.removeAll { $0.entry.storedAt >= date }
        main.removeAll { $0.entry.storedAt >= date }
        return before - count
    }
}
