// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import HTTPTypes
import Synchronization

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
    /// The primary keys of the responses stored with one tag (``CachedResponse/tags``).
    case tagMembers([String])
    /// Byte ranges of a `GET` response (RFC 9111 §3.3), under the URL's primary key: a record
    /// that answers no request as it is (``Box/response`` is nil), only a range it holds.
    case partial(PartialContent)

    /// The first metadata byte of a variant index; a response's metadata starts with its codec
    /// version (1 or 2).
    static let variantIndexTag: UInt8 = 0x80
    /// The first metadata byte of a tag's member list.
    static let tagMembersTag: UInt8 = 0x81
    /// The first metadata byte of partial content; the stored response's metadata follows.
    static let partialTag: UInt8 = 0x82

    /// Decodes the record an entry's bytes hold.
    /// - Throws: ``HTTPCachingError/Code/corruptData`` or ``HTTPCachingError/Code/unsupportedFormat``
    ///   for bytes that do not decode; the caller treats them as a miss.
    init(decoding entry: CacheEntry) throws {
        if entry.metadata.first == Self.variantIndexTag {
            self = .variants(try VariantIndex(decoding: entry.value))
        } else if entry.metadata.first == Self.tagMembersTag {
            var reader = BinaryReader(entry.value)
            let count = Int(try reader.read(UInt32.self))
            guard count <= entry.value.count else {
                throw HTTPCachingError(code: .corruptData, message: "tag members: bad count")
            }
            var keys: [String] = []
            for _ in 0..<count { keys.append(try reader.readString()) }
            guard reader.isAtEnd else {
                throw HTTPCachingError(code: .corruptData, message: "tag members: trailing bytes")
            }
            self = .tagMembers(keys)
        } else if entry.metadata.first == Self.partialTag {
            let response = try CachedResponseCodec.decode(
                metadata: Array(entry.metadata.dropFirst()),
                body: entry.value
            )
            guard let partial = PartialContent(stored: response) else {
                throw HTTPCachingError(code: .corruptData, message: "partial content: ranges and body disagree")
            }
            self = .partial(partial)
        } else {
            self = .response(try CachedResponseCodec.decode(metadata: entry.metadata, body: entry.value))
        }
    }

    /// The tier entry for this record, with its ``Box`` attached so that memory hits skip decoding.
    /// - Parameter parsed: the response's fields as the caller parsed them already, if it did.
    func entry(storedAt: Date, parsed: ParsedResponseFields? = nil) -> CacheEntry {
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
        case .tagMembers(let keys):
            var writer = BinaryWriter(capacity: 4 + keys.reduce(0) { $0 + 4 + $1.utf8.count })
            writer.write(UInt32(keys.count))
            for key in keys { writer.write(key) }
            entry = CacheEntry(value: writer.bytes, metadata: [Self.tagMembersTag], storedAt: storedAt)
        case .partial(let partial):
            entry = CacheEntry(
                value: partial.stored.body,
                metadata: [Self.partialTag] + CachedResponseCodec.encodeMetadata(partial.stored),
                storedAt: storedAt
            )
        }
        entry.attachment = Box(self, parsed: parsed, metadataBytes: entry.metadata.count)
        return entry
    }

    /// A record as the memory tier keeps it attached to its entry, with what every lookup needs
    /// worked out once: for a response, its `Vary` field names and its freshness facts.
    final class Box: CacheAttachment {
        let record: StoredRecord
        /// A number no other box of this process has: a caller that keeps what it derives from
        /// a record finds it by this, never by the box's address (which a later box may reuse)
        /// and without a weak reference (which would move every retain and release of the box
        /// to its slow, side-table path).
        let serial: UInt64 = Box.serials.add(1, ordering: .relaxed).newValue
        private static let serials = Atomic<UInt64>(0)
        /// The response, when the record is one.
        let response: CachedResponse?
        /// For a response, its `Vary` field names (``VaryRule/fieldNames(in:)``): empty without
        /// `Vary`, nil for `Vary: *`. Empty for an index.
        let varyFieldNames: [String]?
        /// For a response with `Vary`, the normalized values of its `Vary` names in the request
        /// that produced it (``VaryRule/normalizedValues(of:in:)``), worked out once; nil when a
        /// name is not a field name (such a response matches no request) or without `Vary`.
        let storedVaryValues: [String?]?
        /// For a response, what its freshness needs, parsed once.
        let facts: FreshnessFacts?
        /// The numbers of ``facts`` a fresh hit reads, kept in the box itself: a hit follows and
        /// counts no other reference.
        let hitFacts: FreshnessFacts.HitFacts?
        /// Whether the record is a response without `Vary`, which answers every request for its
        /// key.
        let answersEveryRequest: Bool
        /// Whether the response is marked stale (``CachedResponse/isMarkedStale``).
        let isMarkedStale: Bool
        /// For a variant index, what a memory lookup needs of each variant a request can select
        /// (``VariantIndex/probes()``), worked out once; empty otherwise.
        let variantProbes: [VariantIndex.Probe]
        /// What the decoded record holds beyond the entry's bytes: the head's fields as objects
        /// and strings, the parsed facts, this box (measured: about 1 KiB and twice the
        /// encoded head for a response of six fields; see `MemoryFootprint`).
        let memoryCost: Int

        init(_ record: StoredRecord, parsed: ParsedResponseFields? = nil, metadataBytes: Int) {
            self.record = record
            if case .variants(let index) = record {
                variantProbes = index.probes()
            } else {
                variantProbes = []
            }
            memoryCost = Self.baseCost + 2 * metadataBytes + Self.probeCost * variantProbes.count
            if case .response(let response) = record {
                self.response = response
                let names = parsed.map(\.varyNames) ?? VaryRule.fieldNames(in: response.response.headerFields)
                varyFieldNames = names
                storedVaryValues =
                    names.flatMap { list in
                        guard !list.isEmpty, VaryRule.areFieldNames(list) else { return nil }
                        return VaryRule.normalizedValues(of: list, in: response.varyingRequestFields)
                    }
                let facts = FreshnessFacts(response, directives: parsed?.directives)
                self.facts = facts
                hitFacts = facts.numbers
                answersEveryRequest = varyFieldNames?.isEmpty == true
                isMarkedStale = response.isMarkedStale
            } else {
                isMarkedStale = false
                response = nil
                varyFieldNames = []
                storedVaryValues = nil
                facts = nil
                hitFacts = nil
                answersEveryRequest = false
            }
        }

        /// The variant index, when the record is one.
        var variantIndex: VariantIndex? {
            if case .variants(let index) = record { return index }
            return nil
        }

        /// The partial content, when the record is one.
        var partial: PartialContent? {
            if case .partial(let partial) = record { return partial }
            return nil
        }

        /// A tag's member keys, when the record is a member list.
        var tagMembers: [String]? {
            if case .tagMembers(let keys) = record { return keys }
            return nil
        }

        /// The box attached to `entry`, or a new one decoded from its bytes.
        static func of(_ entry: CacheEntry) throws -> Box {
            if let box = entry.attachment as? Box { return box }
            return Box(try StoredRecord(decoding: entry), metadataBytes: entry.metadata.count)
        }

        /// The fixed part of ``memoryCost``: this box, the response's storage, its facts.
        static let baseCost = 1_024
        /// What one of ``variantProbes`` adds to ``memoryCost``: the probe, its field names, the
        /// key's storage shared with the index.
        static let probeCost = 192
    }
}

/// The variants stored for one URL, newest first: for each, the request field names its
/// response's `Vary` lists and the tier key it is stored under.
struct VariantIndex: Hashable, Sendable {
    struct Variant: Hashable, Sendable {
        /// The lowercased, sorted, distinct field names of the response's `Vary`.
        var fieldNames: [String]
        /// The tier key of the variant's response: the URL's key and a keyed digest of the
        /// varying values, never the values (``ResponseCache/variantKey(primaryKey:names:request:)``).
        var key: String
        /// Where the variant's response may be stored; the index itself is kept no further than
        /// its most restrictive variant allows.
        var storagePolicy: StoragePolicy = .allowed
    }

    /// Newest first.
    var variants: [Variant]

    /// The most variants kept per URL; storing one more forgets the oldest.
    static let maximumCount = 32
    /// Version 2 adds each variant's storage policy; version 1 (all allowed) is still read.
    private static let version: UInt8 = 2

    /// Where the index may be stored: the most restrictive of its variants' policies, so that
    /// not even the key of a memory-only variant reaches disk.
    var storagePolicy: StoragePolicy {
        variants.contains { $0.storagePolicy != .allowed } ? .allowedInMemoryOnly : .allowed
    }

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
            writer.write(variant.storagePolicy == .allowed ? UInt8(0) : UInt8(1))
        }
        return writer.bytes
    }

    init(decoding bytes: [UInt8]) throws {
        var reader = BinaryReader(bytes)
        let version = try reader.readByte()
        guard version == 1 || version == Self.version else {
            throw HTTPCachingError(code: .unsupportedFormat, message: "unknown variant index format")
        }
        let count = Int(try reader.read(UInt32.self))
        guard count <= Self.maximumCount else {
            throw HTTPCachingError(code: .corruptData, message: "variant index lists \(count) variants")
        }
        var variants: [Variant] = []
        variants.reserveCapacity(count)
        for _ in 0..<count {
            let nameCount = Int(try reader.read(UInt32.self))
            guard nameCount <= bytes.count else {
                throw HTTPCachingError(code: .corruptData, message: "variant index: bad field name count")
            }
            var names: [String] = []
            for _ in 0..<nameCount { names.append(try reader.readString()) }
            let key = try reader.readString()
            let memoryOnly = version == 1 ? false : try reader.readByte() != 0
            let policy: StoragePolicy = memoryOnly ? .allowedInMemoryOnly : .allowed
            variants.append(Variant(fieldNames: names, key: key, storagePolicy: policy))
        }
        guard reader.isAtEnd else {
            throw HTTPCachingError(code: .corruptData, message: "variant index: trailing bytes")
        }
        self.variants = variants
    }
}
