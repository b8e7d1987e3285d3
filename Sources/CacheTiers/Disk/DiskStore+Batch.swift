// SPDX-License-Identifier: Apache-2.0

/// Batches: sets and removals that a crash keeps whole.
extension DiskStore {
    /// Writes `changes` as one batch: a marker, then the records of the changes, in one write to
    /// one segment. Recovery applies the records only when every one of them is there, whole
    /// (``RecordScanner/scanCommitted(_:_:)``), so after a crash either all the changes hold or
    /// none does. Changes apply in order: a key set twice keeps the later value.
    ///
    /// A removal of a key that is not stored (nor set earlier in the batch) writes nothing. An
    /// empty batch, or one of such removals only, writes nothing.
    /// - Throws: ``CacheError/Code/valueTooLarge`` when an entry is over the admission limit, or the
    ///   batch is larger than a segment: nothing is written, nothing changes.
    ///   ``CacheError/Code/outOfSpace`` or ``CacheError/Code/io`` when the write fails: every key
    ///   of the batch is then forgotten (as a failed ``set(_:for:)`` forgets its key), and nothing
    ///   else changes.
    /// - Complexity: O(n) in the changes and their bytes, and one write.
    package func commit(_ changes: [DiskTier.Change]) throws {
        try checkOpen()
        var records: [(digest: UInt64, record: [UInt8], isRemoval: Bool)] = []
        var valueBytes = 0
        var storedValueBytes = 0
        var newestMillis = nowMillis()
        // Whether each key touched so far is stored once the batch's earlier changes apply.
        var stored: [UInt64: Bool] = [:]
        for change in changes {
            switch change {
            case .set(let entry, let key):
                let digest = digest(for: key)
                let (record, storedBytes) = try encodePut(entry, for: key, digest: digest, inBatch: true)
                storedValueBytes += storedBytes
                guard record.count <= configuration.admissionLimit else {
                    throw CacheError(
                        code: .valueTooLarge,
                        message: "the entry for \(key) takes \(record.count) bytes on disk, over the admission limit "
                            + "of \(configuration.admissionLimit): nothing of the batch was written"
                    )
                }
                valueBytes += entry.value.count
                newestMillis = max(newestMillis, entry.storedAt.millisecondsSince1970)
                stored[digest] = true
                records.append((digest, record, false))
            case .remove(let key):
                let digest = digest(for: key)
                guard stored[digest] ?? (index[digest] != nil) else { continue }
                stored[digest] = false
                var tombstone = try RecordFormat.encodeTombstone(digest: digest, storedAtMillis: nowMillis())
                RecordFormat.markInBatch(&tombstone, checksummed: true)
                records.append((digest, tombstone, true))
            }
        }
        guard !records.isEmpty else { return }
        // The marker carries the newest date of the batch: a segment's newest date must not be
        // older than any record in it (`removeEntries(storedSince:)` skips by it).
        let length = records.reduce(0) { $0 + $1.record.count }
        var batch = RecordFormat.encodeBatchMarker(count: records.count, bytes: length, storedAtMillis: newestMillis)
        batch.reserveCapacity(batch.count + length)
        for item in records { batch += item.record }
        guard batch.count <= configuration.effectiveSegmentBytes else {
            throw CacheError(
                code: .valueTooLarge,
                message: "a batch of \(batch.count) bytes is larger than a segment "
                    + "(\(configuration.effectiveSegmentBytes) bytes): nothing of it was written"
            )
        }
        let location: (segment: UInt32, offset: Int)
        do {
            location = try append(batch)
        } catch {
            // The new values are not on disk; the old ones must not be served in their place.
            forgetAfterFailedWrite(records.map(\.digest))
            throw error
        }
        counters.valueBytesWritten += valueBytes
        counters.storedValueBytesWritten += storedValueBytes
        var offset = location.offset + RecordFormat.batchMarkerSize
        for item in records {
            if item.isRemoval {
                if let removed = index.remove(item.digest) {
                    segments[removed.segment]?.handle.addLiveBytes(-removed.length)
                }
            } else {
                let entry = IndexEntry(
                    digest: item.digest,
                    segment: location.segment,
                    offset: UInt32(offset),
                    length: item.record.count
                )
                if let old = index.update(entry) {
                    segments[old.segment]?.handle.addLiveBytes(-old.length)
                }
                segments[location.segment]?.handle.addLiveBytes(entry.length)
            }
            offset += item.record.count
        }
        try enforceCapacity()
    }

    /// Appends `record`, read from a segment, again (compaction): a record written in a batch
    /// goes in a batch of its own, since it counts only inside a whole batch.
    /// - Returns: where the record itself went.
    func appendAgain(_ record: [UInt8]) throws -> (segment: UInt32, offset: Int) {
        guard record.count > 5, RecordFlags(rawValue: record[5]).contains(.inBatch) else { return try append(record) }
        let storedAt = record.withUnsafeBytes {
            Int64(littleEndian: $0.loadUnaligned(fromByteOffset: 24, as: Int64.self))
        }
        let location = try append(
            RecordFormat.encodeBatchMarker(count: 1, bytes: record.count, storedAtMillis: storedAt) + record
        )
        return (location.segment, location.offset + RecordFormat.batchMarkerSize)
    }
}
