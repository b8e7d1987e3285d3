// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTiers
import Logging
import NIOCore
import PostgresNIO

/// The statements, one function each. Table and channel names come from a validated
/// configuration (letters, digits and `_`), everything else is a bound parameter.
extension PostgresSharedTier {
    private var table: String { configuration.tableName }
    private var logger: Logger { configuration.logger }

    /// Creates the table and its indexes if they are missing, under an advisory lock so that
    /// instances starting together do not race.
    func createSchema() async throws {
        let table = self.table
        let lock = Int64(bitPattern: KeyDigest.digest(of: "layeredcache schema \(table)"))
        let version = "LayeredCache shared tier, schema version \(Self.schemaVersion)"
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lock))", logger: self.logger)
            try await connection.query(
                """
                CREATE UNLOGGED TABLE IF NOT EXISTS \(unescaped: table) (
                    digest bigint PRIMARY KEY,
                    key bytea NOT NULL,
                    metadata bytea NOT NULL,
                    value bytea NOT NULL,
                    flags smallint NOT NULL,
                    value_length integer NOT NULL,
                    stored_at bigint NOT NULL,
                    expires_at bigint NOT NULL,
                    size integer NOT NULL,
                    checksum bigint NOT NULL
                )
                """,
                logger: self.logger
            )
            try await connection.query(
                "CREATE INDEX IF NOT EXISTS \(unescaped: table)_stored_at ON \(unescaped: table) (stored_at)",
                logger: self.logger
            )
            try await connection.query(
                "CREATE INDEX IF NOT EXISTS \(unescaped: table)_expires_at ON \(unescaped: table) (expires_at)",
                logger: self.logger
            )
            try await connection.query(
                "COMMENT ON TABLE \(unescaped: table) IS '\(unescaped: version)'",
                logger: self.logger
            )
            // Logged (not UNLOGGED): the invalidations outlive a server crash, so that an instance
            // replays them when it reconnects.
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: self.configuration.logTableName) (
                    sequence bigserial PRIMARY KEY,
                    payload text NOT NULL,
                    logged_at bigint NOT NULL
                )
                """,
                logger: self.logger
            )
            // Removals remembered for the log's retention, so that a write of an entry stored
            // before one, by another instance (which queued it before it heard of the removal), is
            // refused: a key's (by digest), and a bulk removal's (every row stored at or after
            // `since`). An instance's own writes and removals are ordered by its queue already,
            // and a removal's time is when its statement ran, later than it was asked for: its
            // own later write must not be refused. Added beside the tables of schema version 1,
            // which they do not change.
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: self.removedTable) (
                    digest bigint PRIMARY KEY,
                    removed_at bigint NOT NULL,
                    instance text NOT NULL
                )
                """,
                logger: self.logger
            )
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: self.clearedTable) (
                    since bigint NOT NULL,
                    removed_at bigint NOT NULL,
                    instance text NOT NULL
                )
                """,
                logger: self.logger
            )
        }
    }

    /// The rows of a query that selects the columns `SharedRow` holds, in its order.
    static func sharedRows(_ rows: PostgresRowSequence) async throws -> [SharedRow] {
        var decoded: [SharedRow] = []
        for try await (digest, key, metadata, value, flags, valueLength, storedAt, expiresAt, checksum) in rows.decode(
            (Int64, ByteBuffer, ByteBuffer, ByteBuffer, Int16, Int32, Int64, Int64, Int64).self
        ) {
            decoded.append(
                SharedRow(
                    digest: digest,
                    key: Array(key.readableBytesView),
                    metadata: Array(metadata.readableBytesView),
                    value: Array(value.readableBytesView),
                    flags: SharedRow.Flags(rawValue: flags),
                    valueLength: valueLength,
                    storedAtMillis: storedAt,
                    expiresAtMillis: expiresAt,
                    checksum: checksum
                )
            )
        }
        return decoded
    }

    /// The unexpired row with the first of `digests` that has one (one digest but during a key
    /// rotation), or nil.
    func selectRow(digests: [Int64], now: Int64) async throws -> SharedRow? {
        let rows =
            digests.count == 1
            ? try await client.query(
                """
                SELECT digest, key, metadata, value, flags, value_length, stored_at, expires_at, checksum
                FROM \(unescaped: table) WHERE digest = \(digests[0]) AND expires_at > \(now)
                """,
                logger: logger
            )
            : try await client.query(
                """
                SELECT digest, key, metadata, value, flags, value_length, stored_at, expires_at, checksum
                FROM \(unescaped: table) WHERE digest = ANY(\(digests)) AND expires_at > \(now)
                """,
                logger: logger
            )
        // The current key's row first.
        return try await Self.sharedRows(rows).min { row, other in
            (digests.firstIndex(of: row.digest) ?? digests.count)
                < (digests.firstIndex(of: other.digest) ?? digests.count)
        }
    }

    /// Inserts `row`, or replaces the row with its digest, unless a removal made after the row's
    /// entry was stored covers it: a write that reaches the table late (queued by an instance
    /// that had not yet heard of the removal) must not bring back what the removal took.
    /// - Returns: whether the row was written (false: a removal refused it).
    func upsert(_ row: SharedRow) async throws -> Bool {
        let rows = try await client.query(
            """
            INSERT INTO \(unescaped: table)
                (digest, key, metadata, value, flags, value_length, stored_at, expires_at, size, checksum)
            SELECT \(row.digest), \(ByteBuffer(bytes: row.key)), \(ByteBuffer(bytes: row.metadata)),
                \(ByteBuffer(bytes: row.value)), \(row.flags.rawValue), \(row.valueLength), \(row.storedAtMillis),
                \(row.expiresAtMillis), \(row.size), \(row.checksum)
            WHERE NOT EXISTS (
                SELECT 1 FROM \(unescaped: removedTable)
                WHERE digest = \(row.digest) AND removed_at > \(row.storedAtMillis) AND instance <> \(instanceID)
            ) AND NOT EXISTS (
                SELECT 1 FROM \(unescaped: clearedTable)
                WHERE since <= \(row.storedAtMillis) AND removed_at > \(row.storedAtMillis) AND instance <> \(instanceID)
            )
            ON CONFLICT (digest) DO UPDATE SET key = EXCLUDED.key, metadata = EXCLUDED.metadata,
                value = EXCLUDED.value, flags = EXCLUDED.flags, value_length = EXCLUDED.value_length,
                stored_at = EXCLUDED.stored_at, expires_at = EXCLUDED.expires_at, size = EXCLUDED.size,
                checksum = EXCLUDED.checksum
            RETURNING 1
            """,
            logger: logger
        )
        var written = false
        for try await _ in rows { written = true }
        return written
    }

    /// Deletes the rows with `digests`, and logs and notifies `payload` in the same statement
    /// (the notification is delivered when the deletion commits). The removal is remembered, so
    /// that a late write of an older entry is refused (``upsert(_:)``).
    func delete(digests: [Int64], notify payload: String?) async throws {
        let now = configuration.now().millisecondsSince1970
        if let payload {
            try await client.query(
                """
                WITH gone AS (DELETE FROM \(unescaped: table) WHERE digest = ANY(\(digests))),
                remembered AS (
                    INSERT INTO \(unescaped: removedTable) (digest, removed_at, instance)
                    SELECT DISTINCT unnest(\(digests)::bigint[]), \(now), \(instanceID)
                    ON CONFLICT (digest) DO UPDATE SET removed_at = EXCLUDED.removed_at, instance = EXCLUDED.instance
                ),
                logged AS (
                    INSERT INTO \(unescaped: logTable) (payload, logged_at) VALUES (\(payload), \(now))
                    RETURNING sequence
                )
                SELECT pg_notify(\(configuration.channel), (SELECT sequence FROM logged)::text || ' ' || \(Self.notice(payload)))
                """,
                logger: logger
            ).drain()
        } else {
            try await client.query(
                """
                WITH gone AS (DELETE FROM \(unescaped: table) WHERE digest = ANY(\(digests)))
                INSERT INTO \(unescaped: removedTable) (digest, removed_at, instance)
                    SELECT DISTINCT unnest(\(digests)::bigint[]), \(now), \(instanceID)
                ON CONFLICT (digest) DO UPDATE SET removed_at = EXCLUDED.removed_at, instance = EXCLUDED.instance
                """,
                logger: logger
            ).drain()
        }
    }

    /// Deletes `row` if it is still the damaged version read.
    func deleteDamaged(_ row: SharedRow) async throws {
        try await client.query(
            "DELETE FROM \(unescaped: table) WHERE digest = \(row.digest) AND checksum = \(row.checksum)",
            logger: logger
        ).drain()
    }

    private var logTable: String { configuration.logTableName }
    private var removedTable: String { configuration.removedTableName }
    private var clearedTable: String { configuration.clearedTableName }

    /// Empties the table, and logs and notifies, in one transaction.
    func truncate(notify payload: String) async throws {
        let now = configuration.now().millisecondsSince1970
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("TRUNCATE \(unescaped: self.table)", logger: self.logger)
            try await connection.query(
                """
                INSERT INTO \(unescaped: self.clearedTable) (since, removed_at, instance)
                VALUES (\(Int64.min), \(now), \(self.instanceID))
                """,
                logger: self.logger
            )
            try await connection.query(self.logAndNotify(payload, now: now), logger: self.logger)
        }
    }

    /// Logs `payload` and notifies every listening instance of it, with its sequence number.
    func notify(_ payload: String) async throws {
        let now = configuration.now().millisecondsSince1970
        try await client.query(logAndNotify(payload, now: now), logger: logger).drain()
    }

    private func logAndNotify(_ payload: String, now: Int64) -> PostgresQuery {
        """
        WITH logged AS (
            INSERT INTO \(unescaped: logTable) (payload, logged_at) VALUES (\(payload), \(now)) RETURNING sequence
        )
        SELECT pg_notify(\(configuration.channel), (SELECT sequence FROM logged)::text || ' ' || \(Self.notice(payload)))
        """
    }

    /// Deletes the rows stored at or after `millis`, and logs and notifies in the same statement.
    func delete(storedSince millis: Int64, notify payload: String) async throws {
        let now = configuration.now().millisecondsSince1970
        try await client.query(
            """
            WITH gone AS (DELETE FROM \(unescaped: table) WHERE stored_at >= \(millis)),
            remembered AS (
                INSERT INTO \(unescaped: clearedTable) (since, removed_at, instance) VALUES (\(millis), \(now), \(instanceID))
            ),
            logged AS (
                INSERT INTO \(unescaped: logTable) (payload, logged_at) VALUES (\(payload), \(now))
                RETURNING sequence
            )
            SELECT pg_notify(\(configuration.channel), (SELECT sequence FROM logged)::text || ' ' || \(Self.notice(payload)))
            """,
            logger: logger
        ).drain()
    }

    /// The lowest sequence number in the log (nil when it is empty) and the last one handed out
    /// (nil when none was).
    func logBounds() async throws -> (lowest: Int64?, last: Int64?) {
        let rows = try await client.query(
            """
            SELECT (SELECT min(sequence) FROM \(unescaped: logTable)),
                pg_sequence_last_value(pg_get_serial_sequence('\(unescaped: logTable)', 'sequence')::regclass)
            """,
            logger: logger
        )
        var bounds: (lowest: Int64?, last: Int64?) = (nil, nil)
        for try await (lowest, last) in rows.decode((Int64?, Int64?).self) {
            bounds = (lowest, last)
        }
        return bounds
    }

    /// What a notification carries of `payload`: all of it, or nothing when it is too long for
    /// one (the listeners then read it from the log by its sequence number).
    static func notice(_ payload: String) -> String {
        payload.utf8.count <= InvalidationMessage.maximumPayloadBytes ? payload : ""
    }

    /// The log's entries after `sequence` (through `last`, when given), in order.
    func logEntries(after sequence: Int64, through last: Int64 = .max) async throws -> [(Int64, String)] {
        let rows = try await client.query(
            """
            SELECT sequence, payload FROM \(unescaped: logTable)
            WHERE sequence > \(sequence) AND sequence <= \(last) ORDER BY sequence
            """,
            logger: logger
        )
        var entries: [(Int64, String)] = []
        for try await entry in rows.decode((Int64, String).self) { entries.append(entry) }
        return entries
    }

    /// Deletes the log's entries logged before `millis`, and the removals remembered from before
    /// then.
    func trimLog(before millis: Int64) async throws {
        try await client.query(
            """
            WITH removed AS (DELETE FROM \(unescaped: removedTable) WHERE removed_at < \(millis)),
            cleared AS (DELETE FROM \(unescaped: clearedTable) WHERE removed_at < \(millis))
            DELETE FROM \(unescaped: logTable) WHERE logged_at < \(millis)
            """,
            logger: logger
        ).drain()
    }

    /// Deletes the rows that expired at or before `now`; returns how many.
    func deleteExpired(now: Int64) async throws -> Int {
        try await countDeleted(
            """
            WITH gone AS (DELETE FROM \(unescaped: table) WHERE expires_at <= \(now) RETURNING 1)
            SELECT count(*) FROM gone
            """
        )
    }

    /// Deletes the oldest rows until the newest fit in the budget; counts them as evictions.
    func evict() async throws {
        let capacity = Int64(configuration.capacityBytes)
        let evicted = try await countDeleted(
            """
            WITH ranked AS (
                SELECT digest, sum(size) OVER (ORDER BY stored_at DESC, digest DESC) AS total
                FROM \(unescaped: table)
            ),
            gone AS (
                DELETE FROM \(unescaped: table) WHERE digest IN (SELECT digest FROM ranked WHERE total > \(capacity))
                RETURNING 1
            )
            SELECT count(*) FROM gone
            """
        )
        count(\.evictions, metrics.evictions, by: evicted)
    }

    private func countDeleted(_ query: PostgresQuery) async throws -> Int {
        var deleted = 0
        for try await (count) in try await client.query(query, logger: logger).decode(Int64.self) {
            deleted = Int(count)
        }
        return deleted
    }

    /// The budget's bytes and the row count.
    func usage() async throws -> CacheUsage {
        let rows = try await client.query(
            "SELECT coalesce(sum(size), 0)::bigint, count(*) FROM \(unescaped: table)",
            logger: logger
        )
        var usage = CacheUsage(bytes: 0, entryCount: 0)
        for try await (bytes, count) in rows.decode((Int64, Int64).self) {
            usage = CacheUsage(bytes: Int(bytes), entryCount: Int(count))
        }
        return usage
    }
}

extension PostgresRowSequence {
    /// Reads and discards every row, so that the statement's errors surface here.
    func drain() async throws {
        for try await _ in self {}
    }
}
#endif
