// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

/// Partial content through ``ResponseCache``: stored by the one storage path, found by the one
/// lookup, kept where the app allows, removed with the URL.
extension PartialContentTests {
    typealias P = PartialContentTests

    func store(_ part: CachedResponse, in cache: ResponseCache, willCache: WillCache? = nil) async throws -> Bool {
        let range = part.response.headerFields[.contentRange]!.dropFirst(6).split(separator: "/")[0]
        return try await cache.storeCachedResponse(part, for: P.request("bytes=\(range)"), willCache: willCache)
    }

    @Test func aStoredPartAnswersTheRangesItHoldsAndNothingElse() async throws {
        let cache = try ResponseCache(configuration: T.configuration(nil))
        #expect(try await store(P.part(0...9), in: cache))
        let hit = await cache.lookup(P.request("bytes=2-4"))
        #expect(text(hit.stored) == "cde")
        #expect(hit.stored?.response.status == .partialContent)
        #expect(hit.stored?.response.headerFields[.contentRange] == "bytes 2-4/26")
        #expect(cache.decision(for: hit, now: T.requestTime.addingTimeInterval(1)).action == .useStored)
        // Never the whole, never a HEAD, never a range it does not hold.
        #expect(await cache.lookup(P.request()).stored == nil)
        #expect(await cache.cachedResponse(for: P.request()) == nil)
        #expect(await cache.lookup(P.request(method: .head)).stored == nil)
        #expect(await cache.lookup(P.request("bytes=8-12")).stored == nil)
    }

    @Test func rangesThatCoverTheBodyBecomeTheWhole200() async throws {
        let cache = try ResponseCache(configuration: T.configuration(nil))
        #expect(try await store(P.part(0...9), in: cache))
        #expect(try await store(P.part(18...25), in: cache))
        #expect(text(await cache.lookup(P.request("bytes=20-21")).stored) == "uv")
        #expect(await cache.lookup(P.request()).stored == nil)
        #expect(try await store(P.part(8...19), in: cache))
        let whole = try #require(await cache.lookup(P.request()).stored)
        #expect(whole.response.status == .ok)
        #expect(whole.body == P.alphabet)
        #expect(whole.response.headerFields[.contentLength] == "26")
        #expect(whole.response.headerFields[.contentRange] == nil)
        // A range of the whole is the door's to cut (RangeRule): the lookup finds the 200.
        #expect(await cache.lookup(P.request("bytes=0-1")).stored?.body == P.alphabet)
    }

    @Test func aPartOfAnotherRepresentationReplacesWhatIsHeld() async throws {
        let cache = try ResponseCache(configuration: T.configuration(nil))
        #expect(try await store(P.part(0...9), in: cache))
        let changed = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        #expect(try await store(P.part(10...19, etag: "\"v2\"", of: changed), in: cache))
        #expect(await cache.lookup(P.request("bytes=0-4")).stored == nil)
        #expect(text(await cache.lookup(P.request("bytes=10-12")).stored) == "KLM")
    }

    @Test func aPartOfTheStoredWholeFreshensItAndAnotherReplacesIt() async throws {
        let cache = try ResponseCache(configuration: T.configuration(nil))
        var whole = T.response("abcdefghijklmnopqrstuvwxyz", [(.eTag, "\"v1\""), (.cacheControl, "max-age=0")])
        whole.response.headerFields[.contentLength] = "26"
        #expect(try await cache.storeCachedResponse(whole, for: P.request()))
        #expect(try await store(P.part(3...5, fields: [(.cacheControl, "max-age=600")]), in: cache))
        let freshened = try #require(await cache.lookup(P.request()).stored)
        #expect(freshened.body == P.alphabet)
        #expect(freshened.response.headerFields[.cacheControl] == "max-age=600")
        #expect(try await store(P.part(3...5, etag: "\"v2\""), in: cache))
        #expect(await cache.lookup(P.request()).stored == nil)
        #expect(text(await cache.lookup(P.request("bytes=3-4")).stored) == "de")
    }

    @Test func partsStayWhereTheAppAllowsAndSurviveAReopen() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(configuration: T.configuration(directory))
            #expect(try await store(P.part(0...9), in: cache))
            try await cache.close()
            try await cache.reopen()
            #expect(text(await cache.lookup(P.request("bytes=1-3")).stored) == "bcd")
            #expect(await cache.lookup(P.request()).stored == nil)

            // A memory-only part keeps what it joins off the disk too.
            let memoryOnly = WillCache { response, _ in
                var response = response
                response.storagePolicy = .allowedInMemoryOnly
                return response
            }
            let secret = Array("SECRETPART".utf8)
            #expect(
                try await store(
                    P.part(10...19, of: Array(P.alphabet[0...9]) + secret + Array(P.alphabet[20...25])),
                    in: cache,
                    willCache: memoryOnly
                )
            )
            #expect(text(await cache.lookup(P.request("bytes=8-12")).stored) == "ijSEC")
            try await cache.close()
            #expect(!ResponseCachePrivacyTests().diskText(directory).contains("SECRETPART"))
            try await cache.reopen()
            #expect(await cache.lookup(P.request("bytes=1-3")).stored == nil)
        }
    }

    @Test func anUnsafeMethodOrARemovalForgetsTheParts() async throws {
        let cache = try ResponseCache(configuration: T.configuration(nil))
        #expect(try await store(P.part(0...9), in: cache))
        let post = T.request("https://media.example/film", method: .post)
        try await cache.invalidate(after: HTTPResponse(status: .noContent), to: post)
        #expect(await cache.lookup(P.request("bytes=0-1")).stored == nil)
        #expect(try await store(P.part(0...9), in: cache))
        try await cache.removeCachedResponse(for: P.request())
        #expect(await cache.lookup(P.request("bytes=0-1")).stored == nil)
    }

    @Test func aTagReachesTheParts() async throws {
        let cache = try ResponseCache(configuration: T.configuration(nil))
        let tag = WillCache { response, _ in
            var response = response
            response.tags = ["film"]
            return response
        }
        #expect(try await store(P.part(0...9), in: cache, willCache: tag))
        #expect(try await cache.markStale(tag: "film") == 1)
        #expect(await cache.lookup(P.request("bytes=0-1")).stored == nil)
        #expect(try await store(P.part(0...9), in: cache, willCache: tag))
        #expect(try await cache.invalidate(tag: "film") == 1)
        #expect(await cache.lookup(P.request("bytes=0-1")).stored == nil)
    }

    @Test func aStoredPartWhoseRangesAndBodyDisagreeDoesNotDecode() throws {
        var part = P.part(0...9)
        part.response.headerFields[.contentLength] = nil
        let entry = CacheEntry(
            value: Array(P.alphabet[0...4]),
            metadata: [StoredRecord.partialTag] + CachedResponseCodec.encodeMetadata(part),
            storedAt: T.requestTime
        )
        #expect(throws: HTTPCachingError.self) { try StoredRecord(decoding: entry) }
        let good = CacheEntry(
            value: part.body,
            metadata: [StoredRecord.partialTag] + CachedResponseCodec.encodeMetadata(part),
            storedAt: T.requestTime
        )
        #expect(try StoredRecord.Box.of(good).partial?.ranges == [0...9])
    }
}
