// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import HTTPTypes

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a ``ResponseCache`` keeps under one tier key: a response, or for a URL whose responses
/// carry `Vary`, the index of its variants, each stored under its own key (RFC 9111 §4.1).
enum StoredRecord: Sendable {
    case response(CachedResponse)
    case variants(VariantIndex)

    /// The first metadata byte of a variant index; a response's metadata starts with its codec
    /// version (1).
    static let variantIndexTag: UInt8 = 0x80

    /// The record an entry holds: its attached decoded form when a memory hit carries one, else
    /// decoded from its bytes.
    /// - Throws: ``CacheError/Code/corruptData`` or ``CacheError/Code/unsupportedFormat`` for bytes
    ///   that do not decode; the caller treats them as a miss.
    init(_ entry: CacheEntry) throws {
        if let decoded = entry.decoded as? Box {
            self = decoded.record
        } else if entry.metadata.first == Self.variantIndexTag {
            self = .variants(try VariantIndex(decoding: entry.value))
        } else {
            self = .response(try CachedResponseCodec.decode(metadata: entry.metadata, body: entry.value))
        }
    }

    /// The tier entry for this record, with the record attached so that memory hits skip decoding.
    func entry(storedAt: Date) -> CacheEntry {
        var entry: CacheEntry
        switch self {
        case .response(let response):
            entry = CacheEntry(
                value: response.body,
                metadata: CachedResponseCodec.encodeMetadata(response),
                storedAt: storedAt
            )
        case .variants(let index):
            entry = CacheEntry(value: index.encoded(), metadata: [Self.variantIndexTag], storedAt: storedAt)
        }
        entry.decoded = Box(self)
        return entry
    }

    /// A record attached to its tier entry, with what every lookup needs worked out once.
    final class Box: Sendable {
        let record: StoredRecord
        /// For a response, its `Vary` field names (``ResponseCache/varyFieldNames(_:)``).
        let varyFieldNames: [String]?
        /// For a response, what its freshness needs, parsed once.
        let facts: FreshnessFacts?

        init(_ record: StoredRecord) {
            self.record = record
            if case .response(let response) = record {
                varyFieldNames = ResponseCache.varyFieldNames(response.response.headerFields)
                facts = FreshnessFacts(response)
            } else {
                varyFieldNames = []
                facts = nil
            }
        }
    }
}

/// The variants stored for one URL, newest first: for each, the request field names its
/// response's `Vary` lists and the tier key it is stored under.
struct VariantIndex: Hashable, Sendable {
    struct Variant: Hashable, Sendable {
        /// The lowercased, sorted, distinct field names of the response's `Vary`.
        var fieldNames: [String]
        /// The tier key of the variant's response.
        var key: String
    }

    /// Newest first.
    var variants: [Variant]

    /// The most variants kept per URL; storing one more forgets the oldest.
    static let maximumCount = 32
    private static let version: UInt8 = 1

    init(variants: [Variant] = []) {
        self.variants = variants
    }

    /// Records `variant` as the newest, replacing an older entry with the same key.
    /// - Returns: the variants forgotten to stay within ``maximumCount``.
    mutating func insert(_ variant: Variant) -> [Variant] {
        variants.removeAll { $0.key == variant.key }
        variants.insert(variant, at: 0)
        guard variants.count > Self.maximumCount else { return [] }
        let forgotten = Array(variants[Self.maximumCount...])
        variants.removeLast(variants.count - Self.maximumCount)
        return forgotten
    }

    func encoded() -> [UInt8] {
        var writer = BinaryWriter(capacity: 64 * variants.count + 8)
        writer.write(Self.version)
        writer.write(UInt32(variants.count))
        for variant in variants {
            writer.write(UInt32(variant.fieldNames.count))
            for name in variant.fieldNames { writer.write(name) }
            writer.write(variant.key)
        }
        return writer.bytes
    }

    init(decoding bytes: [UInt8]) throws {
        var reader = BinaryReader(bytes)
        guard try reader.readByte() == Self.version else {
            throw CacheError(code: .unsupportedFormat, message: "unknown variant index format")
        }
        let count = Int(try reader.read(UInt32.self))
        guard count <= Self.maximumCount else {
            throw CacheError(code: .corruptData, message: "variant index lists \(count) variants")
        }
        var variants: [Variant] = []
        variants.reserveCapacity(count)
        for _ in 0..<count {
            let nameCount = Int(try reader.read(UInt32.self))
            guard nameCount <= bytes.count else {
                throw CacheError(code: .corruptData, message: "variant index: bad field name count")
            }
            var names: [String] = []
            for _ in 0..<nameCount { names.append(try reader.readString()) }
            variants.append(Variant(fieldNames: names, key: try reader.readString()))
        }
        guard reader.isAtEnd else {
            throw CacheError(code: .corruptData, message: "variant index: trailing bytes")
        }
        self.variants = variants
    }
}
