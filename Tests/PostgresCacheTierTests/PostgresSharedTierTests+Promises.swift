// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import CacheTiers
import Foundation
import PostgresNIO
import Testing

@testable import PostgresCacheTier

/// The shared tier keeps the promises the local tiers make (issue 30): an encrypted cache seals
/// its rows, reset wipes them (or detaches), and bulk removals report their failures and are
/// ordered against the writes queued before them. In the serialized suite: its crash test would
/// empty the table under these.
extension PostgresSharedTierTests {
    static let secrets = ["s3cr3t-url", "s3cr3t-token", "s3cr3t-body", "example.com"]

    /// An entry whose key, metadata and value each carry a secret.
    static func secretEntry() -> (CacheKey, CacheEntry) {
        let body = "s3cr3t-body " + String(repeating: "x", count: 200)
        return (
            "GET https://example.com/account/7?session=s3cr3t-url",
            CacheEntry(
                value: Array(body.utf8),
                metadata: Array("authorization: Bearer s3cr3t-token".utf8),
                storedAt: Date()
            )
        )
    }

    @Test func anEncryptedCacheSealsItsSharedRowsWithTheDiskKeysAndFollowsReopen() async throws {
        let url = try TestDatabase.requireURL()
        let table = TestDatabase.uniqueTable()
        let (old, new) = (EncryptionKey.random(), EncryptionKey.random())
        // The shared tiers are given no key: the caches hand theirs over.
        let writer = try Instance(url: url, table: table, encryption: DiskEncryption(key: old))
        let rotated = try Instance(url: url, table: table, encryption: DiskEncryption(key: new, previousKeys: [old]))
        let stranger = try Instance(url: url, table: table, encryption: DiskEncryption(key: .random()))
        let fresh = try Instance(url: url, table: table, encryption: DiskEncryption(key: new))
        try await withRunning([writer, rotated, stranger, fresh]) { _ in
            let (key, entry) = Self.secretEntry()
            try await writer.cache.set(entry, for: key)
            try await waitUntil { writer.cache.sharedWriteStatistics.written == 1 }
            try await Self.expectSealedRows(writer.shared, count: 1)
            // Another instance with the key (here in a rotation, as the previous key) reads it;
            // one without it does not.
            #expect(await rotated.cache.entry(for: key)?.value == entry.value)
            #expect(await stranger.cache.entry(for: key) == nil)

            // reopen(encryption:) reaches the shared tier: a rotation seals new rows with the new key.
            try await writer.cache.close()
            try await writer.cache.reopen(encryption: DiskEncryption(key: new, previousKeys: [old]))
            let later: CacheKey = "GET https://example.com/account/8?session=s3cr3t-url"
            try await writer.cache.set(entry, for: later)
            try await waitUntil { writer.cache.sharedWriteStatistics.written == 2 }
            try await Self.expectSealedRows(writer.shared, count: 2)
            #expect(await fresh.shared.entry(for: later)?.value == entry.value)
            #expect(await fresh.shared.entry(for: key) == nil)  // sealed with the old key, which it lacks
            #expect(await writer.shared.entry(for: key)?.value == entry.value)  // still read in the rotation
        }
    }

    @Test func anEncryptedCacheSealsItsSharedTierUnlessItOptsOutByName() throws {
        let url = try TestDatabase.requireURL()
        let directory = TemporaryDirectory("sealing")
        defer { directory.remove() }
        let disk = try DiskTier(
            configuration: .init(directory: directory.path, encryption: DiskEncryption(key: .random()))
        )
        let shared = try PostgresSharedTier(configuration: .init(url: url, table: TestDatabase.uniqueTable()))
        // The app opts out by name: the rows stay in clear.
        _ = try TieredCache(
            memory: MemoryTier(),
            lowerTiers: [disk],
            shared: shared,
            options: .init(sharesInClear: true)
        )
        #expect(!shared.isSealed)
        _ = try TieredCache(memory: MemoryTier(), lowerTiers: [disk], shared: shared)
        #expect(shared.isSealed)
    }

    @Test func resetWipesTheSharedRowsForEveryInstanceSoNothingResetComesBack() async throws {
        let url = try TestDatabase.requireURL()
        let table = TestDatabase.uniqueTable()
        let key = EncryptionKey.random()
        let a = try Instance(url: url, table: table, encryption: DiskEncryption(key: key))
        let b = try Instance(url: url, table: table, encryption: DiskEncryption(key: key))
        try await withRunning([a, b]) { _ in
            try await waitUntil { a.shared.isListening && b.shared.isListening }
            let (cacheKey, entry) = Self.secretEntry()
            try await a.cache.set(entry, for: cacheKey)
            try await waitUntil { a.cache.sharedWriteStatistics.written == 1 }
            #expect(await b.cache.entry(for: cacheKey)?.value == entry.value)  // promoted into b
            try await a.cache.close()
            try await a.cache.reset()
            try await a.cache.reopen(encryption: DiskEncryption(key: key))
            // Nothing reset comes back: not from the table, not into a's new directory.
            #expect(await a.cache.entry(for: cacheKey) == nil)
            #expect(await a.cache.disk?.entry(for: cacheKey) == nil)
            #expect(await a.shared.sharedUsage?.entryCount == 0)
            // The wipe is every instance's: b drops its copies.
            try await waitUntil {
                guard b.cache.memory.entry(for: cacheKey) == nil else { return false }
                return await b.cache.disk?.entry(for: cacheKey) == nil
            }
        }
    }

    @Test func resetDetachesFromASharedTierItCannotWipeUntilAWipeSucceeds() async throws {
        try await Self.withStoredEntry(refusing: "TRUNCATE") { instance, cacheKey, entry in
            try await instance.cache.close()
            await #expect(throws: (any Error).self) { try await instance.cache.reset() }
            try await instance.cache.reopen(encryption: nil)  // tries the wipe again: still refused
            // The row is still in the table, and the detached cache neither reads nor writes it.
            #expect(try await Self.rowCount(instance.shared) == 1)
            #expect(await instance.cache.entry(for: cacheKey) == nil)
            try await instance.cache.set(entry, for: "GET https://example.com/after-reset")
            #expect(instance.cache.sharedWriteStatistics.written == 1)
            // Once a wipe succeeds the cache is attached again (once the tier's backoff is over).
            try await Self.allow("TRUNCATE", on: instance.shared)
            try await waitUntil { await instance.shared.sharedUsage != nil }
            try await instance.cache.close()
            try await instance.cache.reset()
            try await instance.cache.reopen(encryption: nil)
            #expect(await instance.shared.sharedUsage?.entryCount == 0)
            // An entry stored after the wipe (one stored before it stays wiped: the table refuses
            // its late write).
            try await instance.cache.set(CacheEntry(value: entry.value, storedAt: Date()), for: cacheKey)
            try await waitUntil { instance.cache.sharedWriteStatistics.written == 2 }
            #expect(await instance.shared.sharedUsage?.entryCount == 1)
        }
    }

    @Test(arguments: [false, true])
    func aBulkRemovalTheSharedTierRefusesThrowsAndStillWipesTheLocalTiers(sinceDate: Bool) async throws {
        try await Self.withStoredEntry(refusing: sinceDate ? "DELETE" : "TRUNCATE") { instance, cacheKey, entry in
            await #expect(throws: CacheError.self) {
                if sinceDate {
                    try await instance.cache.removeEntries(storedSince: entry.storedAt)
                } else {
                    try await instance.cache.removeAll()
                }
            }
            #expect(instance.cache.memory.entry(for: cacheKey) == nil)
            #expect(await instance.cache.disk?.entry(for: cacheKey) == nil)
            let rows = try await Self.rowCount(instance.shared)
            #expect(rows == 1)
        }
    }

    @Test func aBulkRemovalDuringAnOutageThrows() async throws {
        // Nothing listens on port 1: every connection is refused.
        let instance = try Instance(
            url: "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable",
            table: TestDatabase.uniqueTable(),
            configure: {
                $0.connectTimeout = .milliseconds(500)
                $0.writeTimeout = .seconds(2)
            }
        )
        try await withRunning([instance]) { _ in
            try await instance.cache.set(CacheEntry(value: [1], storedAt: Date()), for: "k")
            await #expect(throws: CacheError.self) { try await instance.cache.removeAll() }
            await #expect(throws: CacheError.self) { try await instance.cache.removeEntries(storedSince: .distantPast) }
            #expect(instance.cache.memory.entry(for: "k") == nil)
        }
    }

    @Test(arguments: [false, true])
    func aWriteQueuedBeforeABulkRemovalNeverLandsAfterIt(sinceDate: Bool) async throws {
        let url = try TestDatabase.requireURL()
        // One writer: the queue drains slowly, so most writes are still queued at the removal.
        let instance = try Instance(url: url, table: TestDatabase.uniqueTable(), options: .init(writers: 1))
        try await withRunning([instance]) { _ in
            let now = Date()
            try await instance.cache.set(CacheEntry(value: [0], storedAt: now.addingTimeInterval(-120)), for: "warm")
            try await waitUntil { instance.cache.sharedWriteStatistics.written == 1 }
            let count = 1500
            for index in 0..<count {
                // With the removal of what was stored since `now`, half of them are older and stay.
                let storedAt = now.addingTimeInterval(index.isMultiple(of: 2) ? -60 : 0)
                let value = SampleData.random(count: 512, seed: UInt64(index))
                try await instance.cache.set(CacheEntry(value: value, storedAt: storedAt), for: CacheKey("k\(index)"))
            }
            if sinceDate {
                try await instance.cache.removeEntries(storedSince: now)
            } else {
                try await instance.cache.removeAll()
            }
            try await waitUntil {
                let statistics = instance.cache.sharedWriteStatistics
                return statistics.written + statistics.dropped + statistics.failed == count + 1
            }
            #expect(instance.cache.sharedWriteStatistics.failed == 0)
            let (recent, older) = try await Self.rowCounts(instance.shared, since: now)
            #expect(recent == 0)
            if sinceDate {
                #expect(older == count / 2 + 1)  // what the removal did not cover still lands
            } else {
                #expect(older == 0)
            }
        }
    }

    // MARK: - Helpers

    /// Runs `body` with one running instance that stored ``secretEntry()`` in the table, on a
    /// server that now refuses every `statement` on the table.
    static func withStoredEntry(
        refusing statement: String,
        _ body: @escaping (Instance, CacheKey, CacheEntry) async throws -> Void
    ) async throws {
        let url = try TestDatabase.requireURL()
        let instance = try Instance(url: url, table: TestDatabase.uniqueTable())
        try await withRunning([instance]) { _ in
            let (cacheKey, entry) = secretEntry()
            try await instance.cache.set(entry, for: cacheKey)
            try await waitUntil { instance.cache.sharedWriteStatistics.written == 1 }
            try await refuse(statement, on: instance.shared)
            try await body(instance, cacheKey, entry)
        }
    }

    /// Expects `count` rows, each sealed, none holding a secret in any column.
    static func expectSealedRows(
        _ tier: PostgresSharedTier,
        count: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let table = tier.configuration.tableName
        let rows = try await tier.client.query("SELECT key, metadata, value, flags FROM \(unescaped: table)")
        var seen = 0
        for try await (key, metadata, value, flags) in rows.decode((ByteBuffer, ByteBuffer, ByteBuffer, Int16).self) {
            seen += 1
            #expect(flags & 2 != 0, "a row in clear", sourceLocation: sourceLocation)
            for column in [key, metadata, value] {
                let text = String(decoding: column.readableBytesView, as: UTF8.self)
                for secret in secrets {
                    #expect(!text.contains(secret), "\(secret) in clear", sourceLocation: sourceLocation)
                }
            }
        }
        #expect(seen == count, sourceLocation: sourceLocation)
    }

    /// The rows in the tier's table, counted past the tier's breaker.
    static func rowCount(_ tier: PostgresSharedTier) async throws -> Int {
        let (recent, older) = try await rowCounts(tier, since: .distantPast)
        return recent + older
    }

    /// Rows stored at or after `date`, and before it.
    static func rowCounts(_ tier: PostgresSharedTier, since date: Date) async throws -> (Int, Int) {
        let table = tier.configuration.tableName
        let millis = date.millisecondsSince1970
        let rows = try await tier.client.query(
            """
            SELECT count(*) FILTER (WHERE stored_at >= \(millis)), count(*) FILTER (WHERE stored_at < \(millis))
            FROM \(unescaped: table)
            """
        )
        for try await (recent, older) in rows.decode((Int64, Int64).self) {
            return (Int(recent), Int(older))
        }
        return (0, 0)
    }

    /// Makes the server refuse every `statement` (TRUNCATE, DELETE) on the tier's table.
    static func refuse(_ statement: String, on tier: PostgresSharedTier) async throws {
        let table = tier.configuration.tableName
        try await tier.client.query(
            """
            CREATE OR REPLACE FUNCTION \(unescaped: table)_refuse() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$
            """
        ).drain()
        try await tier.client.query(
            """
            CREATE TRIGGER \(unescaped: table)_refuse_\(unescaped: statement.lowercased())
            BEFORE \(unescaped: statement) ON \(unescaped: table)
            FOR EACH STATEMENT EXECUTE FUNCTION \(unescaped: table)_refuse()
            """
        ).drain()
    }

    /// Undoes ``refuse(_:on:)``.
    static func allow(_ statement: String, on tier: PostgresSharedTier) async throws {
        let table = tier.configuration.tableName
        try await tier.client.query(
            "DROP TRIGGER \(unescaped: table)_refuse_\(unescaped: statement.lowercased()) ON \(unescaped: table)"
        ).drain()
    }
}
#endif
