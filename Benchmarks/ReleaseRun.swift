// SPDX-License-Identifier: Apache-2.0

import ArgumentParser
import Foundation

/// What a debug build of the benchmarks does instead of measuring: prints one line saying its
/// figures would mean nothing, then builds and runs the release benchmarks with the same
/// arguments (`swift run -c release Benchmarks …`) and exits with their status.
enum ReleaseRun {
    /// Set in the release run's environment, so that a debug build it somehow runs fails instead
    /// of starting another.
    static let marker = "LAYEREDCACHE_BENCHMARKS_RELEASE_RUN"

    /// Runs the release benchmarks in place of this debug build.
    /// - Returns: their exit status.
    /// - Throws: `ValidationError` when this debug build was itself started as the release run.
    static func replaceDebugRun() throws -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        guard environment[marker] == nil else {
            throw ValidationError("a debug build ran where the release build was expected")
        }
        // The package root: two levels above this file (Benchmarks/ReleaseRun.swift).
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path
        let arguments = Array(CommandLine.arguments.dropFirst())
        // Written at once (not through print's buffer), so that it comes before the child's output.
        let line = "This is a debug build, whose figures mean nothing: running swift run -c release Benchmarks.\n"
        FileHandle.standardOutput.write(Data(line.utf8))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "run", "--package-path", packageRoot, "-c", "release", "Benchmarks"] + arguments
        var childEnvironment = environment
        childEnvironment[marker] = "1"
        process.environment = childEnvironment
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
