// SPDX-License-Identifier: Apache-2.0

import HTTPTypes

@testable import CacheProxyCore
@testable import HTTPCaching

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Range and conditional request fields over arbitrary values: a partial range lies inside the
/// body; entity-tag lists survive being written out and read again; a conditional request made
/// for stored responses asks with every stored tag; a request whose `If-None-Match` names the
/// current tag is answered not modified; an HTTP date written out reads back as the same date;
/// partial content (a `Content-Range` on the sixth line) holds exactly the bytes of its ranges
/// when combined, reads back from its stored form, and answers only with bytes it holds.
enum ConditionsTarget {
    static func run(_ data: UnsafeRawBufferPointer) {
        var input = FuzzInput(data)
        let length = Int(input.integer(UInt16.self))
        let lines = String(decoding: input.rest(), as: UTF8.self).split(
            separator: "\n",
            omittingEmptySubsequences: false
        ).map(String.init)
        func line(_ index: Int) -> String { index < lines.count ? lines[index] : "" }
        let (range, ifRange, etag, ifNoneMatch, date) = (line(0), line(1), line(2), line(3), line(4))
        checkPartialContent(contentRange: line(5), range: range, other: length)

        var requestFields = HTTPFields()
        requestFields[.range] = range
        if !ifRange.isEmpty { requestFields[.ifRange] = ifRange }
        if !ifNoneMatch.isEmpty { requestFields[.ifNoneMatch] = ifNoneMatch }
        if !date.isEmpty { requestFields[.ifModifiedSince] = date }
        var responseFields = HTTPFields()
        if !etag.isEmpty { responseFields[.eTag] = etag }
        if !date.isEmpty { responseFields[.lastModified] = date }
        let request = HTTPRequest(
            method: .get,
            scheme: "https",
            authority: "example.com",
            path: "/",
            headerFields: requestFields
        )
        let response = HTTPResponse(status: .ok, headerFields: responseFields)

        let rule = RangeRule.evaluate(request, response: response, length: length)
        if let bytes = rule.bytes {
            check(bytes.lowerBound >= 0 && bytes.upperBound < length, "range \(bytes) outside a body of \(length)")
        }

        let tags = CacheRules.entityTags(ifNoneMatch)
        for tag in tags {
            check(tag == "*" || (tag.hasSuffix("\"") && (tag.hasPrefix("\"") || tag.hasPrefix("W/\""))), "tag \(tag)")
        }
        check(CacheRules.entityTags(tags.joined(separator: ", ")) == tags, "entityTags(write(x)) == x")
        if let first = tags.first, let last = tags.last {
            check(CacheRules.weakMatch(first, last) == CacheRules.weakMatch(last, first), "weak match is symmetric")
        }

        let stored = CachedResponse(
            response: response,
            body: [],
            requestTime: Date(timeIntervalSince1970: 0),
            responseTime: Date(timeIntervalSince1970: 0)
        )
        let conditional = CacheRules().conditionalRequest(for: request, stored: [stored])
        let asked = conditional.headerFields[values: .ifNoneMatch].flatMap(CacheRules.entityTags)
        let storedTags = responseFields[values: .eTag].flatMap(CacheRules.entityTags)
        let requestTags = requestFields[values: .ifNoneMatch].flatMap(CacheRules.entityTags)
        if !(requestTags + storedTags).contains("*") {
            for tag in storedTags { check(asked.contains(tag), "the conditional request leaves out \(tag)") }
        }

        let notModified = CacheRules.isNotModified(request, response)
        if let current = responseFields[.eTag].flatMap({ CacheRules.entityTags($0).first }),
            requestTags.contains(where: { CacheRules.weakMatch($0, current) })
        {
            check(notModified, "If-None-Match names the current tag")
        }

        if let parsed = HTTPDate.parse(date, now: Date(timeIntervalSince1970: 1_790_000_000)) {
            check(parsed.timeIntervalSince1970.rounded(.down) == parsed.timeIntervalSince1970, "whole seconds")
            let written = HTTPDate.format(parsed)
            check(HTTPDate.parse(written) == parsed, "parse(format(d)) == d: \(written)")
        }
    }

    /// The partial-content properties, for a representation of at most 4 KiB whose byte `i` is
    /// `i * 31`: a part as `contentRange` says, combined with a second part derived from `other`.
    private static func checkPartialContent(contentRange: String, range: String, other: Int) {
        guard let (held, total) = PartialContent.parseContentRange(contentRange) else { return }
        check(held.lowerBound <= held.upperBound && held.upperBound < total, "Content-Range \(held) of \(total)")
        guard total <= 4096 else { return }
        let whole = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        func part(_ bytes: ClosedRange<Int>) -> PartialContent? {
            let response = HTTPResponse(
                status: .partialContent,
                headerFields: [.eTag: "\"f\"", .contentRange: "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(total)"]
            )
            let time = Date(timeIntervalSince1970: 0)
            let cached = CachedResponse(
                response: response,
                body: Array(whole[bytes]),
                requestTime: time,
                responseTime: time
            )
            return PartialContent(received: cached)
        }
        let start = other % total
        let second = start...min(total - 1, start + other / 7)
        guard let first = part(held), let next = part(second), let combined = first.combined(with: next) else {
            check(false, "two parts of one tag and length combine")
            return
        }
        check(combined.stored.body == combined.ranges.flatMap { Array(whole[$0]) }, "combined bytes are the ranges'")
        for (lhs, rhs) in zip(combined.ranges, combined.ranges.dropFirst()) {
            check(lhs.upperBound + 1 < rhs.lowerBound, "ranges sorted, disjoint, not adjacent")
        }
        check(PartialContent(stored: combined.stored)?.ranges == combined.ranges, "the stored form reads back")
        check(combined.isComplete == (combined.ranges == [0...(total - 1)]), "complete iff every byte is held")
        let request = HTTPRequest(
            method: .get,
            scheme: "https",
            authority: "example.com",
            path: "/",
            headerFields: [.range: range]
        )
        if let answer = combined.answer(to: request) {
            let served = answer.response.headerFields[.contentRange].flatMap(PartialContent.parseContentRange)
            guard let (bytes, length) = served else { return check(false, "an answer without its Content-Range") }
            check(length == total && answer.body == Array(whole[bytes]), "an answer is the bytes it names")
            check(combined.ranges.contains { $0.contains(bytes.lowerBound) && $0.contains(bytes.upperBound) }, "held")
        }
    }

    static func seeds() throws -> [[UInt8]] {
        [
            "bytes=0-99\n\"v1\"\n\"v1\"\nW/\"v1\", \"v2\"\nSun, 06 Nov 1994 08:49:37 GMT",
            "bytes=-5\nSunday, 06-Nov-94 08:49:37 GMT\nW/\"x\"\n*\nSunday, 06-Nov-94 08:49:37 GMT",
            "bytes=10-\n\n\"a\"\n\"b\",W/\"a\"\nSun Nov  6 08:49:37 1994",
            "bytes=5-1,7-9\nW/\"v1\"\n\"v1\"\n\"v1\"\n",
            // Found by this target: a year before 1000 was written with three digits.
            "bytes=10-\n\n\"a\"\n\"b\",W/\"a\"\nSun Nov  6 08:49:37 0994",
            // Partial content: a part of 26 bytes, combined with one derived from the length.
            "bytes=2-4\n\n\"f\"\n\n\nbytes 0-9/26",
        ].map { [0xE8, 0x03] + Array($0.utf8) }
    }
}
