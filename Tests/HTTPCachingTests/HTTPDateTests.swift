// SPDX-License-Identifier: Apache-2.0

import Foundation
import Testing

@testable import HTTPCaching

/// RFC 9110 §5.6.7: recipients read names in any case; senders write the canonical form.
@Suite struct HTTPDateTests {
    static let seconds = 784_111_777.0  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "sun, 06 nov 1994 08:49:37 gmt",
        "SUN, 06 NOV 1994 08:49:37 GMT",
        "sUn, 06 NoV 1994 08:49:37 Gmt",
        "sunday, 06-nov-94 08:49:37 gmt",
        "SUNDAY, 06-NOV-94 08:49:37 GMT",
        "sun nov  6 08:49:37 1994",
        "SUN NOV  6 08:49:37 1994",
    ])
    func namesAreReadInAnyCase(text: String) {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(HTTPDate.parse(text, now: now)?.timeIntervalSince1970 == Self.seconds)
    }

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 UTC", "Sunn, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Novv 1994 08:49:37 GMT",
    ])
    func otherNamesAreStillRefused(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func leniencyReachesFreshness() {
        let response = CacheRulesTests.response(
            200,
            [("Date", "sun, 06 nov 1994 08:49:37 gmt"), ("Expires", "SUN, 06 NOV 1994 09:49:37 GMT")]
        )
        let lifetime = CacheRulesTests.private_.freshnessLifetime(
            of: response,
            responseTime: Date(timeIntervalSince1970: Self.seconds)
        )
        #expect(lifetime == 3600)
        #expect(HTTPDate.format(Date(timeIntervalSince1970: Self.seconds)) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}

extension HTTPDateTests {
    /// IMF-fixdate's year is four digits: a year before 1000 is written with leading zeros, so that
    /// what is written reads back (the conditions fuzz target found `Sun Nov  6 08:49:37 0994`).
    @Test(arguments: ["Sun Nov  6 08:49:37 0994", "Sat, 01 Jan 0000 00:00:00 GMT", "Fri, 31 Dec 0099 23:59:59 GMT"])
    func earlyYearsAreWrittenWithFourDigits(text: String) throws {
        let date = try #require(HTTPDate.parse(text))
        let written = HTTPDate.format(date)
        #expect(written.split(separator: " ")[3].count == 4)
        #expect(HTTPDate.parse(written) == date)
    }
}
