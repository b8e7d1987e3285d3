// SPDX-License-Identifier: Apache-2.0

#if Vapor
public import CacheTiers
public import Vapor

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A Vapor `Cache` over a `TieredCache`: `app.cache` and `req.cache` values kept in memory and,
/// with a disk tier, across restarts.
///
/// ```swift
/// let tiers = TieredCache(memory: MemoryTier(configuration: .init()), disk: try DiskTier(configuration: .init(directory: path)))
/// app.caches.use(.layered(tiers))   // runs the tiers' maintenance, closes them at shutdown
/// try await app.cache.set("greeting", to: "hello", expiresIn: .minutes(5))
/// ```
///
/// Values are encoded as JSON into the entry's value; the expiry, as milliseconds since 1970,
/// into its metadata, so that it survives a restart. An expired value is a miss and is removed
/// when it is read. Setting nil removes the value, and a value set without an expiry never
/// expires (Vapor's own memory cache does the same). A value that does not decode as the type
/// asked for throws the `DecodingError`, rather than reading as missing.
public struct TieredVaporCache: Cache, Sendable {
    /// How the cache stores. Every property has a documented default.
    public struct Configuration: Sendable {
        /// Prepended to every key, so that the cache's keys never meet other users of the same
        /// tiers. Defaults to `"vapor:"`.
        public var keyPrefix: String
        /// The tiers values go to. Defaults to `.allowed` (memory and disk); values that must not
        /// touch the disk use `.allowedInMemoryOnly`.
        public var storagePolicy: StoragePolicy
        /// The wall clock expiries are measured by. Defaults to the system's.
        public var now: @Sendable () -> Date

        /// Creates a configuration; every parameter has the default documented on its property.
        public init(
            keyPrefix: String = "vapor:",
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
    /// The event loop the cache's futures complete on.
    public let eventLoop: any EventLoop
    private let values: ExpiringValues

    /// A cache over `cache` whose futures complete on `eventLoop`.
    public init(cache: TieredCache, configuration: Configuration = .init(), on eventLoop: any EventLoop) {
        self.init(
            values: ExpiringValues(
                cache: cache,
                keyPrefix: configuration.keyPrefix,
                storagePolicy: configuration.storagePolicy,
                now: configuration.now
            ),
            on: eventLoop
        )
    }

    private init(values: ExpiringValues, on eventLoop: any EventLoop) {
        self.values = values
        self.eventLoop = eventLoop
    }

    /// The value under `key`, or nil when there is none or it has expired.
    /// - Throws: the `DecodingError` when the value does not decode as `T`.
    public func get<T: Decodable & Sendable>(_ key: String, as type: T.Type) async throws -> T? {
        guard let entry = try await values.entry(for: key) else { return nil }
        return try JSONDecoder().decode(T.self, from: Data(entry.value))
    }

    /// The value under `key`, as the asynchronous `get(_:as:)` finds it; the future completes on
    /// ``eventLoop``.
    public func get<T: Decodable & Sendable>(_ key: String, as type: T.Type) -> EventLoopFuture<T?> {
        eventLoop.makeFutureWithTask { try await get(key, as: type) }
    }

    /// Stores `value` under `key`, with no expiry; nil removes the value.
    /// - Throws: the `EncodingError` when `value` does not encode; the tiers' error when the
    ///   write fails.
    public func set<T: Encodable & Sendable>(_ key: String, to value: T?) async throws {
        try await set(key, to: value, expiresIn: nil)
    }

    /// Stores `value` under `key`, expiring after `expirationTime` (nil: never); nil removes the
    /// value.
    /// - Throws: the `EncodingError` when `value` does not encode; the tiers' error when the
    ///   write fails.
    public func set<T: Encodable & Sendable>(
        _ key: String,
        to value: T?,
        expiresIn expirationTime: CacheExpirationTime?
    ) async throws {
        guard let value else { return try await values.remove(key) }
        let bytes = Array(try JSONEncoder().encode(value))
        let expiresAt = expirationTime.map { values.date(after: .seconds($0.seconds)) }
        try await values.set(bytes, for: key, expiresAt: expiresAt)
    }

    /// Stores `value` under `key` with no expiry, as the asynchronous `set(_:to:)` does; the future
    /// completes on ``eventLoop``.
    public func set<T: Encodable & Sendable>(_ key: String, to value: T?) -> EventLoopFuture<Void> {
        set(key, to: value, expiresIn: nil)
    }

    /// Stores `value` under `key`, as the asynchronous `set(_:to:expiresIn:)` does; the future
    /// completes on ``eventLoop``.
    public func set<T: Encodable & Sendable>(
        _ key: String,
        to value: T?,
        expiresIn expirationTime: CacheExpirationTime?
    ) -> EventLoopFuture<Void> {
        eventLoop.makeFutureWithTask { try await set(key, to: value, expiresIn: expirationTime) }
    }

    /// The same cache, with its futures completing on `request`'s event loop.
    public func `for`(_ request: Request) -> TieredVaporCache {
        TieredVaporCache(values: values, on: request.eventLoop)
    }
}

extension Application.Caches.Provider {
    /// A ``TieredVaporCache`` over `cache`: `app.caches.use(.layered(tiers))`. The application's
    /// lifecycle runs the tiers' maintenance (and their shared tier's work) while it runs, and
    /// closes them when it shuts down, which writes the disk tier's index snapshot
    /// (``CacheLifecycle``).
    public static func layered(_ cache: TieredCache, configuration: TieredVaporCache.Configuration = .init()) -> Self {
        .init { application in
            application.lifecycle.use(CacheLifecycle(cache))
            application.caches.use { application in
                TieredVaporCache(cache: cache, configuration: configuration, on: application.eventLoopGroup.any())
            }
        }
    }
}
#endif
