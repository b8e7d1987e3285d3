// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
public import CacheTiers
public import Hummingbird
import NIOConcurrencyHelpers

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
    public var cache: TieredCache { values.cache }
    /// The configuration the driver was made with.
    public let configuration: Configuration
    /// The values with their expiries, in the tiers.
    private let values: ExpiringValues
    /// The keys a `create` is writing now.
    private let creating = KeysInFlight()

    /// A driver over `cache`.
    public init(cache: TieredCache, configuration: Configuration = .init()) {
        self.configuration = configuration
        self.values = ExpiringValues(
            cache: cache,
            keyPrefix: configuration.keyPrefix,
            storagePolicy: configuration.storagePolicy,
            now: configuration.now
        )
    }

    /// Stores `value` under `key` unless an unexpired value is there.
    /// - Throws: `PersistError.duplicate` when one is; the tiers' error when the write fails.
    public func create<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        guard creating.claim(key) else { throw PersistError.duplicate }
        defer { creating.release(key) }
        guard try await values.entry(for: key) == nil else { throw PersistError.duplicate }
        try await write(value, for: key, expiresAt: expires.map(values.date(after:)))
    }

    /// Stores `value` under `key`; with no `expires`, an existing value's expiry is kept.
    /// - Throws: the tiers' error when the write fails.
    public func set<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        let expiresAt: Date? =
            if let expires {
                values.date(after: expires)
            } else {
                try await values.entry(for: key).flatMap { ExpiringValues.expiry(of: $0) }
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
        guard let entry = try await values.entry(for: key) else { return nil }
        let object: Object
        do {
            object = try JSONDecoder().decode(Object.self, from: Data(entry.value))
        } catch {
            throw PersistError.invalidConversion
        }
        return (object, values.timeLeft(of: entry))
    }

    /// Removes the value under `key`, if any.
    /// - Throws: the tiers' error when the removal fails.
    public func remove(key: String) async throws {
        try await values.remove(key)
    }

    private func write<Object: Encodable>(_ value: Object, for key: String, expiresAt: Date?) async throws {
        try await values.set(Array(try JSONEncoder().encode(value)), for: key, expiresAt: expiresAt)
    }
}

/// The keys being created now, so that two concurrent `create`s of one key cannot both succeed.
///
/// Under a lock ThreadSanitizer sees (a pthread mutex): `Synchronization.Mutex` waits on a futex
/// it does not, and it reported `claim` and `release` of two concurrent `create`s as a race.
private final class KeysInFlight: Sendable {
    private let keys = NIOLockedValueBox<Set<String>>([])

    /// Claims `key`; false when another `create` holds it.
    func claim(_ key: String) -> Bool { keys.withLockedValue { $0.insert(key).inserted } }

    func release(_ key: String) { _ = keys.withLockedValue { $0.remove(key) } }
}
#endif
