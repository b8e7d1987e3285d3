// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

/// `Vary` (RFC 9111 §4.1): one variant per selecting field values, normalized as the rule says.
extension ResponseCacheTests {
    /// Linux URLCache defect: it never stored responses with Vary. RFC 9111 §4.1.
    @Test func varyKeepsOneVariantPerSelectingFieldValues() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(configuration: Self.configuration(directory))
            let url = "https://h.example/greeting"
            for (language, text) in [("en", "hello"), ("fr", "bonjour")] {
                try await cache.storeCachedResponse(
                    Self.response(text, [(.vary, "Accept-Language")]),
                    for: Self.request(url, [(.acceptLanguage, language)])
                )
            }
            try await cache.storeCachedResponse(
                Self.response("no language", [(.vary, "accept-language")]),
                for: Self.request(url)
            )
            #expect(body(await cache.cachedResponse(for: Self.request(url, [(.acceptLanguage, "en")]))) == "hello")
            #expect(body(await cache.cachedResponse(for: Self.request(url, [(.acceptLanguage, "fr")]))) == "bonjour")
            #expect(body(await cache.cachedResponse(for: Self.request(url))) == "no language")
            #expect(await cache.cachedResponse(for: Self.request(url, [(.acceptLanguage, "de")])) == nil)
            // The variants survive a cold memory tier.
            cache.tiers.memory.removeAll()
            #expect(body(await cache.cachedResponse(for: Self.request(url, [(.acceptLanguage, "fr")]))) == "bonjour")
            // Removing the URL removes every variant.
            try await cache.removeCachedResponse(for: Self.request(url))
            #expect(await cache.cachedResponse(for: Self.request(url, [(.acceptLanguage, "en")])) == nil)
            #expect(await cache.tiers.disk?.usage.entryCount == 0)
        }
    }

    /// A variant stored through a lookup made before another variant of the URL was stored (a
    /// request that waited on that one's exchange) keeps the other in the URL's index; so do
    /// variants stored at once.
    @Test func aVariantStoredThroughAnOlderLookupKeepsTheVariantsStoredSince() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try ResponseCache(configuration: Self.configuration(directory))
            let url = "https://h.example/greeting"
            let french = Self.request(url, [(.acceptLanguage, "fr")])
            let frenchLookup = await cache.lookup(french)
            #expect(frenchLookup.stored == nil)
            try await cache.storeCachedResponse(
                Self.response("hello", [(.vary, "Accept-Language")]),
                for: Self.request(url, [(.acceptLanguage, "en")])
            )
            try await cache.storeCachedResponse(
                Self.response("bonjour", [(.vary, "Accept-Language")]),
                for: frenchLookup
            )
            #expect(body(await cache.cachedResponse(for: Self.request(url, [(.acceptLanguage, "en")]))) == "hello")
            #expect(body(await cache.cachedResponse(for: french)) == "bonjour")

            // 16 of them: with the two above, within the 32 variants an index keeps.
            let languages = (0..<16).map { "x-\($0)" }
            let lookups = await withTaskGroup(of: ResponseLookup.self) { group in
                for language in languages {
                    group.addTask { await cache.lookup(Self.request(url, [(.acceptLanguage, language)])) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lookup in lookups {
                    let language = lookup.request.headerFields[.acceptLanguage] ?? ""
                    group.addTask {
                        try await cache.storeCachedResponse(
                            Self.response(language, [(.vary, "Accept-Language")]),
                            for: lookup
                        )
                    }
                }
                try await group.waitForAll()
            }
            for language in languages {
                #expect(
                    body(await cache.cachedResponse(for: Self.request(url, [(.acceptLanguage, language)]))) == language
                )
            }
            #expect(body(await cache.cachedResponse(for: french)) == "bonjour")
            #expect(body(await cache.cachedResponse(for: Self.request(url, [(.acceptLanguage, "en")]))) == "hello")
        }
    }

    /// RFC 9111 §4.1 and RFC 9110 §4.2.3: scheme and host compare case-insensitively, a default
    /// port equals none, the fragment is not sent; path and query are compared exactly.
    @Test(arguments: [
        ("GET", "HTTPS", "Example.COM:443", "/a/B?q=X#frag", "GET https://example.com/a/B?q=X"),
        ("GET", "http", "h.example:80", "", "GET http://h.example/"),
        ("HEAD", "http", "h.example:8080", "/", "HEAD http://h.example:8080/"),
        ("GET", "https", "h.example:80", "/", "GET https://h.example:80/"),
        ("GET", "http", "h.example:", "/x", "GET http://h.example/x"),
        ("GET", "https", "[::1]:443", "/é?ü=1", "GET https://[::1]/é?ü=1"),
        ("GET", "https", "h.example", "#only", "GET https://h.example/"),
        ("GET", "HTTPS", "API.Long-Host.EXAMPLE.org:443", "/P", "GET https://api.long-host.example.org/P"),
        ("GET", "http", "ÀB.example@[]^_`{Z", "/", "GET http://Àb.example@[]^_`{z/"),
        ("GET", "httpx", "h.example:80", "/", "GET httpx://h.example:80/"),
        ("GET", "HTTPs", "h.example:1443", "/", "GET https://h.example:1443/"),
        ("GET", "http", "h.example:180", "/", "GET http://h.example:180/"),
        ("GET", "ws", "h.example:80", "/", "GET ws://h.example:80/"),
    ])
    func urlKeyNormalization(method: String, scheme: String, authority: String, path: String, expected: String) {
        #expect(URLKey.make(method: method, scheme: scheme, authority: authority, path: path) == expected)
        // The bytes a lookup uses are the key's.
        let bytes = URLKey.withUTF8(method: method, scheme: scheme, authority: authority, path: path) { Array($0) }
        #expect(bytes == Array(expected.utf8))
    }

    /// The eight-bytes-at-once lowercasing agrees with the byte-at-a-time rule for every byte
    /// value in every position.
    @Test func wordLowercasingMatchesTheByteRule() {
        for value in 0...255 {
            for position in 0..<8 {
                var bytes: [UInt8] = [0x41, 0x5A, 0x40, 0x5B, 0x61, 0xC1, 0x7A, 0x20]
                bytes[position] = UInt8(value)
                let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                let lowered = withUnsafeBytes(of: URLKey.lowercased(word)) { Array($0) }
                let expected = bytes.map { $0 &- UInt8(ascii: "A") < 26 ? $0 | 0x20 : $0 }
                #expect(lowered == expected, "byte \(value) at \(position)")
            }
        }
    }

    /// RFC 9111 §4.1: whitespace and line splitting do not make a different variant; `Vary: *`
    /// never matches, so it is not stored.
    @Test func varyComparesNormalizedValuesAndStarNeverMatches() async throws {
        let cache = try ResponseCache(configuration: Self.configuration(nil))
        let url = "https://h.example/v"
        try await cache.storeCachedResponse(
            Self.response("gz", [(.vary, "Accept-Encoding")]),
            for: Self.request(url, [(.acceptEncoding, "gzip, br")])
        )
        let split = Self.request(url, [(.acceptEncoding, "gzip"), (.acceptEncoding, "br")])
        #expect(body(await cache.cachedResponse(for: split)) == "gz")
        #expect(body(await cache.cachedResponse(for: Self.request(url, [(.acceptEncoding, "gzip,br")]))) == "gz")
        let star = try await cache.storeCachedResponse(Self.response("any", [(.vary, "*")]), for: Self.request(url))
        #expect(!star)
    }

    /// A response that drops Vary replaces all the variants.
    @Test func aPlainResponseReplacesVariants() async throws {
        let cache = try ResponseCache(configuration: Self.configuration(nil))
        let url = "https://h.example/r"
        try await cache.storeCachedResponse(
            Self.response("en", [(.vary, "Accept-Language")]),
            for: Self.request(url, [(.acceptLanguage, "en")])
        )
        try await cache.storeCachedResponse(Self.response("plain"), for: Self.request(url))
        #expect(body(await cache.cachedResponse(for: Self.request(url, [(.acceptLanguage, "en")]))) == "plain")
        #expect(cache.tiers.memory.usage.entryCount == 1)
    }
}

/// Issue 34 item 5: `Accept-Language` selects among stored variants by weight, as the origin
/// would (RFC 9110 §12.5.4, RFC 4647 basic filtering), not only when the sets are equal.
extension ResponseCacheTests {
    @Test(arguments: [
        // (request Accept-Language, the stored variant answers)
        ("en", true),  // the same set: the ordinary match
        ("en, fr;q=0.5", true),
        ("fr;q=0.4, EN", true),
        ("en;q=0.8, de;q=0.8, fr;q=0.1", true),  // a tie at the top: either is the origin's choice
        ("*", true),
        ("fr, en;q=0.9", false),  // the origin would answer in French
        ("de", false),
        ("en-us, en;q=0.9", false),  // the origin may have en-US
        ("en, fr, en-gb;q=0", false),  // excluded by a more specific range
        ("en;q=2, fr;q=0.5", false),  // not a qvalue: the member is dropped, French leads
        ("", false),
    ])
    func acceptLanguageSelectsTheVariantTheOriginWouldChoose(acceptLanguage: String, answers: Bool) async throws {
        let cache = try ResponseCache(configuration: .init())
        let url = "https://h.example/greeting"
        try await cache.storeCachedResponse(
            Self.response("hello", [(.vary, "Accept-Language, Accept-Encoding"), (.contentLanguage, "en-GB")]),
            for: Self.request(url, [(.acceptLanguage, "en"), (.acceptEncoding, "gzip")])
        )
        var fields: [(HTTPField.Name, String)] = [(.acceptEncoding, "gzip")]
        if !acceptLanguage.isEmpty { fields.append((.acceptLanguage, acceptLanguage)) }
        let found = await cache.cachedResponse(for: Self.request(url, fields))
        #expect((body(found) == "hello") == answers)
        // Another varying field that differs is never negotiated away.
        let otherEncoding = await cache.cachedResponse(
            for: Self.request(url, [(.acceptLanguage, acceptLanguage), (.acceptEncoding, "br")])
        )
        #expect(otherEncoding == nil)
    }

    @Test(arguments: [
        ("en", ["en"], true), ("en-gb", ["en"], true), ("en", ["en-gb"], false),
        ("en", ["EN-gb;q=1, en;q=0.999"], false),
        ("en, fr", ["en"], false),  // a response in two languages is no one's first choice
        ("en", ["en;q=0.001"], true), ("en", ["en;q=0"], false), ("en", ["fr", "en"], true),  // lines join
        ("en", ["en;q=1.0001"], false), ("en", ["en;q=.5"], false), ("zh-hant", ["zh-Hant-TW, zh-Hant;q=0.9"], false),
    ])
    func languagePreferenceReadsWeights(contentLanguage: String, acceptLanguage: [String], firstChoice: Bool) {
        #expect(LanguagePreference.isFirstChoice(contentLanguage, for: acceptLanguage) == firstChoice)
    }
}
