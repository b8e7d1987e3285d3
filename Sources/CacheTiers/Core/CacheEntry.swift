// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What the tiers store for a key: the value's bytes, a small metadata blob, and when it was
/// stored.
///
/// The tiers know nothing of what the bytes mean. Upper layers keep what they need in
/// ``metadata`` (HTTP headers, userInfo); it round-trips through the disk tier unchanged.
public struct CacheEntry: Hashable, Sendable {
    /// The value, uncompressed.
    public var value: [UInt8]
    /// Opaque metadata stored beside the value.
    public var metadata: [UInt8]
    /// When the entry was stored; `TieredCache.removeEntries(storedSince:)` uses it. The disk tier
    /// keeps it to the millisecond.
    public var storedAt: Date
    /// A decoded form of the entry an upper layer attaches so that a memory hit need not decode
    /// ``metadata`` again (`ResponseCache` keeps its parsed response here). The memory tier keeps
    /// it with the entry; the disk tier never stores it. Not part of equality; a class, so that reading it back is a pointer compare; it must
    /// describe the same bytes as ``value`` and ``metadata``.
    package var decoded: (any AnyObject & Sendable)?

    /// Creates an entry.
    public init(value: [UInt8], metadata: [UInt8] = [], storedAt: Date) {
        self.value = value
        self.metadata = metadata
        self.storedAt = storedAt
        self.decoded = nil
    }

    public static func == (lhs: CacheEntry, rhs: CacheEntry) -> Bool {
        lhs.value == rhs.value && lhs.metadata == rhs.metadata && lhs.storedAt == rhs.storedAt
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(value)
        hasher.combine(metadata)
        hasher.combine(storedAt)
    }

    /// The bytes this entry costs a tier: key, value, metadata, and a fixed per-entry overhead.
    package func cost(keyByteCount: Int) -> Int {
        keyByteCount + value.count + metadata.count + Self.overheadBytes
    }

    /// The bookkeeping charged to every entry so that many tiny entries cannot exceed the budget.
    package static let overheadBytes = 64
}
