// SPDX-License-Identifier: Apache-2.0

/// The node lists under both policies: linking, unlinking, the free list, and views for tests.
extension MemoryShard {
    /// The keys held, LRU: from the most to the least recently used; S3-FIFO: the small queue
    /// then the main queue, each from newest to oldest.
    /// - Complexity: O(n).
    package var keysByRecency: [CacheKey] {
        keys(from: small.head) + keys(from: main.head)
    }

    /// S3-FIFO's queues, each from newest to oldest, and the ghost digests from oldest to newest.
    /// - Complexity: O(n).
    package var queues: (small: [CacheKey], main: [CacheKey], ghosts: [UInt64]) {
        (keys(from: small.head), keys(from: main.head), ghosts.digests)
    }

    /// The frequency of the node for `key`, or nil when it is not held.
    package func frequency(of key: CacheKey) -> Int? {
        guard let slot = index[key.digest], nodes[Int(slot)].key == key else { return nil }
        return Int(nodes[Int(slot)].frequency)
    }

    private func keys(from head: Int32) -> [CacheKey] {
        var keys: [CacheKey] = []
        var slot = head
        while slot != Self.none {
            keys.append(nodes[Int(slot)].key!)
            slot = nodes[Int(slot)].next
        }
        return keys
    }

    // MARK: Nodes

    /// Drops the node at `slot` to make room, counting an eviction.
    mutating func evict(_ slot: Int32) {
        unlink(slot)
        release(slot)
        evictions += 1
    }

    /// Takes a node off its queue and out of the index, and the cost off the total; the node
    /// still holds its key and entry.
    mutating func unlink(_ slot: Int32) {
        detach(slot)
        index[nodes[Int(slot)].key!.digest] = nil
        totalCost -= nodes[Int(slot)].cost
    }

    /// Puts an allocated node at the head of its queue, in the index (by the caller) and in the
    /// total.
    mutating func link(_ slot: Int32) {
        attach(slot)
        totalCost += nodes[Int(slot)].cost
    }

    /// Takes a node off its queue only.
    mutating func detach(_ slot: Int32) {
        let isSmall = nodes[Int(slot)].isSmall
        var queue = isSmall ? small : main
        let previous = nodes[Int(slot)].previous
        let next = nodes[Int(slot)].next
        if previous != Self.none {
            nodes[Int(previous)].next = next
        } else {
            queue.head = next
        }
        if next != Self.none {
            nodes[Int(next)].previous = previous
        } else {
            queue.tail = previous
        }
        queue.cost -= nodes[Int(slot)].cost
        queue.count -= 1
        if isSmall { small = queue } else { main = queue }
    }

    /// Puts a detached node at the head of its queue.
    mutating func attach(_ slot: Int32) {
        let isSmall = nodes[Int(slot)].isSmall
        var queue = isSmall ? small : main
        nodes[Int(slot)].previous = Self.none
        nodes[Int(slot)].next = queue.head
        if queue.head != Self.none {
            nodes[Int(queue.head)].previous = slot
        } else {
            queue.tail = slot
        }
        queue.head = slot
        queue.cost += nodes[Int(slot)].cost
        queue.count += 1
        if isSmall { small = queue } else { main = queue }
    }

    /// Puts an unlinked node on the free list and drops its key and entry.
    mutating func release(_ slot: Int32) {
        nodes[Int(slot)].key = nil
        nodes[Int(slot)].entry = nil
        nodes[Int(slot)].cost = 0
        nodes[Int(slot)].previous = Self.none
        nodes[Int(slot)].next = freeList
        freeList = slot
    }

    mutating func allocate(key: CacheKey, entry: CacheEntry, cost: Int, frequency: UInt8, isSmall: Bool) -> Int32 {
        let node = Node(
            key: key,
            entry: entry,
            cost: cost,
            previous: Self.none,
            next: Self.none,
            frequency: frequency,
            isSmall: isSmall
        )
        if freeList != Self.none {
            let slot = freeList
            freeList = nodes[Int(slot)].next
            nodes[Int(slot)] = node
            return slot
        }
        nodes.append(node)
        return Int32(nodes.count - 1)
    }

    /// LRU: makes a node of the main list its head (the hit path, so it touches `main` in place).
    mutating func moveToFront(_ slot: Int32) {
        guard slot != main.head else { return }
        // Not the head, so it has a previous node.
        let previous = nodes[Int(slot)].previous
        let next = nodes[Int(slot)].next
        nodes[Int(previous)].next = next
        if next != Self.none {
            nodes[Int(next)].previous = previous
        } else {
            main.tail = previous
        }
        nodes[Int(slot)].previous = Self.none
        nodes[Int(slot)].next = main.head
        nodes[Int(main.head)].previous = slot
        main.head = slot
    }
}
