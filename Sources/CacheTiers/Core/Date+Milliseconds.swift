// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Date {
    /// The date `milliseconds` after 1970-01-01 UTC.
    package init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// Milliseconds since 1970-01-01 UTC, rounded down and clamped to Int64; a date made from
    /// whole milliseconds (``init(millisecondsSince1970:)``) gives them back exactly.
    ///
    /// `Date` keeps seconds since 2001 in a `Double`: a date made from whole milliseconds can read
    /// a hair below them (1,079,915,604,945 ms reads 1,079,915,604,944.9998, and 412,461 ms,
    /// near 1970, 412,460.9999), and rounded down it would lose a millisecond on every round trip
    /// through a record, a row or a cached response. Within a microsecond (or four units in the
    /// last place, for dates far out) of a whole millisecond is that millisecond.
    package var millisecondsSince1970: Int64 {
        let exact = timeIntervalSince1970 * 1000
        let nearest = exact.rounded()
        let value = abs(exact - nearest) <= max(0.001, 4 * exact.ulp) ? nearest : exact.rounded(.down)
        guard value.isFinite else { return value > 0 ? .max : .min }
        return Int64(clamping: Int64(exactly: max(min(value, 9.2e18), -9.2e18)) ?? 0)
    }
}
