// SPDX-License-Identifier: Apache-2.0

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte arrays compared and filled by `memcmp` and `memset`.
///
/// Tests are built without optimization, where `==` on two arrays and `append(contentsOf:)` of a
/// repeated element go element by element through generic code: in the tests that compare or
/// build hundreds of thousands of values, that alone held a core for seconds, and a test run
/// starts every test at once on a pool of one thread per core.
package enum Bytes {
    /// Whether `a` and `b` hold the same bytes.
    package static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
        }
    }

    /// `count` copies of `byte`.
    package static func repeated(_ byte: UInt8, count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            if count > 0 { memset(buffer.baseAddress!, Int32(byte), count) }
            initialized = count
        }
    }

    /// Whether `needle` occurs in `haystack`.
    package static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        return haystack.withUnsafeBytes { h in
            needle.withUnsafeBytes { n in
                guard h.count >= n.count else { return false }
                // memchr to each candidate first byte, memcmp there (glibc's memmem is not visible).
                var offset = 0
                let last = h.count - n.count
                while offset <= last {
                    guard let found = memchr(h.baseAddress! + offset, Int32(n[0]), last - offset + 1) else {
                        return false
                    }
                    offset = h.baseAddress!.distance(to: UnsafeRawPointer(found))
                    if memcmp(h.baseAddress! + offset, n.baseAddress!, n.count) == 0 { return true }
                    offset += 1
                }
                return false
            }
        }
    }
}
