// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import EntityCaching
import Synchronization
import Testing

/// Readers in the process never see half a commit: while one task refreshes a list over and over
/// (each refresh's items carry its number, and so does the list's validator), readers read it
/// and find every item of the list's own refresh.
@Suite struct ConsistencyTests {
    struct Item: Codable, Sendable, Identifiable {
        var id: Int
        var generation: Int
    }

    final class Counters: Sendable {
        let done = Atomic(false)
        let readers = Atomic(0)
        let mixed = Atomic(0)
        let reads = Atomic(0)
    }

    @Test func aReadSeesOneRefreshWhole() async throws {
        let store = try EntityStore<Item>(kind: "item", cache: TieredCache(memory: MemoryTier(), disk: nil))
        let query = EntityQuery("all")
        let refreshes = 150
        let counters = Counters()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { counters.done.store(true, ordering: .releasing) }
                // Both readers are reading before the first refresh: the two overlap, however
                // late the pool runs them.
                while counters.readers.load(ordering: .acquiring) < 2 { await Task.yield() }
                for generation in 1...refreshes {
                    _ = try await store.refresh(query, conditional: false) { _ in
                        .page(
                            QueryPage(
                                entities: (0..<20).map { Item(id: $0, generation: generation) },
                                validator: "\(generation)"
                            )
                        )
                    }
                    await Task.yield()  // and the readers a turn
                }
            }
            for _ in 0..<2 {
                group.addTask {
                    counters.readers.add(1, ordering: .releasing)
                    while !counters.done.load(ordering: .acquiring) {
                        // A read from memory never suspends: give the writer the thread.
                        await Task.yield()
                        let list = await store.read(query)
                        guard let validator = list.metadata?.validator, let generation = Int(validator) else {
                            continue
                        }
                        if list.items.contains(where: { $0.generation != generation }) || list.items.count != 20 {
                            counters.mixed.add(1, ordering: .relaxed)
                        }
                        counters.reads.add(1, ordering: .relaxed)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(counters.mixed.load(ordering: .relaxed) == 0)
        #expect(counters.reads.load(ordering: .relaxed) > 0)
    }
}
