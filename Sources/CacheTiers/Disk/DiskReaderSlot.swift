// SPDX-License-Identifier: Apache-2.0

import Synchronization

/// The ``DiskReader`` of a ``DiskTier``'s current store, loaded with one atomic read on every hit.
///
/// ``DiskTier/reopen(encryption:)`` opens a new store, with a new reader, while other tasks may be
/// reading through the old one. Readers load the pointer without a lock and without retaining
/// it, so a reader, once published, must outlive every task that could have loaded it: the slot
/// keeps every reader it has published until the tier goes. A closed store's reader holds an
/// empty index and no segments, a few kilobytes, and reopening is rare (an app that went idle).
package final class DiskReaderSlot: Sendable {
    /// The current reader's address (an unretained reference).
    private let address: Atomic<UInt>
    /// Every reader published, so that none is freed while a task may still use it.
    private let published: Mutex<[DiskReader]>

    package init(_ reader: DiskReader) {
        address = Atomic(Self.address(of: reader))
        published = Mutex([reader])
    }

    /// Calls `body` with the current reader, without retaining it (``published`` keeps it alive).
    @inline(__always)
    package func withReader<Result>(_ body: (DiskReader) throws -> Result) rethrows -> Result {
        let address = address.load(ordering: .acquiring)
        return try Unmanaged<DiskReader>.fromOpaque(UnsafeRawPointer(bitPattern: address)!)
            ._withUnsafeGuaranteedRef(body)
    }

    /// The current reader.
    @inline(__always)
    package var reader: DiskReader {
        let address = address.load(ordering: .acquiring)
        // Never zero: it is always the address of a published reader, which `published` keeps alive.
        return Unmanaged<DiskReader>.fromOpaque(UnsafeRawPointer(bitPattern: address)!).takeUnretainedValue()
    }

    /// Makes `reader` the current one.
    package func publish(_ reader: DiskReader) {
        published.withLock { $0.append(reader) }
        address.store(Self.address(of: reader), ordering: .releasing)
    }

    private static func address(of reader: DiskReader) -> UInt {
        UInt(bitPattern: Unmanaged.passUnretained(reader).toOpaque())
    }
}
