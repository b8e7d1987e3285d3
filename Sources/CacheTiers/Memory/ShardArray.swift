// SPDX-License-Identifier: Apache-2.0

internal import CCurrentProcessor

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The memory tier's shards, each behind a reader-writer lock made of one mutex per processor
/// (a "big reader" lock, as Linux's brlock and folly's deferred readers): a read takes only the
/// mutex of the processor it runs on, a write takes all of them.
///
/// A hit must not write a cache line that other cores write too. With one lock per shard, every
/// hit wrote the shard's lock word and its counters, and the line moved to the hitting core from
/// whichever core hit that shard last: about 25 ns a hit when the host places the two vCPUs far
/// apart (the shared-line control of the concurrency benchmark shows that placement). Here a read
/// locks a mutex that lives on a cache line of its own, which only its processor takes between
/// writes, and counts its hit or miss beside it: the line stays in that core's cache. The shard
/// itself is only read, so its lines are shared by the readers' caches, never moved.
///
/// A write (a set, a removal, a promotion, an LRU hit that moves its node) locks the shard's
/// mutexes of every processor, in order, so it costs one lock per processor slot:
/// ``readerCount`` is the processor count rounded up to a power of two, at most 32 (beyond that,
/// processors share slots). Reads outnumber writes in a cache; where they do not, a write's extra
/// locks are a few nanoseconds each on the cores that hold them.
///
/// The mutexes are pthread mutexes, which ThreadSanitizer understands (it cannot see the futex
/// inside `Synchronization.Mutex`, see STYLE.md). The one write readers make to the shard, an
/// S3-FIFO node's frequency, is an atomic store (``MemoryShard/markRead(_:)``).
///
/// The class is `@unchecked Sendable`: its shards are only touched under the locks above, and
/// its pointers are written once, before it is shared.
final class ShardArray: @unchecked Sendable {
    /// One shard and two cache lines of padding after it, so that a write to one shard's fields
    /// does not take the line of the next shard from the readers' caches.
    struct Padded: ~Copyable {
        var shard: MemoryShard
        private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        private let padding2: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (
            0, 0, 0, 0, 0, 0, 0, 0
        )

        init(_ shard: consuming MemoryShard) {
            self.shard = shard
        }
    }

    /// A processor's lock of one shard, and the lookups it counted.
    struct ReaderSlot {
        var mutex = pthread_mutex_t()
        var hits = 0
        var misses = 0
    }

    /// What a read counts in its slot.
    struct ReadCounts {
        var hits = 0
        var misses = 0
    }

    /// The number of shards.
    let count: Int
    /// The number of reader slots per shard: a power of two.
    let readerCount: Int
    private let shards: UnsafeMutablePointer<Padded>
    /// `readerCount × count` slots, processor-major: processor `p`'s slot of shard `s` is at
    /// `p × processorBytes + s × slotStride` bytes, so that a processor's slots share lines only with
    /// each other.
    private let slots: UnsafeMutableRawPointer
    /// The bytes of one slot: a whole number of 64-byte lines.
    private let slotStride: Int
    /// The bytes of one processor's slots, padded to 128.
    private let processorBytes: Int

    /// The most reader slots a shard has.
    static let maximumReaderCount = 32

    /// An array of `count` shards, shard `i` made by `makeShard(i)`, with one reader slot per
    /// processor (see ``readerCount``).
    convenience init(count: Int, _ makeShard: (Int) -> MemoryShard) {
        self.init(count: count, readerCount: Self.defaultReaderCount, makeShard)
    }

    /// An array of `count` shards made by `makeShard` with `readerCount` slots each (rounded up
    /// to a power of two).
    init(count: Int, readerCount: Int, _ makeShard: (Int) -> MemoryShard) {
        precondition(count > 0, "a tier has at least one shard")
        var readers = 1
        while readers < min(max(readerCount, 1), Self.maximumReaderCount) { readers <<= 1 }
        self.count = count
        self.readerCount = readers
        self.shards = .allocate(capacity: count)
        for index in 0..<count {
            (self.shards + index).initialize(to: Padded(makeShard(index)))
        }
        // One 64-byte line per slot at least; 128-byte groups per processor keep the adjacent-line
        // prefetcher from pairing two processors' slots.
        let stride = (MemoryLayout<ReaderSlot>.stride + 63) & ~63
        let processorBytes = (stride * count + 127) & ~127
        let slots = UnsafeMutableRawPointer.allocate(byteCount: processorBytes * readers, alignment: 128)
        for reader in 0..<readers {
            for shard in 0..<count {
                let slot = (slots + reader * processorBytes + shard * stride).bindMemory(
                    to: ReaderSlot.self,
                    capacity: 1
                )
                slot.initialize(to: ReaderSlot())
                pthread_mutex_init(slot.pointer(to: \.mutex)!, nil)
            }
        }
        self.slotStride = stride
        self.processorBytes = processorBytes
        self.slots = slots
    }

    deinit {
        for reader in 0..<readerCount {
            for shard in 0..<count {
                let slot = self.slot(reader: reader, shard: shard)
                pthread_mutex_destroy(slot.pointer(to: \.mutex)!)
                slot.deinitialize(count: 1)
            }
        }
        slots.deallocate()
        shards.deinitialize(count: count)
        shards.deallocate()
    }

    /// The processor count rounded up to a power of two, at most ``maximumReaderCount``.
    static let defaultReaderCount: Int = {
        let processors = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        return min(max(processors, 1), maximumReaderCount)
    }()

    @inline(__always)
    private func slot(reader: Int, shard: Int) -> UnsafeMutablePointer<ReaderSlot> {
        (slots + reader * processorBytes + shard * slotStride).assumingMemoryBound(to: ReaderSlot.self)
    }

    /// The processor this thread runs on now (it may move at any time: the slot it picks is then
    /// shared for a moment, never wrong).
    @inline(__always)
    private static func currentProcessor() -> Int {
        Int(ccurrentprocessor())
    }

    /// Runs `body` on shard `index` with this processor's reader lock of the shard held: other
    /// reads of the shard run at the same time, writes wait. `body` must not change the shard but
    /// through ``MemoryShard/markRead(_:)``; it counts hits and misses in `counts`, which are kept
    /// in the slot.
    ///
    /// The shard is lent, never copied (``MemoryShard`` is noncopyable; its documentation says
    /// why).
    /// - Parameter index: in `0..<count`; the tier derives it from a digest's high bits, so that
    ///   it is always in range (checked in debug builds only).
    @inline(__always)
    func read<Result>(_ index: Int, _ body: (borrowing MemoryShard, inout ReadCounts) -> Result) -> Result {
        assert(index >= 0 && index < count, "shard index out of range")
        let slot = slot(reader: Self.currentProcessor() & (readerCount - 1), shard: index)
        let mutex = slot.pointer(to: \.mutex)!
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var counts = ReadCounts()
        let result = body(shards[index].shard, &counts)
        slot.pointee.hits &+= counts.hits
        slot.pointee.misses &+= counts.misses
        return result
    }

    /// Runs `body` on shard `index` with every reader lock of the shard held, in order: no other
    /// read or write of the shard runs meanwhile.
    /// - Parameter index: in `0..<count` (checked in debug builds only).
    @inline(__always)
    func write<Result>(_ index: Int, _ body: (inout MemoryShard) -> Result) -> Result {
        assert(index >= 0 && index < count, "shard index out of range")
        for reader in 0..<readerCount {
            pthread_mutex_lock(slot(reader: reader, shard: index).pointer(to: \.mutex)!)
        }
        defer {
            for reader in 0..<readerCount {
                pthread_mutex_unlock(slot(reader: reader, shard: index).pointer(to: \.mutex)!)
            }
        }
        return body(&shards[index].shard)
    }

    /// The hits and misses that reads of shard `index` counted in their slots, read with every
    /// lock of the shard held.
    func readCounts(_ index: Int) -> ReadCounts {
        write(index) { _ in
            var counts = ReadCounts()
            for reader in 0..<readerCount {
                let slot = slot(reader: reader, shard: index)
                counts.hits += slot.pointee.hits
                counts.misses += slot.pointee.misses
            }
            return counts
        }
    }
}
