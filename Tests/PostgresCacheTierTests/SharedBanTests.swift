// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes
import Testing

@testable import PostgresCacheTier

/// Bans by URL prefix across instances (issue 31): part of the serialized suite, since another
/// test restarts the server.
extension PostgresSharedTierTests {
    /// A ban on one instance removes what it holds, the shared tier's rows (plain rows matched by
    /// the database, sealed ones opened here), and what only the other instance holds (its
    /// memory-only responses), in one message per method; other URLs stay everywhere.
    @Test(arguments: [false, true])
    func aBanReachesTheSharedTierAndEveryInstance(encrypted: Bool) async throws {
        let url = try TestDatabase.requireURL()
        let table = TestDatabase.uniqueTable()
        let encryption = encrypted ? DiskEncryption(key: try EncryptionKey(bytes: Array(repeating: 9, count: 32))) : nil
        let a = try Instance(url: url, table: table, encryption: encryption)
        let b = try Instance(url: url, table: table, encryption: encryption)
        defer { for instance in [a, b] { instance.directory.remove() } }
        let caches = [a, b].map { ResponseCache(configuration: .init(), tiers: $0.cache) }
        let (one, two, api) = (Self.request("/static/1"), Self.request("/static/2"), Self.request("/api/1"))
        let (bOwn, bMemory) = (Self.request("/static/b"), Self.request("/static/m"))

        try await withThrowingTaskGroup(of: Void.self) { group in
            for cache in caches { group.addTask { try await cache.run() } }
            try await waitUntil { a.shared.isListening && b.shared.isListening }
            for request in [one, two, api] { try await caches[0].storeCachedResponse(Self.response("a"), for: request) }
            try await caches[1].storeCachedResponse(Self.response("b"), for: bOwn)
            var memoryOnly = Self.response("m")
            memoryOnly.storagePolicy = .allowedInMemoryOnly
            try await caches[1].storeCachedResponse(memoryOnly, for: bMemory)
            try await waitUntil {
                a.cache.sharedWriteStatistics.written >= 3 && b.cache.sharedWriteStatistics.written >= 2
            }
            // B reads one of A's: now in B's memory and disk too.
            #expect(await caches[1].cachedResponse(for: one)?.body == Array("a".utf8))
            let logged = try await Self.logRows(of: a.shared)

            var prefix = Self.request("/static/")
            prefix.method = .get
            // A's own two, and B's from the shared tier; B's memory-only one A cannot know of.
            #expect(try await caches[0].removeCachedResponses(withURLPrefix: prefix) == 3)

            try await waitUntil {
                for request in [one, two, bOwn, bMemory] where await caches[1].cachedResponse(for: request) != nil {
                    return false
                }
                return true
            }
            for request in [one, two, bOwn] { #expect(await caches[0].cachedResponse(for: request) == nil) }
            #expect(await caches[0].cachedResponse(for: api) != nil)
            #expect(await caches[1].cachedResponse(for: api) != nil)
            for key in ["GET https://static.example/static/1", "GET https://static.example/static/b"] {
                #expect(await a.shared.entry(for: CacheKey(key)) == nil)
            }
            let kinds = try await Self.logRows(of: a.shared).dropFirst(logged.count).map { $0.split(separator: "|")[2] }
            #expect(kinds == ["p", "p"])
            group.cancelAll()
        }
        for instance in [a, b] { try? await instance.cache.close() }
    }

    private static func request(_ path: String) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "https", authority: "static.example", path: path)
    }
}
#endif
