// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import CacheTiers
import Foundation
import PostgresNIO
import Synchronization
import Testing

@testable import PostgresCacheTier

/// Two `TieredCache`s ("instances") on one real PostgreSQL server. Serialized: one test crashes
/// and restarts the server the others use.
@Suite(.serialized, .enabled(if: TestDatabase.isEnabled, TestDatabase.skipReason), .timeLimit(.minutes(2)))
struct PostgresSharedTierTests {
    @Test func aValueStoredByOneInstanceIsReadByTheOtherWithoutItsOrigin() async throws {
        try await withInstances(2) { instances in
            let (a, b) = (instances[0], instances[1])
            let origin = Counter()
            let key: CacheKey = "GET https://example.com/shared"
            let value = try await a.fetch(key, origin: origin)
            try await waitUntil { a.cache.sharedWriteStatistics.written == 1 }
            #expect(try await b.fetch(key, origin: origin) == value)
            #expect(origin.count == 1)
            // The shared hit was promoted to the reader's memory and disk.
            #expect(b.cache.memory.entry(for: key)?.value == value)
            #expect(await b.cache.disk?.entry(for: key)?.value == value)
            #expect(b.shared.statistics.hits == 1)
            #expect(await a.shared.sharedUsage?.entryCount == 1)
            // Memory-only entries never reach the table.
            let secret: CacheKey = "GET https://example.com/secret"
            try await a.cache.set(
                CacheEntry(value: [1, 2, 3], storedAt: Date()),
                for: secret,
                policy: .allowedInMemoryOnly
            )
            try await waitUntil { a.cache.sharedWriteStatistics.written == 2 }
            #expect(await b.cache.entry(for: secret) == nil)
        }
    }

    @Test func aRemovalByOneInstanceLeavesTheOthersMemoryAndDisk() async throws {
        try await withInstances(2) { instances in
            let (a, b) = (instances[0], instances[1])
            try await waitUntil { a.shared.isListening && b.shared.isListening }
            let origin = Counter()
            var delays: [Duration] = []
            for index in 0..<20 {
                let key = CacheKey("GET https://example.com/removed/\(index)")
                let value = try await a.fetch(key, origin: origin)
                try await waitUntil { a.cache.sharedWriteStatistics.written == 2 * index + 1 }  // sets and removals
                #expect(try await b.fetch(key, origin: origin) == value)
                #expect(b.cache.memory.entry(for: key) != nil)
                try await a.cache.remove(key)
                let delay = try await waitUntil {
                    guard b.cache.memory.entry(for: key) == nil else { return false }
                    return await b.cache.disk?.entry(for: key) == nil
                }
                delays.append(delay)
                // The row is gone too: the other instance misses everywhere.
                #expect(await b.cache.entry(for: key) == nil)
            }
            #expect(origin.count == 20)
            #expect(b.shared.statistics.invalidationsReceived == 20)
            #expect(a.shared.statistics.invalidationsReceived == 0)  // its own are ignored
            delays.sort()
            print(
                "shared tier invalidation delay (remove on one instance -> gone from the other's memory and disk):"
                    + " p50 \(delays[delays.count / 2]), max \(delays[delays.count - 1]) over \(delays.count)"
            )
        }
    }

    @Test
    func aDatabaseCrashMidTrafficFailsNoRequestAndReturnsNoWrongBytes() async throws {
        try #require(TestDatabase.control != nil, "LAYEREDCACHE_POSTGRES_CONTROL is not set")
        let shortReads: Configure = { $0.readTimeout = .milliseconds(200) }
        try await TestDatabase.crashing { try await crashMidTraffic(configure: shortReads) }
    }

    private func crashMidTraffic(configure shortReads: @escaping Configure) async throws {
        try await withInstances(2, configure: shortReads) { instances in
            let origin = Counter()
            let requests = Counter()
            let wrong = Counter()
            let done = Counter()  // counts to one when the traffic is to stop
            let keys = (0..<40).map { CacheKey("GET https://example.com/item/\($0)") }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (lane, instance) in instances.enumerated() {
                    group.addTask {
                        var round = 0
                        while done.count == 0 {
                            let key = keys[(round * 7 + lane * 13) % keys.count]
                            let value = try await instance.fetch(key, origin: origin)
                            if value != SampleData.versioned(key: key.string, version: 1) { wrong.increment() }
                            if round % 10 == 9 { try await instance.cache.remove(key) }
                            requests.increment()
                            round += 1
                            await Task.yield()
                        }
                    }
                }
                try await waitUntil { requests.count >= 200 }
                try await TestDatabase.server("stop")
                let atStop = requests.count
                try await waitUntil { requests.count >= atStop + 200 }
                try await TestDatabase.server("start")
                let atStart = requests.count
                try await waitUntil { requests.count >= atStart + 200 }
                done.increment()
                try await group.waitForAll()
            }
            #expect(wrong.count == 0)
            #expect(instances.contains { $0.shared.statistics.bypassed > 0 })
            // The tier comes back: what one instance writes, the other reads again.
            let probe: CacheKey = "GET https://example.com/after-restart"
            let value = SampleData.versioned(key: probe.string, version: 1)
            try await waitUntil(timeout: .seconds(30)) {
                try? await instances[0].shared.set(CacheEntry(value: value, storedAt: Date()), for: probe)
                return await instances[1].shared.entry(for: probe)?.value == value
            }
        }
    }

    @Test(arguments: [false, true])
    func aTamperedRowIsAMissAndIsDeleted(encrypted: Bool) async throws {
        let key = encrypted ? EncryptionKey.random() : nil
        let sealed: Configure = { $0.encryption = key }
        try await withInstances(2, configure: sealed) { instances in
            let (a, b) = (instances[0], instances[1])
            let origin = Counter()
            let cacheKey: CacheKey = "GET https://example.com/tampered"
            let value = try await a.fetch(cacheKey, origin: origin)
            try await waitUntil { a.cache.sharedWriteStatistics.written == 1 }
            let table = a.shared.configuration.tableName
            let rows = try await a.shared.client.query("SELECT key, value FROM \(unescaped: table)")
            for try await (storedKey, storedValue) in rows.decode((ByteBuffer, ByteBuffer).self) {
                let stamp = Array("\(cacheKey.string)#1|".utf8)
                let bytes = Array(storedValue.readableBytesView)
                // Sealed: neither the key nor the value's stamp is in the database.
                #expect((storedKey.readableBytes == 0) == encrypted)
                #expect((bytes.count >= stamp.count && Array(bytes[0..<stamp.count]) == stamp) == !encrypted)
            }
            try await a.shared.client.query(
                "UPDATE \(unescaped: table) SET value = set_byte(value, 20, get_byte(value, 20) # 1)"
            ).drain()
            #expect(await b.cache.entry(for: cacheKey) == nil)
            #expect(b.shared.statistics.damagedRows == 1)
            #expect(await a.shared.sharedUsage?.entryCount == 0)
            #expect(await a.cache.entry(for: cacheKey)?.value == value)  // its own memory copy is sound
        }
    }

    @Test func expiredRowsMissAndAreSweptAndTheBudgetDropsTheOldest() async throws {
        let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let small: Configure = {
            $0.now = { now.withLock { $0 } }
            $0.timeToLive = .seconds(60)
            $0.capacityBytes = 20_000
            $0.admissionFraction = 0.5
        }
        try await withInstances(1, configure: small) { instances in
            let tier = instances[0].shared
            let start = now.withLock { $0 }
            for index in 0..<10 {
                let entry = CacheEntry(
                    value: SampleData.random(count: 3000, seed: UInt64(index)),
                    storedAt: start.addingTimeInterval(Double(index))
                )
                try await tier.set(entry, for: CacheKey("k\(index)"))
            }
            try await tier.set(CacheEntry(value: SampleData.random(count: 15_000), storedAt: start), for: "big")
            #expect(tier.statistics.admissionRefusals == 1)
            await tier.sweep()
            let usage = try #require(await tier.sharedUsage)
            #expect(usage.bytes <= 20_000 && usage.entryCount == 6)
            #expect(tier.statistics.evictions == 4)
            #expect(await tier.entry(for: "k0") == nil)
            #expect(await tier.entry(for: "k9") != nil)
            now.withLock { $0 = start.addingTimeInterval(61) }
            #expect(await tier.entry(for: "k9") == nil)
            await tier.sweep()
            #expect(tier.statistics.expired == 6)
            #expect(await tier.sharedUsage?.entryCount == 0)
        }
    }
}
#endif
