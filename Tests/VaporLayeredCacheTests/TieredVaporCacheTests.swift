// SPDX-License-Identifier: Apache-2.0

#if Vapor
import CacheTestSupport
import CacheTiers
import Foundation
import Testing
import Vapor
import VaporLayeredCache
import VaporTesting

/// The driver behind `app.cache`, tested as Vapor tests its own caches (get, set, delete, expiry,
/// Codable values, missing keys), on a real `Application` and through `req.cache`.
@Suite struct TieredVaporCacheTests {
    struct Profile: Codable, Equatable, Sendable {
        var name: String
        var visits: Int
    }

    /// An application whose `app.cache` is `.layered` over `tiers`, on `clock`.
    static func withApp(
        _ tiers: TieredCache,
        clock: ManualDate = ManualDate(),
        storagePolicy: StoragePolicy = .allowed,
        _ body: (Application) async throws -> Void
    ) async throws {
        try await VaporTesting.withApp { app in
            app.caches.use(.layered(tiers, configuration: .init(storagePolicy: storagePolicy, now: clock.now)))
            try await body(app)
        }
    }

    static func memoryTiers() -> TieredCache {
        TieredCache(memory: MemoryTier(configuration: .init()), disk: nil)
    }

    @Test func getsSetsAndDeletesAsVaporsOwnCacheDoes() async throws {
        try await Self.withApp(Self.memoryTiers()) { app in
            #expect(try await app.cache.get("foo", as: String.self) == nil)
            try await app.cache.set("foo", to: "bar")
            #expect(try await app.cache.get("foo", as: String.self) == "bar")
            try await app.cache.set("foo", to: "baz")
            #expect(try await app.cache.get("foo") == "baz")
            try await app.cache.delete("foo")
            #expect(try await app.cache.get("foo", as: String.self) == nil)
            try await app.cache.set("gone", to: "soon")
            try await app.cache.set("gone", to: String?.none)
            #expect(try await app.cache.get("gone", as: String.self) == nil)
        }
    }

    @Test func codableValuesRoundTripAndAWrongTypeIsAnErrorNotAMiss() async throws {
        try await Self.withApp(Self.memoryTiers()) { app in
            let profile = Profile(name: "Ada", visits: 3)
            try await app.cache.set("profile", to: profile)
            #expect(try await app.cache.get("profile", as: Profile.self) == profile)
            await #expect(throws: DecodingError.self) { try await app.cache.get("profile", as: Int.self) }
            // The value is still there for the right type.
            #expect(try await app.cache.get("profile", as: Profile.self) == profile)
        }
    }

    @Test func aValueExpiresOnTheInjectedClockAndIsRemoved() async throws {
        let clock = ManualDate()
        let tiers = Self.memoryTiers()
        try await Self.withApp(tiers, clock: clock) { app in
            try await app.cache.set("token", to: "abc", expiresIn: .seconds(30))
            try await app.cache.set("forever", to: "xyz")
            clock.advance(by: 29)
            #expect(try await app.cache.get("token", as: String.self) == "abc")
            clock.advance(by: 1)
            #expect(try await app.cache.get("token", as: String.self) == nil)
            #expect(await tiers.entry(for: CacheKey("vapor:token")) == nil)
            clock.advance(by: 86_400 * 365)
            #expect(try await app.cache.get("forever", as: String.self) == "xyz")
        }
    }

    @Test func routesReadAndWriteThroughRequestCache() async throws {
        try await Self.withApp(Self.memoryTiers()) { app in
            app.get("visit") { request async throws -> String in
                let visits = try await request.cache.get("visits", as: Int.self) ?? 0
                try await request.cache.set("visits", to: visits + 1)
                return "\(visits + 1)"
            }
            let tester = try app.testing()
            for expected in ["1", "2", "3"] {
                try await tester.test(.GET, "visit") { response in
                    #expect(response.body.string == expected)
                }
            }
        }
    }

    /// The application's shutdown closes the tiers, which writes the disk tier's snapshot; a new
    /// process over the directory finds the values with their expiries.
    @Test func shutdownClosesTheTiersAndValuesAndExpiriesSurviveARestart() async throws {
        let directory = TemporaryDirectory("vapor-cache")
        defer { directory.remove() }
        let clock = ManualDate()
        let first = TieredCache(
            memory: MemoryTier(configuration: .init()),
            disk: try DiskTier(configuration: .init(directory: directory.path))
        )
        try await Self.withApp(first, clock: clock) { app in
            try await app.cache.set("profile", to: Profile(name: "Ada", visits: 1), expiresIn: .minutes(5))
            try await app.cache.set("plain", to: "kept")
        }
        #expect(!first.isOpen)
        #expect(FileManager.default.fileExists(atPath: directory.appending("index.lcx")))

        let second = TieredCache(
            memory: MemoryTier(configuration: .init()),
            disk: try DiskTier(configuration: .init(directory: directory.path))
        )
        try await Self.withApp(second, clock: clock) { app in
            let profile = try await app.cache.get("profile", as: Profile.self)
            let plain = try await app.cache.get("plain", as: String.self)
            #expect(profile == Profile(name: "Ada", visits: 1) && plain == "kept")
            clock.advance(by: 300)
            let expired = try await app.cache.get("profile", as: Profile.self)
            let kept = try await app.cache.get("plain", as: String.self)
            #expect(expired == nil && kept == "kept")
        }
    }

    /// A cache configured memory-only never writes a value to the disk tier under it.
    @Test func aMemoryOnlyCacheWritesNothingToDisk() async throws {
        let directory = TemporaryDirectory("vapor-cache-memory-only")
        defer { directory.remove() }
        let tiers = TieredCache(
            memory: MemoryTier(configuration: .init()),
            disk: try DiskTier(configuration: .init(directory: directory.path))
        )
        try await Self.withApp(tiers, storagePolicy: .allowedInMemoryOnly) { app in
            try await app.cache.set("session", to: "7c1f0e93d2b54a68a9e4")
            #expect(try await app.cache.get("session", as: String.self) == "7c1f0e93d2b54a68a9e4")
            // The control: what the tiers are allowed to write is found by the scan.
            let control = CacheEntry(value: Array("control-5d0a1c88".utf8), metadata: [], storedAt: Date())
            try await tiers.set(control, for: CacheKey("control"))
        }
        let written = DiskScan.bytes(under: directory.path)
        #expect(DiskScan.contains(written, "control-5d0a1c88"))
        #expect(!DiskScan.contains(written, "7c1f0e93d2b54a68a9e4"))
    }
}

/// Every byte under a directory, and a search in them.
enum DiskScan {
    static func bytes(under root: String) -> [UInt8] {
        let enumerator = FileManager.default.enumerator(atPath: root)
        var bytes: [UInt8] = []
        while let name = enumerator?.nextObject() as? String {
            let path = root + "/" + name
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                bytes += (try? Data(contentsOf: URL(fileURLWithPath: path))).map(Array.init) ?? []
            }
        }
        return bytes
    }

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let needle = Array(needle.utf8)
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}
#endif
