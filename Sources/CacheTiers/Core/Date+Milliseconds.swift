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

    /// Milliseconds since 1970-01-01 UTC, rounded down and clamped to Int64.
    package var millisecondsSince1970: Int64 {
        let value = (timeIntervalSince1970 * 1000).rounded(.down)
        guard value.isFinite else { return value > 0 ? .max : .min }
        return Int64(clamping: Int64(exactly: max(min(value, 9.2e18), -9.2e18)) ?? 0)
    }
}
