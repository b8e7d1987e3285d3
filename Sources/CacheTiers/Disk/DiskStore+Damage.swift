// SPDX-License-Identifier: Apache-2.0

import Logging
import SystemPackage

/// Segments that cannot be read: they cost their own entries, never the rest of the store.
extension DiskStore {
    /// Whether `error`, met opening or reading a segment, means that the segment cannot be read
    /// (it is a directory, it is gone, the disk returns EIO): the segment is then set aside. A
    /// shortage of the process (descriptors, memory) or a newer format is not damage: opening
    /// fails with it, rather than forget a segment that a later open would read.
    static func isDamage(_ error: CacheError) -> Bool {
        guard error.code == .io, let errno = error.underlying as? Errno else { return false }
        let shortages: [Errno] = [
            .tooManyOpenFiles, .tooManyOpenFilesInSystem, .noMemory, .resourceTemporarilyUnavailable, .interrupted,
        ]
        return !shortages.contains(errno)
    }

    /// Sets aside segment `sequence`, which cannot be read while the store opens: its entries
    /// leave the index (reads of them miss), it leaves the store, and its file stays where it is,
    /// its sequence number taken (new segments go above it). Counted as one corrupt record and
    /// logged once, with the reason.
    func abandonSegment(_ sequence: UInt32, reason: String) {
        let dropped = removeEntries(inSegment: sequence)
        if segments.removeValue(forKey: sequence) != nil {
            index.removeSegment(sequence)
            order.removeAll { $0 == sequence }
        }
        unreadableSegments.append(sequence)
        counters.corruptRecords += 1
        recovery.corruptRegions += 1
        logger.warning(
            "unreadable segment set aside; its entries are misses, the other segments serve on",
            metadata: [
                "segment": "\(sequence)", "droppedEntries": "\(dropped)", "reason": "\(reason)",
                "file": "\(directory.segmentPath(sequence))",
            ]
        )
    }

    /// Drops segment `sequence`, whose bytes could not be read back after the store opened
    /// (compaction): its entries leave the index and the segment is deleted. Counted as one
    /// corrupt record and logged once.
    func dropUnreadableSegment(_ sequence: UInt32, reason: String) throws {
        let dropped = removeEntries(inSegment: sequence)
        counters.corruptRecords += 1
        logger.warning(
            "unreadable segment dropped; its entries are misses",
            metadata: ["segment": "\(sequence)", "droppedEntries": "\(dropped)", "reason": "\(reason)"]
        )
        try deleteSegment(sequence)
    }

    /// Removes every index entry that points into segment `sequence`.
    /// - Returns: how many there were.
    private func removeEntries(inSegment sequence: UInt32) -> Int {
        var dropped = 0
        for entry in index.filter({ $0.segment == sequence }) where index.remove(entry.digest) != nil {
            segments[sequence]?.handle.addLiveBytes(-entry.length)
            dropped += 1
        }
        return dropped
    }
}
