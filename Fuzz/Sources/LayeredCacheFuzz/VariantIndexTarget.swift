// SPDX-License-Identifier: Apache-2.0

import CacheTiers

@testable import HTTPCaching

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The variant index and the tag member list (`StoredRecord`): any bytes decode or throw; what
/// decodes encodes to bytes that decode to the same value (decode(encode(x)) == x), and never
/// holds more than ``VariantIndex/maximumCount`` variants; the probes of a decoded index never
/// trap.
enum VariantIndexTarget {
    static func run(_ data: UnsafeRawBufferPointer) {
        let bytes = [UInt8](data)
        if let index = try? VariantIndex(decoding: bytes) {
            check(index.variants.count <= VariantIndex.maximumCount, "too many variants")
            let encoded = index.encoded()
            let again = try? VariantIndex(decoding: encoded)
            check(again == index, "decode(encode(x)) == x")
            check(again?.encoded() == encoded, "the encoding is a fixed point")
            _ = index.probes()
            _ = index.storagePolicy
            var grown = index
            _ = grown.insert(.init(fieldNames: ["accept"], key: "k", storagePolicy: .allowedInMemoryOnly))
            check(grown.variants.count <= VariantIndex.maximumCount, "insert keeps the bound")
        }
        let storedAt = Date(timeIntervalSince1970: 1_790_000_000)
        for tag in [StoredRecord.variantIndexTag, StoredRecord.tagMembersTag] {
            let entry = CacheEntry(value: bytes, metadata: [tag], storedAt: storedAt)
            guard let record = try? StoredRecord(decoding: entry) else { continue }
            let again = try? StoredRecord(decoding: record.entry(storedAt: storedAt))
            switch (record, again) {
            case (.variants(let lhs), .variants(let rhs)?): check(lhs == rhs, "variants: decode(encode(x)) == x")
            case (.tagMembers(let lhs), .tagMembers(let rhs)?): check(lhs == rhs, "tags: decode(encode(x)) == x")
            default: check(false, "a record changes kind on its round trip")
            }
        }
    }

    static func seeds() throws -> [[UInt8]] {
        let index = VariantIndex(variants: [
            .init(fieldNames: ["accept-encoding"], key: "https://example.com/a|1234", storagePolicy: .allowed),
            .init(
                fieldNames: ["accept", "accept-language"],
                key: "https://example.com/a|5678",
                storagePolicy: .allowedInMemoryOnly
            ),
        ])
        let members = StoredRecord.tagMembers(["https://example.com/a", "https://example.com/b"])
            .entry(storedAt: Date(timeIntervalSince1970: 0)).value
        return [index.encoded(), VariantIndex().encoded(), members]
    }
}
