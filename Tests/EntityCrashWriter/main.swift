// SPDX-License-Identifier: Apache-2.0

// The child process of the entity store's crash test: `EntityCrashWriter DIRECTORY FIRST` opens a disk
// tier and an entity store over it, and refreshes one query ("all") in a loop until it is
// killed, numbering its refreshes from FIRST. Refresh G answers 24 items, each carrying G (and a value whose size depends on G and
// the item), with validator "gG". Around every refresh it writes a line, unbuffered: `B G` before,
// `A G` after. The parent kills it with SIGKILL and checks that the reopened store holds one
// refresh whole: every item of the list carries the list's G, and G is the last acknowledged one
// or the one in flight.
//
// A ticker thread writes `A t` lines between the refreshes' lines: the parent, which kills after a
// number of `A` lines, then kills at a point of its own, not just after a refresh was acknowledged
// (where it would nearly always land before the next commit's first write).

import CacheTiers
import EntityCaching
import Foundation

// The test process ignores SIGPIPE (NIO does), and a child inherits that. Restored, a writer
// whose parent has died ends quietly at its next line, not with a trap on the failed write and a
// backtrace that would bury the parent's own at the end of the test run's output.
signal(SIGPIPE, SIG_DFL)

struct CrashItem: Codable, Sendable, Identifiable {
    var id: Int
    var generation: Int
    var padding: String
}

guard CommandLine.arguments.count == 3, let first = Int(CommandLine.arguments[2]) else {
    FileHandle.standardError.write(Data("usage: EntityCrashWriter DIRECTORY FIRST\n".utf8))
    exit(2)
}

@Sendable func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let ticker = Thread {
    var state: UInt64 = 1
    while true {
        for _ in 0..<20_000 { state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
        say(state == 0 ? "A 0" : "A t")
    }
}
ticker.start()

do {
    let disk = try DiskTier(
        configuration: .init(
            directory: CommandLine.arguments[1],
            capacityBytes: 64 << 20,
            segmentBytes: 1 << 20,
            fsync: .never
        )
    )
    let cache = TieredCache(memory: MemoryTier(), disk: disk)
    let store = try EntityStore<CrashItem>(kind: "item", cache: cache)
    let query = EntityQuery("all")
    var generation = first
    while true {
        let current = generation
        let fetch: EntityStore<CrashItem>.QueryFetcher = { _ in
            let items = (0..<24).map { id in
                CrashItem(
                    id: id,
                    generation: current,
                    padding: String(repeating: "x", count: 100 + (id * 37 + current * 11) % 900)
                )
            }
            return .page(QueryPage(entities: items, validator: "g\(current)"))
        }
        say("B \(generation)")
        _ = try await store.refresh(query, conditional: false, using: fetch)
        say("A \(generation)")
        generation += 1
    }
} catch {
    FileHandle.standardError.write(Data("failed: \(error)\n".utf8))
    exit(1)
}
