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
/// ``metadata`` (headers, application metadata); it round-trips through the disk tier unchanged.
public struct CacheEntry: Hashable, Sendable {
    /// The value, uncompressed.
    public var value: [UInt8]
    /// Opaque metadata stored beside the value.
    public var metadata: [UInt8]
    /// When the entry was stored; `TieredCache.removeEntries(storedSince:)` uses it. The disk tier
    /// keeps it to the millisecond.
    public var storedAt: Date
    /// An object the caller hangs on the entry while it lives in memory: typically the entry's
    /// bytes already decoded, so that a memory hit need not decode ``value`` or ``metadata`` again.
    ///
    /// The memory tier keeps it with the entry; lower tiers never store it, and an entry read from
    /// one has none until ``TieredCache/entry(for:attaching:)`` makes it. It is not part of
    /// equality or hashing. It must describe the same bytes as ``value`` and ``metadata``: a
    /// changed copy of the entry should drop or replace it.
    public var attachment: (any CacheAttachment)?

    /// Creates an entry.
    public init(value: [UInt8], metadata: [UInt8] = [], storedAt: Date) {
        self.value = value
        self.metadata = metadata
        self.storedAt = storedAt
        self.attachment = nil
    }

    public static func == (lhs: CacheEntry, rhs: CacheEntry) -> Bool {
        lhs.value == rhs.value && lhs.metadata == rhs.metadata && lhs.storedAt == rhs.storedAt
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(value)
        hasher.combine(metadata)
        hasher.combine(storedAt)
    }

    /// The bytes this entry costs a tier: key, value, metadata, a fixed per-entry overhead, and
    /// what its attachment says it holds.
    package func cost(keyByteCount: Int) -> Int {
        keyByteCount + value.count + metadata.count + Self.overheadBytes + (attachment?.memoryCost ?? 0)
    }

    /// The bookkeeping charged to every entry so that many tiny entries cannot exceed the budget.
    package static let overheadBytes = 64
}

/// An object an upper layer hangs on a memory entry (``CacheEntry/attachment``), typically the
/// entry's bytes decoded. It says how much memory it holds, so that the memory tier's byte budget
/// counts it: a budget that saw only the encoded bytes would let the decoded copies grow the
/// process well past it.
public protocol CacheAttachment: AnyObject, Sendable {
    /// The bytes the attachment holds beyond the entry's value and metadata (its objects, strings
    /// and tables), as closely as its owner can estimate them. Read once, when the entry is stored.
    var memoryCost: Int { get }
}
