// SPDX-License-Identifier: Apache-2.0

import CacheTiers

/// Appends little-endian integers and length-prefixed strings and bytes.
struct BinaryWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    mutating func write(_ value: UInt8) { bytes.append(value) }

    mutating func write<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func write(_ value: Double) { write(value.bitPattern) }

    mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            write(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func write(bytes value: [UInt8]) {
        write(UInt32(value.count))
        bytes.append(contentsOf: value)
    }
}

/// Reads what ``BinaryWriter`` wrote; every read is bounds-checked and throws on short input.
struct BinaryReader {
    private let bytes: [UInt8]
    private(set) var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { position == bytes.count }

    mutating func readByte() throws -> UInt8 {
        guard position < bytes.count else { throw Self.truncated }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func read<T: FixedWidthInteger>(_: T.Type) throws -> T {
        let size = MemoryLayout<T>.size
        guard bytes.count - position >= size else { throw Self.truncated }
        let value = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: position, as: T.self) }
        position += size
        return T(littleEndian: value)
    }

    mutating func readDouble() throws -> Double { Double(bitPattern: try read(UInt64.self)) }

    mutating func readBytes() throws -> [UInt8] {
        let count = Int(try read(UInt32.self))
        guard bytes.count - position >= count else { throw Self.truncated }
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }

    mutating func readString() throws -> String {
        let raw = try readBytes()
        guard let string = String(validating: raw, as: UTF8.self) else {
            throw HTTPCachingError(code: .corruptData, message: "stored text is not valid UTF-8")
        }
        return string
    }

    static let truncated = HTTPCachingError(code: .corruptData, message: "stored metadata ends early")
}
