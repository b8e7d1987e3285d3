// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
public import CacheTiers
import NIOCore
import PostgresNIO

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

    /// Notifies every other instance of `invalidation`, a tag's or a key prefix's, in one logged
    /// message, and deletes the rows of the keys it names (``SharedInvalidation/removedKeys``) in the same
    /// statement, so that the message is delivered when they are gone. Tried even while the tier
    /// backs off from failures (slow reads under load opened its breaker, and a purge skipped
    /// then never reached the other instances).
    /// - Throws: `CacheError` when the database cannot be reached in time.
    /// - Complexity: one statement, whatever the number of keys.
    public func broadcast(_ invalidation: SharedInvalidation) async throws {
        let sealer = self.sealer
        let payload = try InvalidationMessage(sender: instanceID, kind: .init(invalidation)).payload(sealer: sealer)
        let named = invalidation.removedKeys.flatMap { self.digests(of: $0, sealer: sealer) }
        try await perform(timeout: configuration.writeTimeout, duringBackoff: true) { [self] in
            if named.isEmpty {
                try await notify(payload)
            } else {
                try await delete(digests: named, notify: payload)
            }
        }
        count(\.invalidationsSent, metrics.invalidationsSent)
    }

    /// The keys of the unexpired rows that start with `prefix`, read a page of 500 rows at a
    /// time (each page within the write timeout, tried even while the tier backs off: a ban is
    /// asked for). A plain row is matched by the database on its key column; a sealed row keeps
    /// its key inside the seal, so every sealed row is read and opened here (one that does not
    /// open is skipped: no read can return it either).
    /// - Throws: `CacheError` when the database cannot be reached in time.
    /// - Complexity: O(rows) read: keys only for plain rows, whole rows for sealed ones.
    public func keys(withPrefix prefix: String) async throws -> [CacheKey] {
        let sealer = self.sealer
        let prefixBytes = Array(prefix.utf8)
        var found: [CacheKey] = []
        var from = Int64.min
        while true {
            let page = try await perform(timeout: configuration.writeTimeout, duringBackoff: true) { [self, from] in
                try await selectKeys(prefix: prefixBytes, sealed: sealer != nil, from: from, limit: 500)
            }
            for row in page {
                if let sealer {
                    guard let key = row.sealedKey(sealer: sealer) else { continue }
                    if key.starts(with: prefixBytes) { found.append(CacheKey(String(decoding: key, as: UTF8.self))) }
                } else {
                    found.append(CacheKey(String(decoding: row.key, as: UTF8.self)))
                }
            }
            guard page.count == 500, let last = page.last?.digest, last < Int64.max else { return found }
            from = last + 1
        }
    }

    /// Up to `limit` unexpired rows with digests from `from` on, by digest: plain rows whose keys
    /// start with `prefix` (their key column only), or, for a `sealed` tier, every sealed row
    /// whole (the caller opens them).
    func selectKeys(prefix: [UInt8], sealed: Bool, from: Int64, limit: Int) async throws -> [SharedRow] {
        let now = configuration.now().millisecondsSince1970
        let rows =
            sealed
            ? try await client.query(
                """
                SELECT digest, key, metadata, value, flags, value_length, stored_at, expires_at, checksum
                FROM \(unescaped: configuration.tableName) WHERE digest >= \(from) AND expires_at > \(now)
                ORDER BY digest LIMIT \(limit)
                """,
                logger: configuration.logger
            )
            : try await client.query(
                """
                SELECT digest, key, ''::bytea, ''::bytea, flags, 0::int4, 0::int8, 0::int8, 0::int8
                FROM \(unescaped: configuration.tableName) WHERE digest >= \(from) AND expires_at > \(now)
                AND substring(key from 1 for \(Int32(clamping: prefix.count))) = \(ByteBuffer(bytes: prefix))
                ORDER BY digest LIMIT \(limit)
                """,
                logger: configuration.logger
            )
        return try await Self.sharedRows(rows)
    }
}
#endif
