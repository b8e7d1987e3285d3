// SPDX-License-Identifier: Apache-2.0

import Synchronization
package import SystemPackage

/// An open segment file, shared by the writer and by readers in flight, and closed by whoever
/// lets go of it last.
///
/// This is the disk tier's retirement protocol (see docs/disk-format.md). A reader takes a
/// reference to the handle inside the same index critical section in which it finds the record,
/// and reads through it with no lock held. The writer retires a segment by removing its entries
/// and then the handle from every index stripe, and dropping its own reference; the file is
/// unlinked at once, but its descriptor stays open — and its bytes readable, unchanged — until the
/// last reader in flight drops its reference. Swift's reference count is the count of users, and
/// `deinit` closes the descriptor exactly once, so a descriptor number is never reused while a
/// reader may still read through it. A reader therefore reads the bytes it looked up, or misses.
package final class SegmentHandle: Sendable {
    /// The segment's sequence number.
    package let sequence: UInt32
    /// The file; its descriptor is closed in `deinit`, never before.
    package let file: CacheFile
    /// Bytes of records the index points at: the writer and readers that drop a damaged record both
    /// change it, so it is an atomic.
    private let live = Atomic<Int>(0)

    package init(sequence: UInt32, file: CacheFile) {
        self.sequence = sequence
        self.file = file
    }

    deinit {
        file.close()
    }

    /// Bytes of records the index points at.
    package var liveBytes: Int { live.load(ordering: .relaxed) }

    /// Adds `delta` (negative to subtract) to ``liveBytes``.
    package func addLiveBytes(_ delta: Int) {
        live.add(delta, ordering: .relaxed)
    }

    /// Sets ``liveBytes`` (recovery recounts them from the index).
    package func setLiveBytes(_ value: Int) {
        live.store(value, ordering: .relaxed)
    }

    /// One index stripe's reference to a segment: readers take and release this one, not the
    /// segment's own, so that readers on different stripes do not bounce one reference count
    /// between cores. It holds the segment, so the segment outlives every reader holding it.
    package final class StripeReference: Sendable {
        package let segment: SegmentHandle
        /// The segment's descriptor, copied out so that a read touches nothing shared.
        package let descriptor: FileDescriptor

        init(_ segment: SegmentHandle) {
            self.segment = segment
            self.descriptor = segment.file.descriptor
        }
    }
}
