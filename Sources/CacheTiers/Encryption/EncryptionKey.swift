// SPDX-License-Identifier: Apache-2.0

/// A 256-bit key that encrypts a disk tier's records at rest.
///
/// ```swift
/// let key = try EncryptionKey(bytes: keychainBytes)  // exactly 32 bytes
/// let disk = try DiskTier(configuration: .init(directory: path, encryption: DiskEncryption(key: key)))
/// ```
///
/// The key's bytes never appear in a description or a log: ``description`` shows a short key id,
/// derived one way from the key, which is also what the cache directory records.
public struct EncryptionKey: Sendable, CustomStringConvertible {
    /// The length of a key in bytes.
    public static let byteCount = 32

    /// The key's bytes.
    package let bytes: [UInt8]

    /// Creates a key from exactly 32 bytes.
    /// - Parameter bytes: the key material, for example from the platform's keychain.
    /// - Throws: ``CacheError/Code/invalidArgument`` when there are not exactly 32 bytes.
    public init(bytes: some Collection<UInt8>) throws {
        guard bytes.count == Self.byteCount else {
            throw CacheError(
                code: .invalidArgument,
                message: "an encryption key is exactly \(Self.byteCount) bytes, not \(bytes.count)"
            )
        }
        self.init(validated: Array(bytes))
    }

    private init(validated bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// A new key from the system's secure random number generator.
    public static func random() -> EncryptionKey {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return EncryptionKey(validated: bytes)
    }

    /// The key's 64-bit id, as the key check file records it.
    package var id: UInt64 { RecordCipher.keyID(of: self) }

    public var description: String {
        "EncryptionKey(id: \(KeyCheckFile.hex(id)))"
    }
}

/// The keys a disk tier encrypts with: the current one, and older ones during a key rotation.
///
/// New records are sealed with ``key``. Records sealed with one of ``previousKeys`` stay readable,
/// and compaction re-seals those it moves. ``DiskTier/rekey()`` re-seals every record and then the
/// directory's key check, after which the previous keys can be forgotten.
public struct DiskEncryption: Sendable {
    /// The key that seals new records.
    public var key: EncryptionKey
    /// Keys that sealed older records; tried by key id, never used to seal. Default empty.
    public var previousKeys: [EncryptionKey]

    /// Creates an encryption setting.
    /// - Parameters:
    ///   - key: the current key.
    ///   - previousKeys: the keys a rotation is moving away from.
    public init(key: EncryptionKey, previousKeys: [EncryptionKey] = []) {
        self.key = key
        self.previousKeys = previousKeys
    }
}
