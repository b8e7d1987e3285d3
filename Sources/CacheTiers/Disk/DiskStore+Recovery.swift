// SPDX-License-Identifier: Apache-2.0

import Logging

/// What opening a directory found and did.
package struct RecoveryReport: Hashable, Sendable {
    /// Whether a valid index snapshot was loaded.
    package var usedSnapshot = false
    package var snapshotEntries = 0
    package var replayedRecords = 0
    package var replayedBytes = 0
    /// Damaged regions skipped inside segments.
    package var corruptRegions = 0
    /// Bytes cut from segment tails (torn writes).
    package var truncatedBytes = 0
    /// Batches that damage interrupted: none of their records was applied.
    package var droppedBatches = 0
    package var duration: Duration = .zero
}

extension DiskStore {
    /// Opens the segments, loads the snapshot, replays what follows it and cuts torn tails.
    func recover() throws {
        let clock = ContinuousClock()
        let start = clock.now
        for sequence in try directory.segmentSequences() {
            do {
                try openSegment(sequence)
            } catch let error as CacheError where Self.isDamage(error) {
                abandonSegment(sequence, reason: "\(error)")
            }
        }

        var replayFrom: (sequence: UInt32, offset: Int)? = order.first.map { ($0, Self.segmentHeaderSize) }
        if let snapshot = loadSnapshot() {
            index.replaceTables(snapshot.tables)
            recovery.usedSnapshot = true
            recovery.snapshotEntries = snapshot.entryCount
            if segments[snapshot.coveredSegment] != nil {
                replayFrom = (snapshot.coveredSegment, snapshot.coveredOffset)
            } else {
                replayFrom = order.first { $0 > snapshot.coveredSegment }.map { ($0, Self.segmentHeaderSize) }
            }
        }

        var clearedBefore: UInt32?
        if let replayFrom {
            for sequence in order where sequence >= replayFrom.sequence {
                let offset = sequence == replayFrom.sequence ? replayFrom.offset : Self.segmentHeaderSize
                do {
                    if try replay(sequence, from: offset) {
                        clearedBefore = sequence
                    }
                } catch let error as CacheError where Self.isDamage(error) {
                    abandonSegment(sequence, reason: "\(error)")
                }
            }
        }
        if let clearedBefore {
            for sequence in order where sequence < clearedBefore {
                try deleteSegment(sequence)
            }
        }
        recomputeLiveBytes()
        segmentBytesTotal = segments.values.reduce(0) { $0 + $1.size }
        if let snapshotSize = try? CacheFile.open(directory.snapshotPath, create: false, readOnly: true) {
            snapshotBytes = Int((try? snapshotSize.size()) ?? 0)
            snapshotSize.close()
        }
        if let highest = unreadableSegments.max(), highest >= order.last ?? 0 {
            // The sequence numbers of unreadable segments stay taken: new segments go above them.
            try createSegment(highest + 1)
        } else if order.isEmpty {
            try createSegment(1)
        } else if let active = segments[activeSequence], active.size >= configuration.effectiveSegmentBytes {
            try rotate()
        }
        // A snapshot that covered everything on disk, with nothing replayed or cut, is current:
        // closing without a change need not write it again (a read-only open on a full disk).
        if recovery.usedSnapshot, recovery.replayedRecords == 0, recovery.truncatedBytes == 0,
            recovery.corruptRegions == 0, let replayFrom, replayFrom.sequence == activeSequence,
            replayFrom.offset == segments[activeSequence]?.size
        {
            snapshotPosition = logPosition
        }
        recovery.duration = clock.now - start
        // An open that repaired something is worth a line in the app's log; a clean one is not.
        let repaired = recovery.corruptRegions > 0 || recovery.truncatedBytes > 0 || !unreadableSegments.isEmpty
        logger.log(
            level: repaired ? .info : .debug,
            "disk tier opened",
            metadata: [
                "directory": "\(configuration.directory)", "entries": "\(index.count)",
                "snapshot": "\(recovery.usedSnapshot)", "replayedRecords": "\(recovery.replayedRecords)",
                "corruptRegions": "\(recovery.corruptRegions)", "truncatedBytes": "\(recovery.truncatedBytes)",
                "unreadableSegments": "\(unreadableSegments)",
                "duration": "\(recovery.duration)",
            ]
        )
    }

    /// Opens segment `sequence` and adds it to the store, checking its format version.
    /// - Throws: ``CacheError/Code/unsupportedFormat`` for a newer format; I/O errors (the segment
    ///   is then not part of the store).
    private func openSegment(_ sequence: UInt32) throws {
        let file = try CacheFile.open(directory.segmentPath(sequence), create: false, faults: configuration.faults)
        // In `segments` before anything can throw, so the store's cleanup closes it.
        let handle = SegmentHandle(sequence: sequence, file: file)
        segments[sequence] = Segment(handle: handle, size: 0)
        order.append(sequence)
        index.addSegment(handle)
        segments[sequence]?.size = Int(try file.size())
        try checkFormatVersion(of: file, sequence: sequence)
    }

    /// Replays segment `sequence` from `start`, applying each valid record to the index and cutting
    /// the segment after its last valid record.
    /// - Returns: whether the segment holds a clear marker (everything before it is void).
    private func replay(_ sequence: UInt32, from start: Int) throws -> Bool {
        guard let segment = segments[sequence] else { return false }
        if segment.size < Self.segmentHeaderSize {
            // A crash while the segment was created: start it again.
            try segment.file.truncate(to: 0)
            try rewriteSegmentHeader(segment)
            segments[sequence]?.size = Self.segmentHeaderSize
            return false
        }
        let length = segment.size - start
        guard length > 0, let bytes = try segment.file.read(count: length, at: Int64(start)) else { return false }
        var sawClear = false
        let result = bytes.withUnsafeBytes { bytes in
            RecordScanner.scanCommitted(bytes) { header, record, offset in
                if apply(header, record, segment: sequence, offset: start + offset) { sawClear = true }
            }
        }
        recovery.replayedRecords += result.validRecords
        recovery.replayedBytes += result.validEnd
        recovery.corruptRegions += result.corruptRegions
        recovery.droppedBatches += result.droppedBatches
        if result.corruptRegions > 0 {
            counters.corruptRecords += result.corruptRegions
            logger.warning(
                "corrupt regions skipped during recovery",
                metadata: [
                    "segment": "\(sequence)", "regions": "\(result.corruptRegions)",
                    "droppedBatches": "\(result.droppedBatches)",
                ]
            )
        }
        if result.damagedTail {
            let validEnd = start + result.validEnd
            recovery.truncatedBytes += segment.size - validEnd
            logger.notice(
                "cutting a torn segment tail",
                metadata: ["segment": "\(sequence)", "offset": "\(validEnd)", "bytes": "\(segment.size - validEnd)"]
            )
            try segment.file.truncate(to: Int64(validEnd))
            segments[sequence]?.size = validEnd
        }
        return sawClear
    }

    /// Applies one valid record to the index. Returns true for a clear marker.
    private func apply(_ header: RecordHeader, _ record: UnsafeRawBufferPointer, segment: UInt32, offset: Int) -> Bool {
        if header.flags.contains(.clear) {
            index.removeAll()
            return true
        }
        if header.flags.contains(.tombstone) {
            index.remove(RecordFormat.tombstoneDigest(record))
            return false
        }
        index.update(
            IndexEntry(
                digest: RecordFormat.indexDigest(record, header: header),
                segment: segment,
                offset: UInt32(offset),
                length: header.recordLength
            )
        )
        return false
    }

    /// Refuses a segment written in a newer format than this version reads, before anything is
    /// replayed or cut: a directory from a newer release is never misread, nor "repaired" into
    /// data loss. A header that is not ours (a torn create) is left to replay, which restarts it.
    private func checkFormatVersion(of file: CacheFile, sequence: UInt32) throws {
        guard let header = try file.read(count: 8, at: 0), header.count == 8 else { return }
        let magic = header.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
        let version = header.withUnsafeBytes {
            UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        }
        guard magic == Self.segmentMagic, version > Self.segmentFormatVersion else { return }
        throw CacheError(
            code: .unsupportedFormat,
            message: "segment \(sequence) is in format version \(version), and this version of LayeredCache reads "
                + "version \(Self.segmentFormatVersion): open the directory with a newer release, or reset it "
                + "(DiskTier.reset) to start again"
        )
    }

    private func rewriteSegmentHeader(_ segment: Segment) throws {
        var header = [UInt8](repeating: 0, count: Self.segmentHeaderSize)
        header.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: Self.segmentMagic.littleEndian, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: Self.segmentFormatVersion.littleEndian, toByteOffset: 4, as: UInt32.self)
            bytes.storeBytes(of: segment.sequence.littleEndian, toByteOffset: 8, as: UInt32.self)
        }
        try header.withUnsafeBytes { try segment.file.write($0, at: 0) }
    }

    func recomputeLiveBytes() {
        let first = order.first ?? 0
        let live = index.liveBytes(segmentsFrom: first, count: order.isEmpty ? 0 : Int((order.last ?? 0) - first) + 1)
        for segment in segments.values { segment.handle.setLiveBytes(live[Int(segment.sequence - first)]) }
    }
}
