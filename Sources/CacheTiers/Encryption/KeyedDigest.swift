// SPDX-License-Identifier: Apache-2.0

import Crypto

/// A keyed digest of text under a secret that stays with the cache's data: HMAC-SHA256, cut to
/// 128 bits, as 32 lowercase hexadecimal digits.
///
/// The layers above store it where they need to know only whether two values are equal, never
/// the values (a credential a stored record must be matched against). A disk tier's secret is
/// derived from its current encryption key when it has one (so caches that share a key, and the
/// shared tier they write, digest alike; a key rotation starts a new secret), and otherwise kept
/// in the directory's `digest.key` (mode 0600) for as long as the directory lives. A tiered cache
/// without a disk tier makes a random one per process.
package struct KeyedDigest: Sendable {
    /// The name of a plain directory's secret file.
    static let fileName = "digest.key"
    /// The length of a secret in bytes.
    static let secretCount = 32

    /// The secret's bytes (Crypto's `SymmetricKey` is not `Sendable`).
    private let secret: [UInt8]

    /// A digest keyed by `secret` as it is.
    init(secret: [UInt8]) {
        self.secret = secret
    }

    /// A digest keyed by a secret derived from an encryption key (never the key itself): every
    /// cache encrypted with the same current key digests alike.
    init(derivedFrom key: EncryptionKey) {
        secret = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: key.bytes),
            salt: Array("LayeredCache".utf8),
            info: Array("keyed digest v1".utf8),
            outputByteCount: Self.secretCount
        ).withUnsafeBytes { [UInt8]($0) }
    }

    /// A digest keyed by a new random secret.
    package static func random() -> KeyedDigest {
        KeyedDigest(secret: RecordCipher.randomSecret())
    }

    /// The digest of `text`'s UTF-8 bytes: 32 lowercase hexadecimal digits.
    package func hex(of text: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: SymmetricKey(data: secret))
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for byte in mac.prefix(16) {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The secret of the plain directory `directory`: read from ``fileName``, or made and written
    /// there when the file is missing or not a secret (then what was digested under the old one
    /// no longer matches: a miss, never a wrong match).
    static func open(_ directory: CacheDirectory, faults: FaultInjector?) throws -> KeyedDigest {
        if let bytes = try directory.readIfPresent(fileName), bytes.count == secretCount {
            return KeyedDigest(secret: bytes)
        }
        let secret = RecordCipher.randomSecret()
        try directory.replaceAtomically(fileName, with: secret, faults: faults)
        return KeyedDigest(secret: secret)
    }
}
