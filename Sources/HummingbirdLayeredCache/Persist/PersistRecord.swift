// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
import CacheTiers

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The metadata of a persisted value: empty for no expiry, else a format byte (1) and the
/// expiry as 8 bytes of milliseconds since 1970, big-endian.
enum PersistRecord {
    static let version: UInt8 = 1

    static func metadata(expiresAt: Date?) -> [UInt8] {
        guard let expiresAt else { return [] }
        let milliseconds = UInt64(bitPattern: expiresAt.millisecondsSince1970)
        return [version] + (0..<8).map { UInt8(truncatingIfNeeded: milliseconds >> (56 - 8 * $0)) }
    }

    /// The expiry in `entry`'s metadata; nil for none (or metadata this version does not know,
    /// which is read as no expiry rather than as an expired value).
    static func expiry(of entry: CacheEntry) -> Date? {
        let bytes = entry.metadata
        guard bytes.count == 9, bytes[0] == version else { return nil }
        let milliseconds = bytes[1...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Date(millisecondsSince1970: Int64(bitPattern: milliseconds))
    }
}
#endif
