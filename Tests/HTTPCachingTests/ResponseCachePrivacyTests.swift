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
        let cache = try ResponseCache(configuration: T.configuration(nil))
        let names = ["authorization", "cookie"]
        let request = T.request("https://h.example/a", [(.authorization, "Bearer abc.def"), (.cookie, "x=1")])
        let key = cache.variantKey(primaryKey: "GET https://h.example/a", names: names, request: request)
        #expect(!key.contains("abc.def") && !key.contains("x=1"))
        #expect(key.hasPrefix("GET https://h.example/a\u{1F}authorization,cookie\u{1F}"))
        // Stable (it is written to disk), and different for different values.
        #expect(key == cache.variantKey(primaryKey: "GET https://h.example/a", names: names, request: request))
        let other = T.request("https://h.example/a", [(.authorization, "Bearer abc.deg"), (.cookie, "x=1")])
        #expect(key != cache.variantKey(primaryKey: "GET https://h.example/a", names: names, request: other))
    }

    /// Issue 38, defect 2: a credential a response varies on (`Vary: Authorization`, `Cookie`) is
    /// stored only as a keyed digest — with `.stripCredentials`, and with a hook that empties the
    /// varying fields — yet selects its variant as before, from memory and from disk.
    @Test(arguments: [HTTPField.Name.authorization, .cookie, .proxyAuthorization])
    func aCredentialNamedByVaryIsStoredOnlyAsAKeyedDigest(_ field: HTTPField.Name) async throws {
        try await withTemporaryDirectory { directory in
            let emptying = WillCache { response, _ in
                var response = response
                response.varyingRequestFields = [:]
                return response
            }
            let hook = WillCache.stripCredentials.then(emptying)
            let cache = try ResponseCache(configuration: T.configuration(directory, willCache: hook))
            let token = String(repeating: "9f3a", count: 16)  // 64 hexadecimal digits
            let mine = T.request("https://h.example/feed", [(field, "Bearer \(token)")])
            let theirs = T.request("https://h.example/feed", [(field, "Bearer \(token.uppercased())")])
            let vary: [(HTTPField.Name, String)] = [(.cacheControl, "public, max-age=600"), (.vary, field.rawName)]
            #expect(try await cache.storeCachedResponse(T.response("mine", vary), for: mine))
            #expect(try await cache.storeCachedResponse(T.response("theirs", vary), for: theirs))

            let stored = try #require(await cache.cachedResponse(for: mine))
            let kept = try #require(stored.varyingRequestFields[field])
            #expect(kept.hasPrefix(VaryRule.digestPrefix) && !kept.contains(token))
            #expect(T().body(stored) == "mine")
            #expect(T().body(await cache.cachedResponse(for: theirs)) == "theirs")
            #expect(await cache.cachedResponse(for: T.request("https://h.example/feed")) == nil)

            // From disk after a reopen: the directory's secret outlives the process's memory.
            try await cache.close()
            #expect(!diskText(directory).lowercased().contains(token))
            try await cache.reopen()
            #expect(T().body(await cache.cachedResponse(for: mine)) == "mine")
            #expect(T().body(await cache.cachedResponse(for: theirs)) == "theirs")
            try await cache.close()
        }
    }

    /// A variant freshened by a 304 keeps its digest as it is (never a digest of the digest), and
    /// still answers its own request.
    @Test func aFreshenedCredentialVariantStillMatches() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(configuration: T.configuration(directory))
            let request = T.request("https://h.example/me", [(.authorization, "Bearer s3cr3t-token-1")])
            let vary: [(HTTPField.Name, String)] = [
                (.cacheControl, "public, max-age=0"), (.vary, "Authorization"), (.eTag, "\"v1\""),
            ]
            #expect(try await cache.storeCachedResponse(T.response("me", vary), for: request))
            let before = try #require(await cache.cachedResponse(for: request)).varyingRequestFields
            let later = T.requestTime.addingTimeInterval(30)
            let answer = try await cache.freshen(
                with: HTTPResponse(status: .notModified, headerFields: [.eTag: "\"v1\"", .cacheControl: "max-age=60"]),
                for: await cache.lookup(request),
                requestTime: later,
                responseTime: later
            )
            #expect(answer != nil)
            let after = try #require(await cache.cachedResponse(for: request))
            #expect(after.varyingRequestFields == before)
            #expect(after.response.headerFields[.cacheControl] == "max-age=60")
            try await cache.close()
            #expect(!diskText(directory).contains("s3cr3t-token-1"))
        }
    }

    /// A record stored before credentials were digested (the value itself) still decodes: its
    /// variant is a miss, once, and the next store replaces it.
    @Test func aRecordWithAClearCredentialIsAMissOnce() async throws {
        let cache = try ResponseCache(configuration: T.configuration(nil))
        let request = T.request("https://h.example/old", [(.authorization, "Bearer old-token")])
        let key = try #require(ResponseCache.primaryKey(for: request))
        let response = T.response("old", [(.cacheControl, "public, max-age=600"), (.vary, "Authorization")])
        _ = try await cache.put(
            response,
            for: request,
            key: key,
            replacing: nil,
            parsed: nil,
            storedVarying: [.authorization: "Bearer old-token"]
        )
        #expect(await cache.cachedResponse(for: request) == nil)
        #expect(
            try await cache.storeCachedResponse(
                T.response("new", response.response.headerFields.map { ($0.name, $0.value) }),
                for: request
            )
        )
        #expect(T().body(await cache.cachedResponse(for: request)) == "new")
    }

    /// Caches encrypted with the same key digest alike (so instances that share a key, and the
    /// shared tier they write, match each other's variants); other keys, and plain directories,
    /// each have their own secret.
    @Test func theDigestSecretFollowsTheEncryptionKey() async throws {
        try await withTemporaryDirectory { one in
            try await withTemporaryDirectory { two in
                try await withTemporaryDirectory { three in
                    let key = EncryptionKey.random()
                    let a = try ResponseCache(configuration: T.configuration(one, encryption: DiskEncryption(key: key)))
                    let b = try ResponseCache(configuration: T.configuration(two, encryption: DiskEncryption(key: key)))
                    let c = try ResponseCache(configuration: T.configuration(three))
                    let digest = { (cache: ResponseCache) in cache.tiers.keyedDigest.hex(of: "Bearer x") }
                    #expect(digest(a) == digest(b))
                    #expect(digest(a) != digest(c))
                    #expect(digest(c).count == 32)
                    for cache in [a, b, c] { try await cache.close() }
                }
            }
        }
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
