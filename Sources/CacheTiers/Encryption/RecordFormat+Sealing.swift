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

    /// Opens a verified encrypted record into a new array (inspection and re-sealing; the read
    /// path opens in place, with ``openInPlace(_:header:cipher:)``).
    /// - Returns: the plain record (the header without the `encrypted` flag or key id, then key,
    ///   metadata and stored value), or nil when the record's key was not given or it does not
    ///   authenticate.
    package static func unseal(_ record: UnsafeRawBufferPointer, header: RecordHeader, cipher: RecordCipher) -> [UInt8]?
    {
        var copy = [UInt8](record)
        return copy.withUnsafeMutableBytes { bytes in
            openInPlace(bytes, header: header, cipher: cipher).map { [UInt8]($0.plain) }
        }
    }

    /// Opens an encrypted record where it lies: the plaintext is decrypted over the ciphertext
    /// and the plain header written just before it, over the nonce and the keyed digest, so a
    /// disk hit neither allocates nor copies to open its record.
    /// - Parameters:
    ///   - record: exactly one encrypted record, `header.recordLength` bytes; overwritten.
    ///   - header: its header, as parsed.
    /// - Returns: the plain record, a part of `record` (the header without the `encrypted` flag or
    ///   key id, then key, metadata and stored value), and its header; nil when the record's key
    ///   was not given or it does not authenticate, and then what `record` holds must not be used.
    package static func openInPlace(
        _ record: UnsafeMutableRawBufferPointer,
        header: RecordHeader,
        cipher: RecordCipher
    ) -> (plain: UnsafeRawBufferPointer, header: RecordHeader)? {
        guard header.flags.contains(.encrypted), header.recordLength == record.count,
            let key = cipher.key(recordID: header.keyID)
        else { return nil }
        let tagOffset = record.count - tagCount
        let ciphertext = UnsafeMutableRawBufferPointer(rebasing: record[ciphertextOffset..<tagOffset])
        // The associated data (the checksum field as zero) and the nonce, copied out first: the
        // plain header is written over them.
        let opened = withUnsafeTemporaryAllocation(byteCount: ciphertextOffset, alignment: 8) { scratch in
            scratch.copyMemory(from: UnsafeRawBufferPointer(rebasing: record[..<ciphertextOffset]))
            scratch.storeBytes(of: 0, toByteOffset: checksumOffset, as: UInt32.self)
            let associated = UnsafeRawBufferPointer(rebasing: scratch[..<nonceOffset])
            #if OpenSSL && canImport(CCryptoAEAD)
            if let opener = key.opener {
                let authentic = opener.open(
                    nonce: UnsafeRawBufferPointer(rebasing: scratch[nonceOffset...]),
                    authenticated: associated,
                    ciphertext: UnsafeRawBufferPointer(ciphertext),
                    tag: UnsafeRawBufferPointer(rebasing: record[tagOffset...]),
                    into: ciphertext
                )
                if let authentic { return authentic }
                // nil: nothing was tried or written; swift-crypto opens it below.
            }
            #endif
            guard
                let payload = try? AES.GCM.open(
                    // Nonce, ciphertext and tag back to back: AES-GCM's "combined" form.
                    AES.GCM.SealedBox(combined: UnsafeRawBufferPointer(rebasing: record[nonceOffset...])),
                    using: key.records,
                    authenticating: associated
                ), payload.count == ciphertext.count
            else { return false }
            ciphertext.copyBytes(from: payload)
            return true
        }
        guard opened else { return nil }
        var plainHeader = header
        plainHeader.flags.remove(.encrypted)
        plainHeader.keyID = 0
        let plain = UnsafeMutableRawBufferPointer(rebasing: record[(ciphertextOffset - headerSize)..<tagOffset])
        write(plainHeader, into: plain)
        return (UnsafeRawBufferPointer(plain), plainHeader)
    }

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
