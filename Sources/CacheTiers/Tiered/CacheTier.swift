// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A storage tier below the memory tier: the disk tier today, a shared remote tier (Redis) later.
///
/// ``TieredCache`` asks its lower tiers in order on a memory miss and writes through to all of
/// them, so a new tier slots in without changing callers.
public protocol CacheTier: Sendable {
    /// The entry for `key`, or nil. A damaged or unreachable entry is a miss.
    func entry(for key: CacheKey) async throws -> CacheEntry?
    /// Stores `entry`; returns false when the tier's admission rule refused it (the key's older
    /// value is then gone from the tier).
    func set(_ entry: CacheEntry, for key: CacheKey) async throws -> Bool
    /// Removes `key`; returns whether it was there.
    func remove(_ key: CacheKey) async throws -> Bool
    /// Removes every entry.
    func removeAll() async throws
    /// Removes the entries stored at or after `date`; returns how many.
    func removeEntries(storedSince date: Date) async throws -> Int
}

extension DiskTier: CacheTier {}
