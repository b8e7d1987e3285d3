// SPDX-License-Identifier: Apache-2.0

#if Tools
import ArgumentParser
import CacheTiers

/// The way out of a full disk: frees space without appending anything.
struct Evict: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Drop whole segments, oldest first, until the cache takes at most --to bytes.",
        discussion: """
            Works on a full disk, where remove cannot append a tombstone and compact cannot \
            append what it keeps: nothing is written before space is freed. The entries of the \
            dropped segments are forgotten (the active segment too, when it must go).
            """
    )

    @OptionGroup var options: StoreOptions
    @Option(help: "The most bytes the cache's files may take afterwards.") var to: Int

    func run() throws {
        guard to >= 0 else { throw ValidationError("--to must not be negative") }
        let (dropped, before, after) = try withStore(options) { store in
            let before = store.totalBytes
            let dropped = try store.evict(toBytes: to)
            return (dropped, before, store.totalBytes)
        }
        print("dropped \(dropped.segments) segments (\(dropped.entries) entries): \(before) -> \(after) bytes")
    }
}
#endif
