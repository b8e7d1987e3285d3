// SPDX-License-Identifier: Apache-2.0

import HTTPTypes
import Testing

@testable import HTTPCaching

/// RFC 9111 §4.1 with `Accept-Encoding` and `Accept-Language` compared by what they accept.
@Suite struct VaryRuleTests {
    static func fields(_ name: HTTPField.Name, _ values: [String]) -> HTTPFields {
        var fields = HTTPFields()
        for value in values { fields.append(HTTPField(name: name, value: value)) }
        return fields
    }

    @Test(arguments: [
        (["gzip, br"], ["br, gzip"], true),
        (["gzip, br"], ["GZIP,BR"], true),
        (["gzip, br"], ["gzip;q=1.0, br;q=0.5"], true),
        (["gzip, br"], ["gzip", "br"], true),  // two field lines
        (["gzip, br"], ["gzip, br, identity;q=0"], true),  // refused members do not count
        (["gzip, br"], ["gzip, br, deflate"], false),
        (["gzip"], ["br"], false),
        (["gzip"], ["gzip;q=0"], false),
    ])
    func acceptEncodingMatchesByWhatItAccepts(stored: [String], incoming: [String], same: Bool) {
        let a = VaryRule.normalizedValue(of: .acceptEncoding, in: Self.fields(.acceptEncoding, stored))
        let b = VaryRule.normalizedValue(of: .acceptEncoding, in: Self.fields(.acceptEncoding, incoming))
        #expect((a == b) == same)
    }

    @Test func acceptLanguageIsNormalizedAndOtherFieldsAreNot() {
        let a = VaryRule.normalizedValue(of: .acceptLanguage, in: Self.fields(.acceptLanguage, ["en-US, fr;q=0.8"]))
        let b = VaryRule.normalizedValue(of: .acceptLanguage, in: Self.fields(.acceptLanguage, ["FR; q=0.5,en-us"]))
        #expect(a == b && a == "en-us,fr")
        let accept = HTTPField.Name("X-Mode")!
        #expect(
            VaryRule.normalizedValue(of: accept, in: Self.fields(accept, ["a, b"]))
                != VaryRule.normalizedValue(of: accept, in: Self.fields(accept, ["b, a"]))
        )
    }

    /// Through a ResponseCache: one stored variant answers every spelling.
    @Test func oneVariantAnswersEverySpelling() async throws {
        let cache = try ResponseCache(configuration: .init(mode: .shared))
        let url = "https://example.com/v"
        let stored = ResponseCacheTests.request(url, [(.acceptEncoding, "gzip, br")])
        let response = ResponseCacheTests.response(
            "z",
            [(.cacheControl, "max-age=600"), (.vary, "Accept-Encoding")]
        )
        #expect(try await cache.storeCachedResponse(response, for: stored))
        for spelling in ["br, gzip", "GZIP,BR", "gzip;q=1, br;q=0.9, identity;q=0"] {
            let request = ResponseCacheTests.request(url, [(.acceptEncoding, spelling)])
            #expect(await cache.cachedResponse(for: request) != nil, "\(spelling)")
        }
        #expect(await cache.cachedResponse(for: ResponseCacheTests.request(url, [(.acceptEncoding, "gzip")])) == nil)
    }

    /// The plain-token reading of an `Accept-*` list gives what the general one gives, and
    /// leaves lists with parameters or non-ASCII bytes to it.
    @Test(arguments: [
        "gzip, br", "br, gzip", "GZIP,BR", "gzip,,br", " gzip ,\tbr\t", "gzip, gzip", "", " , ", "x",
        "en-US,fr", "ÉTÉ, gzip", "gzip;q=0, br",
    ])
    func plainTokensReadAsTheGeneralRule(list: String) {
        let general = VaryRule.acceptedSet(list.split(separator: ",", omittingEmptySubsequences: false))
        let plain = VaryRule.acceptedSetOfPlainTokens(list)
        if list.contains(";") || !list.utf8.allSatisfy({ $0 < 0x80 }) {
            #expect(plain == nil)
        } else {
            #expect(plain == general)
        }
    }

    /// A variant key splits into its URL part and digest only in the form the cache makes.
    @Test func variantKeysSplitAtTheirDigest() {
        let names = ["accept-encoding", "x-mode"]
        let values: [String?] = ["br,gzip", nil]
        let key = ResponseCache.variantKey(primaryKey: "GET https://example.com/a", names: names, values: values)
        let split = VariantIndex.split(key, names: names)
        #expect(split?.primaryKeyCount == "GET https://example.com/a".utf8.count)
        #expect(split?.digest == ResponseCache.variantDigest(names: names, values: values))
        #expect(VariantIndex.split(key, names: ["accept-encoding"]) == nil)
        #expect(VariantIndex.split(key.uppercased(), names: names) == nil)
        #expect(VariantIndex.split(String(key.dropLast()), names: names) == nil)
    }

    /// The values a stored record and the memory lookup normalize once: one per name, in order,
    /// nil for a name absent or not a field name.
    @Test func normalizedValuesFollowTheNames() {
        var fields = Self.fields(.acceptEncoding, ["GZIP, br"])
        fields.append(HTTPField(name: HTTPField.Name("X-Mode")!, value: "a , b"))
        let values = VaryRule.normalizedValues(of: ["accept-encoding", "x-missing", "x mode", "x-mode"], in: fields)
        #expect(values == ["br,gzip", nil, nil, "a,b"])
        #expect(VaryRule.areFieldNames(["accept-encoding", "x-mode"]) && !VaryRule.areFieldNames(["x mode"]))
    }

    /// Through a ResponseCache's memory lookup (the proxy's event-loop hit): each variant answers
    /// its own spellings, and a response that varies on a name that is not a field name answers
    /// nothing.
    @Test func theMemoryLookupMatchesVariantsByTheirNormalizedValues() async throws {
        let cache = try ResponseCache(configuration: .init(mode: .shared))
        let url = "https://example.com/m"
        for (encoding, body) in [("gzip, br", "zb"), ("gzip", "z")] {
            let response = ResponseCacheTests.response(
                body,
                [(.cacheControl, "max-age=600"), (.vary, "Accept-Encoding")]
            )
            #expect(
                try await cache.storeCachedResponse(
                    response,
                    for: ResponseCacheTests.request(url, [(.acceptEncoding, encoding)])
                )
            )
        }
        func body(_ encoding: String) -> String? {
            cache.memoryLookup(ResponseCacheTests.request(url, [(.acceptEncoding, encoding)]))?.stored
                .map { String(decoding: $0.body, as: UTF8.self) }
        }
        #expect(body("BR,gzip") == "zb" && body("gzip;q=1") == "z" && body("br") == nil)

        let odd = "https://example.com/odd"
        let response = ResponseCacheTests.response("o", [(.cacheControl, "max-age=600"), (.vary, "X Mode")])
        #expect(try await cache.storeCachedResponse(response, for: ResponseCacheTests.request(odd)))
        #expect(cache.memoryLookup(ResponseCacheTests.request(odd)) == nil)
        #expect(await cache.cachedResponse(for: ResponseCacheTests.request(odd)) == nil)
    }
}
