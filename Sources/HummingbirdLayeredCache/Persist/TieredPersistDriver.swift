// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
public import CacheTiers
public import Hummingbird
import Synchronization

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A Hummingbird `PersistDriver` over a `TieredCache`: sessions and other small
/// state kept in memory and, with a disk tier, across restarts.
///
/// ```swift
/// let tiers = TieredCache(memory: MemoryTier(configuration: .init()), disk: try DiskTier(configuration: .init(directory: path)))
/// let persist = TieredPersistDriver(cache: tiers)
/// router.add(middleware: SessionMiddleware(storage: persist))   // or persist.set(key:value:expires:)
/// app.addServices(tiers)   // the disk tier's maintenance
/// ```
///
/// Values are encoded as JSON into the entry's value; the expiry, as milliseconds since 1970,
/// into its metadata, so that it survives a restart. An expired value is a miss and is removed
/// when it is read. `create` refuses a key that holds an unexpired value with
/// `PersistError.duplicate`, atomically within this driver (not across processes sharing a lower
/// tier). A value that does not decode as the type asked for throws
/// `PersistError.invalidConversion`.
public struct TieredPersistDriver: PersistDriver {
    /// How the driver stores. Every property has a documented default.
    public struct Configuration: Sendable {
        /// Prepended to every key, so that the driver's keys never meet other users of the same
        /// tiers. Defaults to `"persist:"`.
        public var keyPrefix: String
        /// The tiers values go to. Defaults to `.allowed` (memory and disk); sessions that must
        /// not touch the disk use `.allowedInMemoryOnly`.
        public var storagePolicy: StoragePolicy
        /// The wall clock expiries are measured by. Defaults to the system's.
        public var now: @Sendable () -> Date

        /// Creates a configuration; every parameter has the default documented on its property.
        public init(
            keyPrefix: String = "persist:",
            storagePolicy: StoragePolicy = .allowed,
            now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.keyPrefix = keyPrefix
            self.storagePolicy = storagePolicy
            self.now = now
        }
    }

    /// The tiers the values live in.
    public let cache: TieredCache
    /// The configuration the driver was made with.
    public let configuration: Configuration
    /// The keys a `create` is writing now.
    private let creating = KeysInFlight()

    /// A driver over `cache`.
    public init(cache: TieredCache, configuration: Configuration = .init()) {
        self.cache = cache
        self.configuration = configuration
    }

    /// Stores `value` under `key` unless an unexpired value is there.
    /// - Throws: `PersistError.duplicate` when one is; the tiers' error when the write fails.
    public func create<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        guard creating.claim(key) else { throw PersistError.duplicate }
        defer { creating.release(key) }
        guard try await liveEntry(for: key) == nil else { throw PersistError.duplicate }
        try await write(value, for: key, expiresAt: expires.map(expiryDate))
    }

    /// Stores `value` under `key`; with no `expires`, an existing value's expiry is kept.
    /// - Throws: the tiers' error when the write fails.
    public func set<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        let expiresAt: Date? =
            if let expires {
                expiryDate(expires)
            } else {
                try await liveEntry(for: key).flatMap { PersistRecord.expiry(of: $0) }
            }
        try await write(value, for: key, expiresAt: expiresAt)
    }

    /// The value under `key`, or nil when there is none or it has expired.
    /// - Throws: `PersistError.invalidConversion` when it does not decode as `Object`.
    public func get<Object: Codable & Sendable>(key: String, as: Object.Type) async throws -> Object? {
        try await getWithTTL(key: key, as: Object.self)?.object
    }

    /// The value under `key` and the time it has left (nil when it never expires), or nil when
    /// there is none or it has expired.
    /// - Throws: `PersistError.invalidConversion` when it does not decode as `Object`.
    public func getWithTTL<Object: Codable & Sendable>(
        key: String,
        as: Object.Type
    ) async throws -> (object: Object, ttl: Duration?)? {
        guard let entry = try await liveEntry(for: key) else { return nil }
        let object: Object
        do {
            object = try JSONDecoder().decode(Object.self, from: Data(entry.value))
        } catch {
            throw PersistError.invalidConversion
        }
        let ttl = PersistRecord.expiry(of: entry).map { expiry in
            Duration.milliseconds(expiry.millisecondsSince1970 - configuration.now().millisecondsSince1970)
        }
        return (object, ttl)
    }

    /// Removes the value under `key`, if any.
    /// - Throws: the tiers' error when the removal fails.
    public func remove(key: String) async throws {
        _ = try await cache.remove(cacheKey(key))
    }

    /// The entry under `key` unless it has expired (an expired one is removed).
    private func liveEntry(for key: String) async throws -> CacheEntry? {
        let cacheKey = cacheKey(key)
        guard let entry = await cache.entry(for: cacheKey) else { return nil }
        if let expiry = PersistRecord.expiry(of: entry), expiry <= configuration.now() {
            _ = try await cache.remove(cacheKey)
            return nil
        }
        return entry
    }

    private func write<Object: Encodable>(_ value: Object, for key: String, expiresAt: Date?) async throws {
        let entry = CacheEntry(
            value: Array(try JSONEncoder().encode(value)),
            metadata: PersistRecord.metadata(expiresAt: expiresAt),
            storedAt: configuration.now()
        )
        try await cache.set(entry, for: cacheKey(key), policy: configuration.storagePolicy)
    }

    private func expiryDate(_ duration: Duration) -> Date {
        let (seconds, attoseconds) = duration.components
        return configuration.now().addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
    }

    private func cacheKey(_ key: String) -> CacheKey { CacheKey(configuration.keyPrefix + key) }
}

/// The keys being created now, so that two concurrent `create`s of one key cannot both succeed.
private final class KeysInFlight: Sendable {
    private let keys = Mutex<Set<String>>([])

    /// Claims `key`; false when another `create` holds it.
    func claim(_ key: String) -> Bool { keys.withLock { $0.insert(key).inserted } }

    func release(_ key: String) { _ = keys.withLock { $0.remove(key) } }
}
#endif
