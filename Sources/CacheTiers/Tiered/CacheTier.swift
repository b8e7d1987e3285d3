// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A storage tier below the memory tier: the disk tier, or a shared remote tier.
///
/// ``TieredCache`` asks its lower tiers in order on a memory miss, promotes what one finds, and
/// writes through to all of them, so that a new tier slots in without changing callers. A tier
/// never holds what a ``StoragePolicy`` keeps in memory: ``TieredCache`` does not hand it such
/// entries.
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
    /// The keys held that start with `prefix` (byte for byte in UTF-8), for a removal by prefix
    /// (``TieredCache/removeEntries(withKeyPrefix:)``). The default implementation, for a tier
    /// that cannot list its keys, throws ``CacheError/Code/invalidArgument``.
    func keys(withPrefix prefix: String) async throws -> [CacheKey]
    /// The bytes and entries the tier holds now, as it counts them.
    var tierUsage: CacheUsage { get async }
    /// Releases what the tier holds open (files, connections); later calls fail or miss.
    func close() async throws
    /// Opens the tier again after ``close()``; a tier that seals what it stores uses
    /// `encryption`'s keys (the disk tier's), so that one key protects every tier.
    func reopen(encryption: DiskEncryption?) async throws
    /// Removes everything a closed tier stores (its files, its rows), so that ``reopen(encryption:)``
    /// starts empty, with any key.
    func reset() async throws
}

extension CacheTier {
    /// A tier that cannot list its keys: throws ``CacheError/Code/invalidArgument``.
    public func keys(withPrefix prefix: String) async throws -> [CacheKey] {
        throw CacheError(code: .invalidArgument, message: "the tier \(Self.self) cannot list its keys")
    }
}

/// How much a tier holds.
public struct CacheUsage: Hashable, Sendable {
    /// The bytes held, as the tier counts them (the memory tier: `CacheEntry.cost(keyByteCount:)`;
    /// the disk tier: every byte of its files).
    public var bytes: Int
    /// The number of entries held.
    public var entryCount: Int

    /// Creates a usage figure.
    public init(bytes: Int, entryCount: Int) {
        self.bytes = bytes
        self.entryCount = entryCount
    }
}

extension DiskTier: CacheTier {
    /// Removes the closed tier's directory (``reset(directory:)``).
    /// - Throws: ``CacheError/Code/invalidArgument`` while the tier is open; I/O errors.
    public func reset() throws {
        guard !isOpen else {
            throw CacheError(code: .invalidArgument, message: "cannot reset a disk tier that is open")
        }
        try Self.reset(directory: configuration.directory)
    }

    /// ``usage`` as every tier reports it.
    public var tierUsage: CacheUsage {
        let usage = self.usage
        return CacheUsage(bytes: usage.bytes, entryCount: usage.entryCount)
    }
}
