// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

@Suite struct ResponseCacheTests {
    static let requestTime = Date(timeIntervalSince1970: 1_700_000_000)

    static func request(
        _ url: String,
        method: HTTPRequest.Method = .get,
        _ fields: [(HTTPField.Name, String)] = []
    ) -> HTTPRequest {
        let parts = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        let scheme = String(parts[0].dropLast())
        var request = HTTPRequest(
            method: method,
            scheme: scheme,
            authority: String(parts[2]),
            path: parts.count > 3 ? "/" + parts[3] : "/"
        )
        for (name, value) in fields { request.headerFields.append(HTTPField(name: name, value: value)) }
        return request
    }

    static func response(
        _ body: String,
        _ fields: [(HTTPField.Name, String)] = [],
        userInfo: [String: UserInfoValue] = [:],
        policy: StoragePolicy = .allowed
    ) -> CachedResponse {
        var headers = HTTPFields()
        for (name, value) in fields { headers.append(HTTPField(name: name, value: value)) }
        return CachedResponse(
            response: HTTPResponse(status: .ok, headerFields: headers),
            body: Array(body.utf8),
            userInfo: userInfo,
            storagePolicy: policy,
            requestTime: requestTime,
            responseTime: requestTime.addingTimeInterval(0.25)
        )
    }

    static func configuration(
        _ directory: TemporaryDirectory?,
        memoryCapacity: Int = 4 << 20,
        diskCapacity: Int = 64 << 20,
        willCache: WillCache = .identity,
        encryption: DiskEncryption? = nil
    ) -> ResponseCache.Configuration {
        ResponseCache.Configuration(
            memory: .init(capacityBytes: memoryCapacity),
            disk: directory.map {
                DiskTier.Configuration(directory: $0.path, capacityBytes: diskCapacity, encryption: encryption)
            },
            willCache: willCache,
            now: { requestTime.addingTimeInterval(1) }
        )
    }

    func body(_ cached: CachedResponse?) -> String? {
        cached.map { String(decoding: $0.body, as: UTF8.self) }
    }

    @Test func storesAndReturnsResponsesWithTheirHeadersAndUserInfo() async throws {
        let cache = try ResponseCache(configuration: Self.configuration(nil))
        let request = Self.request("https://api.example.com/v1/items")
        let stored = Self.response("[1,2]", [(.eTag, "\"v1\"")], userInfo: ["page": 1])
        #expect(try await cache.storeCachedResponse(stored, for: request))
        let found = try #require(await cache.cachedResponse(for: request))
        #expect(found == stored)
        #expect(cache.currentMemoryUsage > 0)
        #expect(await cache.cachedResponse(for: Self.request("https://api.example.com/v1/other")) == nil)
    }

    /// Linux URLCache defect: it ignored the query and the scheme (`?page=1` answered `?page=2`).
    @Test(arguments: [
        ("https://h.example/list?page=1", "https://h.example/list?page=2", false),
        ("https://h.example/list?page=1", "http://h.example/list?page=1", false),
        ("https://h.example/list?a=1&b=2", "https://h.example/list?b=2&a=1", false),
        ("https://h.example/list", "https://H.EXAMPLE/list", true),
        ("https://h.example/list", "https://h.example:443/list", true),
        ("http://h.example/list", "http://h.example:80/list", true),
        ("http://h.example/list", "http://h.example:8080/list", false),
        ("https://h.example/list", "https://h.example/LIST", false),
    ])
    func keyIsMethodAndFullURL(stored: String, asked: String, same: Bool) async throws {
        let cache = try ResponseCache(configuration: Self.configuration(nil))
        try await cache.storeCachedResponse(Self.response("stored"), for: Self.request(stored))
        #expect(body(await cache.cachedResponse(for: Self.request(asked))) == (same ? "stored" : nil))
        #expect(await cache.cachedResponse(for: Self.request(stored, method: .post)) == nil)
    }

    @Test func headIsAnsweredFromAStoredGet() async throws {
        let cache = try ResponseCache(configuration: Self.configuration(nil))
        try await cache.storeCachedResponse(Self.response("body"), for: Self.request("https://h.example/x"))
        #expect(body(await cache.cachedResponse(for: Self.request("https://h.example/x", method: .head))) == "body")
    }

    @Test func willCacheHooksStripDowngradeStampAndVeto() async throws {
        try await withTemporaryDirectory { directory in
            let stamp = Date(timeIntervalSince1970: 1_800_000_000)
            let cache = try ResponseCache(
                configuration: Self.configuration(
                    directory,
                    willCache: WillCache.stripCredentials.then(.stampStoredDate(key: "stored", now: { stamp }))
                )
            )
            let request = Self.request("https://h.example/me", [(.authorization, "Bearer secret")])
            let response = Self.response("mine", [(.setCookie, "session=1"), (.contentType, "text/plain")])
            try await cache.storeCachedResponse(response, for: request)
            let found = try #require(await cache.cachedResponse(for: request))
            #expect(found.response.headerFields[.setCookie] == nil)
            #expect(found.response.headerFields[.contentType] == "text/plain")
            #expect(found.userInfo["stored"] == .date(stamp))

            // Per call: downgrade to memory only, then veto.
            let memoryOnly = WillCache.memoryOnly { _, request in request.path == "/private" }
            try await cache.storeCachedResponse(
                Self.response("p"),
                for: Self.request("https://h.example/private"),
                willCache: memoryOnly
            )
            #expect(await cache.tiers.disk?.usage.entryCount == 1)
            #expect(body(await cache.cachedResponse(for: Self.request("https://h.example/private"))) == "p")
            let vetoed = try await cache.storeCachedResponse(
                Self.response("v"),
                for: Self.request("https://h.example/veto"),
                willCache: .never { response, _ in response.body.count < 10 }
            )
            #expect(!vetoed)
            #expect(await cache.cachedResponse(for: Self.request("https://h.example/veto")) == nil)
        }
    }

    @Test func notAllowedStoresNothing() async throws {
        let cache = try ResponseCache(configuration: Self.configuration(nil))
        let stored = try await cache.storeCachedResponse(
            Self.response("x", policy: .notAllowed),
            for: Self.request("https://h.example/n")
        )
        #expect(!stored)
        #expect(cache.currentMemoryUsage == 0)
    }

    /// Headers and userInfo round-trip through a reopened disk cache, plain or encrypted.
    @Test(arguments: [false, true])
    func responsesSurviveAReopen(encrypted: Bool) async throws {
        let encryption =
            encrypted ? DiskEncryption(key: try EncryptionKey(bytes: [UInt8](repeating: 3, count: 32))) : nil
        try await withTemporaryDirectory { directory in
            let request = Self.request("https://h.example/items?page=3", [(.acceptLanguage, "en")])
            let stored = Self.response(
                "{\"items\":[]}",
                [(.vary, "Accept-Language"), (.eTag, "W/\"7\""), (.cacheControl, "max-age=60")],
                userInfo: ["tags": ["a", "b"], "weight": 2.5]
            )
            do {
                let cache = try ResponseCache(configuration: Self.configuration(directory, encryption: encryption))
                try await cache.storeCachedResponse(stored, for: request)
                try await cache.tiers.disk?.close()
            }
            if encrypted {
                let error = #expect(throws: HTTPCachingError.self) {
                    try ResponseCache(configuration: Self.configuration(directory))
                }
                #expect(error?.code == .encryptionMismatch)
                #expect((error?.underlying as? CacheError)?.code == .encryptionMismatch)
                let wrong = #expect(throws: HTTPCachingError.self) {
                    try ResponseCache(
                        configuration: Self.configuration(directory, encryption: DiskEncryption(key: .random()))
                    )
                }
                #expect(wrong?.code == .wrongKey)
            }
            let cache = try ResponseCache(configuration: Self.configuration(directory, encryption: encryption))
            var expected = stored
            expected.varyingRequestFields = [.acceptLanguage: "en"]
            #expect(await cache.cachedResponse(for: request) == expected)
        }
    }

    /// Linux URLCache defect: it did not apply its 5% rule. A body over 5% of the memory capacity
    /// stays out of memory; over 5% of the disk capacity, out of the disk too.
    @Test func fivePercentAdmissionRulePerTier() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(
                configuration: Self.configuration(directory, memoryCapacity: 1 << 20, diskCapacity: 8 << 20)
            )
            let medium = String(repeating: "m", count: 100_000)
            try await cache.storeCachedResponse(Self.response(medium), for: Self.request("https://h.example/m"))
            #expect(cache.currentMemoryUsage == 0)
            #expect(body(await cache.cachedResponse(for: Self.request("https://h.example/m"))) == medium)
            // Incompressible, so that its stored size is over 5% of the disk too.
            var large = Self.response("")
            large.body = SampleData.random(count: 600_000)
            try await cache.storeCachedResponse(large, for: Self.request("https://h.example/l"))
            #expect(await cache.cachedResponse(for: Self.request("https://h.example/l")) == nil)
        }
    }

    @Test func removeAllAndRemoveSince() async throws {
        let clock = ManualDate(Self.requestTime)
        var configuration = Self.configuration(nil)
        configuration.now = { clock.now }
        let cache = try ResponseCache(configuration: configuration)
        try await cache.storeCachedResponse(Self.response("old"), for: Self.request("https://h.example/old"))
        clock.now = Self.requestTime.addingTimeInterval(100)
        try await cache.storeCachedResponse(Self.response("new"), for: Self.request("https://h.example/new"))
        try await cache.removeCachedResponses(since: Self.requestTime.addingTimeInterval(50))
        #expect(body(await cache.cachedResponse(for: Self.request("https://h.example/old"))) == "old")
        #expect(await cache.cachedResponse(for: Self.request("https://h.example/new")) == nil)
        try await cache.removeAllCachedResponses()
        #expect(await cache.cachedResponse(for: Self.request("https://h.example/old")) == nil)
    }

    /// A URL prefix removes every response under it, from memory and disk, with all variants and
    /// HEAD's; the prefix is normalized as keys are (host case, default port); nothing else goes.
    @Test func aURLPrefixRemovesEveryResponseUnderIt() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(configuration: Self.configuration(directory))
            let vary: [(HTTPField.Name, String)] = [(.vary, "Accept-Language")]
            for language in ["en", "fr"] {
                try await cache.storeCachedResponse(
                    Self.response(language, vary),
                    for: Self.request("https://h.example/static/doc", [(.acceptLanguage, language)])
                )
            }
            let under = ["https://h.example/static/a?v=1", "https://h.example/static-old/b"]
            let kept = ["https://h.example/stat", "https://h.example/api/static/c", "https://other.example/static/d"]
            for url in under + kept { try await cache.storeCachedResponse(Self.response(url), for: Self.request(url)) }
            try await cache.storeCachedResponse(
                Self.response("head"),
                for: Self.request("https://h.example/static/h", method: .head)
            )

            let removed = try await cache.removeCachedResponses(
                withURLPrefix: Self.request("https://H.EXAMPLE:443/static")
            )

            #expect(removed == 4)  // doc (two variants), a, b, h
            for language in ["en", "fr"] {
                let request = Self.request("https://h.example/static/doc", [(.acceptLanguage, language)])
                #expect(await cache.cachedResponse(for: request) == nil)
            }
            for url in under { #expect(await cache.cachedResponse(for: Self.request(url)) == nil) }
            #expect(await cache.cachedResponse(for: Self.request("https://h.example/static/h", method: .head)) == nil)
            for url in kept { #expect(body(await cache.cachedResponse(for: Self.request(url))) == url) }
            // On disk too: a cache reopened on the directory finds none of them.
            try await cache.close()
            let reopened = try ResponseCache(configuration: Self.configuration(directory))
            for url in under { #expect(await reopened.cachedResponse(for: Self.request(url)) == nil) }
            #expect(body(await reopened.cachedResponse(for: Self.request(kept[0]))) == kept[0])
            // A prefix without scheme or authority is refused.
            let bare = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/static")
            let error = await #expect(throws: HTTPCachingError.self) {
                try await reopened.removeCachedResponses(withURLPrefix: bare)
            }
            #expect(error?.code == .invalidArgument)
        }
    }

    /// Metadata that no longer decodes is a miss and is dropped, never a crash or wrong bytes.
    @Test func undecodableRecordIsAMissAndIsDropped() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(configuration: Self.configuration(directory))
            let request = Self.request("https://h.example/bad")
            let key = try #require(ResponseCache.primaryKey(for: request))
            try await cache.tiers.set(
                CacheEntry(value: [1, 2], metadata: [1, 9, 9], storedAt: .now),
                for: key
            )
            cache.tiers.memory.removeAll()
            #expect(await cache.cachedResponse(for: request) == nil)
            #expect(await cache.tiers.disk?.entry(for: key) == nil)
        }
    }

    /// RFC 9111 §3: what must not be stored is refused, whatever the hooks say.
    @Test func refusesWhatMustNotBeStored() async throws {
        let cache = try ResponseCache(configuration: Self.configuration(nil))
        let noStore = try await cache.storeCachedResponse(
            Self.response("x", [(.cacheControl, "no-store")]),
            for: Self.request("https://h.example/s")
        )
        #expect(!noStore)
        let shared = try ResponseCache(configuration: .init(mode: .shared))
        let privateResponse = try await shared.storeCachedResponse(
            Self.response("x", [(.cacheControl, "private, max-age=60")]),
            for: Self.request("https://h.example/p")
        )
        #expect(!privateResponse)
    }

    /// Decide, revalidate, apply the 304, and the response is fresh again (RFC 9111 §4.3).
    @Test func revalidationRoundTrip() async throws {
        let cache = try ResponseCache(configuration: Self.configuration(nil))
        let request = Self.request("https://h.example/r")
        try await cache.storeCachedResponse(
            Self.response("v1", [(.cacheControl, "max-age=60"), (.eTag, "\"v1\"")]),
            for: request
        )
        let fresh = await cache.decision(for: request, now: Self.requestTime.addingTimeInterval(30))
        #expect(fresh.action == .useStored && fresh.isFresh)
        let stale = await cache.decision(for: request, now: Self.requestTime.addingTimeInterval(90))
        #expect(stale.action == .revalidate)
        #expect(stale.request?.headerFields[.ifNoneMatch] == "\"v1\"")
        let later = Self.requestTime.addingTimeInterval(90)
        let freshened = try await cache.freshen(
            with: HTTPResponse(status: .notModified, headerFields: [.eTag: "\"v1\"", .cacheControl: "max-age=120"]),
            for: await cache.lookup(request),
            requestTime: later,
            responseTime: later
        )
        #expect(freshened.map { String(decoding: $0.body, as: UTF8.self) } == "v1")
        let after = await cache.decision(for: request, now: later.addingTimeInterval(100))
        #expect(after.action == .useStored)
        #expect(after.stored?.response.headerFields[.cacheControl] == "max-age=120")
    }

    /// RFC 9111 §4.4: a successful POST invalidates its target and same-origin Location.
    @Test func unsafeMethodsInvalidate() async throws {
        let cache = try ResponseCache(configuration: Self.configuration(nil))
        for path in ["items", "items/7", "other"] {
            try await cache.storeCachedResponse(Self.response(path), for: Self.request("https://h.example/\(path)"))
        }
        let count = try await cache.invalidate(
            after: HTTPResponse(status: .created, headerFields: [.location: "/items/7"]),
            to: Self.request("https://h.example/items", method: .post)
        )
        #expect(count == 2)
        #expect(await cache.cachedResponse(for: Self.request("https://h.example/items")) == nil)
        #expect(await cache.cachedResponse(for: Self.request("https://h.example/items/7")) == nil)
        #expect(body(await cache.cachedResponse(for: Self.request("https://h.example/other"))) == "other")
    }

    @Test func negativeCapacityIsAClearError() {
        let error = #expect(throws: HTTPCachingError.self) {
            try ResponseCache(configuration: .init(memory: .init(capacityBytes: -1)))
        }
        #expect(error?.code == .invalidArgument)
    }
}

/// A settable clock for tests.
final class ManualDate: @unchecked Sendable {
    // Protected by `lock`.
    private var value: Date
    private let lock = NSLock()

    init(_ value: Date) { self.value = value }

    var now: Date {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
