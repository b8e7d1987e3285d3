// SPDX-License-Identifier: Apache-2.0

import HTTPTypes
import Testing

@testable import HTTPCaching

/// RFC 9110 §14: one byte range served from a stored complete response.
@Suite struct RangeRuleTests {
    static func request(_ range: String, method: HTTPRequest.Method = .get, ifRange: String? = nil) -> HTTPRequest {
        var request = HTTPRequest(method: method, scheme: "https", authority: "example.com", path: "/")
        request.headerFields[.range] = range
        if let ifRange { request.headerFields[.ifRange] = ifRange }
        return request
    }

    static let ok = HTTPResponse(status: .ok, headerFields: [.eTag: "\"a\""])

    @Test(arguments: [
        ("bytes=0-0", 100, RangeRule.partial(0...0)),
        ("bytes=99-", 100, .partial(99...99)),
        ("bytes=-1", 100, .partial(99...99)),
        ("bytes=100-", 100, .unsatisfiable),
        ("bytes=0-", 0, .unsatisfiable),
        ("bytes=-5", 0, .unsatisfiable),
        ("bytes=a-b", 100, .whole),
        ("bytes=1-2, 4-5", 100, .whole),
    ])
    func singleRanges(range: String, length: Int, expected: RangeRule) {
        #expect(RangeRule.evaluate(Self.request(range), response: Self.ok, length: length) == expected)
    }

    @Test func onlyAGetOfAWhole200IsCut() {
        #expect(RangeRule.evaluate(Self.request("bytes=0-1", method: .head), response: Self.ok, length: 9) == .whole)
        let notFound = HTTPResponse(status: .notFound)
        #expect(RangeRule.evaluate(Self.request("bytes=0-1"), response: notFound, length: 9) == .whole)
        var twoLines = Self.request("bytes=0-1")
        twoLines.headerFields.append(HTTPField(name: .range, value: "bytes=2-3"))
        #expect(RangeRule.evaluate(twoLines, response: Self.ok, length: 9) == .whole)
    }

    @Test func ifRangeNeedsAStrongMatch() {
        let weak = HTTPResponse(status: .ok, headerFields: [.eTag: "W/\"a\""])
        #expect(
            RangeRule.evaluate(Self.request("bytes=0-1", ifRange: "\"a\""), response: Self.ok, length: 9).bytes == 0...1
        )
        #expect(RangeRule.evaluate(Self.request("bytes=0-1", ifRange: "\"a\""), response: weak, length: 9) == .whole)
        #expect(
            RangeRule.evaluate(Self.request("bytes=0-1", ifRange: "garbage"), response: Self.ok, length: 9) == .whole
        )
    }
}
