// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// Values with an optional expiry, over a ``TieredCache``: what a web framework's key-value API (a
/// persist driver, a cache driver) stores. The expiry is kept in the entry's metadata, so that it
/// survives a restart; an expired value is a miss and is removed when it is read.
///
/// The metadata is empty for no expiry, else a format byte (1) and the expiry as 8 bytes of
/// milliseconds since 1970, big-endian. Metadata this version does not know is read as no expiry
/// rather than as an expired value.
package struct ExpiringValues: Sendable {
    /// The tiers the values live in.
    package let cache: TieredCache
    /// Prepended to every key, so that the values never meet other users of the same tiers.
    package let keyPrefix: String
    /// The tiers a value may go to.
    package let storagePolicy: StoragePolicy
    /// The wall clock expiries are measured by.
    package let now: @Sendable () -> Date

    package init(
        cache: TieredCache,
        keyPrefix: String,
        storagePolicy: StoragePolicy,
        now: @escaping @Sendable () -> Date
    ) {
        self.cache = cache
        self.keyPrefix = keyPrefix
        self.storagePolicy = storagePolicy
        self.now = now
    }

    /// The entry under `key` unless it has expired (an expired one is removed).
    /// - Throws: the tiers' error when removing an expired entry fails.
    package func entry(for key: String) async throws -> CacheEntry? {
        let cacheKey = cacheKey(key)
        guard let entry = await cache.entry(for: cacheKey) else { return nil }
        if let expiry = Self.expiry(of: entry), expiry <= now() {
            _ = try await cache.remove(cacheKey)
            return nil
        }
        return entry
    }

    /// Stores `value` under `key`, expiring at `expiresAt` (nil: never).
    /// - Throws: the tiers' error when the write fails.
    package func set(_ value: [UInt8], for key: String, expiresAt: Date?) async throws {
        let entry = CacheEntry(value: value, metadata: Self.metadata(expiresAt: expiresAt), storedAt: now())
        try await cache.set(entry, for: cacheKey(key), policy: storagePolicy)
    }

    /// Removes the value under `key`, if any.
    /// - Throws: the tiers' error when the removal fails.
    package func remove(_ key: String) async throws {
        _ = try await cache.remove(cacheKey(key))
    }

    /// The time `duration` from now.
    package func date(after duration: Duration) -> Date {
        let (seconds, attoseconds) = duration.components
        return now().addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// The time `entry` has left (negative when it has expired), or nil when it never expires.
    package func timeLeft(of entry: CacheEntry) -> Duration? {
        Self.expiry(of: entry).map { expiry in
            .milliseconds(expiry.millisecondsSince1970 - now().millisecondsSince1970)
        }
    }

    /// The expiry in `entry`'s metadata; nil for none (or metadata this version does not know).
    package static func expiry(of entry: CacheEntry) -> Date? {
        let bytes = entry.metadata
        guard bytes.count == 9, bytes[0] == version else { return nil }
        let milliseconds = bytes[1...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Date(millisecondsSince1970: Int64(bitPattern: milliseconds))
    }

    private static let version: UInt8 = 1

    private static func metadata(expiresAt: Date?) -> [UInt8] {
        guard let expiresAt else { return [] }
        let milliseconds = UInt64(bitPattern: expiresAt.millisecondsSince1970)
        return [version] + (0..<8).map { UInt8(truncatingIfNeeded: milliseconds >> (56 - 8 * $0)) }
    }

    private func cacheKey(_ key: String) -> CacheKey { CacheKey(keyPrefix + key) }
}
