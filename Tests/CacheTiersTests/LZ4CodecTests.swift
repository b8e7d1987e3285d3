// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Testing

@testable import CacheTiers

@Suite struct LZ4CodecTests {
    /// The payloads of the round-trip table, named so that test output stays short.
    enum Payload: String, CaseIterable, Sendable {
        case empty
        case oneByte
        case random64KiB
        case repetitive1MiB
        case json16KiB
        case json10MB

        var bytes: [UInt8] {
            switch self {
            case .empty: []
            case .oneByte: [0x2A]
            case .random64KiB: SampleData.random(count: 64 << 10)
            case .repetitive1MiB: SampleData.repetitive(count: 1 << 20)
            case .json16KiB: SampleData.json(approximateBytes: 16 << 10)
            case .json10MB: SampleData.json(approximateBytes: 10_000_000)
            }
        }
    }

    @Test(arguments: Payload.allCases)
    func roundTrip(_ payload: Payload) throws {
        let bytes = payload.bytes
        let codec = LZ4Codec()
        let compressed = try LZ4Codec.compress(bytes)
        #expect(compressed.count <= (try LZ4Codec.compressBound(bytes.count)))
        let decoded = try codec.decompress(compressed, originalLength: bytes.count)
        #expect(decoded == bytes, "\(payload) did not round-trip")
    }

    @Test func repetitiveAndJSONShrink() throws {
        let json = SampleData.json(approximateBytes: 64 << 10)
        let compressed = try #require(try json.withUnsafeBytes { try LZ4Codec.compressIfSmaller($0) })
        #expect(compressed.count < json.count / 2)
        let repetitive = SampleData.repetitive(count: 1 << 20)
        #expect(try LZ4Codec.compress(repetitive).count < 8 << 10)
    }

    @Test(arguments: [0, 1, 2, 100, 4096, 65_536])
    func incompressibleStaysRaw(count: Int) throws {
        let random = SampleData.random(count: count, seed: UInt64(count))
        #expect(try random.withUnsafeBytes { try LZ4Codec.compressIfSmaller($0) } == nil)
    }

    @Test func compressIntoTooSmallBufferReportsNoFit() throws {
        let random = SampleData.random(count: 1000)
        var destination = [UInt8](repeating: 0, count: 500)
        let written = try random.withUnsafeBytes { source in
            try destination.withUnsafeMutableBytes { try LZ4Codec.compress(source, into: $0) }
        }
        #expect(written == nil)
    }

    @Test func wrongOriginalLengthThrows() throws {
        let json = SampleData.json(approximateBytes: 4096)
        let compressed = try LZ4Codec.compress(json)
        let codec = LZ4Codec()
        for length in [0, 1, json.count - 1, json.count + 1, json.count * 2] {
            #expect(throws: CacheError.self) { try codec.decompress(compressed, originalLength: length) }
        }
    }

    @Test func lengthAboveMaximumIsRefusedBeforeAllocating() throws {
        let codec = LZ4Codec(maximumDecodedLength: 1024)
        let compressed = try LZ4Codec.compress(SampleData.json(approximateBytes: 4096))
        let error = try #require(throws: CacheError.self) {
            try codec.decompress(compressed, originalLength: 1 << 40)
        }
        #expect(error.code == .valueTooLarge)
        let negative = try #require(throws: CacheError.self) { try codec.decompress(compressed, originalLength: -1) }
        #expect(negative.code == .invalidArgument)
    }

    @Test func emptyOrGarbageInputThrows() throws {
        let codec = LZ4Codec()
        let empty = try #require(throws: CacheError.self) { try codec.decompress([], originalLength: 10) }
        #expect(empty.code == .corruptData)
        #expect(throws: CacheError.self) { try codec.decompress([0xFF, 0xFF, 0xFF], originalLength: 10) }
        #expect(throws: CacheError.self) {
            try codec.decompress(SampleData.random(count: 4096), originalLength: 100_000)
        }
    }

    @Test func emptyValueRoundTrips() throws {
        let compressed = try LZ4Codec.compress([])
        #expect(!compressed.isEmpty)
        #expect(try LZ4Codec().decompress(compressed, originalLength: 0) == [])
    }

    /// Every single-byte change and every truncation of a compressed JSON payload either throws or
    /// decodes to exactly the promised length, never crashing and never touching memory outside
    /// the buffers (run under `--sanitize=address` to check the second half). Output that differs
    /// from the original is what the record checksum rejects one layer up.
    @Test func everyMutationAndTruncationIsContained() throws {
        let json = SampleData.json(approximateBytes: 2048, seed: 3)
        let compressed = try LZ4Codec.compress(json)
        let codec = LZ4Codec()
        var threw = 0
        var decodedWrong = 0
        var decodedSame = 0
        var decodedShort = 0
        // Counted rather than `#expect`ed one by one: in an unoptimized build, 250,000 expectations
        // and array comparisons would cost most of this test's time.
        func attempt(_ bytes: [UInt8]) {
            do {
                let decoded = try codec.decompress(bytes, originalLength: json.count)
                if decoded.count != json.count { decodedShort += 1 }
                if Bytes.equal(decoded, json) { decodedSame += 1 } else { decodedWrong += 1 }
            } catch {
                threw += 1
            }
        }
        var mutated = compressed
        for index in compressed.indices {
            for delta in 1...255 {
                mutated[index] = compressed[index] &+ UInt8(delta)
                attempt(mutated)
            }
            mutated[index] = compressed[index]
        }
        for length in 0..<compressed.count {
            attempt(Array(compressed[..<length]))
        }
        #expect(decodedShort == 0)
        #expect(threw + decodedWrong + decodedSame == compressed.count * 256)
        #expect(threw > 0)
        // Truncations can never decode to the full length.
        #expect(threw >= compressed.count)
    }
}
