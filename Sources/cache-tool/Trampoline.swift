// SPDX-License-Identifier: Apache-2.0

#if !Tools
import TraitTrampoline

/// Built without its trait (the default traits): runs itself again with every trait enabled.
@main
enum Trampoline {
    static func main() {
        #if DEBUG
        let release = false
        #else
        let release = true
        #endif
        TraitTrampoline.rerun(
            product: "cache-tool",
            packageRoot: TraitTrampoline.directory(3, above: #filePath),
            release: release,
            reason: "cache-tool needs the package's Tools trait: running it with swift run --enable-all-traits"
        )
    }
}
#endif
