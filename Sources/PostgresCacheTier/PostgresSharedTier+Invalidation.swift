// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
public import CacheTiers

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Removals and broadcasts: each deletes what it names and notifies every other instance in one
/// statement, so that the notification is delivered when the deletion commits.
extension PostgresSharedTier {
    /// Deletes `key`'s row and, when `broadcast`, notifies every other instance, in one statement.
    /// - Throws: `CacheError` when the database cannot be reached in time.
    public func remove(_ key: CacheKey, broadcast: Bool) async throws {
        let sealer = self.sealer
        let digests = digests(of: key, sealer: sealer)
        let payload =
            broadcast
            ? try InvalidationMessage(sender: instanceID, kind: .key(Array(key.string.utf8))).payload(sealer: sealer)
            : nil
        try await perform(timeout: configuration.writeTimeout) { [self] in
            try await delete(digests: digests, notify: payload)
        }
        if broadcast { count(\.invalidationsSent, metrics.invalidationsSent) }
    }

    /// Empties the table and tells every other instance to empty its tiers; tried even while the
    /// tier backs off from failures.
    public func removeAll() async throws {
        let payload = try InvalidationMessage(sender: instanceID, kind: .all).payload(sealer: sealer)
        try await perform(timeout: configuration.writeTimeout, duringBackoff: true) { [self] in
            try await truncate(notify: payload)
        }
        count(\.invalidationsSent, metrics.invalidationsSent)
    }

    /// Deletes the rows stored at or after `date` and tells every other instance to do the same;
    /// tried even while the tier backs off from failures.
    public func removeEntries(storedSince date: Date) async throws {
        let millis = date.millisecondsSince1970
        let payload = try InvalidationMessage(sender: instanceID, kind: .storedSince(millis)).payload(sealer: sealer)
        try await perform(timeout: configuration.writeTimeout, duringBackoff: true) { [self] in
            try await delete(storedSince: millis, notify: payload)
        }
        count(\.invalidationsSent, metrics.invalidationsSent)
    }

    /// Notifies every other instance of `invalidation`, a tag's, in one logged message, and
    /// deletes the rows of the keys it names (``SharedInvalidation/taggedKeys``) in the same
    /// statement, so that the message is delivered when they are gone. Tried even while the tier
    /// backs off from failures (slow reads under load opened its breaker, and a purge skipped
    /// then never reached the other instances).
    /// - Throws: `CacheError` when the database cannot be reached in time.
    /// - Complexity: one statement, whatever the number of keys.
    public func broadcast(_ invalidation: SharedInvalidation) async throws {
        let sealer = self.sealer
        let payload = try InvalidationMessage(sender: instanceID, kind: .init(invalidation)).payload(sealer: sealer)
        let named = invalidation.taggedKeys.flatMap { self.digests(of: $0, sealer: sealer) }
        try await perform(timeout: configuration.writeTimeout, duringBackoff: true) { [self] in
            if named.isEmpty {
                try await notify(payload)
            } else {
                try await delete(digests: named, notify: payload)
            }
        }
        count(\.invalidationsSent, metrics.invalidationsSent)
    }
}
#endif
