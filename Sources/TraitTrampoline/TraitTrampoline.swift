// SPDX-License-Identifier: Apache-2.0

import Foundation

/// What the package's executables do when they were built without the trait that gives them
/// their dependencies (`swift run cache-tool` with the default traits, say): print one line, then
/// build and run themselves again through `swift run` with every trait enabled, with the same
/// arguments, and exit with that run's status.
package enum TraitTrampoline {
    /// Set in the second run's environment, so that a build that still lacks the trait fails
    /// instead of starting a third.
    static let marker = "LAYEREDCACHE_TRAMPOLINE"

    /// Runs `product` again with every trait enabled.
    /// - Parameters:
    ///   - product: the executable product's name.
    ///   - packageRoot: the package's directory.
    ///   - release: whether to build it in release mode.
    ///   - reason: the line to print first.
    package static func rerun(product: String, packageRoot: String, release: Bool, reason: String) -> Never {
        let environment = ProcessInfo.processInfo.environment
        guard environment[marker] == nil else {
            FileHandle.standardError.write(Data("error: \(product) was built without its trait again\n".utf8))
            exit(1)
        }
        // Written at once (not through print's buffer), so that it comes before the child's output.
        FileHandle.standardError.write(Data("\(reason)\n".utf8))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["swift", "run", "--package-path", packageRoot, "-c", release ? "release" : "debug", "--enable-all-traits"]
            + [product] + CommandLine.arguments.dropFirst()
        var childEnvironment = environment
        childEnvironment[marker] = "1"
        process.environment = childEnvironment
        do {
            try process.run()
        } catch {
            FileHandle.standardError.write(Data("error: cannot run swift: \(error)\n".utf8))
            exit(1)
        }
        process.waitUntilExit()
        exit(process.terminationStatus)
    }

    /// Runs the executable `product`, built without `trait`, again with every trait enabled, in
    /// this build's configuration (debug or release).
    /// - Parameters:
    ///   - sourceFile: the calling source file's path (`#filePath`), `levels` below the package.
    package static func rerun(product: String, missing trait: String, sourceFile: String, levels: Int) -> Never {
        #if DEBUG
        let release = false
        #else
        let release = true
        #endif
        rerun(
            product: product,
            packageRoot: directory(levels, above: sourceFile),
            release: release,
            reason: "\(product) needs the package's \(trait) trait: running it with swift run --enable-all-traits"
        )
    }

    /// The directory `levels` above the source file `path`.
    package static func directory(_ levels: Int, above path: String) -> String {
        var url = URL(fileURLWithPath: path)
        for _ in 0..<levels { url.deleteLastPathComponent() }
        return url.path
    }
}
