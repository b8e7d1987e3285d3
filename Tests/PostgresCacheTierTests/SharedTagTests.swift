// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes
import PostgresCacheTier
import Testing

/// Tags across instances: part of the serialized suite, since another test restarts the server.
extension PostgresSharedTierTests {
    @Test func aTagInvalidatedByOneInstanceIsDroppedByTheOther() async throws {
        let url = try TestDatabase.requireURL()
        let table = TestDatabase.uniqueTable()
        let a = try Instance(url: url, table: table)
        // B shares nothing it stores: its response and its member list stay in its own tiers, as
        // a member list that another instance overwrote in the database would be.
        let b = try Instance(url: url, table: table, options: .init(sharesAllowedEntries: false))
        defer { for instance in [a, b] { instance.directory.remove() } }
        let tagging = WillCache.tagging { _, request in request.path?.hasPrefix("/news") == true ? ["news"] : [] }
        let caches = [a, b].map { ResponseCache(configuration: .init(willCache: tagging), tiers: $0.cache) }
        let (news1, news2, sport) = (Self.request("/news/1"), Self.request("/news/2"), Self.request("/sport/1"))

        try await withThrowingTaskGroup(of: Void.self) { group in
            for cache in caches { group.addTask { try await cache.run() } }
            try await waitUntil { a.shared.isListening && b.shared.isListening }
            try await caches[0].storeCachedResponse(Self.response("n1"), for: news1)
            try await caches[0].storeCachedResponse(Self.response("s1"), for: sport)
            try await waitUntil { a.cache.sharedWriteStatistics.written >= 3 }  // two responses, a member list
            // B reads A's news from the database (now in B's memory and disk) and stores its own.
            #expect(await caches[1].cachedResponse(for: news1)?.body == Array("n1".utf8))
            try await caches[1].storeCachedResponse(Self.response("n2"), for: news2)

            // A knows of one member; B drops that one by its key and its own by the tag.
            #expect(try await caches[0].invalidate(tag: "news") == 1)
            try await waitUntil {
                let first = await caches[1].cachedResponse(for: news1)
                let second = await caches[1].cachedResponse(for: news2)
                return first == nil && second == nil
            }
            #expect(await caches[0].cachedResponse(for: news1) == nil)
            #expect(await caches[1].cachedResponse(for: sport)?.body == Array("s1".utf8))
            #expect(b.shared.statistics.invalidationsReceived >= 2)  // the key and the tag
            group.cancelAll()
        }
        for instance in [a, b] { try? await instance.cache.close() }
    }

    private static func request(_ path: String) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "https", authority: "news.example", path: path)
    }

    private static func response(_ body: String) -> CachedResponse {
        let now = Date()
        return CachedResponse(
            response: HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=600"]),
            body: Array(body.utf8),
            requestTime: now,
            responseTime: now
        )
    }
}
#endif
