// SPDX-License-Identifier: Apache-2.0

import Foundation
import Testing

@testable import CacheTiers

/// Dates stored as whole milliseconds (records, snapshots, shared rows, cached responses) come
/// back as the same milliseconds, however often they are read and written again. Found by the
/// `response` and `sharedrow` fuzz targets (docs/fuzzing.md): `Date` keeps seconds since 2001 in
/// a `Double`, so about one date in a hundred made from whole milliseconds read back a hair below
/// them, rounded down to the millisecond before, and lost another on every round trip.
@Suite struct DateMillisecondsTests {
    @Test(arguments: [
        Int64(1_079_915_604_945), 2_147_545_420_206, 1_097_827_380_353, 1_084_387_869_975, 412_461, 176_783,
        -8_978_676_156, 0, -1, 1_790_000_000_000,
    ])
    func wholeMillisecondsComeBack(_ milliseconds: Int64) {
        let date = Date(millisecondsSince1970: milliseconds)
        #expect(date.millisecondsSince1970 == milliseconds)
        #expect(Date(millisecondsSince1970: date.millisecondsSince1970).millisecondsSince1970 == milliseconds)
    }

    /// What lies between two milliseconds still reads as the earlier one.
    @Test func aDateBetweenMillisecondsRoundsDown() {
        #expect(Date(timeIntervalSince1970: 1_790_000_000.1234).millisecondsSince1970 == 1_790_000_000_123)
        #expect(Date(timeIntervalSince1970: -0.0005).millisecondsSince1970 == -1)
        #expect(Date(timeIntervalSince1970: 0.9996).millisecondsSince1970 == 999)
    }

    /// A record's time survives a write and a read, and a second of each.
    @Test func aRecordKeepsItsMillisecond() throws {
        let milliseconds: Int64 = 1_079_915_604_945
        var storedAt = Date(millisecondsSince1970: milliseconds)
        for _ in 0..<2 {
            let record = try RecordFormat.encodePut(
                key: "k",
                metadata: [],
                value: [1],
                storedAtMillis: storedAt.millisecondsSince1970
            )
            storedAt = try record.withUnsafeBytes { bytes in
                let header = try #require(RecordFormat.verifiedHeader(bytes))
                return try RecordFormat.decodeEntry(bytes, header: header).storedAt
            }
        }
        #expect(storedAt.millisecondsSince1970 == milliseconds)
    }
}
