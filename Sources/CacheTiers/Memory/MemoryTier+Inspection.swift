// SPDX-License-Identifier: Apache-2.0

extension MemoryTier {
    /// The keys held that start with `prefix` (compared byte for byte in UTF-8), read one shard
    /// at a time: a key stored meanwhile in a shard already read is not among them.
    /// - Complexity: O(n).
    package func keys(withPrefix prefix: String) -> [CacheKey] {
        var found: [CacheKey] = []
        for index in 0..<shards.count {
            found += shards.read(index) { shard, _ in shard.keys(withPrefix: prefix) }
        }
        return found
    }

    /// The attachment of the entry stored for `key`, read without counting a lookup and without
    /// marking the entry used: for a writer that checks what it is about to replace.
    /// - Returns: the attachment; nil when the key is not held or its entry has none.
    /// - Complexity: O(1) on average.
    package func attachmentInPlace(for key: CacheKey) -> (any CacheAttachment)? {
        shards.read(Int(truncatingIfNeeded: key.digest >> shardShift)) { shard, _ in
            shard.find(key).flatMap { shard.entry(at: $0).attachment }
        }
    }
}
