// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

/// close, reopen and reset at the level an app holds, and what a closed cache does.
@Suite struct ResponseCacheLifecycleTests {
    typealias T = ResponseCacheTests
    static let key = try! EncryptionKey(bytes: (0..<32).map { UInt8($0) })
    static let otherKey = try! EncryptionKey(bytes: (0..<32).map { UInt8(99 &+ $0) })

    @Test func aClosedCacheFindsNothingRefusesToStoreAndReopensWithWhatItHad() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(configuration: T.configuration(directory))
            let request = T.request("https://h.example/a")
            #expect(
                try await cache.storeCachedResponse(T.response("one", [(.cacheControl, "max-age=60")]), for: request)
            )
            try await cache.close()
            #expect(!cache.isOpen)
            #expect(cache.currentMemoryUsage == 0)
            let lookup = await cache.lookup(request)
            #expect(lookup.isCacheClosed && lookup.stored == nil)
            #expect(await cache.cachedResponse(for: request) == nil)
            await #expect(throws: HTTPCachingError.self) {
                try await cache.storeCachedResponse(T.response("two"), for: request)
            }
            do {
                try await cache.storeCachedResponse(T.response("two"), for: request)
            } catch let error as HTTPCachingError {
                #expect(error.code == .closed)
            }
            // Closing again does nothing; resetting or reopening twice is an error.
            try await cache.close()
            try await cache.reopen()
            #expect(cache.isOpen)
            await #expect(throws: HTTPCachingError.self) { try await cache.reopen() }
            await #expect(throws: HTTPCachingError.self) { try await cache.reset() }
            #expect(await cache.cachedResponse(for: request)?.body == Array("one".utf8))
        }
    }

    @Test func closingAnEncryptedCacheDropsPlaintextAndAResetAllowsANewKey() async throws {
        try await withTemporaryDirectory { directory in
            let encryption = DiskEncryption(key: Self.key)
            let cache = try ResponseCache(configuration: T.configuration(directory, encryption: encryption))
            let request = T.request("https://h.example/secret")
            try await cache.storeCachedResponse(T.response("ZQX-SECRET", [(.cacheControl, "max-age=60")]), for: request)
            #expect(cache.tiers.memory.usage.entryCount == 1)
            try await cache.close()
            #expect(cache.tiers.memory.usage.entryCount == 0)

            // The wrong key keeps the cache closed and the directory as it was.
            do {
                try await cache.reopen(encryption: DiskEncryption(key: Self.otherKey))
                Issue.record("a wrong key opened the cache")
            } catch let error as HTTPCachingError {
                // Typed: the app switches on the code, without casting `underlying`.
                #expect(error.code == .wrongKey && !cache.isOpen)
            }
            // A missing key is an error of its own.
            let missing = await #expect(throws: HTTPCachingError.self) { try await cache.reopen(encryption: nil) }
            #expect(missing?.code == .encryptionMismatch && !cache.isOpen)
            try await cache.reopen(encryption: encryption)
            #expect(await cache.cachedResponse(for: request)?.body == Array("ZQX-SECRET".utf8))

            try await cache.close()
            try await cache.reset()
            try await cache.reopen(encryption: DiskEncryption(key: Self.otherKey))
            #expect(await cache.cachedResponse(for: request) == nil)
        }
    }

    /// 64 tasks read and write while another closes, reopens and resets: no crash, no deadlock,
    /// and every body found is the one stored for its key.
    @Test func concurrentTrafficAgainstCloseReopenAndResetNeverSeesWrongBytes() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(configuration: T.configuration(directory))
            let wrong = await withTaskGroup(of: Int.self) { group in
                for task in 0..<64 {
                    group.addTask {
                        var wrong = 0
                        for round in 0..<60 {
                            let name = "k\((task * 7 + round) % 40)"
                            let request = T.request("https://h.example/\(name)")
                            if round % 3 == 0 {
                                let body = "body-of-\(name)"
                                _ = try? await cache.storeCachedResponse(
                                    T.response(body, [(.cacheControl, "max-age=600")]),
                                    for: request
                                )
                            } else if let found = await cache.cachedResponse(for: request),
                                found.body != Array("body-of-\(name)".utf8)
                            {
                                wrong += 1
                            }
                        }
                        return wrong
                    }
                }
                group.addTask {
                    for round in 0..<30 {
                        try? await cache.close()
                        if round % 5 == 0 { try? await cache.reset() }
                        try? await cache.reopen()
                        await Task.yield()
                    }
                    return 0
                }
                return await group.reduce(0, +)
            }
            #expect(wrong == 0)
            if !cache.isOpen { try await cache.reopen() }
            #expect(cache.isOpen)
        }
    }
}

/// Tags: invalidate or mark stale every response stored with one, in memory and on disk.
@Suite struct ResponseCacheTagTests {
    typealias T = ResponseCacheTests

    static let tagTasks = WillCache.tagging { _, request in
        request.path?.hasPrefix("/tasks") == true ? ["tasks"] : []
    }

    @Test func invalidateReachesMemoryOnlyAndDiskEntriesAndSurvivesARestart() async throws {
        try await withTemporaryDirectory { directory in
            let fields: [(HTTPField.Name, String)] = [(.cacheControl, "max-age=600")]
            let requests = ["/tasks?status=open", "/tasks/42", "/tasks?sort=due"].map {
                T.request("https://h.example\($0)")
            }
            let other = T.request("https://h.example/users/1")
            do {
                let cache = try ResponseCache(configuration: T.configuration(directory, willCache: Self.tagTasks))
                try await cache.storeCachedResponse(T.response("open", fields), for: requests[0])
                try await cache.storeCachedResponse(
                    T.response("42", fields, policy: .allowedInMemoryOnly),
                    for: requests[1]
                )
                try await cache.storeCachedResponse(T.response("other", fields), for: other)
                #expect(await cache.cachedResponse(for: requests[0])?.tags == ["tasks"])
                #expect(try await cache.invalidate(tag: "tasks") == 2)
                #expect(await cache.cachedResponse(for: requests[0]) == nil)
                #expect(await cache.cachedResponse(for: requests[1]) == nil)
                #expect(await cache.cachedResponse(for: other) != nil)
                #expect(try await cache.invalidate(tag: "tasks") == 0)
                #expect(try await cache.invalidate(tag: "unknown") == 0)
                await #expect(throws: HTTPCachingError.self) { try await cache.invalidate(tag: "") }

                try await cache.storeCachedResponse(T.response("due", fields), for: requests[2])
                try await cache.close()
            }
            // Another process (a new cache on the same directory) knows the tag from disk.
            let cache = try ResponseCache(configuration: T.configuration(directory, willCache: Self.tagTasks))
            #expect(await cache.cachedResponse(for: requests[2])?.body == Array("due".utf8))
            #expect(try await cache.invalidate(tag: "tasks") == 1)
            #expect(await cache.cachedResponse(for: requests[2]) == nil)
            #expect(await cache.cachedResponse(for: other) != nil)
        }
    }

    @Test func markStaleKeepsTheBodyAndForcesRevalidationUntilA304() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(configuration: T.configuration(directory, willCache: Self.tagTasks))
            let request = T.request("https://h.example/tasks/7")
            let stored = T.response("seven", [(.cacheControl, "max-age=600"), (.eTag, "\"7\"")])
            try await cache.storeCachedResponse(stored, for: request)
            let now = T.requestTime.addingTimeInterval(5)
            #expect(cache.decision(for: await cache.lookup(request), now: now).action == .useStored)

            #expect(try await cache.markStale(tag: "tasks") == 1)
            let marked = try #require(await cache.cachedResponse(for: request))
            #expect(marked.isMarkedStale && marked.body == Array("seven".utf8))
            let decision = cache.decision(for: await cache.lookup(request), now: now)
            #expect(decision.action == .revalidate)
            #expect(decision.request?.headerFields[.ifNoneMatch] == "\"7\"")
            #expect(decision.mayServeStaleOnError)

            let freshened = try await cache.freshen(
                with: HTTPResponse(status: .notModified, headerFields: [.eTag: "\"7\""]),
                for: await cache.lookup(request),
                requestTime: now,
                responseTime: now
            )
            #expect(freshened?.isMarkedStale == false)
            #expect(cache.decision(for: await cache.lookup(request), now: now).action == .useStored)
            #expect(try await cache.markStale(tag: "none") == 0)
        }
    }

    @Test func fetchedAtSurvivesA304AndTheNewFieldsRoundTripThroughDisk() async throws {
        var response = T.response("page one", [(.cacheControl, "max-age=0"), (.eTag, "\"p\"")])
        response.isComplete = false
        response.tags = ["b", "a"]
        let later = T.requestTime.addingTimeInterval(100)
        let freshened = CacheRules.freshened(
            response,
            with: HTTPResponse(status: .notModified),
            requestTime: later,
            responseTime: later
        )
        #expect(freshened.fetchedAt == response.fetchedAt && freshened.validatedAt == later)
        let decoded = try CachedResponseCodec.decode(
            metadata: CachedResponseCodec.encodeMetadata(freshened),
            body: freshened.body
        )
        #expect(decoded == freshened)
        #expect(!decoded.isComplete && decoded.tags == ["a", "b"] && decoded.fetchedAt == response.fetchedAt)
    }

    @Test func version1MetadataStillDecodes() throws {
        let response = T.response("old", [(.cacheControl, "max-age=60")], userInfo: ["k": .integer(1)])
        var metadata = CachedResponseCodec.encodeMetadata(response)
        // Version 1 ends after userInfo: drop fetched at (8), flags (1) and an empty tag list (4).
        metadata.removeLast(13)
        metadata[0] = 1
        let decoded = try CachedResponseCodec.decode(metadata: metadata, body: response.body)
        #expect(decoded == response)
        #expect(decoded.fetchedAt == decoded.responseTime && decoded.isComplete && decoded.tags.isEmpty)
    }

    /// Issue 38 (API): the cache's clock, set once, is the disk tier's too (its tombstones, wipes
    /// and snapshot are stamped by it), whatever the disk configuration held.
    @Test func theDiskTierFollowsTheCachesClock() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = T.configuration(directory)
            configuration.disk?.now = { Date(timeIntervalSince1970: 0) }
            let cache = try ResponseCache(configuration: configuration)
            #expect(cache.tiers.disk?.configuration.now() == T.requestTime.addingTimeInterval(1))
            try await cache.close()
        }
    }
}
