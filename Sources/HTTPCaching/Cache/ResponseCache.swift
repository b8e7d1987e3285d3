// SPDX-License-Identifier: Apache-2.0

public import CacheTiers
import HTTPTypes
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
/// let cache = try ResponseCache(configuration: .init(directory: "/var/cache/myapp"))
/// try await cache.storeCachedResponse(cached, for: request)
/// if let hit = await cache.cachedResponse(for: request) { … }
/// ```
///
/// Responses are keyed by method and full URL (RFC 9111 §4.1): scheme and host lowercased, the
/// default port dropped, path and query kept exactly. A response with `Vary` is stored as one of
/// several variants of its URL and only answers requests whose varying fields match it;
/// `Vary: *` matches nothing and is not stored.
///
/// ``storeCachedResponse(_:for:willCache:)`` stores only what RFC 9111 §3 allows in the configured
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

    /// How a response cache is built.
    public struct Configuration: Sendable {
        /// The memory tier's byte budget. Defaults to 64 MiB.
        public var memoryCapacity: Int
        /// The disk tier's byte budget. Defaults to 512 MiB; ignored without a ``directory``.
        public var diskCapacity: Int
        /// The disk tier's directory; nil keeps responses in memory only. Defaults to nil.
        public var directory: String?
        /// Shared or private. Defaults to private.
        public var mode: Mode
        /// The hook every stored response passes through first. Defaults to ``WillCache/identity``.
        public var willCache: WillCache
        /// Where the cache logs. Defaults to a logger that drops everything.
        public var logger: Logger
        /// The clock that stamps storage times. Defaults to the system's.
        public var now: @Sendable () -> Date
        /// Encrypts the disk tier at rest (see ``DiskEncryption``); ignored without a ``directory``.
        /// Defaults to nil: plain.
        public var encryption: DiskEncryption?

        /// Creates a configuration.
        public init(
            memoryCapacity: Int = 64 << 20,
            diskCapacity: Int = 512 << 20,
            directory: String? = nil,
            mode: Mode = .private,
            willCache: WillCache = .identity,
            logger: Logger = Logger(label: "LayeredCache.ResponseCache", factory: { _ in SwiftLogNoOpLogHandler() }),
            now: @escaping @Sendable () -> Date = { Date() },
            encryption: DiskEncryption? = nil
        ) {
            self.memoryCapacity = memoryCapacity
            self.diskCapacity = diskCapacity
            self.directory = directory
            self.mode = mode
            self.willCache = willCache
            self.logger = logger
            self.now = now
            self.encryption = encryption
        }
    }

    /// The configuration the cache was built from.
    public let configuration: Configuration
    /// The tiers underneath.
    public let tiers: TieredCache
    /// The RFC 9111 rules for the configured mode.
    public let rules: CacheRules

    /// Opens a response cache: a memory tier, and a disk tier when the configuration names a
    /// directory.
    /// - Throws: ``CacheError`` when the directory cannot be opened (for example
    ///   ``CacheError/Code/directoryLocked``) or a capacity is negative
    ///   (``CacheError/Code/invalidArgument``).
    public init(configuration: Configuration = .init()) throws {
        guard configuration.memoryCapacity >= 0, configuration.diskCapacity >= 0 else {
            throw CacheError(code: .invalidArgument, message: "capacities must not be negative")
        }
        let memory = MemoryTier(configuration: .init(capacityBytes: configuration.memoryCapacity))
        let disk = try configuration.directory.map { directory in
            try DiskTier(
                configuration: .init(
                    directory: directory,
                    capacityBytes: configuration.diskCapacity,
                    logger: configuration.logger,
                    now: configuration.now,
                    encryption: configuration.encryption
                )
            )
        }
        self.init(configuration: configuration, tiers: TieredCache(memory: memory, disk: disk))
    }

    /// A response cache over tiers the caller built.
    public init(configuration: Configuration, tiers: TieredCache) {
        self.configuration = configuration
        self.tiers = tiers
        self.rules = CacheRules(mode: configuration.mode)
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

    /// Runs the disk tier's maintenance until cancelled or until graceful shutdown.
    public func run() async throws {
        try await tiers.run()
    }
}
