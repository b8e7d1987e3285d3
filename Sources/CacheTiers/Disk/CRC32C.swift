// SPDX-License-Identifier: Apache-2.0

import CCRC32C

/// CRC-32C (Castagnoli), the checksum of every record and index snapshot.
///
/// A 32-bit CRC detects every error burst of up to 32 bits, so every single-byte change, and
/// (with the record's lengths in its header) every torn tail. The CPU's CRC-32C instructions
/// where it has them (SSE 4.2 on x86-64, the CRC extension on arm64; the small C target CCRC32C),
/// chosen once at run time; otherwise slicing-by-8 over tables built once. Both give the same
/// values (the tests check them against the same vectors).
package enum CRC32C {
    /// Whether ``checksum(_:continuing:)`` uses the CPU's CRC-32C instructions.
    package static let usesHardware = ccrc32c_hardware_available() != 0

    private static let polynomial: UInt32 = 0x82F6_3B78

    /// Eight 256-entry tables, one after another.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 {
                crc = (crc & 1) != 0 ? (crc >> 1) ^ polynomial : crc >> 1
            }
            tables[byte] = crc
        }
        for byte in 0..<256 {
            var crc = tables[byte]
            for slice in 1..<8 {
                crc = tables[Int(crc & 0xFF)] ^ (crc >> 8)
                tables[slice * 256 + byte] = crc
            }
        }
        return tables
    }()

    /// The CRC-32C of `bytes`, continuing from `previous` (the CRC of what came before; 0 to start).
    ///
    /// `checksum(b, continuing: checksum(a)) == checksum(a + b)`.
    package static func checksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        if usesHardware {
            return hardwareChecksum(bytes, continuing: previous)
        }
        return portableChecksum(bytes, continuing: previous)
    }

    /// The CRC-32C of `bytes` by the CPU's instructions; call only when ``usesHardware`` is true.
    package static func hardwareChecksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress else { return previous }
        return ~ccrc32c_hardware_update(~previous, base, bytes.count)
    }

    /// The CRC-32C of `bytes` by the portable slicing-by-8 code.
    package static func portableChecksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        var crc = ~previous
        tables.withUnsafeBufferPointer { table in
            let count = bytes.count
            var index = 0
            while count - index >= 8 {
                let low = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self)) ^ crc
                let high = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self))
                crc =
                    table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
        }
        return ~crc
    }

    /// The CRC-32C of `bytes`.
    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
