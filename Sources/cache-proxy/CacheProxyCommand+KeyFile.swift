// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTiers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension CacheProxyCommand {
    /// Why a key file was refused.
    struct KeyFileError: Error, CustomStringConvertible {
        var description: String
    }

    /// Reads the cache's encryption key from the file at `path`: 32 raw bytes, or 64 hexadecimal
    /// digits (a trailing newline allowed). The file must be readable by its owner only (mode
    /// 0600 or 0400): a key that anyone else can read is no key.
    /// - Throws: ``KeyFileError`` for a file that cannot be read, is open to others, or holds
    ///   neither form.
    static func encryptionKey(file path: String) throws -> EncryptionKey {
        try encryptionKey(contents: secret(file: path, upTo: 130), path: path)
    }

    /// The bearer token a `PURGE` must carry, from the file at `path` (readable by its owner
    /// only, as a key file): its one line, without the line end; at least 16 bytes, printable
    /// ASCII without spaces.
    /// - Throws: ``KeyFileError`` for a file that cannot be read, is open to others, or holds no
    ///   such token.
    static func purgeToken(file path: String) throws -> String {
        var bytes = try secret(file: path, upTo: 4097)
        while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard (16...4096).contains(bytes.count), bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw KeyFileError(
                description: "\(path) must hold one token of 16 to 4096 printable ASCII characters without spaces"
            )
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Up to `limit` bytes of the regular file at `path`, which must be readable by its owner
    /// only (mode 0600 or 0400).
    private static func secret(file path: String, upTo limit: Int) throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw KeyFileError(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw KeyFileError(description: "\(path) is not a regular file")
        }
        guard status.st_mode & 0o077 == 0 else {
            throw KeyFileError(
                description: "\(path) may be read by others (mode \(String(status.st_mode & 0o777, radix: 8))): "
                    + "chmod 600 it"
            )
        }
        var bytes = [UInt8](repeating: 0, count: limit)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress! + count, buffer.count - count)
            }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else {
                throw KeyFileError(description: "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if got == 0 { break }
            count += got
        }
        return Array(bytes[..<count])
    }

    /// The key a key file's bytes hold: 32 raw bytes, or 64 hexadecimal digits and an optional
    /// newline.
    static func encryptionKey(contents: [UInt8], path: String) throws -> EncryptionKey {
        if contents.count == EncryptionKey.byteCount {
            return try EncryptionKey(bytes: contents)
        }
        var text = contents
        if text.last == UInt8(ascii: "\n") { text.removeLast() }
        if text.last == UInt8(ascii: "\r") { text.removeLast() }
        guard text.count == 2 * EncryptionKey.byteCount else {
            throw KeyFileError(
                description: "\(path) holds \(contents.count) bytes: a key file holds 32 bytes, or 64 hex digits"
            )
        }
        var key: [UInt8] = []
        key.reserveCapacity(EncryptionKey.byteCount)
        var index = 0
        while index < text.count {
            guard let high = hexValue(text[index]), let low = hexValue(text[index + 1]) else {
                throw KeyFileError(description: "\(path) holds something other than 64 hex digits")
            }
            key.append(high << 4 | low)
            index += 2
        }
        return try EncryptionKey(bytes: key)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
#endif
