// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import CacheTiers
import Crypto
import Foundation
import PostgresNIO
import Testing

@testable import PostgresCacheTier

/// The row format and the NOTIFY payloads, without a database.
@Suite struct SharedRowTests {
    static let key = CacheKey("https://example.com/users?page=2")
    static let entry = CacheEntry(
        value: SampleData.json(approximateBytes: 4000),
        metadata: [1, 2, 3],
        storedAt: Date(millisecondsSince1970: 1_700_000_000_123)
    )

    @Test(arguments: [false, true])
    func roundTripsAndDetectsEveryFlippedByte(sealed: Bool) throws {
        let sealer = sealed ? RowSealer(key: .random()) : nil
        let row = try SharedRow.encode(Self.entry, for: Self.key, expiresAtMillis: 1_800_000_000_000, sealer: sealer)
        #expect(row.flags.contains(.compressed) && row.value.count < Self.entry.value.count)
        #expect(try row.decode(for: Self.key, sealer: sealer) == Self.entry)
        if sealed {
            #expect(row.key.isEmpty && row.metadata.isEmpty)
            #expect(row.digest != Int64(bitPattern: KeyDigest.digest(of: Self.key.string)))
        }
        // A byte flipped in any column, or a changed header field, is caught.
        for index in stride(from: 0, to: row.value.count, by: max(1, row.value.count / 50)) {
            var damaged = row
            damaged.value[index] ^= 0x20
            #expect(throws: SharedRow.Failure.damaged) { try damaged.decode(for: Self.key, sealer: sealer) }
        }
        var later = row
        later.expiresAtMillis += 1
        #expect(throws: SharedRow.Failure.damaged) { try later.decode(for: Self.key, sealer: sealer) }
        // A row that also fixed its checksum is still caught when sealed.
        var forged = row
        forged.storedAtMillis += 1
        forged.checksum = forged.computeChecksum()
        if sealed {
            #expect(throws: SharedRow.Failure.damaged) { try forged.decode(for: Self.key, sealer: sealer) }
        }
    }

    /// A ban on a sealed tier reads each row's key from inside its seal: only a row that opens
    /// with the tier's keys gives one.
    @Test func aSealedRowsKeyOpensOnlyWithItsKeysAndIntact() throws {
        let sealer = RowSealer(key: .random())
        let row = try SharedRow.encode(Self.entry, for: Self.key, expiresAtMillis: 1_800_000_000_000, sealer: sealer)
        #expect(row.sealedKey(sealer: sealer) == Array(Self.key.string.utf8))
        #expect(row.sealedKey(sealer: RowSealer(key: .random())) == nil)
        var damaged = row
        damaged.value[damaged.value.count / 2] ^= 1
        damaged.checksum = damaged.computeChecksum()
        #expect(damaged.sealedKey(sealer: sealer) == nil)
        let plain = try SharedRow.encode(Self.entry, for: Self.key, expiresAtMillis: 1_800_000_000_000, sealer: nil)
        #expect(plain.sealedKey(sealer: sealer) == nil)
    }

    @Test func aDigestCollisionIsAMissAndKeysMustMatchTheCipher() throws {
        let row = try SharedRow.encode(Self.entry, for: Self.key, expiresAtMillis: 0, sealer: nil)
        #expect(throws: SharedRow.Failure.otherKey) { try row.decode(for: "other", sealer: nil) }
        let sealed = try SharedRow.encode(
            Self.entry,
            for: Self.key,
            expiresAtMillis: 0,
            sealer: RowSealer(key: .random())
        )
        #expect(throws: SharedRow.Failure.damaged) {
            try sealed.decode(for: Self.key, sealer: RowSealer(key: .random()))
        }
        #expect(throws: SharedRow.Failure.damaged) { try sealed.decode(for: Self.key, sealer: nil) }
        #expect(throws: SharedRow.Failure.damaged) { try row.decode(for: Self.key, sealer: RowSealer(key: .random())) }
    }

    @Test func incompressibleValuesAreStoredRaw() throws {
        let entry = CacheEntry(
            value: SampleData.random(count: 1000),
            storedAt: Date(millisecondsSince1970: 1_700_000_000_500)
        )
        let row = try SharedRow.encode(entry, for: "r", expiresAtMillis: 10, sealer: nil)
        #expect(!row.flags.contains(.compressed) && row.value == entry.value)
        #expect(try row.decode(for: "r", sealer: nil) == entry)
    }

    @Test(arguments: [false, true])
    func invalidationPayloadsRoundTrip(sealed: Bool) throws {
        let sealer = sealed ? RowSealer(key: .random()) : nil
        let messages = [
            InvalidationMessage(sender: "abc", kind: .key(Array("GET https://x/a|b".utf8))),
            InvalidationMessage(sender: "abc", kind: .all),
            InvalidationMessage(sender: "abc", kind: .storedSince(1_700_000_000_000)),
            InvalidationMessage(sender: "abc", kind: .tag(Array("team:sport|news".utf8))),
            InvalidationMessage(
                sender: "abc",
                kind: .taggedKeys(
                    tag: Array("news".utf8),
                    keys: [Array("GET https://x/1".utf8), [], Array("\u{0}é|x".utf8)]
                )
            ),
            InvalidationMessage(
                sender: "abc",
                kind: .prefixedKeys(
                    prefix: Array("GET https://x/static/".utf8),
                    keys: [Array("GET https://x/static/1".utf8)]
                )
            ),
            InvalidationMessage(sender: "abc", kind: .prefixedKeys(prefix: Array("GET https://x/".utf8), keys: [])),
        ]
        for message in messages {
            let payload = try message.payload(sealer: sealer)
            #expect(InvalidationMessage(payload: payload, sealer: sealer) == message)
            #expect(InvalidationMessage.Kind(message.invalidation) == message.kind)
            if sealed, case .key = message.kind { #expect(!payload.contains("https")) }
            if case .prefixedKeys = message.kind { #expect(payload.split(separator: "|")[2] == "p") }
        }
        // Sealed, a tag is as unreadable in the database as a key.
        let tag = try InvalidationMessage(sender: "abc", kind: .tag(Array("news".utf8))).payload(sealer: sealer)
        #expect(tag.hasSuffix("|t|\(Data("news".utf8).base64EncodedString())") == !sealed)
        #expect(InvalidationMessage(payload: "lc1|abc|x|dGFn", sealer: sealer) == nil)  // an unknown kind
        #expect(InvalidationMessage(payload: "something else", sealer: sealer) == nil)
        let long = InvalidationMessage(sender: "abc", kind: .key(Array(repeating: 65, count: 7000)))
        #expect(InvalidationMessage(payload: try long.payload(sealer: sealer), sealer: sealer)?.kind == .all)
        // A tag with its keys is never cut short: too long for a notification, it is read from the log.
        let many = InvalidationMessage(
            sender: "abc",
            kind: .taggedKeys(
                tag: Array("news".utf8),
                keys: Array(repeating: Array(repeating: 65, count: 300), count: 40)
            )
        )
        #expect(InvalidationMessage(payload: try many.payload(sealer: sealer), sealer: sealer) == many)
        // A truncated field list does not parse (unsealed: sealed, it would not open).
        if !sealed {
            let cut = String(try many.payload(sealer: nil).dropLast(8))
            #expect(InvalidationMessage(payload: cut, sealer: nil) == nil)
        }
    }

    @Test func urlsAreParsedAndBadOnesRefused() throws {
        let configuration = try PostgresURL.clientConfiguration(
            "postgres://cache:s3cret@db.internal:6543/app?sslmode=disable"
        )
        #expect(configuration.host == "db.internal" && configuration.port == 6543)
        #expect(
            configuration.username == "cache" && configuration.password == "s3cret" && configuration.database == "app"
        )
        #expect(throws: CacheError.self) { try PostgresURL.clientConfiguration("http://db/app") }
        #expect(throws: CacheError.self) { try PostgresURL.clientConfiguration("postgres://db/app?sslmode=maybe") }
        #expect(PostgresURL.redacted("postgres://u:pw@h/d") == "postgres://u:***@h/d")
        #expect(throws: CacheError.self) { try PostgresURL.clientConfiguration("postgres://db/app?sslmode=allow") }
        #expect(throws: CacheError.self) {
            try PostgresSharedTier(configuration: .init(url: "postgres://h/d", table: "x;drop"))
        }
    }
}
#endif

#if PostgreSQL
/// The sealer's keyed-once parts give what the one-shot calls give.
@Suite struct RowSealerTests {
    /// The HMAC keyed once and copied per digest: every digest is the one-shot HMAC's, call after
    /// call (a copy that shared its state with the template would drift from the second call on).
    @Test func aDigestIsTheOneShotHMACCallAfterCall() {
        let key = EncryptionKey.random()
        let sealer = RowSealer(key: key)
        let digestKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: key.bytes),
            salt: Array("LayeredCache".utf8),
            info: Array("shared row digest v1".utf8),
            outputByteCount: 32
        )
        for text in ["GET https://a.example/1", "GET https://a.example/2", "GET https://a.example/1", ""] {
            let bytes = Array(text.utf8)
            let expected = HMAC<SHA256>.authenticationCode(for: bytes, using: digestKey).withUnsafeBytes {
                Int64(littleEndian: $0.loadUnaligned(as: Int64.self))
            }
            #expect(sealer.digests(of: bytes) == [expected])
        }
    }

    /// Opening goes through the keyed-once context where there is one: a seal opens, a changed
    /// byte, a changed header, a short input or another key's seal does not.
    @Test func sealsOpenOnlyWhenTheyAuthenticate() throws {
        let key = GCMKey(SymmetricKey(size: .bits256))
        let payload = Array("the payload of a row".utf8)
        let sealed = try key.seal(payload, authenticating: [1, 2, 3])
        #expect(key.open(sealed, authenticating: [1, 2, 3]) == payload)
        #expect(key.open(sealed, authenticating: [1, 2, 4]) == nil)
        for index in [0, 12, sealed.count - 1] {
            var changed = sealed
            changed[index] ^= 1
            #expect(key.open(changed, authenticating: [1, 2, 3]) == nil)
        }
        #expect(key.open(Array(sealed.prefix(27)), authenticating: [1, 2, 3]) == nil)
        #expect(GCMKey(SymmetricKey(size: .bits256)).open(sealed, authenticating: [1, 2, 3]) == nil)
        let empty = try key.seal([], authenticating: [])
        #expect(key.open(empty, authenticating: []) == [])
    }
}
#endif
