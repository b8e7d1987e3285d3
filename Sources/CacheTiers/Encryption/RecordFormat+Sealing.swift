// SPDX-License-Identifier: Apache-2.0

import Crypto

/// Encrypted records (see docs/disk-format.md):
///
/// ```
/// 0   40  header: flags with `encrypted`, plaintext lengths, key id at 36, CRC-32C of the record
/// 40   8  keyed digest of the key (HMAC-SHA256, 64 bits), so replay and compaction need no key
/// 48  12  AES-GCM nonce, unique (see ``RecordCipher``)
/// 60   n  AES-256-GCM ciphertext of key ‖ metadata ‖ value as stored (compressed first)
/// 60+n 16 tag; bytes 0..<48, the checksum field as zero, are the associated data
/// ```
extension RecordFormat {
    /// The bytes an encrypted record has beyond a plain one: keyed digest, nonce and tag.
    package static let sealOverhead = 8 + 12 + 16
    private static let digestOffset = headerSize
    private static let nonceOffset = headerSize + 8
    private static let ciphertextOffset = headerSize + 20
    private static let tagCount = 16

    /// Seals a plain put record with the cipher's current key.
    /// - Parameters:
    ///   - plain: a put record as ``encodePut(key:metadata:value:storedAtMillis:allowCompression:)``
    ///     encodes it (its checksum is not checked).
    ///   - digest: the key's keyed digest, written in clear for replay and compaction.
    /// - Throws: ``CacheError/Code/valueTooLarge`` when AES-GCM refuses the length.
    package static func seal(_ plain: [UInt8], digest: UInt64, cipher: RecordCipher) throws -> [UInt8] {
        try plain.withUnsafeBytes { plain in
            guard var header = parseHeader(plain), header.recordLength == plain.count,
                header.flags.isDisjoint(with: [.tombstone, .clear, .encrypted])
            else { preconditionFailure("only a plain put record is sealed") }
            header.flags.insert(.encrypted)
            header.keyID = cipher.current.recordID
            header.checksum = 0
            let payload = UnsafeRawBufferPointer(rebasing: plain[headerSize...])
            let nonce = cipher.nextNonce()
            return try [UInt8](unsafeUninitializedCapacity: header.recordLength) { buffer, initialized in
                let record = UnsafeMutableRawBufferPointer(buffer)
                write(header, into: record)
                record.storeBytes(of: digest.littleEndian, toByteOffset: digestOffset, as: UInt64.self)
                nonce.withUnsafeBytes {
                    UnsafeMutableRawBufferPointer(rebasing: record[nonceOffset..<ciphertextOffset]).copyMemory(from: $0)
                }
                let box: AES.GCM.SealedBox
                do {
                    box = try AES.GCM.seal(
                        payload,
                        using: cipher.current.records,
                        nonce: nonce,
                        authenticating: UnsafeRawBufferPointer(rebasing: record[..<nonceOffset])
                    )
                } catch {
                    throw CacheError(code: .valueTooLarge, message: "AES-GCM cannot seal the record", underlying: error)
                }
                let tagOffset = ciphertextOffset + payload.count
                UnsafeMutableRawBufferPointer(rebasing: record[ciphertextOffset..<tagOffset])
                    .copyBytes(from: box.ciphertext)
                UnsafeMutableRawBufferPointer(rebasing: record[tagOffset...]).copyBytes(from: box.tag)
                let checksum = computeChecksum(UnsafeRawBufferPointer(record))
                record.storeBytes(of: checksum.littleEndian, toByteOffset: checksumOffset, as: UInt32.self)
                initialized = header.recordLength
            }
        }
    }

    /// Opens a verified encrypted record.
    /// - Returns: the plain record (the header without the `encrypted` flag or key id, then key,
    ///   metadata and stored value), or nil when the record's key was not given or it does not
    ///   authenticate.
    package static func unseal(_ record: UnsafeRawBufferPointer, header: RecordHeader, cipher: RecordCipher) -> [UInt8]?
    {
        guard header.flags.contains(.encrypted), let key = cipher.key(recordID: header.keyID) else { return nil }
        var plainHeader = header
        plainHeader.flags.remove(.encrypted)
        plainHeader.keyID = 0
        #if OpenSSL && canImport(COpenSSLCrypto)
        if let opener = key.opener, record.count <= GCMOpener.preferredRecordLimit {
            switch unseal(record, plainHeader: plainHeader, opener: opener) {
            case .opened(let plain): return plain
            case .refused: return nil
            case .unavailable: break  // nothing was tried: swift-crypto opens it below
            }
        }
        #endif
        let opened = withUnsafeTemporaryAllocation(byteCount: nonceOffset, alignment: 8) { associated in
            associated.copyMemory(from: UnsafeRawBufferPointer(rebasing: record[..<nonceOffset]))
            associated.storeBytes(of: 0, toByteOffset: checksumOffset, as: UInt32.self)
            return try? AES.GCM.open(
                // Nonce, ciphertext and tag back to back: AES-GCM's "combined" form.
                AES.GCM.SealedBox(combined: UnsafeRawBufferPointer(rebasing: record[nonceOffset...])),
                using: key.records,
                authenticating: UnsafeRawBufferPointer(associated)
            )
        }
        guard let payload = opened else { return nil }
        let length = headerSize + payload.count
        return [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            let plain = UnsafeMutableRawBufferPointer(buffer)
            write(plainHeader, into: plain)
            UnsafeMutableRawBufferPointer(rebasing: plain[headerSize...]).copyBytes(from: payload)
            initialized = length
        }
    }

    #if OpenSSL && canImport(COpenSSLCrypto)
    private enum Unsealed {
        case opened([UInt8])
        case refused
        case unavailable
    }

    /// ``unseal(_:header:cipher:)`` through `opener`: the plaintext is decrypted straight into
    /// the plain record, after its header. (Opening in place, into the bytes read, measured no
    /// faster: the allocation is not where the time goes.)
    private static func unseal(
        _ record: UnsafeRawBufferPointer,
        plainHeader: RecordHeader,
        opener: GCMOpener
    ) -> Unsealed {
        let ciphertextCount = record.count - ciphertextOffset - tagCount
        guard ciphertextCount >= 0 else { return .refused }
        let tagOffset = ciphertextOffset + ciphertextCount
        let length = headerSize + ciphertextCount
        var authentic: Bool?
        let plain = [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            let plain = UnsafeMutableRawBufferPointer(buffer)
            authentic = withUnsafeTemporaryAllocation(byteCount: nonceOffset, alignment: 8) { associated in
                associated.copyMemory(from: UnsafeRawBufferPointer(rebasing: record[..<nonceOffset]))
                associated.storeBytes(of: 0, toByteOffset: checksumOffset, as: UInt32.self)
                return opener.open(
                    nonce: UnsafeRawBufferPointer(rebasing: record[nonceOffset..<ciphertextOffset]),
                    authenticated: UnsafeRawBufferPointer(associated),
                    ciphertext: UnsafeRawBufferPointer(rebasing: record[ciphertextOffset..<tagOffset]),
                    tag: UnsafeRawBufferPointer(rebasing: record[tagOffset...]),
                    into: UnsafeMutableRawBufferPointer(rebasing: plain[headerSize...])
                )
            }
            write(plainHeader, into: plain)
            initialized = length
        }
        switch authentic {
        case true?: return .opened(plain)
        case false?: return .refused
        case nil: return .unavailable
        }
    }
    #endif

    /// The digest the index keys a put record by: the keyed digest a sealed record carries, or the
    /// hash of a plain record's key.
    package static func indexDigest(_ record: UnsafeRawBufferPointer, header: RecordHeader) -> UInt64 {
        if header.flags.contains(.encrypted) {
            let digest = UInt64(littleEndian: record.loadUnaligned(fromByteOffset: digestOffset, as: UInt64.self))
            return digest == 0 ? 1 : digest  // zero marks an empty index slot
        }
        return KeyDigest.digest(
            of: UnsafeRawBufferPointer(rebasing: record[headerSize..<(headerSize + header.keyLength)])
        )
    }
}
