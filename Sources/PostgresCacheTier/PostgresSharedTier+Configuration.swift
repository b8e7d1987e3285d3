// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
public import CacheTiers
public import Logging
public import Metrics

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension PostgresSharedTier {
    /// How the shared tier is set up. Every property but the URL has a documented default.
    public struct Configuration: Sendable {
        /// The database, as
        /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE[&sslrootcert=FILE]]`.
        /// `sslmode` is `disable`, `prefer`, `require`, `verify-ca` or `verify-full`, as libpq
        /// reads them; without one it is `require` for every host but a loopback one (`localhost`,
        /// 127.0.0.0/8, ::1), which gets `prefer`: plaintext only when written. `sslrootcert` names
        /// a PEM file of the roots to trust (default: the system's).
        public var url: String
        /// The table's base name; the table is `NAME_v1` (the schema version), and its
        /// invalidation channel `NAME_v1_invalidations`. Letters, digits and `_` only.
        /// Default `layeredcache`.
        public var table: String
        /// The most bytes the table keeps (keys, metadata, stored values and 64 per row); past it
        /// the oldest rows go. Default 1 GiB.
        public var capacityBytes: Int
        /// A row larger than this fraction of ``capacityBytes`` is not stored. Default 0.05.
        public var admissionFraction: Double
        /// How long a row lives after it was stored; an expired row is a miss and the sweep in
        /// ``PostgresSharedTier/run(onInvalidation:)`` deletes it. Default 24 hours.
        public var timeToLive: Duration
        /// How often expired rows are deleted and the budget enforced. Default 60 seconds.
        public var sweepInterval: Duration
        /// How long the invalidation log keeps a removal for instances that were disconnected
        /// (they replay it when they reconnect); one disconnected longer drops every local copy
        /// when it comes back, as it cannot tell what it missed. Default 24 hours.
        public var invalidationLogRetention: Duration
        /// How long a read may take before it is a miss. Default 250 ms.
        public var readTimeout: Duration
        /// How long a write, removal or sweep may take (also the server's `statement_timeout`).
        /// Default 2 seconds.
        public var writeTimeout: Duration
        /// How long opening a connection may take. Default 1 second.
        public var connectTimeout: Duration
        /// The most connections the tier opens (one of them listens for invalidations). Default 8.
        public var maximumConnections: Int
        /// After a failure the tier is bypassed for a backoff that doubles from this value.
        /// Default 100 ms.
        public var initialBackoff: Duration
        /// The longest backoff. Default 2 seconds.
        public var maximumBackoff: Duration
        /// Seals every row (AES-256-GCM) and keys the digests when set: give the disk tier's key,
        /// and every instance the same one. Default nil.
        public var encryption: EncryptionKey?
        /// Where the tier logs outages, damaged rows and dropped work. Default: discards.
        public var logger: Logger
        /// Where the tier's metrics go. Default nil: the process-wide `MetricsSystem.factory`.
        public var metricsFactory: (any MetricsFactory)?
        /// The wall clock that stamps expiry. Default `Date()`; tests pass their own.
        public var now: @Sendable () -> Date
        /// The clock the listener waits on between reconnections. Default `ContinuousClock`; a
        /// test passes one it moves itself, to hold the listener down until it has set the scene.
        package var reconnectClock: any Clock<Duration> = ContinuousClock()

        /// Creates a configuration; every parameter but `url` has the default documented on its
        /// property.
        public init(
            url: String,
            table: String = "layeredcache",
            capacityBytes: Int = 1 << 30,
            admissionFraction: Double = 0.05,
            timeToLive: Duration = .seconds(86_400),
            sweepInterval: Duration = .seconds(60),
            invalidationLogRetention: Duration = .seconds(86_400),
            readTimeout: Duration = .milliseconds(250),
            writeTimeout: Duration = .seconds(2),
            connectTimeout: Duration = .seconds(1),
            maximumConnections: Int = 8,
            initialBackoff: Duration = .milliseconds(100),
            maximumBackoff: Duration = .seconds(2),
            encryption: EncryptionKey? = nil,
            logger: Logger = Logger(
                label: "LayeredCache.PostgresCacheTier",
                factory: { _ in SwiftLogNoOpLogHandler() }
            ),
            metricsFactory: (any MetricsFactory)? = nil,
            now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.url = url
            self.table = table
            self.capacityBytes = capacityBytes
            self.admissionFraction = admissionFraction
            self.timeToLive = timeToLive
            self.sweepInterval = sweepInterval
            self.invalidationLogRetention = invalidationLogRetention
            self.readTimeout = readTimeout
            self.writeTimeout = writeTimeout
            self.connectTimeout = connectTimeout
            self.maximumConnections = maximumConnections
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
            self.encryption = encryption
            self.logger = logger
            self.metricsFactory = metricsFactory
            self.now = now
        }

        /// The table the rows live in: the base name and the schema version.
        var tableName: String { "\(table.lowercased())_v\(PostgresSharedTier.schemaVersion)" }
        /// The invalidation log: every removal, wipe and tag invalidation, by sequence number.
        var logTableName: String { "\(tableName)_log" }
        /// The removals of keys remembered for the log's retention, by digest.
        var removedTableName: String { "\(tableName)_removed" }
        /// The bulk removals remembered for the log's retention.
        var clearedTableName: String { "\(tableName)_cleared" }
        /// The LISTEN/NOTIFY channel.
        var channel: String { "\(tableName)_invalidations" }
        /// The largest row admitted.
        var admissionLimit: Int { Int(Double(capacityBytes) * admissionFraction) }

        func validate() throws {
            let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789_")
            guard !table.isEmpty, table.count <= 40, table.lowercased().allSatisfy(allowed.contains),
                table.first?.isLetter == true
            else {
                throw CacheError(
                    code: .invalidArgument,
                    message: "table must start with a letter and hold letters, digits and _ (at most 40)"
                )
            }
            guard capacityBytes >= 0, (0...1).contains(admissionFraction), maximumConnections >= 2 else {
                throw CacheError(
                    code: .invalidArgument,
                    message: "capacityBytes must not be negative, admissionFraction in 0...1, maximumConnections >= 2"
                )
            }
        }
    }
}
#endif
