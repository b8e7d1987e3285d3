// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import CacheTiers
import CachingClient
import EntityCaching
import Foundation
import Testing

/// What the store writes to disk: it survives a restart, a crash keeps a refresh whole, and a
/// memory-only store writes nothing.
@Suite struct PersistenceTests {
    @Test func listsEntitiesAndTheChangeTokenSurviveARestart() async throws {
        let directory = TemporaryDirectory("entity-restart")
        defer { directory.remove() }
        let disk = try DiskTier(configuration: .init(directory: directory.path))
        let f = try await Fixture(cache: TieredCache(memory: MemoryTier(), disk: disk))
        defer { Task { await f.stop() } }
        f.api.setPageSize(2)
        _ = try await f.store.refresh(Fixture.dueToday, using: f.fetchers.query)
        _ = try await f.store.loadNextPage(Fixture.dueToday, using: f.fetchers.query)
        try await f.store.apply([.delete(5)], upTo: "42")
        try await disk.close()

        let reopened = TieredCache(
            memory: MemoryTier(),
            disk: try DiskTier(configuration: .init(directory: directory.path))
        )
        let store = try f.reopenedStore(over: reopened)
        #expect(await store.changeToken() == "42")
        let today = await store.read(Fixture.dueToday)
        #expect(today.items.map(\.id) == [1, 2, 3, 4] && today.isComplete && today.metadata?.pageCount == 2)
        #expect(today.changeToken == "42")
        // Made by a delete before the restart: the list is stale, as it was.
        #expect(today.freshness == .stale(.markedStale))
    }

    @Test func aMemoryOnlyStoreWritesNoByteOfItsEntitiesToDisk() async throws {
        let directory = TemporaryDirectory("entity-memory-only")
        defer { directory.remove() }
        let disk = try DiskTier(configuration: .init(directory: directory.path))
        let f = try await Fixture(
            cache: TieredCache(memory: MemoryTier(), disk: disk),
            storagePolicy: .allowedInMemoryOnly
        )
        defer { Task { await f.stop() } }
        _ = try await f.store.refresh(Fixture.dueToday, using: f.fetchers.query)
        try await f.store.upsert([TaskItem(id: 7, title: "secret-title-7", due: "today", time: 1)])
        try await f.store.apply([.delete(1)], upTo: "secret-token")
        #expect(await f.store.read(Fixture.dueToday).items.count == 3)
        try await disk.close()

        for file in directory.files() {
            let bytes = try FileSurgery.read(directory.appending(file))
            for secret in ["standup", "review", "secret-title-7", "secret-token", "tasks?due"] {
                #expect(!Bytes.contains(bytes, Array(secret.utf8)), "\(file) holds \(secret)")
            }
        }
    }

    /// Real crashes: a child refreshes one query in a loop (`EntityCrashWriter`) until it is
    /// killed with SIGKILL; reopened, the list and its 24 entities are of one refresh, never a mix.
    @Test func aKilledRefreshLeavesTheOldStateOrTheNewNeverAMix() async throws {
        let writer = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("EntityCrashWriter").path
        try #require(FileManager.default.isExecutableFile(atPath: writer), "build EntityCrashWriter first: \(writer)")
        let directory = TemporaryDirectory("entity-crash")
        defer { directory.remove() }
        let path = directory.appending("cache")
        var generator = SplitMix64(seed: 11)
        var stored: Int?  // the refresh the directory holds, as last checked
        var outcomes = (acknowledged: 0, inFlight: 0, unchanged: 0)
        for round in 0..<30 {
            let first = (round + 1) * 1_000_000
            let output = try await runUntilKilled(
                writer,
                [path, String(first)],
                afterAcks: 20 + Int(generator.next() % 400)
            )
            var acknowledged: Int?
            var inFlight: Int?
            for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
                let parts = line.split(separator: " ")
                guard parts.count == 2, let generation = Int(parts[1]) else { continue }  // a ticker line
                if parts[0] == "B" {
                    inFlight = generation
                } else {
                    acknowledged = generation
                    inFlight = nil
                }
            }
            let disk = try DiskTier(configuration: .init(directory: path))
            let store = try EntityStore<CrashItem>(kind: "item", cache: TieredCache(memory: MemoryTier(), disk: disk))
            let list = await store.read(EntityQuery("all"))
            let generation = list.metadata?.validator.flatMap { Int($0.dropFirst()) }
            // The last acknowledged refresh, the one in flight, or, before the first was
            // acknowledged, what the directory held.
            let expected = [acknowledged ?? stored, inFlight]
            #expect(
                expected.contains(generation),
                "list of \(String(describing: generation)), expected one of \(expected)"
            )
            if generation == inFlight {
                outcomes.inFlight += 1
            } else if generation == acknowledged {
                outcomes.acknowledged += 1
            } else {
                outcomes.unchanged += 1
            }
            if generation != nil {
                #expect(list.isComplete && list.items.count == 24)
                let mixed = list.items.filter { $0.generation != generation }.count
                #expect(mixed == 0, "\(mixed) of 24 entities of another refresh than the list's \(generation ?? -1)")
            }
            stored = generation
            try await disk.close()
        }
        // Where the kills landed (either outcome is allowed).
        print("entity crash outcomes: \(outcomes)")
    }
}

/// The crash writer's item.
struct CrashItem: Codable, Sendable, Identifiable {
    var id: Int
    var generation: Int
    var padding: String
}
#endif
