// SPDX-License-Identifier: Apache-2.0

package import Logging
import SystemPackage

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
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

        package init(handle: SegmentHandle, size: Int) {
            self.handle = handle
            self.size = size
        }

        package var sequence: UInt32 { handle.sequence }
        package var file: CacheFile { handle.file }
        /// Bytes of records the index points at.
        package var liveBytes: Int { handle.liveBytes }
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
    /// The sum of the segments' sizes, kept up to date on every change (the write path reads it).
    package internal(set) var segmentBytesTotal = 0
    /// The writer's counters; ``statistics`` adds the readers'.
    var counters = Statistics()
    package internal(set) var recovery = RecoveryReport()
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
        self.reader = DiskReader(index: index, cipher: nil, logger: configuration.logger)
        do {
            cipher = try KeyCheckFile.open(
                directory,
                encryption: configuration.encryption,
                create: true,
                faults: configuration.faults
            )
            reader = DiskReader(index: index, cipher: cipher, logger: configuration.logger)
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
            record = try segment.file.read(count: location.length, at: Int64(location.offset))
        } catch {
            logger.error("disk read failed", metadata: ["error": "\(error)"])
            return nil
        }
        guard let record else {
            dropCorrupt(location, reason: "record extends past the end of its segment")
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
        var record = try RecordFormat.encodePut(
            key: key,
            metadata: entry.metadata,
            value: entry.value,
            storedAtMillis: entry.storedAt.millisecondsSince1970,
            checksummed: cipher == nil  // a sealed record gets its checksum when it is sealed
        )
        let storedValueBytes = record.count - RecordFormat.headerSize - key.string.utf8.count - entry.metadata.count
        if let cipher {
            record = try RecordFormat.seal(record, digest: digest, cipher: cipher)
        }
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
            forgetAfterFailedWrite(digest)
            throw error
        }
        counters.valueBytesWritten += entry.value.count
        counters.storedValueBytesWritten += storedValueBytes
        let stored = IndexEntry(
            digest: digest,
            segment: location.segment,
            offset: UInt32(location.offset),
            length: record.count,
            storedAtSeconds: IndexEntry.seconds(fromMillis: entry.storedAt.millisecondsSince1970)
        )
        if let old = index.update(stored) {
            segments[old.segment]?.handle.addLiveBytes(-old.length)
        }
        segments[location.segment]?.handle.addLiveBytes(record.count)
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
            forgetAfterFailedWrite(digest)
            throw error
        }
        if let removed = index.remove(digest) {
            segments[removed.segment]?.handle.addLiveBytes(-removed.length)
        }
        return true
    }

    /// After a failed write, drop the key from the index so that an older value is not served in
    /// place of the newer one. A restart may bring the older value back; it never brings wrong bytes.
    private func forgetAfterFailedWrite(_ digest: UInt64) {
        counters.writeErrors += 1
        if let removed = index.remove(digest) {
            segments[removed.segment]?.handle.addLiveBytes(-removed.length)
        }
    }

    /// Removes every entry: a clear marker at the head of a fresh segment, then every older segment
    /// deleted. A crash in between is harmless: replay meets the marker and forgets what precedes it.
    package func removeAll() throws {
        try checkOpen()
        try rotate()
        _ = try append(try RecordFormat.encodeClear(storedAtMillis: nowMillis()))
        try syncActive()
        index.removeAll()
        for sequence in order.dropLast() {
            try deleteSegment(sequence)
        }
        try writeSnapshot()
    }

    /// Removes every entry stored at or after `date` (to the second: entries stored up to a
    /// second before `date` may go too).
    /// - Returns: how many entries were removed.
    @discardableResult
    package func removeEntries(storedSince date: Date) throws -> Int {
        try checkOpen()
        let threshold = IndexEntry.seconds(fromMillis: date.millisecondsSince1970)
        let doomed = index.filter { $0.storedAtSeconds >= threshold }
        for entry in doomed {
            try remove(entry.digest)
        }
        return doomed.count
    }

    func nowMillis() -> Int64 {
        configuration.now().millisecondsSince1970
    }

    func checkOpen() throws {
        guard !isClosed else { throw CacheError(code: .closed, message: "the disk tier is closed") }
    }

    // MARK: Appending

    /// Appends `record` to the active segment, starting a new segment when it would not fit.
    /// On a failed write the segment is cut back to where it was, so no torn record stays behind.
    func append(_ record: [UInt8]) throws -> (segment: UInt32, offset: Int) {
        if let active = segments[activeSequence], active.size > Self.segmentHeaderSize,
            active.size + record.count > configuration.effectiveSegmentBytes
        {
            try rotate()
        }
        let sequence = activeSequence
        guard let active = segments[sequence] else { preconditionFailure("active segment missing") }
        let offset = active.size
        do {
            try record.withUnsafeBytes { try active.file.write($0, at: Int64(offset)) }
        } catch {
            try? active.file.truncate(to: Int64(offset))
            logger.error("disk write failed", metadata: ["error": "\(error)"])
            throw error
        }
        segments[sequence]?.size = offset + record.count
        segmentBytesTotal += record.count
        counters.bytesWritten += record.count
        unsyncedBytes += record.count
        if let interval = configuration.fsync.interval, ContinuousClock.now - lastSync >= interval {
            try syncActive()
        }
        return (sequence, offset)
    }

    /// Closes the active segment and starts the next one.
    func rotate() throws {
        if configuration.fsync.syncsOnRotation, !order.isEmpty {
            try syncActive()
        }
        let next = (order.last ?? 0) + 1
        try createSegment(next)
    }

    func createSegment(_ sequence: UInt32) throws {
        let path = directory.segmentPath(sequence)
        let file = try CacheFile.open(path, create: true, faults: configuration.faults)
        var header = [UInt8](repeating: 0, count: Self.segmentHeaderSize)
        header.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: Self.segmentMagic.littleEndian, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: UInt32(1).littleEndian, toByteOffset: 4, as: UInt32.self)
            bytes.storeBytes(of: sequence.littleEndian, toByteOffset: 8, as: UInt32.self)
        }
        do {
            try file.truncate(to: 0)
            try header.withUnsafeBytes { try file.write($0, at: 0) }
        } catch {
            file.close()
            try? directory.remove(path)
            throw error
        }
        let handle = SegmentHandle(sequence: sequence, file: file)
        segments[sequence] = Segment(handle: handle, size: Self.segmentHeaderSize)
        index.addSegment(handle)
        segmentBytesTotal += Self.segmentHeaderSize
        order.append(sequence)
        if configuration.fsync.syncsOnRotation { directory.sync() }
    }

    func syncActive() throws {
        guard unsyncedBytes > 0, let active = segments[activeSequence] else { return }
        try active.file.sync()
        unsyncedBytes = 0
        lastSync = .now
    }

    func deleteSegment(_ sequence: UInt32) throws {
        // The index no longer points into it (retirement and compaction removed or moved its
        // entries): new lookups cannot find it; readers in flight keep its descriptor open.
        index.removeSegment(sequence)
        guard let segment = segments.removeValue(forKey: sequence) else { return }
        segmentBytesTotal -= segment.size
        order.removeAll { $0 == sequence }
        try directory.remove(directory.segmentPath(sequence))
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
