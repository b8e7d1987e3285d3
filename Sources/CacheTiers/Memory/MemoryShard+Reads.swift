// SPDX-License-Identifier: Apache-2.0

import Synchronization

/// The reads that many threads make at once under a shard's reader locks (``ShardArray``): they
/// change nothing but an S3-FIFO node's frequency, atomically, and count nothing in the shard
/// (the caller counts hits and misses in its reader slot).
extension MemoryShard {
    /// The node slot holding the key whose digest is `digest` and whose string `isKey` accepts,
    /// or nil.
    ///
    /// Nodes are read through a buffer pointer: reading a field through the array's subscript
    /// copies the whole node (a retain and a release of its key, value, metadata and attachment).
    /// - Complexity: O(1) on average.
    @inline(__always)
    func find(digest: UInt64, isKey: (String) -> Bool) -> Int? {
        guard let found = index[digest] else { return nil }
        let slot = Int(found)
        let matches = nodes.withUnsafeBufferPointer { nodes in
            // Compared where it lies: a copy of the key would retain and release its string.
            let key = Self.pointer(to: Self.keyOffset, of: slot, in: nodes, as: CacheKey?.self)
            return key.pointee.map { isKey($0.string) } ?? false
        }
        return matches ? slot : nil
    }

    /// ``find(digest:isKey:)`` of `key`.
    @inline(__always)
    func find(_ key: CacheKey) -> Int? {
        find(digest: key.digest) { $0 == key.string }
    }

    /// S3-FIFO: counts a read of the node at `slot`, up to ``maximumFrequency``, writing only when
    /// the count changes (a hot node is then only read). Readers of the same shard may call it at
    /// once: the frequency byte is read and written as an atomic, and two reads that race may count
    /// once, which S3-FIFO's small counts tolerate (Caffeine drops reads the same way when its read
    /// buffers are full). The shard's writers, which hold every reader lock, use the field plainly.
    @inline(__always)
    func markRead(_ slot: Int) {
        nodes.withUnsafeBufferPointer { nodes in
            // The node's `frequency` byte, used as an `Atomic<UInt8>` (same size and alignment).
            let address = UnsafeMutableRawPointer(mutating: nodes.baseAddress! + slot) + Self.frequencyOffset
            let frequency = address.assumingMemoryBound(to: Atomic<UInt8>.self)
            let count = frequency.pointee.load(ordering: .relaxed)
            if count < Self.maximumFrequency { frequency.pointee.store(count + 1, ordering: .relaxed) }
        }
    }

    /// Where a node's frequency lies in it.
    static let frequencyOffset = MemoryLayout<Node>.offset(of: \Node.frequency)!
    /// Where a node's key and entry lie in it.
    static let keyOffset = MemoryLayout<Node>.offset(of: \Node.key)!
    static let entryOffset = MemoryLayout<Node>.offset(of: \Node.entry)!
    /// Where the attachment of a node's entry lies in the node. An optional's payload starts at
    /// its first byte, so the entry's field lies at the same offset in `CacheEntry?`.
    static let attachmentOffset = entryOffset + MemoryLayout<CacheEntry>.offset(of: \CacheEntry.attachment)!

    /// The field at `offset` of the node at `slot`, read alone. Readers read nodes while other
    /// readers write their frequency byte (``markRead(_:)``): a copy of the whole node would read
    /// that byte too, plainly, against an atomic write — a data race (which an unoptimized build
    /// makes, and ThreadSanitizer reports).
    @inline(__always)
    static func field<Field>(
        _ offset: Int,
        of slot: Int,
        in nodes: UnsafeBufferPointer<Node>,
        as type: Field.Type
    ) -> Field {
        pointer(to: offset, of: slot, in: nodes, as: type).pointee
    }

    /// The address of the field at `offset` of the node at `slot`, to read it alone (see
    /// ``field(_:of:in:as:)``) or to borrow it without a copy.
    @inline(__always)
    static func pointer<Field>(
        to offset: Int,
        of slot: Int,
        in nodes: UnsafeBufferPointer<Node>,
        as type: Field.Type
    ) -> UnsafePointer<Field> {
        UnsafeRawPointer(nodes.baseAddress! + slot).advanced(by: offset).assumingMemoryBound(to: Field.self)
    }

    /// The entry of the node at `slot`, which holds one.
    @inline(__always)
    func entry(at slot: Int) -> CacheEntry {
        nodes.withUnsafeBufferPointer { Self.field(Self.entryOffset, of: slot, in: $0, as: CacheEntry?.self)! }
    }

    /// What ``attachedLookup(_:)`` answers for the node at `slot`, or for a miss when `slot` is
    /// nil.
    @inline(__always)
    func attachedLookup(at slot: Int?) -> AttachedMemoryLookup {
        guard let slot else { return .miss(generation: writeGeneration) }
        return nodes.withUnsafeBufferPointer { nodes in
            // The attachment alone first: a copy of the whole entry retains and releases its
            // value, metadata and user info as well, which a hit with an attachment never reads.
            if let attachment = Self.field(Self.attachmentOffset, of: slot, in: nodes, as: (any CacheAttachment)?.self)
            {
                return .attached(attachment)
            }
            return .hit(Self.field(Self.entryOffset, of: slot, in: nodes, as: CacheEntry?.self)!)
        }
    }
}
