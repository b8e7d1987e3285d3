// SPDX-License-Identifier: Apache-2.0

/// Walks the records of a segment's bytes in order, skipping damage.
///
/// At each position it expects a record whose header parses and whose checksum matches. When one
/// does not, it searches forward for the next position that holds a valid record (magic, sane
/// header, matching checksum): the bytes between are a corrupt region. Damage with no valid record
/// after it is the tail: after a crash, a torn write; anywhere else, corruption.
package enum RecordScanner {
    package struct Result: Hashable, Sendable {
        /// Offset just past the last valid record (relative to the scanned bytes).
        package var validEnd = 0
        package var validRecords = 0
        /// Damaged regions followed by a valid record.
        package var corruptRegions = 0
        /// Whether damaged bytes follow the last valid record.
        package var damagedTail = false
        /// Batches that damage interrupted (``scanCommitted(_:_:)``): none of their records counts.
        package var droppedBatches = 0
    }

    /// Calls `body` with each valid record's header, bytes and offset, in order.
    package static func scan(
        _ bytes: UnsafeRawBufferPointer,
        _ body: (RecordHeader, UnsafeRawBufferPointer, Int) throws -> Void
    ) rethrows -> Result {
        var result = Result()
        var position = 0
        while position < bytes.count {
            if let header = validRecord(in: bytes, at: position) {
                let end = position + header.recordLength
                try body(header, UnsafeRawBufferPointer(rebasing: bytes[position..<end]), position)
                result.validRecords += 1
                position = end
                result.validEnd = end
                continue
            }
            guard let next = nextValidRecord(in: bytes, after: position) else {
                result.damagedTail = true
                break
            }
            result.corruptRegions += 1
            position = next
        }
        return result
    }

    /// As ``scan(_:_:)``, keeping batches whole: a batch marker is not passed on, and the records
    /// it starts are passed on, in order, only once all of them have followed it, valid, each
    /// right after the one before, filling the length the marker gives. A batch that damage, or a
    /// record of another kind, interrupts is dropped, and so is a record written in a batch that
    /// is met outside a whole one (its marker lost): they are counted in `droppedBatches`. A batch
    /// that the end of the bytes cuts off is a torn tail: `validEnd` is then its marker's offset
    /// and `damagedTail` is set, so that recovery cuts the segment there.
    package static func scanCommitted(
        _ bytes: UnsafeRawBufferPointer,
        _ body: (RecordHeader, UnsafeRawBufferPointer, Int) -> Void
    ) -> Result {
        var pending: [(header: RecordHeader, offset: Int)] = []
        var open: (marker: Int, missing: Int, next: Int, end: Int)?
        var dropped = 0
        var strays = false  // records of a dropped batch follow: they are dropped too, uncounted
        var result = scan(bytes) { header, record, offset in
            if var batch = open {
                let fits = offset == batch.next && offset + header.recordLength <= batch.end
                if fits, header.flags.contains(.inBatch) {
                    pending.append((header, offset))
                    batch.next = offset + header.recordLength
                    batch.missing -= 1
                    open = batch
                    guard batch.missing == 0 else { return }
                    open = nil
                    if batch.next == batch.end {
                        for (header, offset) in pending {
                            let end = offset + header.recordLength
                            body(header, UnsafeRawBufferPointer(rebasing: bytes[offset..<end]), offset)
                        }
                    } else {
                        dropped += 1
                    }
                    pending.removeAll(keepingCapacity: true)
                    return
                }
                open = nil
                pending.removeAll(keepingCapacity: true)
                dropped += 1
                strays = true
            }
            if header.flags.contains(.batch) {
                let end = offset + header.recordLength + RecordFormat.batchLength(record)
                open = (offset, header.originalValueLength, offset + header.recordLength, end)
                strays = false
            } else if header.flags.contains(.inBatch) {
                if !strays { dropped += 1 }
                strays = true
            } else {
                strays = false
                body(header, record, offset)
            }
        }
        if let open {
            result.validRecords -= pending.count + 1
            result.validEnd = open.marker
            result.damagedTail = true
        }
        result.droppedBatches = dropped
        return result
    }

    /// The header of the valid record at `position`, if there is one.
    package static func validRecord(in bytes: UnsafeRawBufferPointer, at position: Int) -> RecordHeader? {
        guard bytes.count - position >= RecordFormat.headerSize,
            let header = RecordFormat.parseHeader(UnsafeRawBufferPointer(rebasing: bytes[position...])),
            header.recordLength <= bytes.count - position
        else { return nil }
        let record = UnsafeRawBufferPointer(rebasing: bytes[position..<(position + header.recordLength)])
        return RecordFormat.computeChecksum(record) == header.checksum ? header : nil
    }

    private static func nextValidRecord(in bytes: UnsafeRawBufferPointer, after position: Int) -> Int? {
        let first = UInt8(truncatingIfNeeded: RecordFormat.magic)
        var candidate = position + 1
        while candidate + RecordFormat.headerSize <= bytes.count {
            if bytes[candidate] == first,
                UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: candidate, as: UInt32.self))
                    == RecordFormat.magic,
                validRecord(in: bytes, at: candidate) != nil
            {
                return candidate
            }
            candidate += 1
        }
        return nil
    }
}
