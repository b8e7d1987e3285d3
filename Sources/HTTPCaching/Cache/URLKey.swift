// SPDX-License-Identifier: Apache-2.0

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Builds the primary cache key of a request in one pass and one allocation (it runs on every
/// lookup): `METHOD scheme://authority/path?query` with the scheme and host lowercased (ASCII;
/// hosts reach HTTP in ASCII or percent-encoded form), the scheme's default port dropped, the
/// fragment dropped, and path and query kept byte for byte (RFC 9111 §4.1, RFC 9110 §4.2.3).
enum URLKey {
    static func make(method: String, scheme: String, authority: String, path: String) -> String {
        String(unsafeUninitializedCapacity: capacity(method: method, scheme: scheme, authority: authority, path: path))
        {
            write(method: method, scheme: scheme, authority: authority, path: path, into: $0)
        }
    }

    /// Calls `body` with the UTF-8 bytes of the key ``make(method:scheme:authority:path:)``
    /// makes, written into a temporary buffer (on the stack unless the URL is very long): a
    /// lookup that finds its key in memory then allocates nothing for it.
    ///
    /// `body` does not throw: a rethrowing form wrapped every lookup's answer in a `Result`.
    static func withUTF8<Result>(
        method: String,
        scheme: String,
        authority: String,
        path: String,
        _ body: (UnsafeRawBufferPointer) -> Result
    ) -> Result {
        let capacity = capacity(method: method, scheme: scheme, authority: authority, path: path)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
            let count = write(method: method, scheme: scheme, authority: authority, path: path, into: buffer)
            return body(UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: buffer[..<count])))
        }
    }

    /// The most bytes the key takes.
    private static func capacity(method: String, scheme: String, authority: String, path: String) -> Int {
        method.utf8.count + 1 + scheme.utf8.count + 3 + authority.utf8.count + path.utf8.count + 1
    }

    /// Writes the key into `buffer`, which holds ``capacity(method:scheme:authority:path:)``
    /// bytes.
    /// - Returns: the key's length.
    private static func write(
        method: String,
        scheme: String,
        authority: String,
        path: String,
        into buffer: UnsafeMutableBufferPointer<UInt8>
    ) -> Int {
        var writer = Writer(buffer: buffer)
        writer.append(method, lowercase: false)
        writer.append(UInt8(ascii: " "))
        let schemeStart = writer.count
        writer.append(scheme, lowercase: true)
        let defaultPort = defaultPort(ofScheme: UnsafeBufferPointer(rebasing: buffer[schemeStart..<writer.count]))
        writer.append(UInt8(ascii: ":"))
        writer.append(UInt8(ascii: "/"))
        writer.append(UInt8(ascii: "/"))
        let authorityStart = writer.count
        writer.append(authority, lowercase: true)
        // Drop an explicit default port ("example.com:443" for https), and a bare ":".
        if let defaultPort {
            let end = writer.count
            if end - authorityStart > defaultPort.length,
                endsWith(buffer, at: end, defaultPort.bytes, length: defaultPort.length)
            {
                writer.count -= defaultPort.length
            }
        }
        if writer.count > authorityStart, buffer[writer.count - 1] == UInt8(ascii: ":") { writer.count -= 1 }
        let pathStart = writer.count
        writer.append(path, lowercase: false, stopAt: UInt8(ascii: "#"))
        if writer.count == pathStart { writer.append(UInt8(ascii: "/")) }
        return writer.count
    }

    /// The default port of a lowercased scheme, as the bytes of ":80" or ":443" in a word (first
    /// byte lowest) and their count; nil for a scheme without one.
    @inline(__always)
    private static func defaultPort(ofScheme scheme: UnsafeBufferPointer<UInt8>) -> (bytes: UInt32, length: Int)? {
        // Byte by byte from the buffer the scheme was just written to, not as one word: a word
        // load of bytes that separate stores wrote waits for them to reach the cache (a failed
        // store-to-load forward), which cost a twentieth of a hit. (A byte loop through a
        // generic collection cost a tenth.)
        guard scheme.count == 4 || scheme.count == 5 else { return nil }
        guard scheme[0] == UInt8(ascii: "h"), scheme[1] == UInt8(ascii: "t"), scheme[2] == UInt8(ascii: "t"),
            scheme[3] == UInt8(ascii: "p")
        else { return nil }
        // ":80" and ":443", first byte lowest.
        if scheme.count == 4 { return (0x30_383A, 3) }
        return scheme[4] == UInt8(ascii: "s") ? (0x3334_343A, 4) : nil
    }

    /// Whether the `length` (at most four) bytes of `buffer` before `end` are those of `word`.
    @inline(__always)
    private static func endsWith(
        _ buffer: UnsafeMutableBufferPointer<UInt8>,
        at end: Int,
        _ word: UInt32,
        length: Int
    ) -> Bool {
        var word = word
        for index in (end - length)..<end {
            guard buffer[index] == UInt8(truncatingIfNeeded: word) else { return false }
            word >>= 8
        }
        return true
    }

    /// `word` with every byte that is an ASCII capital lowercased, all eight at once.
    @inline(__always)
    static func lowercased(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = ones &* 0x80
        let low7 = word & ~high
        // A byte's top bit: set in `atLeastA` when its low 7 bits are >= "A", in `aboveZ` when
        // they are > "Z"; no carry crosses a byte, as each low7 byte is below 0x80.
        let atLeastA = low7 &+ ones &* UInt64(0x80 - 0x41)
        let aboveZ = low7 &+ ones &* UInt64(0x80 - 0x5B)
        let capitals = atLeastA & ~aboveZ & ~word & high
        return word | (capitals >> 2)
    }

    private struct Writer {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var count = 0

        mutating func append(_ byte: UInt8) {
            buffer[count] = byte
            count += 1
        }

        mutating func append(_ text: String, lowercase: Bool, stopAt stop: UInt8? = nil) {
            let copied: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
                append(bytes, lowercase: lowercase, stopAt: stop)
            }
            if copied == nil { append(text.utf8, lowercase: lowercase, stopAt: stop) }
        }

        private mutating func append<Bytes: Collection<UInt8>>(_ bytes: Bytes, lowercase: Bool, stopAt stop: UInt8?) {
            for byte in bytes {
                if byte == stop { return }
                append(lowercase && byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte)
            }
        }

        private mutating func append(_ bytes: UnsafeBufferPointer<UInt8>, lowercase: Bool, stopAt stop: UInt8?) {
            guard let source = bytes.baseAddress, let destination = buffer.baseAddress else { return }
            var length = bytes.count
            if let stop, let found = memchr(source, Int32(stop), length) {
                length = UnsafeRawPointer(found) - UnsafeRawPointer(source)
            }
            precondition(count + length <= buffer.count)
            if lowercase {
                // Eight bytes at a time: in each byte of a word, set 0x20 where the byte is an
                // ASCII capital (bytes of 0x80 and above are left alone).
                var index = 0
                while index + 8 <= length {
                    let word = UnsafeRawPointer(source + index).loadUnaligned(as: UInt64.self)
                    UnsafeMutableRawPointer(destination + count + index)
                        .storeBytes(of: URLKey.lowercased(word), as: UInt64.self)
                    index += 8
                }
                while index < length {
                    let byte = source[index]
                    destination[count + index] = byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
                    index += 1
                }
            } else {
                (destination + count).update(from: source, count: length)
            }
            count += length
        }
    }
}
