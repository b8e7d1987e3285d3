// SPDX-License-Identifier: Apache-2.0

#if Tools
import TraitTrampoline

/// What a debug build of the benchmarks does instead of measuring: prints one line saying its
/// figures would mean nothing, then builds and runs the release benchmarks with the same
/// arguments (`swift run -c release --enable-all-traits Benchmarks …`) and exits with their
/// status.
enum ReleaseRun {
    /// Runs the release benchmarks in place of this debug build, and exits with their status.
    static func replaceDebugRun() -> Never {
        TraitTrampoline.rerun(
            product: "Benchmarks",
            packageRoot: TraitTrampoline.directory(2, above: #filePath),
            release: true,
            reason: "This is a debug build, whose figures mean nothing: running swift run -c release Benchmarks."
        )
    }
}
#endif
