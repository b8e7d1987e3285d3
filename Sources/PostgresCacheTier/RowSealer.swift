// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
package import CacheTiers
import Crypto

/// Seals shared rows with AES-256-GCM under a key derived from the cache's ``EncryptionKey`` (the
/// disk tier's), and names keys by a keyed digest, so that no key, metadata or value reaches the
/// database in clear and every instance with the same key reads every other's rows.
///
/// Every derived key comes from HKDF-SHA256 with its own label, so they are independent of the
/// disk tier's record keys. Nonces are 12 random bytes per row: rows are few enough per key
/// (well under 2^32) that random nonces stay safe.
///
/// During a key rotation (``DiskEncryption/previousKeys``) the current key seals and names new
/// rows; rows and messages sealed with a previous key still open, and the previous keys' digests
/// of a key are read and removed too.
///
/// `@unchecked Sendable` without a lock: its fields are immutable values set once in `init`;
/// swift-crypto's `SymmetricKey` is not marked Sendable, but its storage never changes after it
/// is made.
package final class RowSealer: @unchecked Sendable {
    /// The keys derived from one ``EncryptionKey``.
    private struct Keys {
        let seal: GCMKey
        /// An HMAC keyed once (its padded key already hashed in): each digest copies it, so that
        /// no digest pays for the key again.
        let digest: HMAC<SHA256>
        let invalidation: GCMKey

        init(_ key: EncryptionKey) {
            let material = SymmetricKey(data: key.bytes)
            func derive(_ label: String) -> SymmetricKey {
                HKDF<SHA256>.deriveKey(
                    inputKeyMaterial: material,
                    salt: Array("LayeredCache".utf8),
                    info: Array(label.utf8),
                    outputByteCount: 32
                )
            }
            seal = GCMKey(derive("shared row seal v1"))
            digest = HMAC<SHA256>(key: derive("shared row digest v1"))
            invalidation = GCMKey(derive("shared invalidation seal v1"))
        }
    }

    /// The current key's first, then the previous keys'.
    private let keys: [Keys]

    package convenience init(key: EncryptionKey) {
        self.init(encryption: DiskEncryption(key: key))
    }

    init(encryption: DiskEncryption) {
        keys = ([encryption.key] + encryption.previousKeys).map(Keys.init)
    }

    /// The row digest of a key: the first 8 bytes of HMAC-SHA256 under the current digest key.
    func digest(of keyBytes: [UInt8]) -> Int64 {
        Self.digest(of: keyBytes, key: keys[0].digest)
    }

    /// The row digests a key may have: the current key's first, then the previous keys'.
    package func digests(of keyBytes: [UInt8]) -> [Int64] {
        keys.map { Self.digest(of: keyBytes, key: $0.digest) }
    }

    private static func digest(of keyBytes: [UInt8], key: HMAC<SHA256>) -> Int64 {
        var hmac = key
        hmac.update(data: keyBytes)
        let mac = hmac.finalize()
        return mac.withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(as: Int64.self)) }
    }

    /// Nonce, ciphertext and tag of `payload`, authenticating `header`, under the current key.
    func seal(_ payload: [UInt8], header: [UInt8]) throws -> [UInt8] {
        try Self.seal(payload, header: header, key: keys[0].seal)
    }

    /// The payload of a seal made with any of the keys, or nil when it does not authenticate.
    func open(_ sealed: [UInt8], header: [UInt8]) -> [UInt8]? {
        keys.lazy.compactMap { $0.seal.open(sealed, authenticating: header) }.first
    }

    /// An invalidation's key, sealed for a NOTIFY payload.
    func sealInvalidation(_ keyBytes: [UInt8]) throws -> [UInt8] {
        try Self.seal(keyBytes, header: [], key: keys[0].invalidation)
    }

    /// An invalidation's key, or nil when it does not authenticate under any of the keys.
    func openInvalidation(_ sealed: [UInt8]) -> [UInt8]? {
        keys.lazy.compactMap { $0.invalidation.open(sealed, authenticating: []) }.first
    }

    private static func seal(_ payload: [UInt8], header: [UInt8], key: GCMKey) throws -> [UInt8] {
        do {
            return try key.seal(payload, authenticating: header)
        } catch {
            throw CacheError(code: .valueTooLarge, message: "AES-GCM cannot seal the row", underlying: error)
        }
    }
}
#endif
