// SPDX-License-Identifier: Apache-2.0

#if !Proxy
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
            product: "cache-proxy",
            packageRoot: TraitTrampoline.directory(3, above: #filePath),
            release: release,
            reason: "cache-proxy needs the package's Proxy trait: running it with swift run --enable-all-traits"
        )
    }
}
#endif
