// SPDX-License-Identifier: Apache-2.0

import Logging

extension DiskStore {
    /// Retires the oldest segments while the store is over capacity. Entries read since they were
    /// written get a second chance (re-appended), within half of the retired segment's size so that
    /// each retirement frees space.
    func enforceCapacity() throws {
        while totalBytes > configuration.capacityBytes, order.count > 1 {
            try retireOldest()
        }
    }

    private func retireOldest() throws {
        let sequence = order[0]
        guard sequence != activeSequence, let segment = segments[sequence] else { return }
        let entries = index.filter { $0.segment == sequence }.sorted { $0.offset < $1.offset }
        var budget = segment.size / 2
        var appendFailed = false
        for entry in entries {
            if entry.accessed, !appendFailed, entry.length <= budget, let record = readVerifiedRecord(entry) {
                do {
                    if try move(entry, record: record, keepAccess: false) {
                        budget -= entry.length
                        counters.secondChances += 1
                    }
                    continue
                } catch {
                    appendFailed = true
                }
            }
            if let removed = index.remove(entry.digest) {
                segments[removed.segment]?.handle.addLiveBytes(-removed.length)
                counters.evictions += 1
            }
        }
        try deleteSegment(sequence)
    }

    /// Appends `record` (the bytes of `entry`) again, sealed with the current key, and points the
    /// index at the copy.
    /// - Returns: false when the record did not authenticate: it is then dropped, not moved.
    @discardableResult
    private func move(_ entry: IndexEntry, record: [UInt8], keepAccess: Bool) throws -> Bool {
        guard let record = try resealedIfStale(record, location: entry) else { return false }
        let location = try appendAgain(record)
        let moved = IndexEntry(
            digest: entry.digest,
            segment: location.segment,
            offset: UInt32(location.offset),
            length: record.count,
            accessed: keepAccess && entry.accessed
        )
        if let old = index.update(moved) {
            segments[old.segment]?.handle.addLiveBytes(-old.length)
        }
        segments[location.segment]?.handle.addLiveBytes(moved.length)
        return true
    }

    /// Compacts every closed segment whose live bytes are below `threshold` of its size: its live
    /// records (and, unless it is the oldest segment, its tombstones) are appended again and the
    /// segment is deleted.
    /// - Returns: the number of segments compacted.
    @discardableResult
    package func compact(threshold: Double? = nil) throws -> Int {
        try checkOpen()
        let threshold = threshold ?? configuration.compactionThreshold
        var compacted = 0
        for sequence in order.dropLast() {
            guard let segment = segments[sequence] else { continue }
            let payload = max(1, segment.size - Self.segmentHeaderSize)
            guard Double(segment.liveBytes) / Double(payload) < threshold else { continue }
            try compactSegment(sequence, isOldest: sequence == order.first)
            compacted += 1
        }
        counters.compactedSegments += compacted
        return compacted
    }

    func compactSegment(_ sequence: UInt32, isOldest: Bool) throws {
        guard let segment = segments[sequence] else { return }
        let length = segment.size - Self.segmentHeaderSize
        if length > 0 {
            let read: [UInt8]?
            do {
                read = try segment.file.read(count: length, at: Int64(Self.segmentHeaderSize))
            } catch let error as CacheError where Self.isDamage(error) {
                return try dropUnreadableSegment(sequence, reason: "\(error)")
            }
            guard let bytes = read else {
                return try dropUnreadableSegment(sequence, reason: "the file is shorter than the records written to it")
            }
            var copies: [(IndexEntry?, [UInt8])] = []
            _ = bytes.withUnsafeBytes { bytes in
                RecordScanner.scanCommitted(bytes) { header, record, offset in
                    if header.flags.contains(.tombstone) {
                        // An older segment may still hold a value this tombstone removes.
                        if !isOldest { copies.append((nil, [UInt8](record))) }
                        return
                    }
                    guard !header.flags.contains(.clear) else { return }
                    let digest = RecordFormat.indexDigest(record, header: header)
                    if let entry = index[digest], entry.segment == sequence,
                        Int(entry.offset) == Self.segmentHeaderSize + offset
                    {
                        copies.append((entry, [UInt8](record)))
                    }
                }
            }
            for (entry, record) in copies {
                if let entry {
                    try move(entry, record: record, keepAccess: true)
                } else {
                    _ = try appendAgain(record)
                }
            }
        }
        try deleteSegment(sequence)
    }
}

extension DiskStore {
    /// Frees space without writing a byte first: drops whole segments, oldest first, with every
    /// entry in them (no second chance: that would append), until the store's files take at most
    /// `bytes`. The active segment goes too when it must; a fresh, empty one then takes its place.
    /// The way out of a full disk, where even a tombstone cannot be appended.
    /// - Parameter bytes: the most bytes the segments and snapshot may take afterwards (at least
    ///   the size of an empty segment is kept).
    /// - Returns: how many segments and entries were dropped.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a negative target; I/O errors.
    @discardableResult
    package func evict(toBytes bytes: Int) throws -> (segments: Int, entries: Int) {
        try checkOpen()
        guard bytes >= 0 else { throw CacheError(code: .invalidArgument, message: "the target must not be negative") }
        var dropped = (segments: 0, entries: 0)
        while totalBytes > bytes, let sequence = order.first {
            let isActive = sequence == activeSequence
            if isActive, (segments[sequence]?.size ?? 0) <= Self.segmentHeaderSize { break }
            for entry in index.filter({ $0.segment == sequence }) where index.remove(entry.digest) != nil {
                counters.evictions += 1
                dropped.entries += 1
            }
            try deleteSegment(sequence)
            dropped.segments += 1
            if isActive { try createSegment(sequence + 1) }
        }
        return dropped
    }
}
