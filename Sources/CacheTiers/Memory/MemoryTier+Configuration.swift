// SPDX-License-Identifier: Apache-2.0

extension MemoryTier {
    /// How a memory tier is sized and split.
    public struct Configuration: Sendable {
        /// The most bytes the tier holds, counted by `cost(keyByteCount:)`. Defaults
        /// to 64 MiB; 0 stores nothing, a valid "no cache". Must not be negative.
        public var capacityBytes: Int
        /// The most entries the tier holds. Defaults to 100,000; 0 stores nothing. Must not be
        /// negative.
        public var maximumEntryCount: Int
        /// An entry costing more than this fraction of ``capacityBytes`` is refused. Defaults to
        /// 0.05 (5%); must be in `0...1`.
        public var admissionFraction: Double
        /// How many independently locked shards the tier is split into. Defaults to 16; rounded up
        /// to a power of two; must be at least 1. 1 gives one exact global policy.
        ///
        /// The tier uses fewer shards when the budgets are small, so that each shard keeps a
        /// meaningful part of them: it halves the count while a shard would get less than 1 MiB,
        /// fewer than 64 entries, or less than the largest admissible entry
        /// (`admissionFraction × capacityBytes`).
        public var shardCount: Int
        /// Which entry a full shard drops. Defaults to ``EvictionPolicy/s3FIFO``, which missed
        /// least on the production trace in `docs/benchmarks.md` and does no list surgery on a
        /// hit; ``EvictionPolicy/lru`` is the exact LRU.
        public var evictionPolicy: EvictionPolicy

        /// Creates a configuration; every parameter has the default documented on its property.
        public init(
            capacityBytes: Int = 64 << 20,
            maximumEntryCount: Int = 100_000,
            admissionFraction: Double = 0.05,
            shardCount: Int = 16,
            evictionPolicy: EvictionPolicy = .s3FIFO
        ) {
            self.capacityBytes = capacityBytes
            self.maximumEntryCount = maximumEntryCount
            self.admissionFraction = admissionFraction
            self.shardCount = shardCount
            self.evictionPolicy = evictionPolicy
        }
    }
}
