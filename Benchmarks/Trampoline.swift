// SPDX-License-Identifier: Apache-2.0

#if !Tools
import TraitTrampoline

/// Built without its trait (the default traits): runs the release benchmarks with every trait
/// enabled, which is what `swift run Benchmarks` means.
@main
enum Trampoline {
    static func main() {
        TraitTrampoline.rerun(
            product: "Benchmarks",
            packageRoot: TraitTrampoline.directory(2, above: #filePath),
            release: true,
            reason: "Benchmarks needs the package's Tools trait and a release build: running swift run -c release "
                + "--enable-all-traits Benchmarks"
        )
    }
}
#endif
