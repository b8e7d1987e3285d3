// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

/// What the app asked to keep in (a stripped field, a memory-only response) stays in, through
/// every path that stores on a request's behalf.
@Suite struct ResponseCachePrivacyTests {
    typealias T = ResponseCacheTests

    /// Every byte of every file under the directory, as text.
    func diskText(_ directory: TemporaryDirectory) -> String {
        let files = FileManager.default.enumerator(atPath: directory.path)?.compactMap { $0 as? String } ?? []
        return files.compactMap { FileManager.default.contents(atPath: directory.appending($0)) }
            .map { String(decoding: $0, as: UTF8.self) }.joined()
    }

    /// Defect 1: the hook given with a request applies to a 304 that freshens its stored response,
    /// so that a `Set-Cookie` it stripped does not come back with the 304.
    @Test func aRequestsHookAppliesToThe304ThatFreshensIt() async throws {
        let cache = try ResponseCache(configuration: T.configuration(nil))
        let request = T.request("https://h.example/me")
        let strip = WillCache.stripHeaders([.setCookie])
        let first = T.response("profile", [(.cacheControl, "max-age=0"), (.eTag, "\"v1\""), (.setCookie, "sid=1")])
        #expect(try await cache.storeCachedResponse(first, for: await cache.lookup(request), willCache: strip))
        #expect(await cache.cachedResponse(for: request)?.response.headerFields[.setCookie] == nil)

        let notModified = HTTPResponse(
            status: .notModified,
            headerFields: [.eTag: "\"v1\"", .cacheControl: "max-age=60", .setCookie: "sid=2"]
        )
        let later = T.requestTime.addingTimeInterval(30)
        let answer = try await cache.freshen(
            with: notModified,
            for: await cache.lookup(request),
            requestTime: later,
            responseTime: later,
            willCache: strip
        )
        // The caller's answer is what the origin confirmed; what is stored is what the hook let in.
        #expect(answer?.response.headerFields[.setCookie] == "sid=2")
        let stored = try #require(await cache.cachedResponse(for: request))
        #expect(stored.response.headerFields[.setCookie] == nil)
        #expect(stored.response.headerFields[.cacheControl] == "max-age=60")
    }

    /// Defect 2: a memory-only response that varies on `Authorization` puts neither itself, nor
    /// its variant index, nor the token (in a key or anywhere) on disk.
    @Test func aMemoryOnlyVariantKeepsItsIndexAndItsTokenOffDisk() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(configuration: T.configuration(directory))
            let token = "Bearer tok-4f9c2e81d7"
            let request = T.request("https://h.example/account", [(.authorization, token)])
            let response = T.response(
                "balance",
                [(.cacheControl, "max-age=60"), (.vary, "Authorization")],
                policy: .allowedInMemoryOnly
            )
            #expect(try await cache.storeCachedResponse(response, for: request))
            #expect(T().body(await cache.cachedResponse(for: request)) == "balance")
            #expect(await cache.cachedResponse(for: T.request("https://h.example/account")) == nil)
            #expect(await cache.tiers.disk?.usage.entryCount == 0)
            try await cache.tiers.close()
            #expect(!diskText(directory).contains("tok-4f9c2e81d7"))
        }
    }

    /// The index is kept no further than its most restrictive variant: an allowed variant's index
    /// goes to disk until a memory-only variant joins it.
    @Test func theVariantIndexObeysItsMostRestrictiveVariant() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(configuration: T.configuration(directory))
            let vary: [(HTTPField.Name, String)] = [(.cacheControl, "max-age=60"), (.vary, "Cookie")]
            let guest = T.request("https://h.example/home", [(.cookie, "theme=dark")])
            try await cache.storeCachedResponse(T.response("guest", vary), for: guest)
            #expect(await cache.tiers.disk?.usage.entryCount == 2)  // the variant and the index

            let member = T.request("https://h.example/home", [(.cookie, "session=s3cr3t-77")])
            try await cache.storeCachedResponse(T.response("member", vary, policy: .allowedInMemoryOnly), for: member)
            #expect(await cache.tiers.disk?.usage.entryCount == 1)  // the guest variant only
            #expect(T().body(await cache.cachedResponse(for: member)) == "member")
            #expect(T().body(await cache.cachedResponse(for: guest)) == "guest")
            try await cache.tiers.close()
            #expect(!diskText(directory).contains("s3cr3t-77"))
        }
    }

    /// Variant keys carry a digest of the varying values, never the values.
    @Test func variantKeysCarryADigestNotTheValues() throws {
        let request = T.request("https://h.example/a", [(.authorization, "Bearer abc.def"), (.cookie, "x=1")])
        let key = ResponseCache.variantKey(
            primaryKey: "GET https://h.example/a",
            names: ["authorization", "cookie"],
            request: request
        )
        #expect(!key.contains("abc.def") && !key.contains("x=1"))
        #expect(key.hasPrefix("GET https://h.example/a\u{1F}authorization,cookie\u{1F}"))
        // Stable (it is written to disk), and different for different values.
        #expect(
            key
                == ResponseCache.variantKey(
                    primaryKey: "GET https://h.example/a",
                    names: ["authorization", "cookie"],
                    request: request
                )
        )
        let other = T.request("https://h.example/a", [(.authorization, "Bearer abc.deg"), (.cookie, "x=1")])
        #expect(
            key
                != ResponseCache.variantKey(
                    primaryKey: "GET https://h.example/a",
                    names: ["authorization", "cookie"],
                    request: other
                )
        )
    }

    /// A version 1 index (written before storage policies were kept per variant) still reads,
    /// every variant allowed.
    @Test func aVersion1VariantIndexStillReads() throws {
        var writer = BinaryWriter(capacity: 32)
        writer.write(UInt8(1))
        writer.write(UInt32(1))
        writer.write(UInt32(1))
        writer.write("accept")
        writer.write("GET x\u{1F}k")
        let index = try VariantIndex(decoding: writer.bytes)
        #expect(index.variants == [.init(fieldNames: ["accept"], key: "GET x\u{1F}k", storagePolicy: .allowed)])
        #expect(try VariantIndex(decoding: index.encoded()) == index)
    }
}
