// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes
import PostgresNIO
import Synchronization
import Testing

@testable import PostgresCacheTier

/// Tags across instances (issue 30, item 5): part of the serialized suite, since another test
/// restarts the server.
extension PostgresSharedTierTests {
    /// A tag's invalidation is one row of the log and one message, however many members it has
    /// (40 long URLs make it too long for a notification: it is then read from the log).
    @Test(arguments: [false, true])
    func aTagInvalidationIsOneLoggedMessageThatTheOtherInstanceAppliesWhole(longURLs: Bool) async throws {
        let url = try TestDatabase.requireURL()
        let table = TestDatabase.uniqueTable()
        let a = try Instance(url: url, table: table)
        // B shares nothing it stores: its response and its member list stay in its own tiers, as
        // a member list that another instance overwrote in the database would be.
        let b = try Instance(url: url, table: table, options: .init(sharesAllowedEntries: false))
        defer { for instance in [a, b] { instance.directory.remove() } }
        let tagging = WillCache.tagging { _, request in request.path?.hasPrefix("/news") == true ? ["news"] : [] }
        let caches = [a, b].map { ResponseCache(configuration: .init(willCache: tagging), tiers: $0.cache) }
        let suffix = longURLs ? String(repeating: "x", count: 300) : ""
        let news = (0..<(longURLs ? 40 : 2)).map { Self.request("/news/\($0)\(suffix)") }
        let (own, sport) = (Self.request("/news/b"), Self.request("/sport/1"))

        try await withThrowingTaskGroup(of: Void.self) { group in
            for cache in caches { group.addTask { try await cache.run() } }
            try await waitUntil { a.shared.isListening && b.shared.isListening }
            for request in news { try await caches[0].storeCachedResponse(Self.response("n"), for: request) }
            try await caches[0].storeCachedResponse(Self.response("s1"), for: sport)
            // B reads A's news from the database (now in B's memory and disk; B's lists do not
            // name them) and stores one of its own. A's queue writes the tag's member list again
            // after each store unless a later one replaced it first, so how many writes land
            // before the last response does depends on the load: B reads until it has them all.
            try await waitUntil {
                for request in news + [sport] where await caches[1].cachedResponse(for: request) == nil { return false }
                return true
            }
            for request in news { #expect(await caches[1].cachedResponse(for: request)?.body == Array("n".utf8)) }
            try await caches[1].storeCachedResponse(Self.response("b"), for: own)
            let logged = try await Self.logRows(of: a.shared)
            let (sent, received) = (a.shared.statistics.invalidationsSent, b.shared.statistics.invalidationsReceived)

            #expect(try await caches[0].invalidate(tag: "news") == news.count)
            try await waitUntil {
                for request in news + [own] where await caches[1].cachedResponse(for: request) != nil { return false }
                return true
            }
            for request in news { #expect(await caches[0].cachedResponse(for: request) == nil) }
            #expect(await caches[1].cachedResponse(for: sport)?.body == Array("s1".utf8))
            // One message for the tag and its members, not one per key; B tells no one.
            let kinds = try await Self.logRows(of: a.shared).dropFirst(logged.count).map { $0.split(separator: "|")[2] }
            #expect(kinds == ["g"])
            #expect(a.shared.statistics.invalidationsSent == sent + 1)
            #expect(b.shared.statistics.invalidationsReceived == received + 1)
            #expect(b.shared.statistics.invalidationsSent == 0)
            group.cancelAll()
        }
        for instance in [a, b] { try? await instance.cache.close() }
    }

    /// A member whose removal fails stops the invalidation before the member lists go: a retry
    /// finds the members left, and the other instance hears of the tag once it succeeds.
    @Test func aTagInvalidationThatFailsMidwayKeepsItsListsSoThatARetryRemovesTheRest() async throws {
        let url = try TestDatabase.requireURL()
        let table = TestDatabase.uniqueTable()
        let failing = FailingRemovals()
        let a = try Instance(url: url, table: table, wrapDisk: { RemovalFailingTier(base: $0, failing: failing) })
        let b = try Instance(url: url, table: table)
        defer { for instance in [a, b] { instance.directory.remove() } }
        let tagging = WillCache.tagging { _, request in request.path?.hasPrefix("/news") == true ? ["news"] : [] }
        let caches = [a, b].map { ResponseCache(configuration: .init(willCache: tagging), tiers: $0.cache) }
        let news = (1...3).map { Self.request("/news/\($0)") }

        try await withThrowingTaskGroup(of: Void.self) { group in
            for cache in caches { group.addTask { try await cache.run() } }
            try await waitUntil { a.shared.isListening && b.shared.isListening }
            for request in news { try await caches[0].storeCachedResponse(Self.response("n"), for: request) }
            // Three responses and their member lists (one a bucket: up to three), in lanes that
            // land in any order: B reads each once it is there.
            try await waitUntil {
                for request in news where await caches[1].cachedResponse(for: request) == nil { return false }
                return true
            }

            // The members go in key order: /news/1 is removed, /news/2 fails, /news/3 is not reached.
            failing.keys.withLock { $0 = ["/news/2"] }
            await #expect(throws: HTTPCachingError.self) { try await caches[0].invalidate(tag: "news") }
            #expect(await caches[0].cachedResponse(for: news[0]) == nil)
            #expect(await caches[0].cachedResponse(for: news[2]) != nil)
            // The lists still name the two left.
            #expect(try await caches[0].invalidate(tag: "news") == 2)
            for request in news { #expect(await caches[0].cachedResponse(for: request) == nil) }
            try await waitUntil {
                for request in news where await caches[1].cachedResponse(for: request) != nil { return false }
                return true
            }
            #expect(try await caches[0].invalidate(tag: "news") == 0)
            group.cancelAll()
        }
        for instance in [a, b] { try? await instance.cache.close() }
    }

    /// The payloads of the invalidation log of `tier`'s table, in order.
    static func logRows(of tier: PostgresSharedTier) async throws -> [String] {
        let rows = try await tier.client.query(
            "SELECT payload FROM \(unescaped: tier.configuration.logTableName) ORDER BY sequence"
        )
        var payloads: [String] = []
        for try await payload in rows.decode(String.self) { payloads.append(payload) }
        return payloads
    }

    private static func request(_ path: String) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "https", authority: "news.example", path: path)
    }

    /// Reads too slow for their deadline open an instance's breaker on a loaded machine; a tag's
    /// invalidation asked for while it backs off still goes out. It was skipped (the error logged
    /// by `ResponseCache`), and the proxy's purge that asked for it answered "purged 1" while the
    /// other instance kept serving what it removed.
    @Test func aTagInvalidationGoesOutWhileTheTierBacksOff() async throws {
        // A backoff longer than the test: once open, the breaker stays open.
        let longBackoff: Configure = {
            $0.initialBackoff = .seconds(600)
            $0.maximumBackoff = .seconds(600)
        }
        try await withInstances(2, configure: longBackoff) { instances in
            let (a, b) = (instances[0], instances[1])
            try await waitUntil { a.shared.isListening && b.shared.isListening }
            let key: CacheKey = "GET https://example.com/tagged"
            a.shared.recordFailure()
            // Backing off: a read does not go to the database.
            #expect(await a.shared.entry(for: key) == nil)
            #expect(a.shared.statistics.bypassed == 1)
            try await a.cache.broadcastTagInvalidation("news", removedKeys: [key])
            #expect(a.shared.statistics.invalidationsSent == 1)
            try await waitUntil { b.shared.statistics.invalidationsReceived == 1 }
        }
    }

    /// A fresh 200 (ten minutes) with `body`, as an origin would answer.
    static func response(_ body: String) -> CachedResponse {
        let now = Date()
        return CachedResponse(
            response: HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=600"]),
            body: Array(body.utf8),
            requestTime: now,
            responseTime: now
        )
    }
}

/// The parts of keys whose next removal fails.
final class FailingRemovals: Sendable {
    let keys = Mutex<Set<String>>([])
}

/// A lower tier whose removal of a key that contains one of `failing`'s throws once (and forgets
/// it): a disk that fails midway through a tag's invalidation.
struct RemovalFailingTier: CacheTier {
    let base: DiskTier
    let failing: FailingRemovals

    func entry(for key: CacheKey) async throws -> CacheEntry? { await base.entry(for: key) }
    func set(_ entry: CacheEntry, for key: CacheKey) async throws -> Bool { try await base.set(entry, for: key) }
    func remove(_ key: CacheKey) async throws -> Bool {
        let fails = failing.keys.withLock { failing in
            guard let match = failing.first(where: { key.string.contains($0) }) else { return false }
            failing.remove(match)
            return true
        }
        if fails { throw CacheError(code: .io, message: "the disk failed to remove \(key)") }
        return try await base.remove(key)
    }
    func removeAll() async throws { try await base.removeAll() }
    func removeEntries(storedSince date: Date) async throws -> Int { try await base.removeEntries(storedSince: date) }
    func keys(withPrefix prefix: String) async throws -> [CacheKey] { try await base.keys(withPrefix: prefix) }
    var tierUsage: CacheUsage { get async { await base.tierUsage } }
    func close() async throws { try await base.close() }
    func reopen(encryption: DiskEncryption?) async throws { try await base.reopen(encryption: encryption) }
    func reset() async throws { try await base.reset() }
}
#endif
