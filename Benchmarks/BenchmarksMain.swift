// SPDX-License-Identifier: Apache-2.0

#if Tools
import ArgumentParser
import Foundation

/// `swift run -c release Benchmarks [--quick] [--filter SUBSTRING] [--json FILE] [--svg FILE]
/// [--entries LIST] [--value-sizes LIST] [--trace FILE]`: a filter that names suites runs those; any other keeps
/// the workloads containing it.
@main
struct BenchmarksMain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "Benchmarks",
        abstract: "LayeredCache against Foundation's URLCache on the same workloads, in the same run."
    )

    @Option(
        help: """
            Run the suites whose name contains this (codec, memory, disk, values, mixed, concurrency, \
            footprint, response, client, encryption, trace, middleware, shared), or else the workloads whose name \
            contains it. shared (the PostgreSQL tier; needs LAYEREDCACHE_POSTGRES_URL) runs only when named.
            """
    )
    var filter: String?

    @Flag(help: "Every workload at small sizes (under 60 s in all): the CI smoke test.")
    var quick = false

    @Option(help: "Write every result to this JSON file.")
    var json: String?

    @Option(help: "Draw p50 latency against entries (log-log, both subjects) into this SVG file.")
    var svg: String?

    @Option(help: "Entry counts for the disk scaling workloads, e.g. 1000,10k,100k,1M.")
    var entries: String?

    @Option(help: "Value sizes, e.g. 1K,16K,256K (K = 1024).")
    var valueSizes: String?

    @Option(help: "The cache trace for the trace suite (default ../shared/traces/twitter_cluster52.csv.gz).")
    var trace: String?

    @Flag(help: "Run a debug build anyway (its figures mean nothing).")
    var allowDebug = false

    func validate() throws {
        _ = try Self.parseList(entries, unit: 1000)
        _ = try Self.parseList(valueSizes, unit: 1024)
    }

    func run() async throws {
        #if DEBUG
        guard allowDebug else {
            // `swift run Benchmarks` builds for debugging: say so, and run the release build instead.
            ReleaseRun.replaceDebugRun()
        }
        print("WARNING: DEBUG BUILD. THESE FIGURES MEAN NOTHING. Run: swift run -c release Benchmarks")
        #endif
        let entries = try Self.parseList(entries, unit: 1000)
        let sizes = try Self.parseList(valueSizes, unit: 1024)
        let suites: [(name: String, run: (Bool) async throws -> [BenchmarkResult])] = [
            ("codec", CodecBenchmarks.run),
            ("memory", MemoryTierBenchmarks.run),
            ("disk", { try await DiskTierBenchmarks.run(quick: $0, entries: entries) }),
            ("values", { try await ValueSizeBenchmarks.run(quick: $0, sizes: sizes) }),
            ("mixed", MixedWorkloadBenchmarks.run),
            ("concurrency", ConcurrencyBenchmarks.run),
            ("footprint", { try await FootprintBenchmarks.run(quick: $0, sizes: sizes) }),
            ("response", ResponseCacheBenchmarks.run),
            ("client", { try await CachingClientBenchmarks.run(quick: $0) + ClientMissBenchmarks.run(quick: $0) }),
            ("encryption", EncryptionBenchmarks.run),
            ("trace", { [trace] in try await TraceBenchmarks.run(quick: $0, path: trace) }),
            ("middleware", MiddlewareBenchmarks.run),
            ("entities", EntityBenchmarks.run),
        ]
        // Suites that need a server run only when the filter names them.
        let namedOnly: [(name: String, run: (Bool) async throws -> [BenchmarkResult])] = [
            ("shared", SharedTierBenchmarks.run)
        ]
        // A filter naming suites runs only those; any other filter runs every suite and keeps the
        // rows whose workload contains it.
        let named =
            (suites + namedOnly).filter { suite in filter.map { suite.name.contains($0) } ?? false }
            + (filter == nil ? suites : [])
        let loadBefore = ResultExport.loadAverage()
        let clock = ContinuousClock()
        let start = clock.now
        var results: [BenchmarkResult] = []
        for suite in named.isEmpty ? suites : named {
            let suiteStart = clock.now
            let rows = try await suite.run(quick)
            results += named.isEmpty ? rows.filter { $0.workload.contains(filter!) } : rows
            Self.log(String(format: "%@: %.1f s", suite.name, Harness.nanoseconds(of: clock.now - suiteStart) / 1e9))
        }
        let wallSeconds = Harness.nanoseconds(of: clock.now - start) / 1e9
        ResultTable.print(results)
        let machine = ResultExport.Machine(
            date: ISO8601DateFormatter().string(from: Date()),
            cores: ProcessInfo.processInfo.activeProcessorCount,
            quick: quick,
            loadAverageBefore: loadBefore,
            loadAverageAfter: ResultExport.loadAverage(),
            wallSeconds: wallSeconds
        )
        print(
            String(
                format: "\n%d cores, load average %@ before and %@ after; %.1f s in all",
                machine.cores,
                machine.loadAverageBefore,
                machine.loadAverageAfter,
                wallSeconds
            )
        )
        if let json {
            try ResultExport.write(results, machine: machine, to: json)
            print("wrote \(json)")
        }
        if let svg {
            let chart = LatencyChart.render(results, title: "LayeredCache vs URLCache: latency as the cache grows")
            try chart.write(toFile: svg, atomically: true, encoding: .utf8)
            print("wrote \(svg)")
        }
    }

    /// Progress on standard error, so that standard output holds only the table.
    static func log(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// "1000,10k,1M" with k = `unit` and M = `unit`²; nil when no list was given.
    static func parseList(_ text: String?, unit: Int) throws -> [Int]? {
        guard let text else { return nil }
        return try text.split(separator: ",").map { item in
            let trimmed = item.trimmingCharacters(in: .whitespaces)
            var multiplier = 1
            var digits = Substring(trimmed)
            switch trimmed.last {
            case "k", "K": multiplier = unit
            case "m", "M": multiplier = unit * unit
            default: break
            }
            if multiplier > 1 { digits = digits.dropLast() }
            guard let value = Int(digits), value > 0 else { throw ValidationError("not a positive count: \(item)") }
            return value * multiplier
        }
    }
}
#endif
