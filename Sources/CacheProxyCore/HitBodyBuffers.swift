// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import Synchronization

/// The `ByteBuffer`s that fast hits write for whole stored bodies, made once per stored body
/// and shared by every hit on it (a `ByteBuffer` is copy-on-write over reference-counted
/// storage, and NIO writes it to the socket as it is), instead of a copy of the body into a new
/// buffer on every hit: for a 64 KB body that copy was an allocation, 64 KB of `memcpy` and the
/// page faults of fresh memory.
///
/// A buffer is found by the identity of the stored body's array storage. Each slot keeps that
/// array alongside its buffer, so the storage stays alive while the slot exists: no other array
/// can have the same address then, and a replaced or evicted record's body (a different array)
/// never finds the old record's buffer. The bytes of a slot never change: the array is
/// immutable while it is shared, and the buffer is only ever read.
///
/// Bounded: a direct-mapped table of ``slotCount`` slots whose bodies together count at most
/// `limitBytes`, each slot charged twice its body (the buffer, and the array it keeps alive
/// after the cache may have dropped it). A body that does not fit, or smaller than
/// ``minimumBodyBytes`` (where a copy costs less than the lookup), is copied as before.
final class HitBodyBuffers: Sendable {
    /// The smallest body kept: below it a copy costs about as much as a lookup.
    static let minimumBodyBytes = 4_096
    /// How many slots the table has.
    static let slotCount = 1_024

    private struct Slot {
        /// The stored body whose storage the slot is found by (kept alive by this reference).
        var body: [UInt8]
        var buffer: ByteBuffer
        var cost: Int { 2 * body.count }
    }

    private struct State {
        var slots: [Slot?]
        var bytes = 0
    }

    /// The most bytes the slots together are charged.
    let limitBytes: Int
    private let state: Mutex<State>

    /// - Parameter limitBytes: the most bytes the slots together are charged (twice each body).
    init(limitBytes: Int) {
        self.limitBytes = max(0, limitBytes)
        self.state = Mutex(State(slots: Array(repeating: nil, count: Self.slotCount)))
    }

    /// The bytes the slots are charged now.
    var chargedBytes: Int { state.withLock { $0.bytes } }

    /// A buffer holding `body`'s bytes: the shared one when `body` is kept, else a new copy
    /// (kept for the next hit when it fits).
    func buffer(for body: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer {
        guard body.count >= Self.minimumBodyBytes, 2 * body.count <= limitBytes else {
            return allocator.buffer(bytes: body)
        }
        let address = body.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        let index = DirectMappedSlot.index(of: address, slotCount: Self.slotCount)
        let found: ByteBuffer? = state.withLock { state in
            guard let slot = state.slots[index], slot.body.count == body.count,
                slot.body.withUnsafeBufferPointer({ UInt(bitPattern: $0.baseAddress) }) == address
            else { return nil }
            return slot.buffer
        }
        if let found { return found }
        let buffer = allocator.buffer(bytes: body)
        let slot = Slot(body: body, buffer: buffer)
        // The replaced slot is returned, to be released outside the lock.
        _ = state.withLock { state -> Slot? in
            let old = state.slots[index]
            let bytes = state.bytes - (old?.cost ?? 0) + slot.cost
            guard bytes <= limitBytes else { return nil }
            state.slots[index] = slot
            state.bytes = bytes
            return old
        }
        return buffer
    }

}

/// The slot of an object or a buffer in a direct-mapped table of up to 1,024 slots (a power of
/// two), by its address: Fibonacci hashing, the address's low 4 bits (alignment) dropped.
enum DirectMappedSlot {
    static func index(of address: UInt, slotCount: Int) -> Int {
        Int(truncatingIfNeeded: ((address >> 4) &* 0x9E37_79B9_7F4A_7C15) >> 54) & (slotCount - 1)
    }
}
#endif
