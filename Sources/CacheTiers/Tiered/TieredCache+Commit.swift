// SPDX-License-Identifier: Apache-2.0

extension TieredCache {
    /// A change in a ``commit(_:policy:)``: the disk tier's (``DiskTier/Change``).
    public typealias Change = DiskTier.Change

    /// Writes `changes` to every tier as one unit: the disk tier writes them as one batch that a
    /// crash keeps whole (``DiskTier/commit(_:)``), so that after a restart either all of them
    /// hold or none does; then memory takes them, and the shared tier (when there is one) has them
    /// queued — it writes them one by one, not as a unit. Changes apply in order: a key set twice
    /// keeps the later value.
    ///
    /// `policy` is the storage policy of every entry set: `.allowedInMemoryOnly` writes memory and
    /// removes the keys below it (in one batch too), `.notAllowed` removes them everywhere. What
    /// the app asked to keep in memory is never written below it.
    ///
    /// Readers in this process may see some changes before the others while the call runs; a
    /// caller that needs its readers to see the whole unit orders them itself (as `EntityStore`
    /// does). Removals in a commit are final as ``remove(_:)``'s are.
    /// - Throws: ``CacheError/Code/closed`` when the cache is closed; the disk tier's error
    ///   (``CacheError/Code/valueTooLarge`` for an entry it would not admit or a batch larger than
    ///   a segment, ``CacheError/Code/outOfSpace``, ``CacheError/Code/io``): then nothing changed in
    ///   memory either. Another lower tier's error, after memory took the changes.
    public func commit(_ changes: [Change], policy: StoragePolicy = .allowed) async throws {
        try lifecycle.checkOpen()
        guard !changes.isEmpty else { return }
        let below = policy.allowsDisk ? changes : changes.map { .remove($0.key) }
        let removes = below.contains { if case .remove = $0 { true } else { false } }
        // One removal slot for the whole unit when it removes anything: no read that raced it
        // promotes what it removed.
        if removes {
            try await removals.removal(of: nil) { try await apply(changes, below: below, policy: policy) }
        } else {
            try await apply(changes, below: below, policy: policy)
        }
    }

    private func apply(_ changes: [Change], below: [Change], policy: StoragePolicy) async throws {
        if let disk { try await disk.commit(below) }
        for change in changes {
            switch change {
            case .set(let entry, let key):
                if policy.allowsMemory { memory.set(entry, for: key) } else { memory.remove(key) }
                writeThrough(entry, for: key, policy: policy)
            case .remove(let key):
                memory.remove(key)
                writeThrough?.enqueueRemove(key, broadcast: true)
            }
        }
        var firstError: (any Error)?
        for tier in lowerTiers.dropFirst(disk == nil ? 0 : 1) {
            for change in below {
                do {
                    switch change {
                    case .set(let entry, let key): _ = try await tier.set(entry, for: key)
                    case .remove(let key): _ = try await tier.remove(key)
                    }
                } catch {
                    firstError = firstError ?? error
                }
            }
        }
        if let firstError { throw firstError }
    }
}

extension DiskTier.Change {
    /// The key the change sets or removes.
    public var key: CacheKey {
        switch self {
        case .set(_, let key), .remove(let key): key
        }
    }
}
