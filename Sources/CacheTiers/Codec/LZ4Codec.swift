// SPDX-License-Identifier: Apache-2.0

// This is the only file that imports CLZ4. Everything liblz4 does for the package goes through
// the functions below: bytes in, bytes out, pointers only inside `withUnsafe…` closures, and every
// failure code turned into a thrown `CacheError`.
internal import CLZ4

/// Safe LZ4 block compression over liblz4.
///
/// LZ4 blocks do not record their decoded length, so the caller stores it and hands it back to
/// ``decompress(_:originalLength:)``. A decoded length above ``maximumDecodedLength`` is refused
/// before any memory is allocated, so a corrupt length field cannot make the process allocate
/// gigabytes.
package struct LZ4Codec: Sendable {
    /// The largest input liblz4 accepts (`LZ4_MAX_INPUT_SIZE`, just under 2 GiB).
    package static let maximumInputLength = Int(CLZ4_maxInputSize())

    /// The largest decoded length ``decompress(_:originalLength:)`` accepts.
    package var maximumDecodedLength: Int

    /// Creates a codec.
    /// - Parameter maximumDecodedLength: the largest decoded length accepted; at most
    ///   ``maximumInputLength``. Defaults to 1 GiB.
    package init(maximumDecodedLength: Int = 1 << 30) {
        precondition(
            maximumDecodedLength >= 0 && maximumDecodedLength <= Self.maximumInputLength,
            "maximumDecodedLength must be in 0...\(Self.maximumInputLength)"
        )
        self.maximumDecodedLength = maximumDecodedLength
    }

    /// The largest size LZ4 can produce for an input of `count` bytes.
    /// - Throws: ``CacheError/Code/valueTooLarge`` when `count` is above ``maximumInputLength``.
    package static func compressBound(_ count: Int) throws -> Int {
        guard count >= 0, count <= maximumInputLength else {
            throw CacheError(code: .valueTooLarge, message: "LZ4 input of \(count) bytes exceeds \(maximumInputLength)")
        }
        return Int(CLZ4_compressBound(Int32(count)))
    }

    // MARK: Compression

    /// Compresses `source` into `destination`.
    /// - Returns: the number of bytes written, or nil when the compressed form does not fit in
    ///   `destination` (give it ``compressBound(_:)`` bytes for a result that always fits).
    /// - Throws: ``CacheError/Code/valueTooLarge`` when `source` is larger than LZ4 accepts.
    package static func compress(
        _ source: UnsafeRawBufferPointer,
        into destination: UnsafeMutableRawBufferPointer
    ) throws -> Int? {
        guard source.count <= maximumInputLength else {
            throw CacheError(
                code: .valueTooLarge,
                message: "LZ4 input of \(source.count) bytes exceeds \(maximumInputLength)"
            )
        }
        // liblz4 wants non-null pointers even for empty buffers.
        guard let destinationBase = destination.baseAddress, !destination.isEmpty else { return nil }
        let capacity = Int32(clamping: destination.count)
        let written: Int32
        if let sourceBase = source.baseAddress {
            written = LZ4_compress_default(sourceBase, destinationBase, Int32(source.count), capacity)
        } else {
            var empty: UInt8 = 0
            written = withUnsafePointer(to: &empty) { LZ4_compress_default($0, destinationBase, 0, capacity) }
        }
        return written > 0 ? Int(written) : nil
    }

    /// Compresses `source`.
    /// - Returns: the LZ4 block; its size is at most ``compressBound(_:)`` of the input.
    /// - Throws: ``CacheError/Code/valueTooLarge`` when `source` is larger than LZ4 accepts.
    package static func compress(_ source: UnsafeRawBufferPointer) throws -> [UInt8] {
        let bound = try compressBound(source.count)
        return try [UInt8](unsafeUninitializedCapacity: bound) { buffer, initialized in
            guard let written = try compress(source, into: UnsafeMutableRawBufferPointer(buffer)) else {
                throw CacheError(code: .compressionFailed, message: "LZ4 did not fit its own bound")
            }
            initialized = written
        }
    }

    /// Compresses `source`.
    package static func compress(_ source: [UInt8]) throws -> [UInt8] {
        try source.withUnsafeBytes { try compress($0) }
    }

    /// Compresses `source` only if that makes it strictly smaller.
    /// - Returns: the LZ4 block, or nil when the value should be stored raw.
    package static func compressIfSmaller(_ source: UnsafeRawBufferPointer) throws -> [UInt8]? {
        guard source.count > 1 else { return nil }
        var fitted = true
        let result = try [UInt8](unsafeUninitializedCapacity: source.count - 1) { buffer, initialized in
            if let written = try compress(source, into: UnsafeMutableRawBufferPointer(buffer)) {
                initialized = written
            } else {
                fitted = false
                initialized = 0
            }
        }
        return fitted ? result : nil
    }

    // MARK: Decompression

    /// Decompresses `source` into `destination`, which must be exactly the original length.
    /// - Throws: ``CacheError/Code/corruptData`` when the block is malformed, truncated, or does
    ///   not decode to exactly `destination.count` bytes; ``CacheError/Code/valueTooLarge`` when
    ///   `destination` is larger than ``maximumDecodedLength``.
    package func decompress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer) throws {
        guard destination.count <= maximumDecodedLength else {
            throw CacheError(
                code: .valueTooLarge,
                message: "decoded length \(destination.count) exceeds the maximum \(maximumDecodedLength)"
            )
        }
        guard let sourceBase = source.baseAddress, !source.isEmpty, source.count <= Self.maximumInputLength else {
            throw CacheError(code: .corruptData, message: "LZ4 block of \(source.count) bytes is not valid")
        }
        let decoded: Int32
        if let destinationBase = destination.baseAddress, !destination.isEmpty {
            decoded = LZ4_decompress_safe(sourceBase, destinationBase, Int32(source.count), Int32(destination.count))
        } else {
            var scratch: UInt8 = 0
            decoded = withUnsafeMutablePointer(to: &scratch) {
                LZ4_decompress_safe(sourceBase, $0, Int32(source.count), 0)
            }
        }
        guard Int(decoded) == destination.count else {
            throw CacheError(
                code: .corruptData,
                message: decoded < 0
                    ? "LZ4 block is malformed (error \(decoded))"
                    : "LZ4 block decoded to \(decoded) bytes, expected \(destination.count)"
            )
        }
    }

    /// Decompresses `source`, which must decode to exactly `originalLength` bytes.
    /// - Returns: the decoded bytes.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a negative length,
    ///   ``CacheError/Code/valueTooLarge`` for a length above ``maximumDecodedLength``,
    ///   ``CacheError/Code/corruptData`` for a block that does not decode to `originalLength` bytes.
    package func decompress(_ source: UnsafeRawBufferPointer, originalLength: Int) throws -> [UInt8] {
        guard originalLength >= 0 else {
            throw CacheError(code: .invalidArgument, message: "negative original length \(originalLength)")
        }
        guard originalLength <= maximumDecodedLength else {
            throw CacheError(
                code: .valueTooLarge,
                message: "decoded length \(originalLength) exceeds the maximum \(maximumDecodedLength)"
            )
        }
        return try [UInt8](unsafeUninitializedCapacity: originalLength) { buffer, initialized in
            try decompress(source, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = originalLength
        }
    }

    /// Decompresses `source`, which must decode to exactly `originalLength` bytes.
    package func decompress(_ source: [UInt8], originalLength: Int) throws -> [UInt8] {
        try source.withUnsafeBytes { try decompress($0, originalLength: originalLength) }
    }
}
