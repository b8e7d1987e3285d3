// SPDX-License-Identifier: Apache-2.0

package import Logging
import Synchronization
package import SystemPackage

/// The disk tier's read path, safe to call from any number of tasks at once while the writer
/// appends, retires and compacts.
///
/// A read is one short critical section on one index stripe (find the entry, set its access bit,
/// take a reference to its segment), then one positional read of exactly the record's length with
/// no lock held, then verification — the CRC-32C of a plain record, or the AES-GCM tag of an
/// encrypted one — and the value decompressed straight into the returned array. A record that does
/// not verify is a miss: counted, logged and dropped from the index, never returned.
package final class DiskReader: Sendable {
    /// What one read found.
    package enum Outcome: Sendable {
        case hit(CacheEntry, bytesRead: Int)
        case miss
        /// The record failed its checksum or did not decompress: dropped.
        case corrupt(bytesRead: Int)
        /// The record did not authenticate: dropped.
        case unauthenticated(bytesRead: Int)
    }

    package let index: StripedIndex
    /// The keys of an encrypted store; nil for a plain one.
    package let cipher: RecordCipher?
    /// The directory's keyed digest (``KeyedDigest``).
    package let keyedDigest: KeyedDigest
    let logger: Logger

    package init(index: StripedIndex, cipher: RecordCipher?, keyedDigest: KeyedDigest, logger: Logger) {
        self.index = index
        self.cipher = cipher
        self.keyedDigest = keyedDigest
        self.logger = logger
    }

    /// The digest the index keys `key` by: keyed (SipHash) in an encrypted store, the key's own
    /// digest in a plain one.
    package func digest(for key: CacheKey) -> UInt64 {
        IndexEntry.indexDigest(cipher?.digest(of: key) ?? key.digest)
    }

    /// Reads the record `location` points at in `file`: one positional read of its size class
    /// (a record at the end of the file reads short), cut to the length its header gives.
    /// - Returns: the record's bytes, not yet verified; nil when the file ends first, or when the
    ///   header is unreadable or its length is not of the entry's size class.
    /// - Throws: I/O errors.
    package static func readRecord(_ location: IndexEntry, from file: CacheFile) throws -> [UInt8]? {
        do {
            return try readRecord(location, from: file.descriptor)
        } catch let errno as Errno {
            throw CacheFile.error(errno, "read \(location.length) bytes at \(location.offset) of \(file.path)")
        }
    }

    /// ``readRecord(_:from:)-(_,CacheFile)`` on a bare descriptor (the readers' path).
    /// - Throws: the `Errno` of a failed read.
    package static func readRecord(_ location: IndexEntry, from descriptor: FileDescriptor) throws -> [UInt8]? {
        var complete = false
        let bytes = try [UInt8](unsafeUninitializedCapacity: location.length) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            let read = try CacheFile.read(from: descriptor, into: raw, at: Int64(location.offset)) { bytes in
                guard let header = RecordFormat.parseHeader(bytes) else { return true }
                return header.recordLength <= bytes.count
            }
            initialized = read
            guard let header = RecordFormat.parseHeader(UnsafeRawBufferPointer(rebasing: raw[..<read])),
                header.recordLength <= read, IndexEntry.sizeClass(of: header.recordLength) == location.sizeClass
            else { return }
            complete = true
            initialized = header.recordLength
        }
        return complete ? bytes : nil
    }

    /// The entry stored for `key`, or nil.
    /// - Complexity: O(1): one stripe lookup and one positional read.
    package func entry(for key: CacheKey) -> CacheEntry? {
        if case .hit(let entry, _) = read(key) { return entry }
        return nil
    }

    /// Reads the entry for `key`.
    package func read(_ key: CacheKey) -> Outcome {
        let digest = digest(for: key)
        let stripe = index.stripe(for: digest)
        guard let (location, reference) = stripe.lookup(digest) else {
            stripe.misses.add(1, ordering: .relaxed)
            return .miss
        }
        let record: [UInt8]?
        do {
            record = try Self.readRecord(location, from: reference.descriptor)
        } catch {
            // Unreadable now is unreadable next time too: dropped, so that it is reported once.
            drop(location, segment: reference.segment, stripe: stripe, reason: "read failed: \(error)")
            return .corrupt(bytesRead: 0)
        }
        guard var record else {
            drop(
                location,
                segment: reference.segment,
                stripe: stripe,
                reason: "record extends past the end of its segment or its header is damaged"
            )
            return .corrupt(bytesRead: 0)
        }
        stripe.bytesRead.add(record.count, ordering: .relaxed)
        let outcome = record.withUnsafeMutableBytes { decode($0, key: key) }
        switch outcome {
        case .hit:
            stripe.hits.add(1, ordering: .relaxed)
        case .miss:
            stripe.misses.add(1, ordering: .relaxed)
        case .corrupt:
            drop(location, segment: reference.segment, stripe: stripe, reason: "checksum mismatch or bad value")
        case .unauthenticated:
            drop(
                location,
                segment: reference.segment,
                stripe: stripe,
                unauthenticated: true,
                reason: "does not authenticate"
            )
        }
        return outcome
    }

    /// Verifies and decodes the bytes of one record; an encrypted one is opened in place.
    private func decode(_ record: UnsafeMutableRawBufferPointer, key: CacheKey) -> Outcome {
        let bytes = UnsafeRawBufferPointer(record)
        let count = bytes.count
        guard let header = RecordFormat.parseHeader(bytes), header.recordLength == count else {
            return .corrupt(bytesRead: count)
        }
        if let cipher {
            // The AES-GCM tag covers every byte the checksum does (the checksum field aside).
            guard header.flags.contains(.encrypted) else {
                guard RecordFormat.computeChecksum(bytes) == header.checksum else { return .corrupt(bytesRead: count) }
                return .unauthenticated(bytesRead: count)
            }
            guard let (plain, plainHeader) = RecordFormat.openInPlace(record, header: header, cipher: cipher)
            else { return .unauthenticated(bytesRead: count) }
            return decodeVerified(plain, header: plainHeader, key: key, bytesRead: count)
        }
        guard RecordFormat.computeChecksum(bytes) == header.checksum else { return .corrupt(bytesRead: count) }
        guard !header.flags.contains(.encrypted) else { return .unauthenticated(bytesRead: count) }
        return decodeVerified(bytes, header: header, key: key, bytesRead: count)
    }

    private func decodeVerified(
        _ bytes: UnsafeRawBufferPointer,
        header: RecordHeader,
        key: CacheKey,
        bytesRead: Int
    ) -> Outcome {
        // The full key is checked: two keys with one digest make a miss, never each other's bytes.
        guard !header.flags.contains(.tombstone), !header.flags.contains(.clear),
            RecordFormat.recordKey(bytes, header: header, equals: key)
        else { return .miss }
        do {
            return .hit(try RecordFormat.decodeEntry(bytes, header: header), bytesRead: bytesRead)
        } catch {
            return .corrupt(bytesRead: bytesRead)
        }
    }

    /// Counts, logs and forgets a record that must not be served, if the index still points at it.
    private func drop(
        _ location: IndexEntry,
        segment: SegmentHandle,
        stripe: StripedIndex.Stripe,
        unauthenticated: Bool = false,
        reason: String
    ) {
        if unauthenticated {
            stripe.authenticationFailures.add(1, ordering: .relaxed)
        } else {
            stripe.corruptRecords.add(1, ordering: .relaxed)
        }
        stripe.misses.add(1, ordering: .relaxed)
        logger.warning(
            unauthenticated ? "unauthenticated record dropped" : "corrupt record dropped",
            metadata: ["segment": "\(location.segment)", "offset": "\(location.offset)", "reason": "\(reason)"]
        )
        if stripe.remove(ifStill: location) {
            segment.addLiveBytes(-location.length)
        }
    }
}
