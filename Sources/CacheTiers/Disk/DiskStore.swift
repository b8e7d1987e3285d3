// SPDX-License-Identifier: Apache-2.0

package import Logging
import SystemPackage

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The disk tier's engine: an append-only log of segments, an index, and the rules that keep them
/// consistent. Its writes are synchronous and not thread-safe: ``DiskTier`` (an actor) owns one,
/// tests and tools drive one directly. Its reads go through ``reader``, which any number of
/// tasks may use at once (see ``DiskReader`` and ``SegmentHandle``).
package final class DiskStore {
    /// A segment file and what the store knows of it.
    package struct Segment {
        /// The open file, shared with readers in flight.
        package var handle: SegmentHandle
        /// Bytes in the file, header included.
        package var size: Int

        package init(handle: SegmentHandle, size: Int, newestStoredAtMillis: Int64 = .max) {
            self.handle = handle
            self.size = size
            self.newestStoredAtMillis = newestStoredAtMillis
        }

        package var sequence: UInt32 { handle.sequence }
        package var file: CacheFile { handle.file }
        /// Bytes of records the index points at.
        package var liveBytes: Int { handle.liveBytes }
        /// The latest `storedAt` of any record in the segment, in ms since 1970; `Int64.max` while
        /// unknown (a segment the index snapshot covered). ``removeEntries(storedSince:)`` reads
        /// only the segments whose newest record is at or after its date.
        package var newestStoredAtMillis: Int64
    }

    /// Counters since open.
    package struct Statistics: Hashable, Sendable {
        package var hits = 0
        package var misses = 0
        package var corruptRecords = 0
        package var admissionRefusals = 0
        package var evictions = 0
        package var secondChances = 0
        package var compactedSegments = 0
        package var bytesWritten = 0
        package var bytesRead = 0
        package var valueBytesWritten = 0
        package var storedValueBytesWritten = 0
        package var writeErrors = 0
        /// Encrypted records that did not authenticate (tampered, or sealed with a key not given).
        package var authenticationFailures = 0
        /// Records sealed again with the current key (compaction, retirement, ``DiskStore/rekey()``).
        package var resealedRecords = 0
    }

    /// The fixed header at the start of every segment file: magic "LCSG", format version, sequence.
    package static let segmentHeaderSize = 16
    package static let segmentMagic: UInt32 = 0x4753_434C  // "LCSG" in file order
    /// The segment format this version writes and the newest it reads (docs/disk-format.md).
    /// Version 2 added batch markers, which a reader of version 1 would take for damage, and so
    /// apply the rest of a torn batch.
    package static let segmentFormatVersion: UInt32 = 2

    package let configuration: DiskTier.Configuration
    package let directory: CacheDirectory
    package var logger: Logger { configuration.logger }
    /// The index, striped so that readers on many cores do not queue behind each other.
    package let index = StripedIndex()
    /// The read path, safe to use from any task while this store writes.
    package private(set) var reader: DiskReader
    /// Open segments by sequence number; ``order`` lists them oldest first, the last one active.
    package internal(set) var segments: [UInt32: Segment] = [:]
    package internal(set) var order: [UInt32] = []
    package internal(set) var snapshotBytes = 0
    /// The log's position when the last snapshot was written (or found current at open); nil
    /// when the snapshot on disk, if any, is behind.
    var snapshotPosition: LogPosition?
    /// The sum of the segments' sizes, kept up to date on every change (the write path reads it).
    package internal(set) var segmentBytesTotal = 0
    /// The writer's counters; ``statistics`` adds the readers'.
    var counters = Statistics()
    package internal(set) var recovery = RecoveryReport()
    /// Segments found at open that could not be read, set aside (see ``abandonSegment(_:reason:)``).
    package internal(set) var unreadableSegments: [UInt32] = []
    /// The keys of an encrypted store; nil for a plain one.
    package internal(set) var cipher: RecordCipher?
    var lastSync = ContinuousClock.now
    var unsyncedBytes = 0
    var isClosed = false

    /// Opens (or creates) the store in `configuration.directory`, takes its lock, checks the
    /// encryption key (before anything is read or changed) and recovers.
    /// - Throws: ``CacheError/Code/directoryLocked`` when another owner has it;
    ///   ``CacheError/Code/wrongKey`` or ``CacheError/Code/encryptionMismatch`` when the keys do not
    ///   fit the directory; I/O errors.
    package init(configuration: DiskTier.Configuration) throws {
        try configuration.validate()
        self.configuration = configuration
        self.directory = try CacheDirectory(path: FilePath(configuration.directory))
        self.reader = DiskReader(index: index, cipher: nil, keyedDigest: .random(), logger: configuration.logger)
        do {
            cipher = try KeyCheckFile.open(
                directory,
                encryption: configuration.encryption,
                create: true,
                faults: configuration.faults
            )
            let keyedDigest =
                try configuration.encryption.map { KeyedDigest(derivedFrom: $0.key) }
                ?? KeyedDigest.open(directory, faults: configuration.faults)
            reader = DiskReader(index: index, cipher: cipher, keyedDigest: keyedDigest, logger: configuration.logger)
            try recover()
        } catch {
            releaseFiles()
            throw error
        }
    }

    deinit {
        releaseFiles()
    }

    /// Lets go of the segments and releases the directory lock, once: a descriptor closed twice
    /// may by then number a file another thread opened, which the second close would take from it.
    /// (A class whose initializer throws still runs `deinit`, after the initializer's own cleanup.)
    /// The index is emptied first, so that reads miss; each segment's descriptor is closed when the
    /// last reader in flight lets go of it (see ``SegmentHandle``).
    private func releaseFiles() {
        guard !isClosed else { return }
        isClosed = true
        index.removeAll()
        for sequence in segments.keys { index.removeSegment(sequence) }
        segments.removeAll()
        directory.unlock()
    }

    /// Counters since open: the writer's and the readers'.
    package var statistics: Statistics {
        var statistics = counters
        let read = index.readCounters
        statistics.hits += read.hits
        statistics.misses += read.misses
        statistics.bytesRead += read.bytesRead
        statistics.corruptRecords += read.corrupt
        statistics.authenticationFailures += read.unauthenticated
        return statistics
    }

    // MARK: Sizes

    /// Every byte the store has on disk: segments and snapshot.
    package var totalBytes: Int { segmentBytesTotal + snapshotBytes }

    package var liveBytes: Int {
        segments.values.reduce(0) { $0 + $1.liveBytes }
    }

    var activeSequence: UInt32 { order[order.count - 1] }

    // MARK: Reads

    /// The entry stored for `key`, or nil: ``DiskReader/entry(for:)``.
    ///
    /// A record that fails its checksum is a miss: counted, logged and dropped from the index.
    /// - Complexity: O(1) index lookup and one positional read of the record.
    package func entry(for key: CacheKey) -> CacheEntry? {
        reader.entry(for: key)
    }

    /// Reads the record at `location` and checks its checksum; a bad one is dropped and counted.
    /// - Parameter authenticatedLater: the caller opens an encrypted record, whose AES-GCM tag
    ///   covers every byte the checksum does (the checksum field aside): its checksum is skipped.
    func readVerifiedRecord(_ location: IndexEntry, authenticatedLater: Bool = false) -> [UInt8]? {
        guard let segment = segments[location.segment] else {
            dropCorrupt(location, reason: "segment \(location.segment) is gone")
            return nil
        }
        let record: [UInt8]?
        do {
            record = try DiskReader.readRecord(location, from: segment.file)
        } catch {
            logger.error("disk read failed", metadata: ["error": "\(error)"])
            return nil
        }
        guard let record else {
            dropCorrupt(location, reason: "record extends past the end of its segment or its header is damaged")
            return nil
        }
        counters.bytesRead += record.count
        let valid = record.withUnsafeBytes { bytes in
            if authenticatedLater, let header = RecordFormat.parseHeader(bytes), header.flags.contains(.encrypted) {
                return header.recordLength == bytes.count
            }
            return RecordFormat.verifiedHeader(bytes) != nil
        }
        guard valid else {
            dropCorrupt(location, reason: "checksum mismatch")
            return nil
        }
        return record
    }

    func dropCorrupt(_ location: IndexEntry, reason: String) {
        drop(location, counting: \.corruptRecords, "corrupt record dropped", reason: reason)
    }

    /// Counts, logs and forgets a record that must not be served.
    func drop(
        _ location: IndexEntry,
        counting counter: WritableKeyPath<Statistics, Int>,
        _ message: Logger.Message,
        reason: String
    ) {
        counters[keyPath: counter] += 1
        logger.warning(
            message,
            metadata: [
                "segment": "\(location.segment)", "offset": "\(location.offset)", "reason": "\(reason)",
            ]
        )
        if let removed = index.remove(location.digest) {
            segments[removed.segment]?.handle.addLiveBytes(-removed.length)
        }
    }

    // MARK: Writes

    /// The outcome of a store.
    package enum SetOutcome: Hashable, Sendable {
        case stored
        /// Larger than the admission limit: not written, and any older value of the key removed.
        case refused
    }

    /// Stores `entry` for `key`.
    /// - Throws: ``CacheError/Code/outOfSpace`` or ``CacheError/Code/io`` when the write fails; the
    ///   key's older value is then forgotten, and nothing else changes.
    @discardableResult
    package func set(_ entry: CacheEntry, for key: CacheKey) throws -> SetOutcome {
        try checkOpen()
        let digest = digest(for: key)
        let (record, storedValueBytes) = try encodePut(entry, for: key, digest: digest)
        guard record.count <= configuration.admissionLimit else {
            counters.admissionRefusals += 1
            try remove(digest)
            return .refused
        }
        let location: (segment: UInt32, offset: Int)
        do {
            location = try append(record)
        } catch {
            // The new value is not on disk; the old one must not be served in its place.
            forgetAfterFailedWrite([digest])
            throw error
        }
        counters.valueBytesWritten += entry.value.count
        counters.storedValueBytesWritten += storedValueBytes
        let stored = IndexEntry(
            digest: digest,
            segment: location.segment,
            offset: UInt32(location.offset),
            length: record.count
        )
        if let old = index.update(stored) {
            segments[old.segment]?.handle.addLiveBytes(-old.length)
        }
        // Live bytes are counted in size classes, as the index knows lengths.
        segments[location.segment]?.handle.addLiveBytes(stored.length)
        try enforceCapacity()
        return .stored
    }

    /// Removes the entry for `key`.
    /// - Returns: whether there was one.
    @discardableResult
    package func remove(_ key: CacheKey) throws -> Bool {
        try checkOpen()
        return try remove(digest(for: key))
    }

    @discardableResult
    func remove(_ digest: UInt64) throws -> Bool {
        guard index[digest] != nil else { return false }
        let tombstone = try RecordFormat.encodeTombstone(digest: digest, storedAtMillis: nowMillis())
        do {
            _ = try append(tombstone)
        } catch {
            forgetAfterFailedWrite([digest])
            throw error
        }
        if let removed = index.remove(digest) {
            segments[removed.segment]?.handle.addLiveBytes(-removed.length)
        }
        return true
    }

    /// A put record of `entry` for `key` (whose digest is `digest`), sealed in an encrypted store;
    /// marked as written in a batch when `inBatch`.
    /// - Returns: the record, and the bytes its value takes in it (compressed or not).
    func encodePut(
        _ entry: CacheEntry,
        for key: CacheKey,
        digest: UInt64,
        inBatch: Bool = false
    ) throws -> (record: [UInt8], storedValueBytes: Int) {
        var record = try RecordFormat.encodePut(
            key: key,
            metadata: entry.metadata,
            value: entry.value,
            storedAtMillis: entry.storedAt.millisecondsSince1970,
            checksummed: cipher == nil  // a sealed record gets its checksum when it is sealed
        )
        if inBatch { RecordFormat.markInBatch(&record, checksummed: cipher == nil) }
        let storedValueBytes = record.count - RecordFormat.headerSize - key.string.utf8.count - entry.metadata.count
        if let cipher {
            record = try RecordFormat.seal(record, digest: digest, cipher: cipher)
        }
        return (record, storedValueBytes)
    }

    /// After a failed write, drop the keys from the index so that an older value is not served in
    /// place of the newer one. A restart may bring the older value back; it never brings wrong bytes.
    func forgetAfterFailedWrite(_ digests: [UInt64]) {
        counters.writeErrors += 1
        for digest in digests {
            if let removed = index.remove(digest) {
                segments[removed.segment]?.handle.addLiveBytes(-removed.length)
            }
        }
    }

    /// Removes every entry: a clear marker at the head of a fresh segment, then every older segment
    /// deleted. A crash in between is harmless: replay meets the marker and forgets what precedes it.
    /// When the marker cannot be written, every entry is forgotten all the same (nothing removed is
    /// served again by this store; a restart may bring the older entries back, as after any failed
    /// write) and the error is thrown.
    package func removeAll() throws {
        try checkOpen()
        do {
            try rotate()
            _ = try append(try RecordFormat.encodeClear(storedAtMillis: nowMillis()))
            try syncActive()
        } catch {
            counters.writeErrors += 1
            index.forEachEntry { entry in segments[entry.segment]?.handle.addLiveBytes(-entry.length) }
            index.removeAll()
            throw error
        }
        index.removeAll()
        for sequence in order.dropLast() {
            try deleteSegment(sequence)
        }
        try writeSnapshot()
    }

    func nowMillis() -> Int64 {
        configuration.now().millisecondsSince1970
    }

    func checkOpen() throws {
        guard !isClosed else { throw CacheError(code: .closed, message: "the disk tier is closed") }
    }

    // MARK: Closing

    /// Whether the store is still open (``close()`` was not called).
    package var isOpen: Bool { !isClosed }

    /// Writes an index snapshot, flushes and releases the directory.
    package func close() throws {
        guard !isClosed else { return }
        defer { releaseFiles() }
        try writeSnapshot()
    }
}

/// A position in a store's log (see ``DiskStore/logPosition``).
struct LogPosition: Hashable {
    var firstSegment: UInt32
    var segmentCount: Int
    var activeSegment: UInt32
    var activeSize: Int
}
