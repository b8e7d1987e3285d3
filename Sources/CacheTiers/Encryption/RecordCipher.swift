// SPDX-License-Identifier: Apache-2.0

import Crypto
import Synchronization

/// The keys of an encrypted disk store, derived once: AES-256-GCM keys that seal records (the
/// current one and those of a rotation), the nonces, and the keyed digest that names keys in the
/// index.
///
/// Each ``EncryptionKey`` is only ever used through HKDF-SHA256: one derived key seals records,
/// another the key check file, and an HMAC of a constant is the key's public id. Index digests are
/// SipHash-2-4 under a key derived from the directory's digest secret, a random value that the key
/// check file keeps sealed, so that a key rotation leaves every digest as it was.
///
/// Nonces: a random 96-bit base drawn when the cipher is made, XORed with a counter of seals
/// (as TLS 1.3 does per record). Two opens collide only if their bases agree in the top 32 bits and
/// differ by less than the seal count in the low 64: negligible, and far cheaper than 12 random
/// bytes per record. Sendable: everything but the seal counter (an atomic) is immutable, so the
/// disk tier's readers open records while its writer seals new ones.
package final class RecordCipher: Sendable {
    /// One key, in the forms the store uses.
    ///
    /// `@unchecked Sendable` without a lock: its fields are immutable values set once in `init`;
    /// swift-crypto's `SymmetricKey` is not marked Sendable, but its storage is never changed
    /// after it is made, and readers only pass it to `AES.GCM.open`.
    package struct SealingKey: @unchecked Sendable {
        /// The key's 64-bit id; a record carries its low 32 bits.
        package let id: UInt64
        let records: SymmetricKey
        let keyCheck: SymmetricKey
        #if OpenSSL && canImport(CCryptoAEAD)
        /// Opens records sealed with ``records`` through a context keyed once (Linux); nil when
        /// BoringSSL cannot make one, and then swift-crypto opens them.
        let opener: GCMOpener?
        #endif

        init(_ key: EncryptionKey) {
            let material = SymmetricKey(data: key.bytes)
            id = RecordCipher.keyID(of: key)
            records = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: material,
                salt: Array("LayeredCache".utf8),
                info: Array("record seal v1".utf8),
                outputByteCount: 32
            )
            keyCheck = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: material,
                salt: Array("LayeredCache".utf8),
                info: Array("key check v1".utf8),
                outputByteCount: 32
            )
            #if OpenSSL && canImport(CCryptoAEAD)
            opener = records.withUnsafeBytes { GCMOpener(key: Array($0)) }
            #endif
        }

        /// The id a record header carries.
        package var recordID: UInt32 { UInt32(truncatingIfNeeded: id) }
    }

    /// The key that seals new records.
    package let current: SealingKey
    /// Every key given, the current one first.
    package let keys: [SealingKey]
    /// The directory's digest secret, as the key check file holds it.
    let digestSecret: [UInt8]
    private let digester: SipHash24
    private let nonceBase: (high: UInt32, low: UInt64)
    private let sealCount = Atomic<UInt64>(0)

    /// Derives the keys of `encryption` for a directory whose digest secret is `digestSecret`.
    /// - Throws: ``CacheError/Code/invalidArgument`` when two of the keys have the same id.
    package init(_ encryption: DiskEncryption, digestSecret: [UInt8]) throws {
        let keys = ([encryption.key] + encryption.previousKeys).map(SealingKey.init)
        guard Set(keys.map(\.recordID)).count == keys.count else {
            throw CacheError(
                code: .invalidArgument,
                message: "the encryption keys must differ (two keys have the same id)"
            )
        }
        self.current = keys[0]
        self.keys = keys
        self.digestSecret = digestSecret
        let digestKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: digestSecret),
            salt: Array("LayeredCache".utf8),
            info: Array("index digest v1".utf8),
            outputByteCount: 16
        )
        self.digester = SipHash24(key: digestKey.withUnsafeBytes { [UInt8]($0) })
        var generator = SystemRandomNumberGenerator()
        self.nonceBase = (UInt32(truncatingIfNeeded: generator.next()), generator.next())
    }

    /// A nonce never used before by this cipher, and with overwhelming probability by any other.
    func nextNonce() -> AES.GCM.Nonce {
        let count = sealCount.wrappingAdd(1, ordering: .relaxed).newValue
        var nonce = [UInt8](repeating: 0, count: 12)
        nonce.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: nonceBase.high.littleEndian, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: (nonceBase.low ^ count).littleEndian, toByteOffset: 4, as: UInt64.self)
        }
        // 12 bytes is the length AES.GCM.Nonce takes: it cannot throw.
        return try! AES.GCM.Nonce(data: nonce)
    }

    /// The key with record id `id`, if it was given.
    func key(recordID id: UInt32) -> SealingKey? {
        if current.recordID == id { return current }
        return keys.first { $0.recordID == id }
    }

    /// The index digest of `key`: SipHash-2-4 under the digest key; never zero.
    package func digest(of key: CacheKey) -> UInt64 {
        var string = key.string
        return string.withUTF8 { digest(of: UnsafeRawBufferPointer($0)) }
    }

    /// The index digest of a key's UTF-8 bytes.
    package func digest(of keyBytes: UnsafeRawBufferPointer) -> UInt64 {
        let value = digester.hash(keyBytes)
        return value == 0 ? 1 : value
    }

    /// A key's public id: the first 8 bytes of HMAC-SHA256 of a constant under the key.
    static func keyID(of key: EncryptionKey) -> UInt64 {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("LayeredCache key id v1".utf8),
            using: SymmetricKey(data: key.bytes)
        )
        return mac.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
    }

    /// 32 bytes from the system's secure random number generator.
    package static func randomSecret() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
