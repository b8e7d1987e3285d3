// SPDX-License-Identifier: Apache-2.0

import CacheTiers

@testable import PostgresCacheTier

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The shared tier's row decoder (`SharedRow`, no server): a row of arbitrary columns decodes
/// only into an entry for the key asked, with its declared length; a row encoded from an entry,
/// plain or sealed, decodes to exactly that entry; one changed byte in any column of it, or a
/// changed fixed-width column, never decodes.
enum SharedRowTarget {
    static let key = CacheKey("https://example.com/a")
    static let sealer = RowSealer(key: (try? EncryptionKey(bytes: (0..<32).map { UInt8($0) })) ?? .random())

    static func run(_ data: UnsafeRawBufferPointer) {
        var input = FuzzInput(data)
        let sealed = input.bool()
        let arbitrary = SharedRow(
            digest: input.integer(Int64.self),
            key: input.bool() ? Array(key.string.utf8) : input.bytes(upTo: 64),
            metadata: input.bytes(upTo: 64),
            value: input.bytes(upTo: 255),
            flags: SharedRow.Flags(rawValue: input.integer(Int16.self)),
            valueLength: input.integer(Int32.self),
            storedAtMillis: input.integer(Int64.self),
            expiresAtMillis: input.integer(Int64.self),
            checksum: input.integer(Int64.self)
        )
        for row in [arbitrary, checksummed(arbitrary)] {
            if let entry = try? row.decode(for: key, sealer: sealed ? sealer : nil) {
                check(entry.value.count == Int(row.valueLength), "a value of another length than declared")
                check(sealed || row.key.elementsEqual(key.string.utf8), "an entry for another key")
            }
        }

        let entry = CacheEntry(
            value: input.bytes(upTo: 255) + Array(repeating: input.byte(), count: Int(input.byte())),
            metadata: input.bytes(upTo: 32),
            storedAt: Date(millisecondsSince1970: input.integer(Int64.self) >> 20)
        )
        guard let row = try? SharedRow.encode(entry, for: key, expiresAtMillis: 0, sealer: sealed ? sealer : nil)
        else {
            check(false, "an entry encodes")
            return
        }
        let decoded = try? row.decode(for: key, sealer: sealed ? sealer : nil)
        check(
            decoded?.value == entry.value && decoded?.metadata == entry.metadata
                && decoded?.storedAt.millisecondsSince1970 == entry.storedAt.millisecondsSince1970,
            "decode(encode(x)) == x"
        )
        check(
            (try? row.decode(for: CacheKey("https://example.com/b"), sealer: sealed ? sealer : nil)) == nil,
            "another key's row"
        )
        var damaged = row
        let xor = input.byte() | 1
        switch input.byte() % 5 {
        case 0 where !damaged.key.isEmpty: damaged.key[input.number(below: damaged.key.count)] ^= xor
        case 1 where !damaged.metadata.isEmpty: damaged.metadata[input.number(below: damaged.metadata.count)] ^= xor
        case 2 where !damaged.value.isEmpty: damaged.value[input.number(below: damaged.value.count)] ^= xor
        case 3: damaged.valueLength ^= Int32(xor)
        default: damaged.storedAtMillis ^= Int64(xor)
        }
        if damaged != row {
            check((try? damaged.decode(for: key, sealer: sealed ? sealer : nil)) == nil, "a changed row decodes")
        }
    }

    /// `row` with a checksum that matches, so that the decoder looks past it.
    private static func checksummed(_ row: SharedRow) -> SharedRow {
        var row = row
        row.checksum = row.computeChecksum()
        return row
    }

    static func seeds() throws -> [[UInt8]] {
        [
            [0] + Array(repeating: 0, count: 8) + [1, 3, 1, 2, 3, 5] + Array("hello".utf8) + [0, 0, 5, 0, 0, 0]
                + Array(repeating: 0, count: 24) + [5] + Array("hello".utf8) + [100, 0x61, 2, 7, 7]
                + Array(repeating: 1, count: 8) + [3, 2],
            [1] + Array(repeating: 0, count: 60) + [40] + Array(repeating: 0x42, count: 40) + [8, 1, 2] + [1, 2],
        ]
    }
}
