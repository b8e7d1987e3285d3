// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
public import CacheTiers
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The shared tier on PostgreSQL: one UNLOGGED table that every instance of an app reads and
/// writes below its own memory and disk tiers, and LISTEN/NOTIFY to tell every instance what one
/// removed.
///
/// ```swift
/// let shared = try PostgresSharedTier(configuration: .init(url: "postgres://cache@db.internal/app"))
/// let cache = try TieredCache(memory: MemoryTier(), lowerTiers: [disk], shared: shared)
/// // run `cache` in the app's ServiceGroup: it runs the tier's connections, sweeps and listener
/// ```
///
/// Rows are keyed by the key's 64-bit digest and carry the full key, checked on every read, the
/// value LZ4-compressed when that is smaller, the metadata, stored and expiry times, the row's
/// size and a CRC-32C over all of it; with ``Configuration/encryption`` each row is sealed with
/// AES-256-GCM instead and no key, metadata or value reaches the database in clear. A row that
/// does not verify is a miss and is deleted, never wrong bytes. The table is created on first use
/// (see docs/shared-tier.md for the schema and its version).
///
/// The database down or slow never fails a caller: a read is a miss after
/// ``Configuration/readTimeout``, a write or removal throws (``TieredCache`` counts it and goes
/// on), and after a failure the tier is bypassed for a backoff that doubles up to
/// ``Configuration/maximumBackoff`` before it tries again. Connections come from a bounded pool
/// (``Configuration/maximumConnections``).
///
/// Metrics (swift-metrics): `layeredcache_shared_hits_total`, `layeredcache_shared_misses_total`,
/// `layeredcache_shared_bypassed_total` (operations skipped or timed out while the database was
/// unreachable), `layeredcache_shared_damaged_rows_total`, `layeredcache_shared_writes_total`,
/// `layeredcache_shared_write_failures_total`, `layeredcache_shared_admission_refusals_total`,
/// `layeredcache_shared_late_writes_refused_total`,
/// `layeredcache_shared_evictions_total`, `layeredcache_shared_expired_total`,
/// `layeredcache_shared_invalidations_sent_total` and `layeredcache_shared_invalidations_received_total`.
public final class PostgresSharedTier: SharedCacheTier {
    /// Counters since the tier was made.
    public struct Statistics: Hashable, Sendable {
        public var hits = 0
        public var misses = 0
        /// Reads, writes and removals skipped or timed out while the database was unreachable.
        public var bypassed = 0
        /// Rows that failed their checksum or seal: each was a miss and was deleted.
        public var damagedRows = 0
        public var writes = 0
        public var writeFailures = 0
        public var admissionRefusals = 0
        /// Writes of an entry stored before a removal that covers it, refused by the table: an
        /// instance queued them before it heard of the removal.
        public var lateWritesRefused = 0
        /// Rows deleted to keep the table within ``Configuration/capacityBytes``.
        public var evictions = 0
        /// Expired rows deleted by the sweep.
        public var expired = 0
        public var invalidationsSent = 0
        /// Invalidations received from other instances.
        public var invalidationsReceived = 0
    }

    /// The schema version, part of the table's name.
    public static let schemaVersion = 1

    /// The configuration the tier was made with.
    public let configuration: Configuration
    let client: PostgresClient
    /// What seals rows now: the configuration's key, or the keys a cache handed over
    /// (``useEncryption(_:)``).
    private let sealing: Mutex<RowSealer?>
    /// This instance's id in NOTIFY payloads.
    let instanceID: String
    let metrics: SharedMetrics
    private let state: Mutex<State>
    /// Whether the listener is connected (see ``isListening``).
    let listening = Atomic<Bool>(false)
    /// The highest invalidation log sequence this instance has applied (nil before its listener
    /// first connected): where a replay starts.
    let logCursor = Mutex<Int64?>(nil)
    /// The last replay of the log: how many entries, and how long it took (``lastReplay``).
    let replays = Mutex<ReplayRecord?>(nil)
    private let bytesSinceEviction = Atomic<Int>(0)

    private struct State {
        var breaker: Breaker
        var statistics = Statistics()
        var schemaReady = false
        var closed = false
    }

    /// Makes the tier; it connects on first use (run ``run(onInvalidation:)``, or a
    /// ``TieredCache`` that holds it, for the connections to open).
    /// - Throws: `CacheError` with code `invalidArgument` for a URL or configuration that is not
    ///   valid.
    public init(configuration: Configuration) throws {
        try configuration.validate()
        var clientConfiguration = try PostgresURL.clientConfiguration(configuration.url)
        clientConfiguration.options.maximumConnections = configuration.maximumConnections
        clientConfiguration.options.connectTimeout = configuration.connectTimeout
        clientConfiguration.options.keepAliveBehavior = .init(frequency: .seconds(10))
        let statementTimeout =
            configuration.writeTimeout.components.seconds * 1000
            + configuration.writeTimeout.components.attoseconds / 1_000_000_000_000_000
        clientConfiguration.options.additionalStartupParameters = [
            ("statement_timeout", "\(max(1, statementTimeout))"),
            ("application_name", "layeredcache"),
        ]
        self.configuration = configuration
        self.client = PostgresClient(configuration: clientConfiguration, backgroundLogger: configuration.logger)
        self.sealing = Mutex(configuration.encryption.map(RowSealer.init(key:)))
        var generator = SystemRandomNumberGenerator()
        self.instanceID = String(generator.next(), radix: 36)
        self.metrics = SharedMetrics(factory: configuration.metricsFactory ?? MetricsSystem.factory)
        self.state = Mutex(
            State(
                breaker: Breaker(
                    initialBackoff: configuration.initialBackoff,
                    maximumBackoff: configuration.maximumBackoff
                )
            )
        )
    }

    /// Counters since the tier was made.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// What seals rows now, or nil when they are in clear.
    var sealer: RowSealer? { sealing.withLock { $0 } }

    /// Whether rows are sealed now (``Configuration/encryption``, or keys a cache handed over).
    public var isSealed: Bool { sealer != nil }

    /// Whether the tier is listening for other instances' invalidations now.
    public var isListening: Bool { listening.load(ordering: .relaxed) }

    // MARK: - SharedCacheTier

    /// The entry for `key`, or nil: a miss, an expired or damaged row (deleted), another key with
    /// the same digest, or no answer within ``Configuration/readTimeout``.
    /// - Complexity: one indexed `SELECT`.
    public func entry(for key: CacheKey) async -> CacheEntry? {
        let sealer = self.sealer
        let digests = digests(of: key, sealer: sealer)
        let now = configuration.now().millisecondsSince1970
        let row: SharedRow?
        do {
            row = try await perform(timeout: configuration.readTimeout) { [self] in
                try await selectRow(digests: digests, now: now)
            }
        } catch {
            return nil
        }
        guard let row else {
            count(\.misses, metrics.misses)
            return nil
        }
        do {
            let entry = try row.decode(for: key, sealer: sealer)
            count(\.hits, metrics.hits)
            return entry
        } catch .otherKey {
            count(\.misses, metrics.misses)
            return nil
        } catch {
            count(\.damagedRows, metrics.damagedRows)
            count(\.misses, metrics.misses)
            configuration.logger.warning("damaged shared row deleted", metadata: ["digest": "\(row.digest)"])
            _ = try? await perform(timeout: configuration.writeTimeout) { [self] in
                try await deleteDamaged(row)
            }
            return nil
        }
    }

    /// Stores `entry` for `key` (an upsert), or, when its row is over the admission limit, deletes
    /// the key's older row.
    /// - Throws: `CacheError` when the database cannot be reached in time.
    /// - Complexity: one `INSERT … ON CONFLICT`; now and then an eviction pass.
    public func set(_ entry: CacheEntry, for key: CacheKey) async throws {
        let expiresAt = configuration.now().addingTimeInterval(Self.seconds(configuration.timeToLive))
        let sealer = self.sealer
        let row = try SharedRow.encode(
            entry,
            for: key,
            expiresAtMillis: expiresAt.millisecondsSince1970,
            sealer: sealer
        )
        guard Int(row.size) <= configuration.admissionLimit else {
            count(\.admissionRefusals, metrics.admissionRefusals)
            try await remove(key, broadcast: false)
            return
        }
        do {
            let stored = try await perform(timeout: configuration.writeTimeout) { [self] in try await upsert(row) }
            count(\.writes, metrics.writes)
            if !stored { count(\.lateWritesRefused, metrics.lateWritesRefused) }
        } catch {
            count(\.writeFailures, metrics.writeFailures)
            throw error
        }
        let written = bytesSinceEviction.wrappingAdd(Int(row.size), ordering: .relaxed).newValue
        if written >= max(64 << 10, configuration.capacityBytes / 16) {
            bytesSinceEviction.store(0, ordering: .relaxed)
            _ = try? await perform(timeout: configuration.writeTimeout) { [self] in try await evict() }
        }
    }

    /// The table's bytes (as the budget counts them) and rows, or nil when the database does not
    /// answer in time.
    public var sharedUsage: CacheUsage? {
        get async {
            try? await perform(timeout: configuration.writeTimeout) { [self] in try await usage() }
        }
    }

    /// Runs the connection pool, the listener for other instances' invalidations (reconnecting
    /// with backoff) and the sweep of expired rows and of the budget every
    /// ``Configuration/sweepInterval``, until cancelled or until graceful shutdown.
    public func run(onInvalidation: @escaping @Sendable (SharedInvalidation) async -> Void) async throws {
        // The pool runs in a task of its own: a connection held by a query that never returns
        // (seen while the server restarts) would hold up its shutdown, and so the app's, forever.
        let pool = Task { await client.run() }
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                // Connect and make the table now, so that the first read does not pay for it.
                group.addTask { _ = try? await self.perform(timeout: self.configuration.writeTimeout) {} }
                group.addTask { await self.listen(onInvalidation) }
                group.addTask { await self.sweepLoop() }
            }
        }
        listening.store(false, ordering: .relaxed)
        pool.cancel()
        // Give the pool the connect timeout to close its connections, whether or not this task is
        // cancelled (an unstructured task does not inherit the cancellation).
        let closed = await Task { [configuration] in
            (try? await withDeadline(configuration.connectTimeout) { await pool.value }) != nil
        }.value
        if !closed {
            configuration.logger.warning(
                "shared tier: the connection pool did not close in time; left to close on its own"
            )
        }
    }

    /// Stops the tier: later reads miss and writes throw. The connections close when
    /// ``run(onInvalidation:)`` ends.
    public func close() async throws {
        state.withLock { $0.closed = true }
    }

    /// Seals rows and invalidations with `encryption`'s keys from now on (new rows with its
    /// current key; rows sealed with a previous key are still read), or, for nil, with
    /// ``Configuration/encryption`` (in clear when that is nil too). A ``TieredCache`` over an
    /// encrypted disk tier calls it with the disk tier's keys when it is made and when it reopens.
    ///
    /// Rows sealed with keys the tier no longer has are misses (and deleted as damaged when read),
    /// as are rows in clear while it seals; every instance sharing the table needs the same keys.
    public func useEncryption(_ encryption: DiskEncryption?) throws {
        let sealer = encryption.map(RowSealer.init(encryption:)) ?? configuration.encryption.map(RowSealer.init(key:))
        sealing.withLock { $0 = sealer }
    }

    // MARK: - Plumbing

    /// The row digests `key` may have: its ``CacheKey`` digest, or, when rows are sealed, its
    /// keyed digest under the current key and then under each previous key.
    func digests(of key: CacheKey, sealer: RowSealer?) -> [Int64] {
        sealer?.digests(of: Array(key.string.utf8)) ?? [Int64(bitPattern: key.digest)]
    }

    /// Runs `body` against the database unless the tier is closed or bypassed, within `timeout`,
    /// after making the table on first use; a failure opens the breaker.
    /// - Parameter duringBackoff: whether `body` goes to the database even while the breaker is
    ///   open: an invalidation every instance must hear is rare and asked for, and skipping it
    ///   because reads were slow a moment ago would leave the other instances serving what it
    ///   removed.
    func perform<T: Sendable>(
        timeout: Duration,
        duringBackoff: Bool = false,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let now = ContinuousClock.now
        let (allowed, ready) = state.withLock {
            ((duringBackoff || $0.breaker.allows(at: now)) && !$0.closed, $0.schemaReady)
        }
        guard allowed else {
            count(\.bypassed, metrics.bypassed)
            throw CacheError(code: .io, message: "the shared tier is unavailable (closed or backing off)")
        }
        do {
            let result = try await withDeadline(timeout) { [self] in
                if !ready { try await createSchema() }
                return try await body()
            }
            let recovered = state.withLock {
                $0.schemaReady = true
                return $0.breaker.recordSuccess()
            }
            if recovered { configuration.logger.notice("shared tier reachable again") }
            return result
        } catch {
            let failures = state.withLock {
                $0.schemaReady = false  // a new server may need the table again
                $0.breaker.recordFailure(at: .now)
                return $0.breaker.failures
            }
            count(\.bypassed, metrics.bypassed)
            if failures == 1 {
                configuration.logger.warning("shared tier unreachable, bypassing it", metadata: ["error": "\(error)"])
            }
            throw CacheError(code: .io, message: "the shared tier did not answer", underlying: error)
        }
    }

    /// Opens the breaker as a failed operation does (for tests).
    func recordFailure() { state.withLock { $0.breaker.recordFailure(at: .now) } }

    func count(_ field: WritableKeyPath<Statistics, Int>, _ counter: Counter, by amount: Int = 1) {
        guard amount > 0 else { return }
        state.withLock { $0.statistics[keyPath: field] += amount }
        counter.increment(by: amount)
    }

    private func sweepLoop() async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: configuration.sweepInterval)
            } catch {
                return
            }
            await sweep()
        }
    }

    /// One sweep: delete expired rows, then the oldest rows past the budget. Errors are logged.
    package func sweep() async {
        let now = configuration.now().millisecondsSince1970
        do {
            try await perform(timeout: configuration.writeTimeout) { [self] in
                let expired = try await deleteExpired(now: now)
                count(\.expired, metrics.expired, by: expired)
                try await evict()
                try await trimLog(before: now - Int64(Self.seconds(configuration.invalidationLogRetention) * 1000))
            }
        } catch {
            configuration.logger.debug("shared tier sweep skipped", metadata: ["error": "\(error)"])
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
#endif
