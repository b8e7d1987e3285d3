// SPDX-License-Identifier: Apache-2.0

/// `swift run -c release Benchmarks [--quick] [--filter SUBSTRING]`: a filter that names suites
/// (codec, memory, disk, response) runs those; any other keeps the workloads containing it.
@main
enum BenchmarksMain {
    static func main() async throws {
        var arguments = CommandLine.arguments.dropFirst()
        var quick = false
        var filter: String?
        while let argument = arguments.popFirst() {
            switch argument {
            case "--quick": quick = true
            case "--filter": filter = arguments.popFirst()
            case "--help", "-h":
                print("usage: Benchmarks [--quick] [--filter SUBSTRING]")
                return
            default:
                print("unknown argument \(argument); see --help")
                return
            }
        }
        #if DEBUG
        print("WARNING: this is a debug build; figures mean nothing. Run: swift run -c release Benchmarks")
        #endif

        let suites: [(name: String, run: (Bool) async throws -> [BenchmarkResult])] = [
            ("codec", CodecBenchmarks.run),
            ("memory", MemoryTierBenchmarks.run),
            ("disk", DiskTierBenchmarks.run),
            ("response", ResponseCacheBenchmarks.run),
            ("client", CachingClientBenchmarks.run),
            ("encryption", EncryptionBenchmarks.run),
        ]
        // A filter naming suites runs only those; any other filter runs every suite and keeps the
        // rows whose workload contains it.
        let named = suites.filter { suite in filter.map { suite.name.contains($0) } ?? true }
        var results: [BenchmarkResult] = []
        for suite in named.isEmpty ? suites : named {
            let rows = try await suite.run(quick)
            results += named.isEmpty ? rows.filter { $0.workload.contains(filter!) } : rows
        }
        ResultTable.print(results)
    }
}
