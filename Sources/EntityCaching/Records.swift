// SPDX-License-Identifier: Apache-2.0

import CacheTiers

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An entity as stored: its value and metadata (JSON, one entry per entity).
struct EntityRecord<Entity: Codable & Sendable>: Codable, Sendable {
    var entity: Entity
    var fetchedAt: Date
    var validatedAt: Date
    var version: String?
    /// Whether the value is the app's own, not yet confirmed by the server.
    var isLocal: Bool
    /// The commit that last changed the value: a list validated before it may hold the older one.
    var changed: UInt64
}

/// A query's list as stored: the IDs of its loaded pages and the list's metadata.
struct IndexRecord<ID: Codable & Sendable>: Codable, Sendable {
    /// The query's name and parameters (a patch rule is given the query).
    var name: String
    var parameters: [String: String]
    var ids: [ID]
    /// Where each loaded page ends in ``ids``.
    var pageEnds: [Int]
    var nextCursor: String?
    var validator: String?
    var fetchedAt: Date
    var validatedAt: Date
    var expiresAt: Date?
    /// The commit at which the list was last confirmed or patched.
    var valid: UInt64
    /// Marked stale by a mutation of one of its entities (or by the app).
    var markedStale: Bool
}

/// The store's own state for one kind: the commit counter, the last commit that created or
/// deleted an entity of the kind, and the change feed's token. Rewritten by every commit.
struct KindRecord: Codable, Sendable {
    var sequence: UInt64
    var structureChanged: UInt64
    var token: String?
}

/// The query keys of a list of keys (the reverse index of one entity, or a kind's catalog).
struct KeyListRecord: Codable, Sendable {
    var keys: [String]
}

/// A decoded record hung on its memory entry, so that a memory hit decodes nothing.
final class Decoded<Value: Sendable>: CacheAttachment {
    let value: Value
    let memoryCost: Int

    init(_ value: Value, encodedBytes: Int) {
        self.value = value
        // The decoded form is about the size of its JSON, plus the object.
        self.memoryCost = encodedBytes + 64
    }
}

/// JSON coding of the records.
enum RecordCoding {
    static func encode<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        Array(try JSONEncoder().encode(value))
    }

    /// The value's JSON with sorted keys, for comparing two values: a dictionary's keys come in
    /// hash order otherwise, and two equal values could compare unequal.
    static func canonical<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array(try encoder.encode(value))
    }

    /// The value, or nil for bytes that do not decode (damaged, or written by an incompatible
    /// version of the app's type): the caller treats them as a miss and removes them.
    static func decode<Value: Decodable>(_: Value.Type, from bytes: [UInt8]) -> Value? {
        do {
            return try JSONDecoder().decode(Value.self, from: Data(bytes))
        } catch {
            return nil
        }
    }
}
