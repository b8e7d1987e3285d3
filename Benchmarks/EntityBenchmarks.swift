// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import CachingClient
import EntityCaching
import Foundation
import HTTPCaching
import HTTPTypes

/// The entity store's read of a cached 50-item query (its index and 50 entities) against what an
/// app does without it: look the list's cached HTTP response up and decode its JSON body, 50
/// items. From memory (decoded records kept with the memory entries) and from disk (a memory
/// tier of zero bytes: every read goes to the disk tier and decodes), interleaved in one run;
/// ratio = reads per second ÷ the HTTP response's in the same group.
enum EntityBenchmarks {
    struct Item: Codable, Sendable, Identifiable {
        var id: Int
        var title: String
        var notes: String
        var due: String
        var time: Int
        var done: Bool
        var tags: [String]
    }

    static func run(quick: Bool) async throws -> [BenchmarkResult] {
        let directory = TemporaryDirectory("entity-bench")
        defer { directory.remove() }
        var rows: [BenchmarkResult] = []
        for (tier, memoryBytes) in [("memory", 256 << 20), ("disk", 0)] {
            let disk: DiskTier.Configuration? =
                memoryBytes == 0 ? .init(directory: directory.appending(tier), capacityBytes: 256 << 20) : nil
            rows += try await group(tier: tier, memoryBytes: memoryBytes, disk: disk, quick: quick)
        }
        return rows
    }

    static func group(
        tier: String,
        memoryBytes: Int,
        disk: DiskTier.Configuration?,
        quick: Bool
    ) async throws -> [BenchmarkResult] {
        let items = (0..<50).map { id in
            Item(
                id: id,
                title: "Task \(id): follow up with the team",
                notes: String(repeating: "details ", count: 12 + id % 7),
                due: "2026-11-28",
                time: 900 + id * 15,
                done: id % 3 == 0,
                tags: ["work", id % 2 == 0 ? "urgent" : "later"]
            )
        }
        let body = Array(try JSONEncoder().encode(items))

        // The entity store, over its own tiers.
        let memory = MemoryTier(configuration: .init(capacityBytes: memoryBytes))
        let cache = TieredCache(memory: memory, disk: try disk.map { try DiskTier(configuration: $0) })
        let store = try EntityStore<Item>(kind: "item", cache: cache)
        let query = EntityQuery("tasks", parameters: ["due": "2026-11-28"])
        _ = try await store.refresh(query, conditional: false) { _ in .page(QueryPage(entities: items, validator: "v1"))
        }

        // The cached HTTP response of the same list, over the same kind of tiers.
        var responseDisk = disk
        responseDisk?.directory = disk.map { $0.directory + "-http" } ?? ""
        let responses = try ResponseCache(
            configuration: .init(memory: .init(capacityBytes: memoryBytes), disk: responseDisk)
        )
        let request = HTTPRequest(
            method: .get,
            scheme: "https",
            authority: "api.example.com",
            path: "/tasks?due=2026-11-28"
        )
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "max-age=3600"
        let stored = try await responses.storeCachedResponse(
            CachedResponse(
                response: HTTPResponse(status: .ok, headerFields: fields),
                body: body,
                requestTime: Date(),
                responseTime: Date()
            ),
            for: request
        )
        precondition(stored)

        let subjects: [(String, String, () async -> Int)] = [
            (
                "cached HTTP response", "cachedResponse(for:) + JSONDecoder, 50 items",
                {
                    guard let cached = await responses.cachedResponse(for: request) else { return 0 }
                    do {
                        return try JSONDecoder().decode([Item].self, from: Data(cached.body)).count
                    } catch {
                        return 0  // fails the count's precondition
                    }
                }
            ),
            ("EntityStore", "read(_:): index + 50 entities", { await store.read(query).items.count }),
            (
                "EntityStore", "observe(_:policy: .cacheFirst), first answer",
                {
                    for await result in store.observe(
                        query,
                        policy: .cacheFirst,
                        using: { _ in .notModified(freshFor: nil) }
                    ) {
                        return result.items.count
                    }
                    return 0
                }
            ),
        ]
        let batches = quick ? 30 : 200
        let batchSize = 20
        let rounds = quick ? 3 : 7
        let clock = ContinuousClock()
        var samples = Array(repeating: [(p50: Double, p99: Double, opsPerSecond: Double)](), count: subjects.count)
        for index in 0..<rounds {
            for offset in 0..<subjects.count {
                let subject = (index + offset) % subjects.count
                var perRead: [Double] = []
                for _ in 0..<batches {
                    let start = clock.now
                    for _ in 0..<batchSize {
                        let count = await subjects[subject].2()
                        precondition(count == 50, "\(subjects[subject].0) read \(count) of 50 items")
                    }
                    perRead.append(Harness.nanoseconds(of: clock.now - start) / Double(batchSize))
                }
                samples[subject].append(Harness.summarize(perRead, operationsEach: batchSize))
            }
        }
        return Harness.rows(
            workload: "50-item cached query, \(tier)",
            subjects: subjects.map { ($0.0, $0.1) },
            rounds: samples
        )
    }
}
#endif
