// SPDX-License-Identifier: Apache-2.0

import Logging
import Metrics
public import ServiceLifecycle

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The disk tier: an LZ4-compressed, crash-safe, append-only log of records in one directory.
///
/// Values are compressed when that makes them smaller and stored raw otherwise. Every record
/// carries a CRC-32C over all of its bytes; a record that fails it is a miss — counted, logged
/// and dropped — never wrong bytes. After a crash, opening loads the index snapshot, replays what
/// follows it and cuts a torn tail. One directory has one owner: a second opener, in this process
/// or another, gets ``CacheError/Code/directoryLocked``.
///
/// Reads do not queue behind writes or behind each other: ``entry(for:)`` is `nonisolated`, one
/// short critical section on one stripe of the index and one positional read with no lock held
/// (see `DiskReader`). Appends, maintenance and the tier's lifecycle are what the actor
/// serializes; retiring or compacting a segment is safe against reads in flight, which read the
/// bytes they looked up or miss (see `SegmentHandle`).
///
/// Run ``run()`` (it is a ServiceLifecycle `Service`) to write index snapshots and compact from time
/// to time; cancel it, or shut the service group down gracefully, and it writes a last snapshot.
///
/// With ``Configuration/encryption`` set, every record's key, metadata and value are sealed with
/// AES-256-GCM and the index knows keys only by a keyed digest (see docs/encryption.md). A record
/// that does not authenticate is a miss, counted and dropped. An app may ``close()`` the tier
/// when it goes idle and ``reopen(encryption:)`` it with the key later, rotate keys with
/// ``rekey()``, and wipe a closed directory with ``reset(directory:)``.
///
/// Metrics (swift-metrics): `layeredcache_disk_hits_total`, `layeredcache_disk_misses_total`,
/// `layeredcache_disk_corrupt_records_total`, `layeredcache_disk_admission_refusals_total`,
/// `layeredcache_disk_evictions_total`, `layeredcache_disk_write_errors_total`,
/// `layeredcache_disk_bytes_written_total`, `layeredcache_disk_bytes_read_total`,
/// `layeredcache_disk_value_bytes_total` and `layeredcache_disk_stored_value_bytes_total` (their
/// ratio is the compression ratio), `layeredcache_disk_authentication_failures_total`, and the
/// timer `layeredcache_disk_recovery_duration`.
public actor DiskTier: Service {
    /// Bytes and entries on disk.
    public struct Usage: Hashable, Sendable {
        /// Every byte of every segment and the index snapshot.
        public var bytes: Int
        /// Bytes of records the index points at, each counted by its size class (at most an eighth
        /// above its length; see docs/disk-format.md).
        public var liveBytes: Int
        /// Entries in the index.
        public var entryCount: Int
        /// Segment files.
        public var segmentCount: Int
    }

    /// Counters since the tier was opened.
    public struct Statistics: Hashable, Sendable {
        public var hits: Int
        public var misses: Int
        /// Records that failed their checksum (on read or during recovery).
        public var corruptRecords: Int
        public var admissionRefusals: Int
        /// Entries dropped when their segment was retired.
        public var evictions: Int
        /// Entries kept, re-appended, when their segment was retired because they had been read.
        public var secondChances: Int
        public var writeErrors: Int
        public var bytesWritten: Int
        public var bytesRead: Int
        /// Uncompressed value bytes stored, and the bytes they took on disk.
        public var valueBytesWritten: Int
        public var storedValueBytesWritten: Int
        /// Encrypted records that did not authenticate (tampered, or sealed with a key not given):
        /// each was a miss and was dropped.
        public var authenticationFailures: Int
        /// Records sealed again with the current key by compaction, retirement or ``DiskTier/rekey()``.
        public var resealedRecords: Int
    }

    /// The configuration the tier was first opened with (``reopen(encryption:)`` may change the keys).
    public nonisolated let configuration: Configuration
    private var store: DiskStore
    private nonisolated let metrics: DiskMetrics
    /// The current store's read path, read without the actor.
    private nonisolated let readers: DiskReaderSlot
    private var published = DiskStore.Statistics()

    /// Opens (creating if needed) the cache directory and recovers its contents.
    /// - Throws: ``CacheError/Code/directoryLocked`` when another owner has the directory,
    ///   ``CacheError/Code/wrongKey`` when no key of ``Configuration/encryption`` opens it,
    ///   ``CacheError/Code/encryptionMismatch`` for an encrypted directory without a key or a plain
    ///   one with a key (the directory is then left untouched),
    ///   ``CacheError/Code/invalidArgument`` for a bad configuration, I/O errors.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        self.store = try DiskStore(configuration: configuration)
        self.readers = DiskReaderSlot(store.reader)
        self.metrics = DiskMetrics(factory: configuration.metricsFactory ?? MetricsSystem.factory)
        metrics.recovery.recordNanoseconds(Int64(Self.nanoseconds(store.recovery.duration)))
        published.corruptRecords = 0
    }

    /// The entry for `key`, or nil. Runs on the caller's task, not on the actor: any number of
    /// reads run at once, and alongside a write.
    ///
    /// A record that fails its checksum (or, encrypted, does not authenticate) is a miss: counted,
    /// logged and dropped, never returned.
    /// - Complexity: O(1): one index stripe lookup and one positional read.
    public nonisolated func entry(for key: CacheKey) async -> CacheEntry? {
        cachedEntry(for: key)
    }

    /// ``entry(for:)`` without suspending, for callers on a synchronous path.
    /// - Complexity: O(1): one index stripe lookup and one positional read.
    public nonisolated func cachedEntry(for key: CacheKey) -> CacheEntry? {
        switch readers.withReader({ $0.read(key) }) {
        case .hit(let entry, let bytesRead):
            metrics.hits.increment()
            metrics.bytesRead.increment(by: bytesRead)
            return entry
        case .miss:
            metrics.misses.increment()
        case .corrupt(let bytesRead):
            metrics.misses.increment()
            metrics.corrupt.increment()
            if bytesRead > 0 { metrics.bytesRead.increment(by: bytesRead) }
        case .unauthenticated(let bytesRead):
            metrics.misses.increment()
            metrics.authenticationFailures.increment()
            metrics.bytesRead.increment(by: bytesRead)
        }
        return nil
    }

    /// Stores `entry` for `key`.
    /// - Returns: true when stored; false when the record is larger than the admission limit
    ///   (``Configuration/admissionFraction`` of the capacity), in which case any older value of the
    ///   key is removed.
    /// - Throws: ``CacheError/Code/outOfSpace`` or ``CacheError/Code/io`` when the write fails; the
    ///   key's older value is then forgotten, everything else stays as it was.
    /// - Complexity: O(1) amortized; retiring a segment scans the index once.
    @discardableResult
    public func set(_ entry: CacheEntry, for key: CacheKey) throws -> Bool {
        defer { publishMetrics() }
        return try store.set(entry, for: key) == .stored
    }

    /// A change of a batch (``commit(_:)``).
    public enum Change: Sendable {
        /// Stores the entry for the key.
        case set(CacheEntry, for: CacheKey)
        /// Removes the key's entry.
        case remove(CacheKey)
    }

    /// Writes `changes` as one batch that a crash keeps whole: after a restart (a crash, a kill,
    /// a power cut while it was written) either every change holds or none does. Changes apply in
    /// order: a key set twice keeps the later value.
    ///
    /// The batch is one write, to one segment. Readers in this process may see some of its
    /// changes before the others while ``commit(_:)`` returns; what a crash leaves is whole.
    /// - Throws: ``CacheError/Code/valueTooLarge`` when an entry is larger than the admission limit
    ///   (where ``set(_:for:)`` would refuse it), or the batch larger than a segment: nothing is
    ///   written and nothing changes. ``CacheError/Code/outOfSpace`` or ``CacheError/Code/io`` when
    ///   the write fails: every key of the batch is then forgotten, everything else stays.
    /// - Complexity: O(n) in the changes and their bytes; one write.
    public func commit(_ changes: [Change]) throws {
        defer { publishMetrics() }
        try store.commit(changes)
    }

    /// Removes the entry for `key`.
    /// - Returns: whether there was one.
    @discardableResult
    public func remove(_ key: CacheKey) throws -> Bool {
        defer { publishMetrics() }
        return try store.remove(key)
    }

    /// Removes every entry.
    public func removeAll() throws {
        defer { publishMetrics() }
        try store.removeAll()
    }

    /// Removes the entries stored at or after `date`, to the second (an entry stored up to one
    /// second earlier may go too).
    /// - Returns: how many were removed.
    /// - Complexity: O(n) over the index.
    @discardableResult
    public func removeEntries(storedSince date: Date) throws -> Int {
        defer { publishMetrics() }
        return try store.removeEntries(storedSince: date)
    }

    /// The keys held that start with `prefix` (compared byte for byte in UTF-8).
    /// - Complexity: O(bytes held): the index keeps digests, so every live record is read (and
    ///   opened, in an encrypted tier) for its key.
    public func keys(withPrefix prefix: String) async throws -> [CacheKey] {
        try store.checkOpen()
        return store.keys(withPrefix: prefix)
    }

    /// Current usage.
    public var usage: Usage {
        Usage(
            bytes: store.totalBytes,
            liveBytes: store.liveBytes,
            entryCount: store.index.count,
            segmentCount: store.order.count
        )
    }

    /// Counters since open.
    public var statistics: Statistics {
        let s = store.statistics
        return Statistics(
            hits: s.hits,
            misses: s.misses,
            corruptRecords: s.corruptRecords,
            admissionRefusals: s.admissionRefusals,
            evictions: s.evictions,
            secondChances: s.secondChances,
            writeErrors: s.writeErrors,
            bytesWritten: s.bytesWritten,
            bytesRead: s.bytesRead,
            valueBytesWritten: s.valueBytesWritten,
            storedValueBytesWritten: s.storedValueBytesWritten,
            authenticationFailures: s.authenticationFailures,
            resealedRecords: s.resealedRecords
        )
    }

    /// Writes the index snapshot now, so that the next open replays nothing.
    public func writeSnapshot() throws {
        try store.writeSnapshot()
    }

    /// Compacts segments whose live ratio is below ``Configuration/compactionThreshold``.
    /// - Returns: how many segments were compacted.
    @discardableResult
    public func compact() throws -> Int {
        defer { publishMetrics() }
        return try store.compact()
    }

    /// Writes a snapshot and releases the directory. Later calls throw ``CacheError/Code/closed``
    /// (reads are misses) until ``reopen(encryption:)``.
    public func close() throws {
        try store.close()
    }

    /// The directory's keyed digest (``KeyedDigest``): the same for as long as the directory
    /// lives, across reopening.
    package nonisolated var keyedDigest: KeyedDigest { readers.reader.keyedDigest }

    /// Whether the tier is open: not closed, or reopened since.
    public var isOpen: Bool { store.isOpen }

    /// Opens the directory again with `encryption`, closing it first if it is open: an app that
    /// closed its cache when it went idle reopens it with its key.
    ///
    /// Statistics start again from zero. On failure the tier stays closed and the directory as it was.
    /// - Parameter encryption: the keys, or nil for a plain directory.
    /// - Throws: as ``init(configuration:)``: ``CacheError/Code/wrongKey``,
    ///   ``CacheError/Code/encryptionMismatch``, ``CacheError/Code/directoryLocked``, I/O errors.
    public func reopen(encryption: DiskEncryption?) throws {
        if store.isOpen { try store.close() }
        var configuration = configuration
        configuration.encryption = encryption
        store = try DiskStore(configuration: configuration)
        readers.publish(store.reader)
        published = DiskStore.Statistics()
        metrics.recovery.recordNanoseconds(Int64(Self.nanoseconds(store.recovery.duration)))
    }

    /// Seals every record with the current key of ``Configuration/encryption`` and then the
    /// directory's key check, so that the previous keys can be forgotten: after it returns, the
    /// directory opens with the current key alone. Open the tier with the new key as the current
    /// one and the old keys as previous ones first.
    /// - Returns: how many records were sealed again.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a tier without encryption; I/O errors (the
    ///   directory then still opens with the old keys given too).
    /// - Complexity: O(bytes on disk): every segment is rewritten.
    @discardableResult
    public func rekey() throws -> Int {
        defer { publishMetrics() }
        return try store.rekey()
    }

    /// Removes a closed cache directory and everything the tier keeps in it, without needing its
    /// key: the way to start again after a lost key.
    /// - Parameter directory: the cache directory; one that does not exist is fine.
    /// - Throws: ``CacheError/Code/directoryLocked`` while a tier has it open, in this process or
    ///   another; I/O errors.
    public static func reset(directory: String) throws {
        try DiskStore.reset(directory: directory)
    }

    /// Maintenance until cancelled or until graceful shutdown: every
    /// ``Configuration/maintenanceInterval``, compact and write an index snapshot. On the way out it
    /// writes a last snapshot (the tier stays open; call ``close()`` to release the directory).
    public func run() async throws {
        let interval = configuration.maintenanceInterval
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    break
                }
                await self.maintain()
            }
        }
        try? store.writeSnapshot()
    }

    /// One maintenance pass: compaction, then a snapshot. Errors are logged, not thrown: the loop goes on.
    package func maintain() {
        do {
            try store.compact()
            try store.writeSnapshot()
        } catch {
            configuration.logger.error("disk maintenance failed", metadata: ["error": "\(error)"])
        }
        publishMetrics()
    }

    /// Publishes the writer's counters; readers count their own (hits, misses, bytes read and
    /// damaged records) straight into the metrics.
    private func publishMetrics() {
        let now = store.counters
        func publish(_ counter: Counter, _ keyPath: KeyPath<DiskStore.Statistics, Int>) {
            let delta = now[keyPath: keyPath] - published[keyPath: keyPath]
            if delta > 0 { counter.increment(by: delta) }
        }
        publish(metrics.corrupt, \.corruptRecords)
        publish(metrics.admissionRefusals, \.admissionRefusals)
        publish(metrics.evictions, \.evictions)
        publish(metrics.writeErrors, \.writeErrors)
        publish(metrics.bytesWritten, \.bytesWritten)
        publish(metrics.bytesRead, \.bytesRead)
        publish(metrics.valueBytes, \.valueBytesWritten)
        publish(metrics.storedValueBytes, \.storedValueBytesWritten)
        publish(metrics.authenticationFailures, \.authenticationFailures)
        published = now
    }

    private static func nanoseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }
}

/// The disk tier's swift-metrics handles, created once.
private struct DiskMetrics: Sendable {
    let hits: Counter
    let misses: Counter
    let corrupt: Counter
    let admissionRefusals: Counter
    let evictions: Counter
    let writeErrors: Counter
    let bytesWritten: Counter
    let bytesRead: Counter
    let valueBytes: Counter
    let storedValueBytes: Counter
    let authenticationFailures: Counter
    let recovery: Metrics.Timer

    init(factory: any MetricsFactory) {
        func counter(_ label: String) -> Counter { Counter(label: label, dimensions: [], factory: factory) }
        hits = counter("layeredcache_disk_hits_total")
        misses = counter("layeredcache_disk_misses_total")
        corrupt = counter("layeredcache_disk_corrupt_records_total")
        admissionRefusals = counter("layeredcache_disk_admission_refusals_total")
        evictions = counter("layeredcache_disk_evictions_total")
        writeErrors = counter("layeredcache_disk_write_errors_total")
        bytesWritten = counter("layeredcache_disk_bytes_written_total")
        bytesRead = counter("layeredcache_disk_bytes_read_total")
        valueBytes = counter("layeredcache_disk_value_bytes_total")
        storedValueBytes = counter("layeredcache_disk_stored_value_bytes_total")
        authenticationFailures = counter("layeredcache_disk_authentication_failures_total")
        recovery = Metrics.Timer(label: "layeredcache_disk_recovery_duration", dimensions: [], factory: factory)
    }
}
