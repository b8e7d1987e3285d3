// SPDX-License-Identifier: Apache-2.0

import Logging
import SystemPackage

extension DiskStore {
    /// The digest the index keys `key` by: keyed (HMAC) in an encrypted store, ``CacheKey/digest``
    /// in a plain one.
    func digest(for key: CacheKey) -> UInt64 {
        cipher?.digest(of: key) ?? key.digest
    }

    /// Reads the record at `location`, checks its checksum and, in an encrypted store, opens it.
    /// - Returns: the plain record; nil when it is damaged or does not authenticate, in which case
    ///   it is counted, logged and dropped from the index.
    func readPlainRecord(_ location: IndexEntry) -> [UInt8]? {
        guard let record = readVerifiedRecord(location, authenticatedLater: true) else { return nil }
        return record.withUnsafeBytes { bytes in
            guard let cipher else {
                guard let header = RecordFormat.parseHeader(bytes), !header.flags.contains(.encrypted) else {
                    dropUnauthenticated(location, reason: "an encrypted record in an unencrypted cache")
                    return nil
                }
                return record
            }
            guard let header = RecordFormat.parseHeader(bytes), header.flags.contains(.encrypted) else {
                dropUnauthenticated(location, reason: "an unencrypted record in an encrypted cache")
                return nil
            }
            guard let plain = RecordFormat.unseal(bytes, header: header, cipher: cipher) else {
                dropUnauthenticated(location, reason: "record does not authenticate")
                return nil
            }
            return plain
        }
    }

    /// `record` (the verified bytes of `location`) sealed with the current key: as it is when it
    /// already is, sealed again when an older key sealed it.
    /// - Returns: nil when it does not authenticate; it is then counted and dropped from the index.
    func resealedIfStale(_ record: [UInt8], location: IndexEntry) throws -> [UInt8]? {
        guard let cipher else { return record }
        let opened: (stale: Bool, plain: [UInt8]?) = record.withUnsafeBytes { bytes in
            guard let header = RecordFormat.parseHeader(bytes), header.flags.contains(.encrypted) else {
                return (true, nil)
            }
            guard header.keyID != cipher.current.recordID else { return (false, nil) }
            return (true, RecordFormat.unseal(bytes, header: header, cipher: cipher))
        }
        guard opened.stale else { return record }
        guard let plain = opened.plain else {
            dropUnauthenticated(location, reason: "record does not authenticate; not moved")
            return nil
        }
        counters.resealedRecords += 1
        return try RecordFormat.seal(plain, digest: location.digest, cipher: cipher)
    }

    func dropUnauthenticated(_ location: IndexEntry, reason: String) {
        drop(location, counting: \.authenticationFailures, "unauthenticated record dropped", reason: reason)
    }

    /// Seals everything with the current key, so that the previous keys can be forgotten: every
    /// closed segment is compacted (its live records sealed again with the current key, the
    /// segment deleted), then the index snapshot and the key check are written with the current
    /// key. A crash on the way leaves a directory that opens with the old keys given as well.
    /// - Returns: the number of records sealed again.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a store without encryption; I/O errors.
    @discardableResult
    package func rekey() throws -> Int {
        try checkOpen()
        guard let cipher else {
            throw CacheError(
                code: .invalidArgument,
                message: "the disk tier is not encrypted: there is no key to rotate"
            )
        }
        let before = counters.resealedRecords
        try rotate()
        for sequence in order.dropLast() {
            try compactSegment(sequence, isOldest: sequence == order.first)
            counters.compactedSegments += 1
        }
        try syncActive()
        try writeSnapshot()
        try KeyCheckFile.write(directory, cipher: cipher, faults: configuration.faults)
        let resealed = counters.resealedRecords - before
        logger.notice("disk tier re-keyed", metadata: ["resealedRecords": "\(resealed)"])
        return resealed
    }

    /// Removes a closed cache directory: its segments, snapshot, key check, digest secret and lock, then the
    /// directory itself when nothing else is in it. A directory that does not exist is fine.
    /// - Throws: ``CacheError/Code/directoryLocked`` while it is open (in this process or another);
    ///   I/O errors.
    package static func reset(directory path: String) throws {
        let directory: CacheDirectory
        do {
            directory = try CacheDirectory(path: FilePath(path), create: false)
        } catch let error as CacheError where (error.underlying as? Errno) == .noSuchFileOrDirectory {
            return
        }
        defer { directory.unlock() }
        for sequence in try directory.segmentSequences() {
            try directory.remove(directory.segmentPath(sequence))
        }
        for name in [
            CacheDirectory.snapshotFileName, CacheDirectory.snapshotFileName + ".tmp",
            KeyCheckFile.fileName, KeyCheckFile.fileName + ".tmp", KeyedDigest.fileName,
            KeyedDigest.fileName + ".tmp", CacheDirectory.lockFileName,
        ] {
            try directory.remove(directory.path.appending(name))
        }
        directory.sync()
        directory.removeIfEmpty()
    }
}
