// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The committed seed corpus (Fuzz/Corpus), written by the codecs from real values.
enum Seeds {
    static func write(to folder: String) throws {
        for target in FuzzTarget.all {
            let directory = folder + "/" + target.name
            try? FileManager.default.removeItem(atPath: directory)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (index, seed) in try target.seeds().enumerated() {
                let path = directory + "/seed-" + String(index + 1)
                guard FileManager.default.createFile(atPath: path, contents: Data(seed)) else {
                    throw SeedError(path: path)
                }
            }
        }
    }

    struct SeedError: Error, CustomStringConvertible {
        let path: String
        var description: String { "could not write \(path)" }
    }
}
