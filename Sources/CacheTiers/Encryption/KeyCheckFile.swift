// SPDX-License-Identifier: Apache-2.0

import Crypto

/// The key check file of an encrypted directory, `keycheck.lck` (little-endian; see
/// docs/disk-format.md):
///
/// ```
/// 0   4  magic "LCKC"             28  48  sealed: "LayeredCacheKey1" + the 32-byte digest secret
/// 4   4  version u32 (1)          76  16  AES-GCM tag (bytes 0..<28 authenticated)
/// 8   8  key id u64               92   4  CRC-32C of bytes 0..<92
/// 16  12 nonce
/// ```
/// Its presence marks a directory as encrypted. Opening checks it before reading anything else:
/// a wrong key is ``CacheError/Code/wrongKey`` and the directory is left as it was.
enum KeyCheckFile {
    static let fileName = "keycheck.lck"
    static let magic: UInt32 = 0x434B_434C  // "LCKC" in file order
    static let version: UInt32 = 1
    static let size = 96
    static let marker = Array("LayeredCacheKey1".utf8)
    private static let authenticatedCount = 28
    private static let sealedOffset = 28
    private static let sealedCount = 48
    private static let tagOffset = 76
    private static let checksumOffset = 92

    /// Checks the directory's key check against `encryption` and returns the store's cipher.
    ///
    /// - A directory without a key check and without segments or snapshot is new: with a key, a key
    ///   check is written (when `create`); without one it stays plain.
    /// - Throws: ``CacheError/Code/wrongKey`` when no given key opens the key check,
    ///   ``CacheError/Code/encryptionMismatch`` for an encrypted directory without a key or a plain
    ///   one with a key, ``CacheError/Code/corruptData`` when the key check is damaged.
    static func open(
        _ directory: CacheDirectory,
        encryption: DiskEncryption?,
        create: Bool,
        faults: FaultInjector? = nil
    ) throws -> RecordCipher? {
        guard let bytes = try directory.readIfPresent(fileName) else {
            guard let encryption else { return nil }
            let isNew =
                try directory.segmentSequences().isEmpty
                && directory.readIfPresent(CacheDirectory.snapshotFileName) == nil
            guard isNew else {
                throw CacheError(
                    code: .encryptionMismatch,
                    message: "\(directory.path) holds an unencrypted cache: open it without a key, or reset it first"
                )
            }
            let cipher = try RecordCipher(encryption, digestSecret: RecordCipher.randomSecret())
            if create { try write(directory, cipher: cipher, faults: faults) }
            return cipher
        }
        guard let encryption else {
            throw CacheError(code: .encryptionMismatch, message: "\(directory.path) is encrypted: open it with its key")
        }
        let secret = try unseal(bytes, directory: directory, encryption: encryption)
        return try RecordCipher(encryption, digestSecret: secret)
    }

    /// Writes the key check: the cipher's digest secret sealed with its current key.
    static func write(_ directory: CacheDirectory, cipher: RecordCipher, faults: FaultInjector? = nil) throws {
        let nonce = AES.GCM.Nonce()
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: magic.littleEndian, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: version.littleEndian, toByteOffset: 4, as: UInt32.self)
            bytes.storeBytes(of: cipher.current.id.littleEndian, toByteOffset: 8, as: UInt64.self)
            nonce.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: bytes[16..<28]).copyMemory(from: $0) }
        }
        let box = try AES.GCM.seal(
            marker + cipher.digestSecret,
            using: cipher.current.keyCheck,
            nonce: nonce,
            authenticating: bytes[..<authenticatedCount]
        )
        bytes.replaceSubrange(sealedOffset..<tagOffset, with: box.ciphertext)
        bytes.replaceSubrange(tagOffset..<checksumOffset, with: box.tag)
        bytes.withUnsafeMutableBytes { bytes in
            let checksum = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<checksumOffset]))
            bytes.storeBytes(of: checksum.littleEndian, toByteOffset: checksumOffset, as: UInt32.self)
        }
        try directory.replaceAtomically(fileName, with: bytes, faults: faults)
    }

    /// The digest secret sealed in a key check file.
    private static func unseal(
        _ bytes: [UInt8],
        directory: CacheDirectory,
        encryption: DiskEncryption
    ) throws -> [UInt8] {
        let fields: (version: UInt32, keyID: UInt64)? = bytes.withUnsafeBytes { bytes in
            guard bytes.count == size,
                UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self)) == magic,
                UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: checksumOffset, as: UInt32.self))
                    == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<checksumOffset]))
            else { return nil }
            return (
                UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)),
                UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
        guard let fields else {
            throw CacheError(
                code: .corruptData,
                message: "the key check file of \(directory.path) is damaged: the cache cannot be opened, only reset"
            )
        }
        guard fields.version == version else {
            throw CacheError(
                code: .unsupportedFormat,
                message: "the key check file of \(directory.path) has unknown version \(fields.version)"
            )
        }
        let given = ([encryption.key] + encryption.previousKeys).map(RecordCipher.SealingKey.init)
        guard let key = given.first(where: { $0.id == fields.keyID }) else {
            throw CacheError(
                code: .wrongKey,
                message: "none of the \(given.count) given keys opens \(directory.path): it was sealed with "
                    + "key \(hex(fields.keyID)), the keys given are \(given.map { hex($0.id) }.joined(separator: ", "))"
            )
        }
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: bytes[16..<28]),
                ciphertext: bytes[sealedOffset..<tagOffset],
                tag: bytes[tagOffset..<checksumOffset]
            )
            let plain = [UInt8](
                try AES.GCM.open(box, using: key.keyCheck, authenticating: bytes[..<authenticatedCount])
            )
            guard plain.count == sealedCount, Array(plain[..<marker.count]) == marker else {
                throw CacheError(code: .wrongKey, message: "the key check holds an unexpected value")
            }
            return Array(plain[marker.count...])
        } catch {
            throw CacheError(
                code: .wrongKey,
                message: "key \(hex(fields.keyID)) does not authenticate the key check of \(directory.path)",
                underlying: error
            )
        }
    }

    static func hex(_ id: UInt64) -> String {
        let digits = String(id, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
