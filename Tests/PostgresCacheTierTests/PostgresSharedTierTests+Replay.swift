// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import CacheTiers
import Foundation
import PostgresNIO
import Testing

@testable import PostgresCacheTier

/// Durable invalidation (issue 30, item 4): every removal is a row of the invalidation log, and an
/// instance replays what it missed while its listener was down (a killed connection, a crashed
/// server) or while it was closed. In the serialized suite: one test crashes the server.
extension PostgresSharedTierTests {
    @Test(arguments: [false, true])
    func aRemovalMadeWhileTheListenerIsDownIsReplayedWhenItReconnects(crashServer: Bool) async throws {
        if crashServer { try #require(TestDatabase.control != nil, "LAYEREDCACHE_POSTGRES_CONTROL is not set") }
        // The listeners reconnect only when the test moves their clock: a real backoff raced the
        // removal on a loaded machine.
        let reconnect = TestClock()
        let manualReconnect: Configure = { $0.reconnectClock = reconnect }
        try await TestDatabase.crashing(crashServer) {
            try await replay(crashServer: crashServer, reconnect: reconnect, configure: manualReconnect)
        }
    }

    private func replay(
        crashServer: Bool,
        reconnect: TestClock,
        configure manualReconnect: @escaping Configure
    )
        async throws
    {
        try await withInstances(2, configure: manualReconnect) { instances in
            let (a, b) = (instances[0], instances[1])
            try await waitUntil { a.shared.isListening && b.shared.isListening }
            let origin = Counter()
            let key: CacheKey = "GET https://example.com/replayed"
            let value = try await a.fetch(key, origin: origin)
            try await waitUntil { a.cache.sharedWriteStatistics.written == 1 }
            #expect(try await b.fetch(key, origin: origin) == value)
            if crashServer {
                try await TestDatabase.server("stop")
                try await TestDatabase.server("start")
                // The writer reaches the server again (its backoff over) before it removes.
                try await waitUntil { await a.shared.sharedUsage != nil }
            }
            // Whether or not they lost it to the crash, the listeners are cut now.
            try await Self.terminateListeners(of: a.shared)
            try await waitUntil { !b.shared.isListening && reconnect.sleeperCount == 2 }
            try await a.cache.remove(key)
            try await waitUntil { a.cache.sharedWriteStatistics.written == 2 }
            // Should the wait above fail: whether the removal failed (kept for a retry) instead.
            let (writes, tier) = (a.cache.sharedWriteStatistics, a.shared.statistics)
            #expect(writes.failed == 0, "\(writes), \(tier)")
            // b heard nothing live: it still holds the entry until it reconnects and replays the log.
            #expect(b.cache.memory.entry(for: key) != nil)
            // The replay applies what it read before the listener says it is listening again.
            try await waitUntil {
                reconnect.advance(by: .seconds(60))
                return b.shared.isListening
            }
            #expect(await a.cache.entry(for: key) == nil)
            #expect(await b.cache.entry(for: key) == nil)
        }
    }

    @Test func aRemovalMadeWhileACacheIsClosedIsAppliedWhenItReopens() async throws {
        try await withInstances(2) { instances in
            let (a, b) = (instances[0], instances[1])
            try await waitUntil { a.shared.isListening && b.shared.isListening }
            let origin = Counter()
            let key: CacheKey = "GET https://example.com/closed"
            let value = try await a.fetch(key, origin: origin)
            try await waitUntil { a.cache.sharedWriteStatistics.written == 1 }
            #expect(try await b.fetch(key, origin: origin) == value)
            try await b.cache.close()
            try await a.cache.remove(key)
            try await waitUntil { b.shared.statistics.invalidationsReceived == 1 }
            try await b.cache.reopen(encryption: nil)
            #expect(await b.cache.disk?.entry(for: key) == nil)
            #expect(await b.cache.entry(for: key) == nil)
        }
    }

    @Test func anInstanceAwayLongerThanTheLogKeepsDropsWhatItCannotVerify() async throws {
        // The sweep trims every entry at once; the listeners reconnect only when the test moves
        // their clock (a real backoff raced the sweep on a loaded machine: b came back in time
        // to replay the removal, and kept what it should have dropped).
        let reconnect = TestClock()
        let noRetention: Configure = {
            $0.reconnectClock = reconnect
            $0.invalidationLogRetention = .seconds(-60)
        }
        try await withInstances(2, configure: noRetention) { instances in
            let (a, b) = (instances[0], instances[1])
            try await waitUntil { a.shared.isListening && b.shared.isListening }
            let origin = Counter()
            let (removed, kept): (CacheKey, CacheKey) = (
                "GET https://example.com/removed", "GET https://example.com/kept"
            )
            for key in [removed, kept] { _ = try await a.fetch(key, origin: origin) }
            try await waitUntil { a.cache.sharedWriteStatistics.written == 2 }
            for key in [removed, kept] { _ = try await b.fetch(key, origin: origin) }
            try await Self.terminateListeners(of: a.shared)
            try await waitUntil { !b.shared.isListening }
            try await a.cache.remove(removed)
            try await waitUntil { a.cache.sharedWriteStatistics.written == 3 }
            await a.shared.sweep()  // the removal's entry is trimmed before b comes back
            try await waitUntil { reconnect.sleeperCount == 2 }  // both listeners wait to reconnect
            reconnect.advance(by: .seconds(1))
            // b cannot tell what it missed: it drops every local copy.
            try await waitUntil {
                guard b.cache.memory.entry(for: kept) == nil else { return false }
                return await b.cache.disk?.entry(for: removed) == nil
            }
        }
    }

    /// Ends every connection listening on the tier's channel (as a network cut would).
    static func terminateListeners(of tier: PostgresSharedTier) async throws {
        let channel = tier.configuration.channel
        try await waitUntil {
            let rows = try? await tier.client.query(
                """
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE query LIKE 'LISTEN%' AND query LIKE '%' || \(channel) || '%' AND pid <> pg_backend_pid()
                """
            ).collect()
            return rows != nil
        }
    }
}
#endif
