// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation
import HTTPTypes
import Testing

@testable import HTTPCaching

@Suite struct CachedResponseCodecTests {
    static let sample: CachedResponse = {
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "max-age=60"
        fields.append(HTTPField(name: .setCookie, value: "a=1"))
        fields.append(HTTPField(name: .setCookie, value: "b=2"))
        fields[HTTPField.Name("X-Odd-Header")!] = "  spaced  "
        var varying = HTTPFields()
        varying[.acceptEncoding] = "gzip"
        return CachedResponse(
            response: HTTPResponse(status: .init(code: 203, reasonPhrase: "Non-Authoritative"), headerFields: fields),
            body: Array("{\"ok\":true}".utf8),
            userInfo: [
                "string": "héllo", "integer": -42, "double": 3.25, "bool": true,
                "date": .date(Date(timeIntervalSince1970: 1_700_000_000.123)),
                "bytes": .bytes([0, 255, 7]),
                "array": [1, "two", [3.5]],
                "nested": ["deep": ["deeper": false]],
            ],
            storagePolicy: .allowedInMemoryOnly,
            requestTime: Date(timeIntervalSince1970: 1_700_000_000),
            responseTime: Date(timeIntervalSince1970: 1_700_000_000.5),
            validatedAt: Date(timeIntervalSince1970: 1_700_000_100),
            varyingRequestFields: varying
        )
    }()

    @Test func roundTripsEveryField() throws {
        let metadata = CachedResponseCodec.encodeMetadata(Self.sample)
        let decoded = try CachedResponseCodec.decode(metadata: metadata, body: Self.sample.body)
        #expect(decoded == Self.sample)
        #expect(decoded.response.headerFields[values: .setCookie] == ["a=1", "b=2"])
        #expect(decoded.response.status.reasonPhrase == "Non-Authoritative")
    }

    @Test func encodingIsDeterministic() {
        #expect(CachedResponseCodec.encodeMetadata(Self.sample) == CachedResponseCodec.encodeMetadata(Self.sample))
    }

    /// Every truncation and random garbage is a thrown error, never a crash.
    @Test func damagedMetadataThrows() throws {
        let metadata = CachedResponseCodec.encodeMetadata(Self.sample)
        for length in 0..<metadata.count {
            #expect(throws: HTTPCachingError.self) {
                try CachedResponseCodec.decode(metadata: Array(metadata[..<length]), body: [])
            }
        }
        var generator = SplitMix64(seed: 5)
        for round in 0..<2000 {
            var garbage = metadata
            for _ in 0..<(1 + round % 4) {
                garbage[Int(generator.next() % UInt64(garbage.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            _ = try? CachedResponseCodec.decode(metadata: garbage, body: [])
            _ = try? CachedResponseCodec.decode(
                metadata: SampleData.random(count: round % 300, seed: UInt64(round)),
                body: []
            )
        }
    }

    @Test func deeplyNestedUserInfoIsRefusedNotOverflowed() {
        // 100 nested arrays: tag 6 with count 1, again and again.
        var bytes = Array(
            CachedResponseCodec.encodeMetadata(
                CachedResponse(
                    response: HTTPResponse(status: .ok),
                    body: [],
                    requestTime: Date(timeIntervalSince1970: 0),
                    responseTime: Date(timeIntervalSince1970: 0)
                )
            ).dropLast(5)
        )
        bytes += [7, 1, 0, 0, 0, 1, 0, 0, 0, 0x61]
        for _ in 0..<100 { bytes += [6, 1, 0, 0, 0] }
        bytes += [3, 1]
        #expect(throws: HTTPCachingError.self) { try CachedResponseCodec.decode(metadata: bytes, body: []) }
    }

    /// A response read and stored again (a 304's freshening, a promotion) keeps its times to the
    /// millisecond (found by the `response` fuzz target: about one time in a hundred lost a
    /// millisecond on every round trip).
    @Test func timesSurviveRepeatedRoundTrips() throws {
        let time = Date(millisecondsSince1970: 1_079_915_604_945)
        var response = CachedResponse(
            response: HTTPResponse(status: .ok),
            body: [],
            userInfo: ["at": .date(time)],
            requestTime: time,
            responseTime: time,
            fetchedAt: time
        )
        for _ in 0..<3 {
            response = try CachedResponseCodec.decode(metadata: CachedResponseCodec.encodeMetadata(response), body: [])
        }
        #expect(response.requestTime.millisecondsSince1970 == 1_079_915_604_945)
        #expect(response.responseTime.millisecondsSince1970 == 1_079_915_604_945)
        #expect(response.fetchedAt.millisecondsSince1970 == 1_079_915_604_945)
        #expect(response.userInfo["at"] == .date(Date(millisecondsSince1970: 1_079_915_604_945)))
    }
}
