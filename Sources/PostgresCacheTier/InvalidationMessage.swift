// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTiers

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A NOTIFY payload: `lc1|SENDER|KIND|ARGUMENT`.
///
/// - `SENDER`: the publishing tier's random instance id, so that a tier ignores its own messages.
/// - `KIND` `k`: one key; `ARGUMENT` is the key's UTF-8 bytes in base64, or, when the cache is
///   encrypted, their AES-GCM seal in base64 (no key reaches the database in clear).
/// - `KIND` `a`: every entry; no argument.
/// - `KIND` `s`: entries stored at or after `ARGUMENT` milliseconds since 1970.
/// - `KIND` `t`: the entries labelled with a tag; `ARGUMENT` as for `k`, the tag's UTF-8 bytes.
/// - `KIND` `g`: a tag and the keys the invalidating instance removed for it; `ARGUMENT` as for
///   `k`, of the tag's and then each key's UTF-8 bytes, each after its length (4 bytes, big
///   endian).
/// - `KIND` `p`: a key prefix (a ban) and the keys the invalidating instance removed for it;
///   `ARGUMENT` as for `g`, the prefix first.
///
/// Other kinds are ignored, so that older instances skip what newer ones publish. PostgreSQL caps
/// a notification at 8000 bytes: a key or tag too long for it is published as `a`, and a `g` or
/// `p` too long for it is logged whole and notified by its sequence number alone (the listeners read
/// it from the log).
struct InvalidationMessage: Hashable, Sendable {
    enum Kind: Hashable, Sendable {
        case key([UInt8])
        case tag([UInt8])
        case taggedKeys(tag: [UInt8], keys: [[UInt8]])
        case prefixedKeys(prefix: [UInt8], keys: [[UInt8]])
        case all
        case storedSince(Int64)
    }

    static let prefix = "lc1"
    /// PostgreSQL's limit is 8000 bytes; a margin for the prefix and the id.
    static let maximumPayloadBytes = 7900

    var sender: String
    var kind: Kind

    /// The payload; `sealer` seals a key.
    func payload(sealer: RowSealer?) throws -> String {
        switch kind {
        case .key(let bytes), .tag(let bytes):
            let letter = if case .key = kind { "k" } else { "t" }
            let argument = try sealer?.sealInvalidation(bytes) ?? bytes
            let text = "\(Self.prefix)|\(sender)|\(letter)|\(Data(argument).base64EncodedString())"
            guard text.utf8.count <= Self.maximumPayloadBytes else {
                return InvalidationMessage(sender: sender, kind: .all).unsealedPayload
            }
            return text
        case .taggedKeys(let first, let keys), .prefixedKeys(let first, let keys):
            let letter = if case .taggedKeys = kind { "g" } else { "p" }
            var bytes: [UInt8] = []
            for field in [first] + keys {
                withUnsafeBytes(of: UInt32(field.count).bigEndian) { bytes.append(contentsOf: $0) }
                bytes.append(contentsOf: field)
            }
            let argument = try sealer?.sealInvalidation(bytes) ?? bytes
            return "\(Self.prefix)|\(sender)|\(letter)|\(Data(argument).base64EncodedString())"
        case .all, .storedSince:
            return unsealedPayload
        }
    }

    /// The fields of a `g` or `p` argument (a tag or prefix, then keys), or nil when it does not parse.
    private static func fields(of bytes: [UInt8]) -> [[UInt8]]? {
        var fields: [[UInt8]] = []
        var index = 0
        while index < bytes.count {
            guard bytes.count - index >= 4 else { return nil }
            let length = bytes[index..<index + 4].reduce(0) { $0 << 8 | Int($1) }
            index += 4
            guard bytes.count - index >= length else { return nil }
            fields.append(Array(bytes[index..<index + length]))
            index += length
        }
        return fields.isEmpty ? nil : fields
    }

    private var unsealedPayload: String {
        switch kind {
        case .key, .tag, .taggedKeys, .prefixedKeys:
            preconditionFailure("a key or tag is published through payload(sealer:)")
        case .all: "\(Self.prefix)|\(sender)|a|"
        case .storedSince(let millis): "\(Self.prefix)|\(sender)|s|\(millis)"
        }
    }

    /// Parses a payload; nil for another format, a reserved kind, or a key that does not open.
    init?(payload: String, sealer: RowSealer?) {
        let fields = payload.split(separator: "|", maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count == 4, fields[0] == Self.prefix else { return nil }
        sender = String(fields[1])
        let argument = fields[3]
        switch fields[2] {
        case "k", "t", "g", "p":
            guard var bytes = Data(base64Encoded: String(argument)).map(Array.init) else { return nil }
            if let sealer {
                guard let opened = sealer.openInvalidation(bytes) else { return nil }
                bytes = opened
            }
            switch fields[2] {
            case "k": kind = .key(bytes)
            case "t": kind = .tag(bytes)
            case "g":
                guard let parts = Self.fields(of: bytes) else { return nil }
                kind = .taggedKeys(tag: parts[0], keys: Array(parts.dropFirst()))
            default:
                guard let parts = Self.fields(of: bytes) else { return nil }
                kind = .prefixedKeys(prefix: parts[0], keys: Array(parts.dropFirst()))
            }
        case "a":
            kind = .all
        case "s":
            guard let millis = Int64(argument) else { return nil }
            kind = .storedSince(millis)
        default:
            return nil
        }
    }

    init(sender: String, kind: Kind) {
        self.sender = sender
        self.kind = kind
    }

    /// What the cache drops.
    var invalidation: SharedInvalidation {
        switch kind {
        case .key(let bytes): .key(CacheKey(String(decoding: bytes, as: UTF8.self)))
        case .tag(let bytes): .tag(String(decoding: bytes, as: UTF8.self))
        case .taggedKeys(let tag, let keys):
            .tag(String(decoding: tag, as: UTF8.self), keys: keys.map { CacheKey(String(decoding: $0, as: UTF8.self)) })
        case .prefixedKeys(let prefix, let keys):
            .keyPrefix(
                String(decoding: prefix, as: UTF8.self),
                keys: keys.map { CacheKey(String(decoding: $0, as: UTF8.self)) }
            )
        case .all: .all
        case .storedSince(let millis): .storedSince(Date(millisecondsSince1970: millis))
        }
    }
}

extension InvalidationMessage.Kind {
    /// The kind that publishes `invalidation` (the inverse of ``InvalidationMessage/invalidation``).
    init(_ invalidation: SharedInvalidation) {
        if let tag = invalidation.tag {
            let keys = invalidation.taggedKeys.map { Array($0.string.utf8) }
            self = keys.isEmpty ? .tag(Array(tag.utf8)) : .taggedKeys(tag: Array(tag.utf8), keys: keys)
        } else if let prefix = invalidation.keyPrefix {
            self = .prefixedKeys(
                prefix: Array(prefix.utf8),
                keys: invalidation.removedKeys.map { Array($0.string.utf8) }
            )
        } else if let key = invalidation.key {
            self = .key(Array(key.string.utf8))
        } else if let date = invalidation.storedSince {
            self = .storedSince(date.millisecondsSince1970)
        } else {
            self = .all
        }
    }
}
#endif
