// SPDX-License-Identifier: Apache-2.0

public import CacheTiers
public import HTTPTypes
public import Logging
public import ServiceLifecycle

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A cache of HTTP responses with URLCache's contract, over a memory tier and an optional disk
/// tier.
///
/// ```swift
/// let cache = try ResponseCache(configuration: .init(disk: .init(directory: "/var/cache/myapp")))
/// try await cache.storeCachedResponse(cached, for: request)
/// if let hit = await cache.cachedResponse(for: request) { … }
/// ```
///
/// One request, one lookup: ``lookup(_:)`` builds the request's key once, reads the tiers once
/// (twice for a URL whose responses carry `Vary`: its variant index, then the variant) and
/// returns a ``ResponseLookup`` that carries the key, what is stored and its parsed freshness
/// facts. ``decision(for:now:)-(ResponseLookup,_)`` judges it without I/O, and
/// ``storeCachedResponse(_:for:willCache:)-(_,ResponseLookup,_)`` replaces what it found without
/// reading it again. The URLCache-shaped calls that take an `HTTPRequest` do the same inside.
///
/// Responses are keyed by method and full URL (RFC 9111 §4.1): scheme and host lowercased, the
/// default port dropped, path and query kept exactly. A response with `Vary` is stored as one of
/// several variants of its URL and only answers requests whose varying fields match it;
/// `Vary: *` matches nothing and is not stored.
///
/// ``storeCachedResponse(_:for:willCache:)-(_,HTTPRequest,_)`` stores only what RFC 9111 §3 allows in the configured
/// mode (no `no-store`, no `private` in a shared cache, …; see ``CacheRules``), runs the
/// configuration's ``WillCache`` hook and then the call's; the response's
/// ``CachedResponse/storagePolicy`` decides the tiers. Like URLCache,
/// ``cachedResponse(for:)`` returns what is stored whatever its age: whether it is fresh is the
/// caller's question (RFC 9111 §4.2).
///
/// Run ``run()`` (a ServiceLifecycle `Service`) for the disk tier's maintenance.
public struct ResponseCache: Sendable, Service {
    /// Whether the cache serves one user or many (RFC 9111 §1).
    public struct Mode: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable { case shared, `private` }
        private let kind: Kind

        /// A cache shared by many users (a proxy): honours `s-maxage`, never stores `private`
        /// responses, and stores responses to requests with `Authorization` only when the
        /// response allows it (RFC 9111 §3.5).
        public static let shared = Mode(kind: .shared)
        /// One user's cache (a client).
        public static let `private` = Mode(kind: .private)

        /// Whether this is the shared mode.
        public var isShared: Bool { kind == .shared }

        public var description: String { isShared ? "shared" : "private" }
    }

    /// How a response cache is built. Every property has a documented default.
    ///
    /// The tiers' own configurations nest inside, so that every tier setting (shards, admission,
    /// fsync, encryption, …) reaches a response cache and each default lives in one place:
    ///
    /// ```swift
    /// var configuration = ResponseCache.Configuration(mode: .private, willCache: .stripCredentials)
    /// configuration.memory.capacityBytes = 128 << 20
    /// configuration.disk = DiskTier.Configuration(directory: "/var/cache/myapp-http", capacityBytes: 1 << 30)
    /// let cache = try ResponseCache(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The memory tier. Defaults to `MemoryTier.Configuration()` (64 MiB).
        public var memory: MemoryTier.Configuration
        /// The disk tier; nil keeps responses in memory only. Defaults to nil. Its `logger` is the
        /// disk tier's own; its `now` is replaced by the cache's ``now`` (one clock, set once).
        public var disk: DiskTier.Configuration?
        /// A tier shared with the app's other instances (a `PostgresSharedTier`, from the
        /// PostgresCacheTier module), read after the disk tier and written in the background; nil
        /// for none. Defaults to nil. With an encrypted disk tier it seals with the disk tier's
        /// keys (see `TieredCache.SharedOptions.sharesInClear`). See docs/shared-tier.md.
        public var shared: (any SharedCacheTier)?
        /// How the shared tier is used (whether `.allowed` responses reach it, the write queue's
        /// bound). Defaults to `TieredCache.SharedOptions()`.
        public var sharedOptions: TieredCache.SharedOptions
        /// Shared or private. Defaults to private.
        public var mode: Mode
        /// The hook every stored response passes through first. Defaults to ``WillCache/identity``.
        public var willCache: WillCache
        /// Where the cache logs (responses that do not decode, why a response was not stored).
        /// Defaults to `Logger.current`, the task-local logger the app binds with `withLogger` (swift-log
        /// 1.16), read when the configuration is made.
        public var logger: Logger
        /// The clock that stamps storage times and judges freshness, and the disk tier's clock
        /// too (it stamps what it writes with it). Defaults to ``ResponseCache/systemNow()``.
        public var now: @Sendable () -> Date
        /// The targeted cache-control fields a shared cache obeys in place of `Cache-Control`,
        /// first match wins (RFC 9213; ``CacheRules/targetedCacheControl``). Defaults to
        /// `CDN-Cache-Control`.
        public var targetedCacheControl: [HTTPField.Name] = [.cdnCacheControl]

        /// Creates a configuration; every parameter has the default documented on its property.
        public init(
            memory: MemoryTier.Configuration = .init(),
            disk: DiskTier.Configuration? = nil,
            shared: (any SharedCacheTier)? = nil,
            sharedOptions: TieredCache.SharedOptions = .init(),
            mode: Mode = .private,
            willCache: WillCache = .identity,
            logger: Logger = Logger.current,
            now: @escaping @Sendable () -> Date = ResponseCache.systemNow
        ) {
            self.memory = memory
            self.disk = disk
            self.shared = shared
            self.sharedOptions = sharedOptions
            self.mode = mode
            self.willCache = willCache
            self.logger = logger
            self.now = now
        }

        /// Checks what the tiers would otherwise stop the process for.
        func validate() throws(HTTPCachingError) {
            let memory = self.memory
            guard memory.capacityBytes >= 0, memory.maximumEntryCount >= 0 else {
                throw HTTPCachingError(code: .invalidArgument, message: "memory capacities must not be negative")
            }
            guard (0.0...1.0).contains(memory.admissionFraction), memory.shardCount >= 1 else {
                throw HTTPCachingError(
                    code: .invalidArgument,
                    message: "memory admissionFraction must be in 0...1 and shardCount at least 1"
                )
            }
        }
    }

    /// The configuration the cache was built from.
    public let configuration: Configuration
    /// The tiers underneath.
    public let tiers: TieredCache
    /// The RFC 9111 rules for the configured mode.
    public let rules: CacheRules
    /// Whether ``rules`` are their mode's defaults, which the facts parsed once per stored
    /// response hold for: decided once here, not on every hit.
    let rulesAreModeDefaults: Bool
    /// Whether ``rules`` are a shared cache's, kept apart so a hit reads a flag, not the rules.
    let isShared: Bool
    /// Which keys carry which tags (``CachedResponse/tags``), shared by copies of this value.
    let tagRegistry = TagRegistry()
    /// The locks that make each store's read and replacement of a URL's record one step.
    let variantIndexLocks = VariantIndexLocks()

    /// Opens a response cache: a memory tier, a disk tier and a shared tier when the configuration
    /// has them.
    /// - Throws: ``HTTPCachingError/Code/invalidArgument`` for an invalid memory configuration;
    ///   ``HTTPCachingError/Code/wrongKey`` when no configured key opens the encrypted directory,
    ///   ``HTTPCachingError/Code/encryptionMismatch`` for an encrypted directory without a key or
    ///   a plain one with a key; ``HTTPCachingError/Code/storage`` when the disk tier cannot be
    ///   opened otherwise, with the tier's `CacheError` as ``HTTPCachingError/underlying`` (for
    ///   example `directoryLocked`, or `invalidArgument` for an invalid disk configuration);
    ///   ``HTTPCachingError/Code/invalidArgument`` when the disk tier is encrypted and the shared
    ///   tier cannot seal with its keys (see `TieredCache.SharedOptions.sharesInClear`).
    public init(configuration: Configuration = .init()) throws(HTTPCachingError) {
        try configuration.validate()
        let memory = MemoryTier(configuration: configuration.memory)
        var disk: DiskTier?
        if var diskConfiguration = configuration.disk {
            diskConfiguration.now = configuration.now
            do {
                disk = try DiskTier(configuration: diskConfiguration)
            } catch let error as CacheError where HTTPCachingError.keyCode(of: error) != nil {
                throw HTTPCachingError(
                    code: HTTPCachingError.keyCode(of: error)!,
                    message: "cannot open the disk tier at \(diskConfiguration.directory): \(error.message)",
                    underlying: error
                )
            } catch {
                throw HTTPCachingError(
                    code: .storage,
                    message: "cannot open the disk tier at \(diskConfiguration.directory)",
                    underlying: error
                )
            }
        }
        let tiers: TieredCache
        do {
            tiers = try TieredCache(
                memory: memory,
                lowerTiers: disk.map { [$0] } ?? [],
                shared: configuration.shared,
                options: configuration.sharedOptions
            )
        } catch {
            throw HTTPCachingError(
                code: .invalidArgument,
                message: "the shared tier cannot seal with the disk tier's keys",
                underlying: error
            )
        }
        self.init(configuration: configuration, tiers: tiers)
    }

    /// A response cache over tiers the caller built (the configuration's tier settings are then
    /// not used).
    public init(configuration: Configuration, tiers: TieredCache) {
        self.configuration = configuration
        self.tiers = tiers
        self.rules = CacheRules(
            mode: configuration.mode,
            targetedCacheControl: configuration.targetedCacheControl
        )
        self.rulesAreModeDefaults = rules.usesModeDefaults
        self.isShared = rules.mode.isShared
    }

    /// The memory tier's byte budget.
    public var memoryCapacity: Int { tiers.memoryCapacityBytes }
    /// The disk tier's byte budget; 0 without a disk tier.
    public var diskCapacity: Int { tiers.diskCapacityBytes }
    /// The bytes the memory tier holds now.
    public var currentMemoryUsage: Int { tiers.memory.usage.bytes }
    /// The bytes the disk tier holds on disk now; 0 without a disk tier.
    public var currentDiskUsage: Int {
        get async { await tiers.disk?.usage.bytes ?? 0 }
    }
    /// The entries the memory tier holds now (responses, variant indexes and tag lists).
    package var currentMemoryEntryCount: Int { tiers.memory.usage.entryCount }
    /// The entries the disk tier holds now; 0 without a disk tier.
    package var currentDiskEntryCount: Int {
        get async { await tiers.disk?.usage.entryCount ?? 0 }
    }

    /// Runs the disk tier's maintenance and the shared tier's work until cancelled or until
    /// graceful shutdown.
    ///
    /// With a shared tier, this is also where a tag invalidated by another instance
    /// (``invalidate(tag:)``) removes this instance's responses with the tag.
    public func run() async throws {
        try await tiers.run { [self] tag in
            do {
                _ = try await invalidateHere(tag: tag)
            } catch {
                configuration.logger.warning(
                    "another instance's tag invalidation failed here",
                    metadata: ["tag": "\(tag)", "error": "\(error)"]
                )
            }
        }
    }
}

extension ResponseCache {
    /// The largest body a tier of this cache can admit (its admission rule: a share of its
    /// budget, 5% by default): the memory tier's limit or, with a disk tier, the larger of the
    /// two. A streamed body longer than this is passed on without being kept for storing.
    package var largestStorableBody: Int {
        let memory = MemoryTier.admissionLimit(for: tiers.memory.configuration)
        guard let disk = tiers.disk else { return memory }
        return max(memory, disk.configuration.admissionLimit)
    }
}
