// SPDX-License-Identifier: Apache-2.0

extension MemoryTier {
    /// Which entry a full shard of the memory tier drops to make room.
    ///
    /// - ``lru``: the least recently used entry. Every hit moves the entry to the front of its
    ///   shard's list, so a hit writes three list nodes under the shard's lock, and a one-time scan
    ///   of many keys flushes everything else.
    /// - ``s3FIFO``: S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction",
    ///   SOSP 2023). A new key enters a small FIFO queue holding 10% of the shard's budgets; a key
    ///   read at least twice while there moves to the main FIFO queue (90%), any other leaves and
    ///   its digest is remembered in a ghost queue (as many bytes and entries as the main queue,
    ///   digests only). A key set again while its digest is a ghost goes straight to the main
    ///   queue. The main queue evicts from its tail, reinserting entries read since they last
    ///   passed (a frequency of 0 to 3, decremented on each pass). A hit only raises the frequency:
    ///   no list is reordered, so a hit is cheaper than under LRU, and a one-time scan passes
    ///   through the small queue without evicting the keys that are read again. The ghost queue is
    ///   not counted in the byte budget: 40 to 70 bytes per remembered digest (a table entry and a
    ///   ring slot), at most as many digests as the main queue's share of the entry budget (and in
    ///   practice about as many as the main queue holds).
    ///
    /// On Twitter's production trace in `docs/benchmarks.md`, S3-FIFO misses about 10% less often
    /// than LRU at the same byte budget (0.307 against 0.340 at 1% of the footprint, 0.188 against
    /// 0.209 at 10%, with one shard or the default sharding alike), and its hits are no slower,
    /// which is why it is the default.
    ///
    /// A struct rather than an enum, so that policies can be added without breaking a `switch`.
    public struct EvictionPolicy: Sendable, Hashable, CustomStringConvertible {
        enum Kind: Sendable, Hashable {
            case lru
            case s3FIFO
        }

        let kind: Kind

        private init(_ kind: Kind) {
            self.kind = kind
        }

        /// Least recently used, exact within a shard.
        public static let lru = EvictionPolicy(.lru)

        /// S3-FIFO: a small and a main FIFO queue with a ghost queue; scan-resistant, and a hit
        /// reorders nothing. The default.
        public static let s3FIFO = EvictionPolicy(.s3FIFO)

        /// `"lru"` or `"s3fifo"`.
        public var description: String {
            switch kind {
            case .lru: "lru"
            case .s3FIFO: "s3fifo"
            }
        }
    }
}
