// SPDX-License-Identifier: Apache-2.0

import CFuzzDriver

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// LayeredCacheFuzz TARGET [libFuzzer flags and corpus folders]: libFuzzer over one target
// (FuzzTarget.all). LayeredCacheFuzz --write-seeds FOLDER writes every target's seed corpus,
// made by the codecs from real values, into FOLDER/TARGET.
var arguments = CommandLine.arguments
if arguments.count == 3, arguments[1] == "--write-seeds" {
    do {
        try Seeds.write(to: arguments[2])
        exit(0)
    } catch {
        print("error: \(error)")
        exit(1)
    }
}
if arguments.count > 1, FuzzTarget.named(arguments[1]) != nil {
    // In the environment too, so that a process libFuzzer starts again (-fork, -minimize_crash)
    // runs the same target.
    setenv(FuzzTarget.environmentName, arguments[1], 1)
    arguments.remove(at: 1)
}
guard FuzzTarget.selected != nil else {
    print("usage: LayeredCacheFuzz TARGET [libFuzzer flags] [corpus folders]")
    print("       LayeredCacheFuzz --write-seeds FOLDER")
    print("targets: \(FuzzTarget.all.map(\.name).joined(separator: " "))")
    exit(2)
}
// One empty input first, outside libFuzzer's runs: what a target makes once (the proxy's cache,
// a directory) is then not counted by the leak check of the first input.
FuzzTarget.selected?.run(UnsafeRawBufferPointer(start: nil, count: 0))
var argc = Int32(arguments.count)
var cStrings: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
let status = cStrings.withUnsafeMutableBufferPointer { buffer in
    var argv = buffer.baseAddress
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzTestOneInput(data, size) }
}
exit(status)
