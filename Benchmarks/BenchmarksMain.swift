// SPDX-License-Identifier: Apache-2.0

/// `swift run -c release Benchmarks [--quick] [--filter SUBSTRING]`
@main
enum BenchmarksMain {
    static func main() throws {
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

        let suites: [(name: String, run: (Bool) throws -> [BenchmarkResult])] = [
            ("codec", CodecBenchmarks.run),
            ("memory", MemoryTierBenchmarks.run),
        ]
        var results: [BenchmarkResult] = []
        for suite in suites {
            let selected = try suite.run(quick)
            results += selected.filter {
                filter == nil || $0.workload.contains(filter!) || suite.name.contains(filter!)
            }
        }
        ResultTable.print(results)
    }
}
