// SPDX-License-Identifier: Apache-2.0

/// S3-FIFO eviction (Yang, Zhang, Qiu, Yue, Rashmi, "FIFO queues are all you need for cache
/// eviction", SOSP 2023, Algorithm 1).
extension MemoryShard {
    /// The main queue's budgets: what the small queue's share leaves.
    var mainCostLimit: Int { costLimit - smallCostLimit }
    var mainCountLimit: Int { countLimit - smallCountLimit }

    /// Evicts one entry: from the small queue while it holds at least its share (or the main
    /// queue is empty), else from the main queue.
    mutating func evictS3FIFO() {
        if small.count > 0, small.cost >= smallCostLimit || small.count >= smallCountLimit || main.count == 0 {
            evictSmall()
        } else {
            evictMain()
        }
    }

    /// Takes nodes off the small queue's tail until one is evicted: a node read more than
    /// ``promotionFrequency`` times moves to the main queue (which evicts while over its share),
    /// any other is evicted and its digest becomes a ghost.
    mutating func evictSmall() {
        while small.tail != Self.none {
            let slot = small.tail
            if nodes[Int(slot)].frequency > Self.promotionFrequency {
                detach(slot)
                nodes[Int(slot)].isSmall = false
                nodes[Int(slot)].frequency = 0
                attach(slot)
                while main.count > 1, main.cost > mainCostLimit || main.count > mainCountLimit {
                    evictMain()
                }
            } else {
                ghosts.insert(nodes[Int(slot)].key!.digest, cost: nodes[Int(slot)].cost)
                evict(slot)
                return
            }
        }
    }

    /// Takes nodes off the main queue's tail until one is evicted: a node read since it last
    /// passed goes back to the head with its frequency decremented.
    mutating func evictMain() {
        while main.tail != Self.none {
            let slot = main.tail
            if nodes[Int(slot)].frequency > 0 {
                nodes[Int(slot)].frequency -= 1
                detach(slot)
                attach(slot)
            } else {
                evict(slot)
                return
            }
        }
    }
}
