// SPDX-License-Identifier: Apache-2.0

public import CacheTiers
public import CachingClient
import Synchronization

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Canonical entities by ID and the lists of IDs that queries return, each with its own
/// freshness, in a `TieredCache`: the offline-first data layer.
///
/// ```swift
/// let tasks = try EntityStore<TaskItem>(kind: "task", cache: cache)
/// let dueToday = EntityQuery("tasks", parameters: ["due": "today"])
/// for await result in tasks.observe(dueToday, policy: .staleWhileRevalidate, using: fetchTasks) {
///     show(result.items, result.freshness)
/// }
/// ```
///
/// A read loads the query's index (its IDs and metadata), then each entity by ID; a memory hit
/// decodes nothing (the decoded record is kept with the memory entry). A refresh asks the app's
/// fetcher, conditionally when the list has a validator: a "not modified" answer updates the
/// index's validation time alone; a page upserts its entities and replaces the index's IDs, in
/// one commit that a crash keeps whole (`TieredCache.commit(_:policy:)`).
///
/// Mutations (``upsert(_:)``, ``delete(_:)``, ``apply(_:upTo:)``) find the queries that hold an
/// entity through a reverse index and mark them stale, or patch them with the configuration's
/// ``Configuration/patch`` rule; a created or deleted entity marks every query of the kind stale.
///
/// Every commit of one store runs alone, and a read never sees half of one: it retries when a
/// commit landed while it read. One process should have one store per kind and cache.
public final class EntityStore<Entity: Codable & Sendable & Identifiable>: Sendable
where Entity.ID: Codable & Sendable & CustomStringConvertible {
    /// How a store stores and judges its entities.
    public struct Configuration: Sendable {
        /// How long a list stays fresh when the server does not say; default 60 seconds.
        public var defaultFreshFor: Duration
        /// The storage policy of everything the store writes: `.allowedInMemoryOnly` keeps the
        /// entities and lists out of the disk tier. Default `.allowed`.
        public var storagePolicy: StoragePolicy
        /// The entity's server version (an `ETag`, an `updatedAt`), for detail reads'
        /// ``EntityFreshnessRule/currentVersion`` and conditional detail requests; nil: none.
        public var version: (@Sendable (Entity) -> String?)?
        /// Patches a cached list after a change to one of its entities, instead of marking it
        /// stale: given the query, its current items (an updated entity already in its new form,
        /// a created one not yet in the list) and the change, returns the new list (re-sorted,
        /// filtered, with the created entity inserted where it belongs), or nil to mark the list
        /// stale. Nil: every affected list is marked stale.
        public var patch: (@Sendable (EntityQuery, [Entity], EntityChange<Entity>) -> [Entity]?)?
        /// The current time; default `Date.init`. Tests pass a manual clock.
        public var now: @Sendable () -> Date

        /// Creates a configuration.
        public init(
            defaultFreshFor: Duration = .seconds(60),
            storagePolicy: StoragePolicy = .allowed,
            version: (@Sendable (Entity) -> String?)? = nil,
            patch: (@Sendable (EntityQuery, [Entity], EntityChange<Entity>) -> [Entity]?)? = nil,
            now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.defaultFreshFor = defaultFreshFor
            self.storagePolicy = storagePolicy
            self.version = version
            self.patch = patch
            self.now = now
        }
    }

    /// The app's fetcher of one page of a query's list.
    public typealias QueryFetcher = @Sendable (QueryRequest) async throws -> QueryResponse<Entity>
    /// The app's fetcher of one entity.
    public typealias EntityFetcher = @Sendable (EntityRequest<Entity.ID>) async throws -> EntityResponse<Entity>

    /// The entity kind: the first part of every key the store writes.
    public let kind: String
    /// The cache the store writes to.
    public let cache: TieredCache
    /// The configuration.
    public let configuration: Configuration

    let lock = CommitLock()
    /// Counts commits' starts and ends: odd while one is applied. Readers compare it before and
    /// after reading.
    let commits = Atomic<UInt64>(0)
    let observers = Observers()

    /// Creates a store of one entity kind in `cache`.
    /// - Parameters:
    ///   - kind: the kind's name ("task"); not empty, without `/`.
    ///   - cache: the cache to store in.
    ///   - configuration: freshness, storage policy, versions and patch rule.
    /// - Throws: `CachingClientError.Code.invalidArgument` for an empty kind or
    ///   one with `/`.
    public init(kind: String, cache: TieredCache, configuration: Configuration = .init()) throws(CachingClientError) {
        guard !kind.isEmpty, !kind.contains("/") else {
            throw CachingClientError(code: .invalidArgument, message: "an entity kind is not empty and has no '/'")
        }
        self.kind = kind
        self.cache = cache
        self.configuration = configuration
    }

    // MARK: Keys

    func entityKey(_ id: Entity.ID) -> CacheKey { CacheKey("entity/\(kind)/e/\(id)") }
    func indexKey(_ query: String) -> CacheKey { CacheKey("entity/\(kind)/q/\(query)") }
    func reverseKey(_ id: Entity.ID) -> CacheKey { CacheKey("entity/\(kind)/r/\(id)") }
    var kindKey: CacheKey { CacheKey("entity/\(kind)/k") }
    var catalogKey: CacheKey { CacheKey("entity/\(kind)/c") }

    // MARK: Reading records

    /// The decoded record at `key`, from the memory entry's attachment or decoded once.
    func record<Value: Codable & Sendable>(_: Value.Type, at key: CacheKey) async -> Value? {
        let attachment = await cache.attachment(for: key) { entry in
            RecordCoding.decode(Value.self, from: entry.value).map { Decoded($0, encodedBytes: entry.value.count) }
        }
        return (attachment as? Decoded<Value>)?.value
    }

    func entityRecord(_ id: Entity.ID) async -> EntityRecord<Entity>? {
        await record(EntityRecord<Entity>.self, at: entityKey(id))
    }

    func indexRecord(_ query: EntityQuery) async -> IndexRecord<Entity.ID>? {
        await record(IndexRecord<Entity.ID>.self, at: indexKey(query.key))
    }

    func kindRecord() async -> KindRecord? { await record(KindRecord.self, at: kindKey) }

    /// Runs `read` so that it sees no commit in part: again when a commit ran meanwhile, and
    /// after the third try under the commit lock.
    func consistently<Value>(_ read: () async -> Value) async -> Value {
        for _ in 0..<3 {
            let before = commits.load(ordering: .acquiring)
            if before & 1 == 1 {
                await lock.waitUntilIdle()
                continue
            }
            let value = await read()
            if commits.load(ordering: .acquiring) == before { return value }
        }
        return await lock.withLock { await read() }
    }

    // MARK: Reads

    /// The query's cached list, with its freshness by `freshness` (its soft and hard TTLs and
    /// validation window; without a soft TTL, the server's freshness), never asking the network.
    public func read(_ query: EntityQuery, freshness: FreshnessClass = .http) async -> QueryResult<Entity> {
        let snapshot = await consistently { await self.snapshot(of: query) }
        return snapshot.result(freshness: freshness, now: configuration.now())
    }

    /// One entity as stored, with its freshness by `rule`, never asking the network.
    public func entity(_ id: Entity.ID, rule: EntityFreshnessRule = .init()) async -> EntityResult<Entity> {
        let record = await entityRecord(id)
        return entityResult(record, rule: rule, source: .cache)
    }

    /// The change token the stored entities include every change up to (``apply(_:upTo:)``),
    /// nil when none was recorded (or the store's state was evicted).
    public func changeToken() async -> String? { await kindRecord()?.token }

    /// What a read of `query` found: its index, its entities and the kind's state.
    struct Snapshot: Sendable {
        var query: EntityQuery
        var index: IndexRecord<Entity.ID>?
        var entities: [EntityRecord<Entity>]
        var missing: [Entity.ID]
        var kind: KindRecord?

        /// Whether a change since the list was confirmed may have made it wrong.
        var isMarkedStale: Bool {
            guard let index else { return false }
            if index.markedStale { return true }
            if let kind, kind.structureChanged > index.valid { return true }
            return entities.contains { $0.changed > index.valid }
        }

        func result(
            freshness rule: FreshnessClass,
            now: Date,
            source: FetchResult.Source = .cache
        ) -> QueryResult<Entity> {
            QueryResult(
                query: query,
                items: entities.map(\.entity),
                missingIDs: missing,
                freshness: freshness(rule, now: now),
                source: index == nil ? .none : source,
                metadata: index.map {
                    QueryMetadata(
                        fetchedAt: $0.fetchedAt,
                        validatedAt: $0.validatedAt,
                        expiresAt: $0.expiresAt,
                        validator: $0.validator,
                        nextCursor: $0.nextCursor,
                        pageCount: $0.pageEnds.count
                    )
                },
                changeToken: kind?.token,
                isFinal: true,
                error: nil
            )
        }

        func freshness(_ rule: FreshnessClass, now: Date) -> Freshness {
            guard let index else { return .missing }
            let age = Duration.seconds(now.timeIntervalSince(index.validatedAt))
            if let window = rule.validationWindow, age > window { return .stale(.notValidated) }
            if isMarkedStale { return .stale(.markedStale) }
            if let soft = rule.softTTL { return age > soft ? .stale(.expired) : .fresh }
            if let expiresAt = index.expiresAt, now >= expiresAt { return .stale(.expired) }
            return .fresh
        }

        /// Whether the list is past the hard TTL: no answer except as a fallback.
        func isPastHardTTL(_ rule: FreshnessClass, now: Date) -> Bool {
            guard let index, let hard = rule.hardTTL else { return false }
            return Duration.seconds(now.timeIntervalSince(index.validatedAt)) > hard
        }
    }

    func snapshot(of query: EntityQuery) async -> Snapshot {
        guard let index = await indexRecord(query) else {
            return Snapshot(query: query, index: nil, entities: [], missing: [], kind: nil)
        }
        var entities: [EntityRecord<Entity>] = []
        entities.reserveCapacity(index.ids.count)
        var missing: [Entity.ID] = []
        for id in index.ids {
            if let record = await entityRecord(id) {
                entities.append(record)
            } else {
                missing.append(id)
            }
        }
        return Snapshot(query: query, index: index, entities: entities, missing: missing, kind: await kindRecord())
    }

    func entityResult(
        _ record: EntityRecord<Entity>?,
        rule: EntityFreshnessRule,
        source: FetchResult.Source
    ) -> EntityResult<Entity> {
        guard let record else { return .missing(source: .none) }
        return EntityResult(
            entity: record.entity,
            freshness: freshness(of: record, rule: rule),
            source: source,
            metadata: EntityMetadata(
                fetchedAt: record.fetchedAt,
                validatedAt: record.validatedAt,
                version: record.version,
                source: record.isLocal ? .none : .network
            ),
            isFinal: true,
            error: nil
        )
    }

    func freshness(of record: EntityRecord<Entity>, rule: EntityFreshnessRule) -> Freshness {
        if let current = rule.currentVersion, record.version == current { return .fresh }
        if let within = rule.validatedWithin,
            Duration.seconds(configuration.now().timeIntervalSince(record.validatedAt)) <= within
        {
            return .fresh
        }
        return .stale(rule.currentVersion != nil ? .markedStale : .expired)
    }
}
