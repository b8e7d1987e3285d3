// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

extension DiskStore {
    /// Removes every entry stored at or after `date`, to the millisecond.
    ///
    /// The index does not keep dates (see ``IndexEntry``): each segment knows the date of its
    /// newest record, and only segments whose newest record is at or after `date` are read — in
    /// practice the newest few. A segment the index snapshot covered is read once, the first time.
    /// - Returns: how many entries were removed.
    /// - Complexity: O(bytes of the segments read).
    @discardableResult
    package func removeEntries(storedSince date: Date) throws -> Int {
        try checkOpen()
        let threshold = date.millisecondsSince1970
        var doomed: [UInt64] = []
        var firstError: (any Error)?
        for sequence in order {
            guard let segment = segments[sequence], segment.newestStoredAtMillis >= threshold else { continue }
            let length = segment.size - Self.segmentHeaderSize
            let read: [UInt8]?
            do {
                read = length > 0 ? try segment.file.read(count: length, at: Int64(Self.segmentHeaderSize)) : nil
            } catch {
                // Which of its entries are recent is unknown: all of them go.
                firstError = firstError ?? error
                doomed += index.filter { $0.segment == sequence }.map(\.digest)
                continue
            }
            guard let bytes = read else { continue }
            var newest = Int64.min
            bytes.withUnsafeBytes { bytes in
                _ = RecordScanner.scanCommitted(bytes) { header, record, offset in
                    newest = max(newest, header.storedAtMillis)
                    guard header.flags.isDisjoint(with: [.tombstone, .clear]), header.storedAtMillis >= threshold
                    else { return }
                    let digest = RecordFormat.indexDigest(record, header: header)
                    if let entry = index[digest], entry.segment == sequence,
                        Int(entry.offset) == Self.segmentHeaderSize + offset
                    {
                        doomed.append(entry.digest)
                    }
                }
            }
            segments[sequence]?.newestStoredAtMillis = newest
        }
        // A tombstone that cannot be written forgets its key all the same (see `remove(_:)`), and
        // the others are still removed: the first error is thrown once all of them are gone.
        for digest in doomed {
            do { try remove(digest) } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
        return doomed.count
    }
}
