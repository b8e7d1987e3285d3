// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
import CacheTestSupport
import CacheTiers
import Hummingbird
import HummingbirdLayeredCache
import Testing

@Suite struct TieredPersistDriverTests {
    struct Session: Codable, Equatable, Sendable {
        var user: String
        var visits: Int
    }

    let clock = ManualDate()

    func driver(disk: DiskTier? = nil) -> TieredPersistDriver {
        let tiers = TieredCache(memory: MemoryTier(configuration: .init()), disk: disk)
        return TieredPersistDriver(cache: tiers, configuration: .init(now: clock.now))
    }

    @Test func createsGetsAndRefusesADuplicate() async throws {
        let persist = driver()
        try await persist.create(key: "s1", value: Session(user: "ada", visits: 1), expires: nil)
        #expect(try await persist.get(key: "s1", as: Session.self) == Session(user: "ada", visits: 1))
        await #expect(throws: PersistError.duplicate) {
            try await persist.create(key: "s1", value: Session(user: "bob", visits: 1), expires: nil)
        }
        #expect(try await persist.get(key: "missing", as: Session.self) == nil)
    }

    @Test func expiresValuesByTheInjectedClock() async throws {
        let persist = driver()
        try await persist.set(key: "s1", value: "short", expires: .seconds(10))
        let before = try await persist.getWithTTL(key: "s1", as: String.self)
        #expect(before?.object == "short")
        #expect(before?.ttl == .seconds(10))
        clock.advance(by: 4)
        #expect(try await persist.getWithTTL(key: "s1", as: String.self)?.ttl == .seconds(6))
        clock.advance(by: 6)
        #expect(try await persist.get(key: "s1", as: String.self) == nil)
        #expect(await persist.cache.entry(for: "persist:s1") == nil)  // removed when read
        // An expired value does not block a create.
        try await persist.create(key: "s1", value: "again", expires: nil)
        #expect(try await persist.getWithTTL(key: "s1", as: String.self)?.ttl == nil)
    }

    @Test func setWithoutExpiryKeepsTheExistingOne() async throws {
        let persist = driver()
        try await persist.set(key: "k", value: 1, expires: .seconds(60))
        clock.advance(by: 20)
        try await persist.set(key: "k", value: 2, expires: nil)
        let found = try await persist.getWithTTL(key: "k", as: Int.self)
        #expect(found?.object == 2)
        #expect(found?.ttl == .seconds(40))
    }

    @Test func removesAndRefusesTheWrongType() async throws {
        let persist = driver()
        try await persist.set(key: "k", value: Session(user: "ada", visits: 3), expires: nil)
        await #expect(throws: PersistError.invalidConversion) { try await persist.get(key: "k", as: Int.self) }
        try await persist.remove(key: "k")
        #expect(try await persist.get(key: "k", as: Session.self) == nil)
    }

    @Test func onlyOneOfManyConcurrentCreatesWins() async throws {
        let persist = driver()
        let wins = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<16 {
                group.addTask { (try? await persist.create(key: "once", value: index, expires: nil)) != nil }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(wins == 1)
    }

    @Test func keepsValuesAndExpiriesAcrossARestart() async throws {
        let directory = TemporaryDirectory("persist")
        defer { directory.remove() }
        let first = driver(disk: try DiskTier(configuration: .init(directory: directory.path)))
        try await first.set(key: "session", value: Session(user: "ada", visits: 2), expires: .seconds(100))
        try await first.cache.disk?.close()

        clock.advance(by: 30)
        let second = driver(disk: try DiskTier(configuration: .init(directory: directory.path)))
        let found = try await second.getWithTTL(key: "session", as: Session.self)
        #expect(found?.object == Session(user: "ada", visits: 2))
        #expect(found?.ttl == .seconds(70))
        try await second.cache.disk?.close()
    }
}
#endif
