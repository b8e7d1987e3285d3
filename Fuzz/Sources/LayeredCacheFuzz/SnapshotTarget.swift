// SPDX-License-Identifier: Apache-2.0

@testable import CacheTiers

/// The index snapshot (`SnapshotFormat`): any bytes decode or are refused without a crash; what
/// decodes keeps only entries its `accept` allows, each a valid index entry; entries encoded
/// from values decode to exactly those entries (decode(encode(x)) == x); one flipped bit is
/// refused.
enum SnapshotTarget {
    static func run(_ data: UnsafeRawBufferPointer) {
        var input = FuzzInput(data)
        let limit = input.integer(UInt32.self)
        if let snapshot = SnapshotFormat.decode(data, accept: { _, offset in offset < limit }) {
            var count = 0
            for table in snapshot.tables {
                table.forEachEntry { entry in
                    check(entry.offset < limit, "an entry the filter refused is kept")
                    check(entry.digest != 0 && IndexEntry.indexDigest(entry.digest) == entry.digest, "a bad digest")
                    count += 1
                }
            }
            check(count == snapshot.entryCount, "the count is the entries kept")
        }
        roundTrip(&input)
    }

    private static func roundTrip(_ input: inout FuzzInput) {
        var entries: [UInt64: IndexEntry] = [:]
        let minimumClass = IndexEntry.sizeClass(of: RecordFormat.headerSize)
        for _ in 0..<Int(input.byte() % 64) {
            let digest = IndexEntry.indexDigest(input.integer(UInt64.self) | 1)
            guard digest != 0 else { continue }
            let entry = IndexEntry(
                digest: digest,
                segment: input.integer(UInt32.self) & 0x3FF_FFFF,
                offset: input.integer(UInt32.self) & IndexEntry.maximumOffset,
                sizeClass: max(minimumClass, input.byte() % 0xF0),
                accessed: false
            )
            entries[digest] = entry
        }
        let covered = (segment: input.integer(UInt32.self), offset: Int(input.integer(UInt32.self)))
        let bytes = SnapshotFormat.encode(
            entries: Array(entries.values),
            coveredSegment: covered.segment,
            coveredOffset: covered.offset,
            writtenAtMillis: input.integer(Int64.self)
        )
        let decoded = bytes.withUnsafeBytes { SnapshotFormat.decode($0, accept: { _, _ in true }) }
        guard let decoded else {
            check(false, "an encoded snapshot decodes")
            return
        }
        check(decoded.coveredSegment == covered.segment && decoded.coveredOffset == covered.offset, "the position")
        var back: [UInt64: IndexEntry] = [:]
        for table in decoded.tables {
            table.forEachEntry { back[$0.digest] = $0 }
        }
        check(back.count == entries.count && decoded.entryCount == entries.count, "every entry comes back")
        for (digest, entry) in entries {
            let other = back[digest]
            check(
                other?.segment == entry.segment && other?.offset == entry.offset && other?.sizeClass == entry.sizeClass,
                "decode(encode(x)) == x"
            )
        }
        var damaged = bytes
        damaged[input.number(below: damaged.count)] ^= 1 << (input.byte() % 8)
        check(damaged.withUnsafeBytes { SnapshotFormat.decode($0, accept: { _, _ in true }) } == nil, "a flipped bit")
    }

    static func seeds() throws -> [[UInt8]] {
        let entries = (1...5).map { index in
            IndexEntry(
                digest: IndexEntry.indexDigest(CacheKey("https://example.com/\(index)").digest),
                segment: UInt32(index),
                offset: UInt32(16 + 100 * index),
                sizeClass: IndexEntry.sizeClass(of: 200 * index),
                accessed: false
            )
        }
        return [
            SnapshotFormat.encode(entries: entries, coveredSegment: 5, coveredOffset: 4096, writtenAtMillis: 1),
            SnapshotFormat.encode(entries: [], coveredSegment: 1, coveredOffset: 16, writtenAtMillis: 2),
        ]
    }
}
