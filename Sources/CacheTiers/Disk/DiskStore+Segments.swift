// SPDX-License-Identifier: Apache-2.0

import Logging

/// Segment files: appending records, rotating, creating and deleting segments.
extension DiskStore {
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
        let storedAt = record.withUnsafeBytes {
            Int64(littleEndian: $0.loadUnaligned(fromByteOffset: 24, as: Int64.self))
        }
        if let newest = segments[sequence]?.newestStoredAtMillis, newest < storedAt {
            segments[sequence]?.newestStoredAtMillis = storedAt
        }
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
        guard sequence <= IndexEntry.maximumSegment else {
            throw CacheError(
                code: .io,
                message: "segment sequence numbers are exhausted; reset the directory (DiskTier.reset) to start again"
            )
        }
        let path = directory.segmentPath(sequence)
        let file = try CacheFile.open(path, create: true, faults: configuration.faults)
        var header = [UInt8](repeating: 0, count: Self.segmentHeaderSize)
        header.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: Self.segmentMagic.littleEndian, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: Self.segmentFormatVersion.littleEndian, toByteOffset: 4, as: UInt32.self)
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
        segments[sequence] = Segment(handle: handle, size: Self.segmentHeaderSize, newestStoredAtMillis: .min)
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
}
