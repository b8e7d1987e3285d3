// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

/// Issue 34 item 2 (RFC 9111 §3.3–3.4, RFC 9110 §14): partial content is stored, answers the
/// ranges it holds and nothing else, combines with later ranges of the same strong entity tag,
/// and becomes the whole response once it covers it.
@Suite struct PartialContentTests {
    typealias T = ResponseCacheTests

    /// The 26-byte representation the ranges below are cut from.
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz".utf8)

    /// A 206 of `range` of ``alphabet`` (or of `bytes`), with `etag`.
    static func part(
        _ range: ClosedRange<Int>,
        etag: String? = "\"v1\"",
        of bytes: [UInt8] = alphabet,
        fields: [(HTTPField.Name, String)] = [(.cacheControl, "max-age=60")],
        policy: StoragePolicy = .allowed
    ) -> CachedResponse {
        var headers = HTTPFields()
        for (name, value) in fields { headers.append(HTTPField(name: name, value: value)) }
        if let etag { headers[.eTag] = etag }
        headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(bytes.count)"
        headers[.contentLength] = String(range.count)
        return CachedResponse(
            response: HTTPResponse(status: .partialContent, headerFields: headers),
            body: Array(bytes[range]),
            storagePolicy: policy,
            requestTime: T.requestTime,
            responseTime: T.requestTime
        )
    }

    /// ``part(_:etag:of:fields:policy:)`` as received partial content.
    static func received(
        _ range: ClosedRange<Int>,
        etag: String? = "\"v1\"",
        of bytes: [UInt8] = alphabet
    ) throws -> PartialContent {
        try #require(PartialContent(received: part(range, etag: etag, of: bytes)))
    }

    static func request(
        _ range: String? = nil,
        ifRange: String? = nil,
        method: HTTPRequest.Method = .get
    ) -> HTTPRequest {
        var fields: [(HTTPField.Name, String)] = []
        if let range { fields.append((.range, range)) }
        if let ifRange { fields.append((.ifRange, ifRange)) }
        return T.request("https://media.example/film", method: method, fields)
    }

    func text(_ cached: CachedResponse?) -> String? {
        cached.map { String(decoding: $0.body, as: UTF8.self) }
    }

    // MARK: - The rules, pure

    @Test(arguments: [
        ("bytes 0-9/26", 0...9, 26),
        (" bytes 25-25/26 ", 25...25, 26),
        ("bytes 3000000000-3000000009/5000000000", 3_000_000_000...3_000_000_009, 5_000_000_000),
    ])
    func contentRangesWithAKnownLengthParse(value: String, range: ClosedRange<Int>, length: Int) throws {
        let (parsed, complete) = try #require(PartialContent.parseContentRange(value))
        #expect(parsed == range && complete == length)
    }

    @Test(arguments: ["bytes 0-9/*", "bytes */26", "bytes 9-0/26", "bytes 0-26/26", "items 0-9/26", "bytes 0-9", ""])
    func otherContentRangesDoNot(value: String) {
        #expect(PartialContent.parseContentRange(value) == nil)
    }

    @Test func aReceivedPartNeedsOneContentRangeThatMatchesItsBody() {
        #expect(PartialContent(received: Self.part(0...9)) != nil)
        var short = Self.part(0...9)
        short.body.removeLast()
        #expect(PartialContent(received: short) == nil)
        var two = Self.part(0...9)
        two.response.headerFields.append(HTTPField(name: .contentRange, value: "bytes 10-19/26"))
        #expect(PartialContent(received: two) == nil)
        var ok = Self.part(0...9)
        ok.response.status = .ok
        #expect(PartialContent(received: ok) == nil)
    }

    @Test func storabilityOfA206() {
        let rules = CacheRules(mode: .shared)
        let get = Self.request("bytes=0-9")
        #expect(rules.reasonNotToStore(Self.part(0...9).response, for: get) == nil)
        #expect(rules.reasonNotToStore(Self.part(0...9, etag: nil).response, for: get) != nil)
        #expect(rules.reasonNotToStore(Self.part(0...9, etag: "W/\"v1\"").response, for: get) != nil)
        #expect(rules.reasonNotToStore(Self.part(0...9).response, for: Self.request(method: .head)) != nil)
        let varying = Self.part(0...9, fields: [(.cacheControl, "max-age=60"), (.vary, "Accept-Encoding")])
        #expect(rules.reasonNotToStore(varying.response, for: get) != nil)
        var unknownLength = Self.part(0...9)
        unknownLength.response.headerFields[.contentRange] = "bytes 0-9/*"
        #expect(rules.reasonNotToStore(unknownLength.response, for: get) != nil)
        // RFC 9110 §15.1: 206 is heuristically cacheable.
        let heuristic = Self.part(0...9, fields: [(.lastModified, "Sun, 06 Nov 1994 08:49:37 GMT")])
        #expect(rules.reasonNotToStore(heuristic.response, for: get) == nil)
        let noStore = Self.part(0...9, fields: [(.cacheControl, "no-store")])
        #expect(rules.reasonNotToStore(noStore.response, for: get) != nil)
    }

    @Test(arguments: [
        // (held, new, ranges after)
        ([0...9], 10...19, [0...19]),  // adjacent
        ([0...9], 5...14, [0...14]),  // overlapping
        ([0...9], 15...19, [0...9, 15...19]),  // a gap
        ([0...9, 15...19], 8...16, [0...19]),  // bridging
        ([5...9], 0...25, [0...25]),  // covering
        ([0...25], 3...4, [0...25]),  // inside
    ])
    func partsOfOneEntityTagCombine(held: [ClosedRange<Int>], new: ClosedRange<Int>, after: [ClosedRange<Int>]) throws {
        var partial = try Self.received(held[0])
        for range in held.dropFirst() {
            partial = try #require(partial.combined(with: try Self.received(range)))
        }
        let combined = try #require(partial.combined(with: try Self.received(new)))
        #expect(combined.ranges == after)
        // The body holds exactly those ranges' bytes, and reads back from its stored form.
        #expect(combined.stored.body == after.flatMap { Array(Self.alphabet[$0]) })
        #expect(PartialContent(stored: combined.stored)?.ranges == after)
        #expect(combined.isComplete == (after == [0...25]))
    }

    @Test func partsOfAnotherEntityTagOrLengthDoNotCombine() throws {
        let held = try Self.received(0...9)
        #expect(held.combined(with: try Self.received(10...19, etag: "\"v2\"")) == nil)
        #expect(held.combined(with: try Self.received(10...19, of: Self.alphabet + Self.alphabet)) == nil)
        let untagged = try Self.received(0...9, etag: nil)
        #expect(untagged.combined(with: try Self.received(10...19, etag: nil)) == nil)
    }

    @Test func aCombinationKeepsTheMoreRestrictivePolicyAndBothTags() throws {
        var first = Self.part(0...9, policy: .allowedInMemoryOnly)
        first.tags = ["a"]
        var second = Self.part(10...19)
        second.tags = ["b"]
        let held = try #require(PartialContent(received: first))
        let next = try #require(PartialContent(received: second))
        let combined = try #require(held.combined(with: next))
        #expect(combined.stored.storagePolicy == .allowedInMemoryOnly)
        #expect(combined.stored.tags == ["a", "b"])
    }

    @Test(arguments: [
        // (range asked, answer's bytes or nil)
        ("bytes=0-4", "abcde"),
        ("bytes=3-9", "defghij"),
        ("bytes=15-", nil),  // to the end, beyond what is held
        ("bytes=5-12", nil),  // runs past what is held
        ("bytes=-3", nil),  // the last 3: not held
        ("bytes=30-", nil),  // not satisfiable: the origin says 416
        ("bytes=0-1, 3-4", nil),  // several ranges
    ])
    func aPartialAnswersOnlyARangeItHolds(range: String, expected: String?) throws {
        let partial = try #require(PartialContent(received: Self.part(0...9)))
        let answer = partial.answer(to: Self.request(range))
        #expect(text(answer) == expected)
        if let answer, let expected {
            #expect(answer.response.status == .partialContent)
            #expect(answer.response.headerFields[.contentLength] == String(expected.utf8.count))
            #expect(answer.response.headerFields[values: .contentRange].count == 1)
        }
    }

    @Test func aPartialNeverAnswersTheWholeAHeadOrAnotherRepresentation() throws {
        let partial = try #require(PartialContent(received: Self.part(0...25)))
        #expect(partial.answer(to: Self.request()) == nil)
        #expect(partial.answer(to: Self.request("bytes=0-4", method: .head)) == nil)
        #expect(text(partial.answer(to: Self.request("bytes=0-4", ifRange: "\"v1\""))) == "abcde")
        #expect(partial.answer(to: Self.request("bytes=0-4", ifRange: "\"v2\"")) == nil)
        let later = try #require(PartialContent(received: Self.part(20...25)))
        let answer = try #require(later.answer(to: Self.request("bytes=-3")))
        #expect(text(answer) == "xyz")
        #expect(answer.response.headerFields[.contentRange] == "bytes 23-25/26")
    }

    @Test func aCompletedPartialIsTheWhole200() throws {
        let whole = try #require(PartialContent(received: Self.part(0...25))).complete()
        #expect(whole.response.status == .ok)
        #expect(whole.response.headerFields[.contentRange] == nil)
        #expect(whole.response.headerFields[.contentLength] == "26")
        #expect(whole.body == Self.alphabet)
    }
}
