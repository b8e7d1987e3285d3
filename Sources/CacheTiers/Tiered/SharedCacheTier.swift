// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A tier that several processes (the instances of an app behind a load balancer) share, below
/// their own memory and disk tiers: what one instance stores, the others read, and what one
/// removes, the others drop.
///
/// ``TieredCache`` reads it last and promotes a hit to its own tiers, writes to it in the
/// background through a bounded queue (a response never waits on it), and hands it removals to
/// broadcast. A shared tier never fails its caller for being down or slow: a read is then a miss,
/// a write is dropped (and counted by the tier), and the tier reconnects on its own.
///
/// Conforming types live in modules of their own (docs/shared-tier.md); this module knows only
/// this protocol.
public protocol SharedCacheTier: Sendable {
    /// The entry for `key`, or nil. A damaged, expired or unreachable entry, or a read slower than
    /// the tier's timeout, is a miss.
    func entry(for key: CacheKey) async -> CacheEntry?
    /// Stores `entry`; an entry over the tier's admission limit is refused and the key's older
    /// value removed.
    /// - Throws: when the tier could not be written (the caller counts it and goes on).
    func set(_ entry: CacheEntry, for key: CacheKey) async throws
    /// Removes `key`, and when `broadcast` is true tells every other instance to drop its own
    /// copies (they receive ``SharedInvalidation/key(_:)`` in ``run(onInvalidation:)``).
    /// - Throws: when the tier could not be reached.
    func remove(_ key: CacheKey, broadcast: Bool) async throws
    /// Removes every entry and tells every other instance to do the same.
    func removeAll() async throws
    /// Removes the entries stored at or after `date` and tells every other instance to do the same.
    func removeEntries(storedSince date: Date) async throws
    /// Tells every other instance of a tag's invalidation (``SharedInvalidation/tag(_:keys:)``),
    /// whose entries only the layer above knows, in one message: the tier removes the
    /// invalidation's ``SharedInvalidation/taggedKeys`` with it, so that once another instance
    /// hears of it, no read brings them back. The removals above broadcast their own.
    /// - Throws: when the tier could not be reached.
    func broadcast(_ invalidation: SharedInvalidation) async throws
    /// The keys of the unexpired entries that start with `prefix` (byte for byte in UTF-8), for a
    /// removal by prefix (``TieredCache/removeEntries(withKeyPrefix:)``), which removes them and
    /// tells the other instances with ``SharedInvalidation/keyPrefix(_:keys:)``.
    /// - Throws: when the tier could not be reached; the default implementation, for a tier that
    ///   cannot list its keys, throws ``CacheError/Code/invalidArgument``.
    func keys(withPrefix prefix: String) async throws -> [CacheKey]
    /// The bytes and entries the tier holds, or nil when it cannot be reached.
    var sharedUsage: CacheUsage? { get async }
    /// The tier's background work (connections, expiry sweeps, listening for other instances'
    /// invalidations) until cancelled or until graceful shutdown; calls `onInvalidation` for every
    /// invalidation another instance published.
    func run(onInvalidation: @escaping @Sendable (SharedInvalidation) async -> Void) async throws
    /// Stops the tier: later reads miss and writes are dropped.
    func close() async throws
    /// Seals what the tier stores and publishes from now on with `encryption`'s keys (new rows
    /// with ``DiskEncryption/key``; rows sealed with one of ``DiskEncryption/previousKeys`` stay
    /// readable), or, for nil, goes back to the tier's own setting. ``TieredCache`` calls it with
    /// its disk tier's keys when it is made and on ``TieredCache/reopen(encryption:)``, unless
    /// ``TieredCache/SharedOptions/sharesInClear`` is set. Every instance sharing the tier must
    /// give it the same keys.
    /// - Throws: when the tier cannot seal; the default implementation, for tiers that cannot,
    ///   throws ``CacheError/Code/invalidArgument`` for any key and accepts nil.
    func useEncryption(_ encryption: DiskEncryption?) throws
}

extension SharedCacheTier {
    /// A tier that cannot list its keys: throws ``CacheError/Code/invalidArgument``.
    public func keys(withPrefix prefix: String) async throws -> [CacheKey] {
        throw CacheError(code: .invalidArgument, message: "the shared tier \(Self.self) cannot list its keys")
    }

    /// A tier that cannot seal: refuses every key (``CacheError/Code/invalidArgument``) and
    /// accepts nil.
    public func useEncryption(_ encryption: DiskEncryption?) throws {
        guard encryption == nil else {
            throw CacheError(
                code: .invalidArgument,
                message: "the shared tier cannot seal its entries: an encrypted cache would store them in clear "
                    + "(set SharedOptions.sharesInClear to accept that)"
            )
        }
    }
}

/// What another instance removed, as a shared tier delivers it.
public struct SharedInvalidation: Hashable, Sendable, CustomStringConvertible {
    private enum Base: Hashable, Sendable {
        case key(CacheKey)
        case all
        case storedSince(Date)
        case tag(String, keys: [CacheKey])
        case keyPrefix(String, keys: [CacheKey])
    }

    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// One key.
    public static func key(_ key: CacheKey) -> Self { Self(.key(key)) }
    /// Every entry.
    public static var all: Self { Self(.all) }
    /// The entries stored at or after `date`.
    public static func storedSince(_ date: Date) -> Self { Self(.storedSince(date)) }
    /// The entries that the layer above labelled with `tag` (an HTTP cache's tags): this module
    /// does not know which entries those are, and ``TieredCache/run(onTagInvalidation:)`` hands
    /// the tag to that layer.
    public static func tag(_ tag: String) -> Self { Self(.tag(tag, keys: [])) }
    /// The entries labelled with `tag`, as ``tag(_:)``, and the `keys` the invalidating instance
    /// removed for it: a shared tier removes them with the message that tells of it, and every
    /// other instance drops them whatever its own member lists name (an instance that read a
    /// tagged entry from the shared tier does not know its tag).
    public static func tag(_ tag: String, keys: [CacheKey]) -> Self { Self(.tag(tag, keys: keys)) }

    /// The entries whose keys start with `prefix` (a ban), and the `keys` the invalidating
    /// instance removed for it: a shared tier removes them with the message, as for
    /// ``tag(_:keys:)``, and every other instance drops them and its own keys with the prefix
    /// (memory-only entries, which only it knows of, among them).
    public static func keyPrefix(_ prefix: String, keys: [CacheKey]) -> Self { Self(.keyPrefix(prefix, keys: keys)) }

    /// The key, for a one-key invalidation.
    public var key: CacheKey? {
        if case .key(let key) = base { return key }
        return nil
    }

    /// Whether every entry is invalidated.
    public var isAll: Bool { base == .all }

    /// The date, for an invalidation of recent entries.
    public var storedSince: Date? {
        if case .storedSince(let date) = base { return date }
        return nil
    }

    /// The tag, for a tag's invalidation.
    public var tag: String? {
        if case .tag(let tag, _) = base { return tag }
        return nil
    }

    /// The keys removed for a tag's invalidation (see ``tag(_:keys:)``); empty otherwise.
    public var taggedKeys: [CacheKey] {
        if case .tag(_, let keys) = base { return keys }
        return []
    }

    /// The prefix, for an invalidation by key prefix (``keyPrefix(_:keys:)``).
    public var keyPrefix: String? {
        if case .keyPrefix(let prefix, _) = base { return prefix }
        return nil
    }

    /// The keys the invalidating instance removed, which a shared tier removes with the message:
    /// a tag's (``taggedKeys``) or a prefix's; empty otherwise.
    public var removedKeys: [CacheKey] {
        switch base {
        case .tag(_, let keys), .keyPrefix(_, let keys): keys
        case .key, .all, .storedSince: []
        }
    }

    public var description: String {
        switch base {
        case .key(let key): "key(\(key))"
        case .all: "all"
        case .storedSince(let date): "storedSince(\(date))"
        case .tag(let tag, let keys): keys.isEmpty ? "tag(\(tag))" : "tag(\(tag), \(keys.count) keys)"
        case .keyPrefix(let prefix, let keys): "keyPrefix(\(prefix), \(keys.count) keys)"
        }
    }
}
