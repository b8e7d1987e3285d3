// SPDX-License-Identifier: Apache-2.0

#if Tools
import CLZ4
import CacheTestSupport
import CacheTiers

/// Our LZ4 wrapper against the raw liblz4 calls on the same chunks in the same run.
///
/// The raw calls write into buffers allocated once up front: that is the physical limit. Our
/// `into:` functions do the same work through the safe wrapper (checks, error mapping); the
/// array-returning functions also allocate their result, as a caller that keeps the bytes must.
enum CodecBenchmarks {
    static func run(quick: Bool) throws -> [BenchmarkResult] {
        let payload = SampleData.json(approximateBytes: 1 << 20)
        let passes = quick ? 4 : 40
        let rounds = quick ? 5 : 11
        var results: [BenchmarkResult] = []
        for chunkSize in [4 << 10, 64 << 10] {
            results += try measure(payload: payload, chunkSize: chunkSize, passes: passes, rounds: rounds)
        }
        return results
    }

    private static func measure(payload: [UInt8], chunkSize: Int, passes: Int, rounds: Int) throws -> [BenchmarkResult]
    {
        let chunks = stride(from: 0, to: payload.count, by: chunkSize).map {
            Array(payload[$0..<min($0 + chunkSize, payload.count)])
        }
        let bound = try LZ4Codec.compressBound(chunkSize)
        let compressedChunks = try chunks.map { try LZ4Codec.compress($0) }
        let codec = LZ4Codec()
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: bound, alignment: 16)
        defer { scratch.deallocate() }
        let bytesPerRound = Double(payload.count * passes)

        let rawCompress = {
            for _ in 0..<passes {
                for chunk in chunks {
                    let written = chunk.withUnsafeBytes { source in
                        LZ4_compress_default(
                            source.baseAddress!,
                            scratch.baseAddress!,
                            Int32(source.count),
                            Int32(scratch.count)
                        )
                    }
                    precondition(written > 0)
                }
            }
        }
        let ourCompressInto = {
            for _ in 0..<passes {
                for chunk in chunks {
                    let written = try chunk.withUnsafeBytes { try LZ4Codec.compress($0, into: scratch) }
                    precondition(written != nil)
                }
            }
        }
        let ourCompressArray = {
            for _ in 0..<passes {
                for chunk in chunks { blackHole(try LZ4Codec.compress(chunk)) }
            }
        }
        let rawDecompress = {
            for _ in 0..<passes {
                for (compressed, chunk) in zip(compressedChunks, chunks) {
                    let decoded = compressed.withUnsafeBytes { source in
                        LZ4_decompress_safe(
                            source.baseAddress!,
                            scratch.baseAddress!,
                            Int32(source.count),
                            Int32(chunk.count)
                        )
                    }
                    precondition(Int(decoded) == chunk.count)
                }
            }
        }
        let ourDecompressInto = {
            for _ in 0..<passes {
                for (compressed, chunk) in zip(compressedChunks, chunks) {
                    let destination = UnsafeMutableRawBufferPointer(rebasing: scratch[..<chunk.count])
                    try compressed.withUnsafeBytes { try codec.decompress($0, into: destination) }
                }
            }
        }
        let ourDecompressArray = {
            for _ in 0..<passes {
                for (compressed, chunk) in zip(compressedChunks, chunks) {
                    blackHole(try codec.decompress(compressed, originalLength: chunk.count))
                }
            }
        }

        let compressTimes = try Harness.interleavedMedians(
            rounds: rounds,
            subjects: [rawCompress, ourCompressInto, ourCompressArray]
        )
        let decompressTimes = try Harness.interleavedMedians(
            rounds: rounds,
            subjects: [rawDecompress, ourDecompressInto, ourDecompressArray]
        )
        let label = "\(chunkSize >> 10) KiB chunks"
        func rows(_ workload: String, _ times: [Double]) -> [BenchmarkResult] {
            let names = ["liblz4 (raw C)", "LayeredCache into buffer", "LayeredCache to [UInt8]"]
            return zip(names, times).map { name, nanos in
                BenchmarkResult(
                    workload: workload,
                    subject: name,
                    detail: label,
                    megabytesPerSecond: bytesPerRound / nanos * 1e9 / 1e6,
                    // Ours ÷ raw, as a speed ratio: 0.95 means 5% slower than the raw call.
                    ratio: times[0] / nanos
                )
            }
        }
        return rows("lz4 compress 1 MB JSON", compressTimes) + rows("lz4 decompress 1 MB JSON", decompressTimes)
    }
}
#endif
