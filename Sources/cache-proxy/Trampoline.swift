// SPDX-License-Identifier: Apache-2.0

#if !Proxy
import TraitTrampoline

/// Built without its trait (the default traits): runs itself again with every trait enabled.
@main
enum Trampoline {
    static func main() {
        TraitTrampoline.rerun(product: "cache-proxy", missing: "Proxy", sourceFile: #filePath, levels: 3)
    }
}
#endif
