// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTiers
import Crypto

/// Seals shared rows with AES-256-GCM under a key derived from the cache's ``EncryptionKey`` (the
/// disk tier's), and names keys by a keyed digest, so that no key, metadata or value reaches the
/// database in clear and every instance with the same key reads every other's rows.
///
/// Both derived keys come from HKDF-SHA256 with their own labels, so they are independent of the
/// disk tier's record keys. Nonces are 12 random bytes per row: rows are few enough per key
/// (well under 2^32) that random nonces stay safe.
///
/// `@unchecked Sendable` without a lock: its fields are immutable values set once in `init`;
/// swift-crypto's `SymmetricKey` is not marked Sendable, but its storage never changes after it
/// is made.
final class RowSealer: @unchecked Sendable {
    private let sealKey: SymmetricKey
    private let digestKey: SymmetricKey
    private let invalidationKey: SymmetricKey

    init(key: EncryptionKey) {
        let material = SymmetricKey(data: key.bytes)
        func derive(_ label: String) -> SymmetricKey {
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: material,
                salt: Array("LayeredCache".utf8),
                info: Array(label.utf8),
                outputByteCount: 32
            )
        }
        sealKey = derive("shared row seal v1")
        digestKey = derive("shared row digest v1")
        invalidationKey = derive("shared invalidation seal v1")
    }

    /// The row digest of a key: the first 8 bytes of HMAC-SHA256 under the digest key.
    func digest(of keyBytes: [UInt8]) -> Int64 {
        let mac = HMAC<SHA256>.authenticationCode(for: keyBytes, using: digestKey)
        return mac.withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(as: Int64.self)) }
    }

    /// Nonce, ciphertext and tag of `payload`, authenticating `header`.
    func seal(_ payload: [UInt8], header: [UInt8]) throws -> [UInt8] {
        try Self.seal(payload, header: header, key: sealKey)
    }

    /// The payload of a seal, or nil when it does not authenticate.
    func open(_ sealed: [UInt8], header: [UInt8]) -> [UInt8]? {
        Self.open(sealed, header: header, key: sealKey)
    }

    /// An invalidation's key, sealed for a NOTIFY payload.
    func sealInvalidation(_ keyBytes: [UInt8]) throws -> [UInt8] {
        try Self.seal(keyBytes, header: [], key: invalidationKey)
    }

    /// An invalidation's key, or nil when it does not authenticate.
    func openInvalidation(_ sealed: [UInt8]) -> [UInt8]? {
        Self.open(sealed, header: [], key: invalidationKey)
    }

    private static func seal(_ payload: [UInt8], header: [UInt8], key: SymmetricKey) throws -> [UInt8] {
        do {
            let box = try AES.GCM.seal(payload, using: key, nonce: AES.GCM.Nonce(), authenticating: header)
            // A 12-byte nonce always gives the combined form.
            return Array(box.combined!)
        } catch {
            throw CacheError(code: .valueTooLarge, message: "AES-GCM cannot seal the row", underlying: error)
        }
    }

    private static func open(_ sealed: [UInt8], header: [UInt8], key: SymmetricKey) -> [UInt8]? {
        guard sealed.count >= 28, let box = try? AES.GCM.SealedBox(combined: sealed),
            let opened = try? AES.GCM.open(box, using: key, authenticating: header)
        else { return nil }
        return Array(opened)
    }
}
#endif
