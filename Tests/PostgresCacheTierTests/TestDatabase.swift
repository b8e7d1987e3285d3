// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import CacheTiers
import Foundation
import PostgresCacheTier
import Synchronization
import Testing

/// The throwaway server that scripts/with-postgres.sh starts (`make test` does): its URL, and a
/// script that crashes and restarts it.
enum TestDatabase {
    static let environment = ProcessInfo.processInfo.environment
    static let url = environment["LAYEREDCACHE_POSTGRES_URL"]
    static let control = environment["LAYEREDCACHE_POSTGRES_CONTROL"]
    /// In CI the tests run, and fail, without a server; elsewhere they are skipped.
    static let isEnabled = url != nil || environment["CI"] == "true"
    static let skipReason: Comment =
        "no PostgreSQL server: LAYEREDCACHE_POSTGRES_URL is not set (make test starts one with scripts/with-postgres.sh)"

    static func requireURL() throws -> String {
        try #require(url, "CI=true but LAYEREDCACHE_POSTGRES_URL is not set: the shared-tier tests need a server")
    }

    /// A table of its own for one test.
    static func uniqueTable() -> String {
        "t\(UInt32.random(in: 0...UInt32.max))_\(UInt16.random(in: 0...UInt16.max))"
    }

    /// Runs `body`, which crashes the server (when `crashes`), while no test of another suite uses
    /// it (``DatabaseServerGate``).
    static func crashing<Result>(
        _ crashes: Bool = true,
        _ body: () async throws -> Result
    ) async rethrows -> Result {
        guard crashes else { return try await body() }
        return try await DatabaseServerGate.server.exclusive(body)
    }

    /// Runs the control script with `action` (`stop`: pg_ctl stop -m immediate; `start`) in a child
    /// process, waited for on a thread of its own so that no cooperative thread blocks.
    static func server(_ action: String) async throws {
        let control = try #require(control, "LAYEREDCACHE_POSTGRES_CONTROL is not set")
        let status: Int32 = await withCheckedContinuation { continuation in
            // The server outlives pg_ctl: it must not inherit this process's descriptors (another
            // test's pipe to a child would then never reach end-of-file), so the shell closes every
            // descriptor above 2 before it runs the control script.
            let closeAndRun =
                #"for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done; exec /bin/sh "$0" "$1""#
            Thread { continuation.resume(returning: spawnAndWait(["/bin/bash", "-c", closeAndRun, control, action])) }
                .start()
        }
        #expect(status == 0, "server \(action) exited with \(status)")
    }

    /// posix_spawn, output to /dev/null, then waitpid: the exit status, or -1.
    private static func spawnAndWait(_ arguments: [String]) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        guard posix_spawn(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { return -1 }
        }
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
    }
}

/// One "instance" of an app: a memory tier, a disk tier in its own directory and the shared tier.
struct Instance: Sendable {
    let cache: TieredCache
    let shared: PostgresSharedTier
    let directory: TemporaryDirectory

    init(
        url: String,
        table: String,
        configure: Configure = { _ in },
        options: TieredCache.SharedOptions = .init(),
        encryption: DiskEncryption? = nil,
        wrapDisk: (DiskTier) -> any CacheTier = { $0 }
    ) throws {
        directory = TemporaryDirectory("shared")
        let disk = try DiskTier(
            configuration: .init(directory: directory.path, capacityBytes: 64 << 20, encryption: encryption)
        )
        // Generous timeouts: the whole test run shares two cores, and a timeout would bypass the tier.
        var configuration = PostgresSharedTier.Configuration(
            url: url,
            table: table,
            sweepInterval: .seconds(3600),
            readTimeout: .seconds(30),
            writeTimeout: .seconds(10),
            connectTimeout: .seconds(5)
        )
        configure(&configuration)
        shared = try PostgresSharedTier(configuration: configuration)
        cache = try TieredCache(memory: MemoryTier(), lowerTiers: [wrapDisk(disk)], shared: shared, options: options)
    }

    /// A request: the cache's answer, or the origin's (counted) stored through the cache.
    func fetch(_ key: CacheKey, origin: Counter) async throws -> [UInt8] {
        if let hit = await cache.entry(for: key) { return hit.value }
        origin.increment()
        let value = SampleData.versioned(key: key.string, version: 1)
        try await cache.set(CacheEntry(value: value, storedAt: Date()), for: key)
        return value
    }
}

/// Changes the shared tier's configuration of every instance of a test.
typealias Configure = (inout PostgresSharedTier.Configuration) -> Void

/// Runs `body` with `count` instances on one table, each running (pool, listener, writers) until
/// `body` returns.
func withInstances(
    _ count: Int,
    table: String = TestDatabase.uniqueTable(),
    configure: Configure = { _ in },
    _ body: ([Instance]) async throws -> Void
) async throws {
    let url = try TestDatabase.requireURL()
    let instances = try (0..<count).map { _ in try Instance(url: url, table: table, configure: configure) }
    try await withRunning(instances, body)
}

/// Runs `body` with `instances`, each running (pool, listener, writers) until `body` returns;
/// removes their directories and closes them after.
func withRunning(_ instances: [Instance], _ body: ([Instance]) async throws -> Void) async throws {
    defer { for instance in instances { instance.directory.remove() } }
    try await withThrowingTaskGroup(of: Void.self) { group in
        for instance in instances {
            group.addTask { try await instance.cache.run() }
        }
        do {
            try await body(instances)
        } catch {
            group.cancelAll()
            throw error
        }
        group.cancelAll()
    }
    for instance in instances { try? await instance.cache.close() }
}

/// A thread-safe counter of origin fetches.
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// Waits until `condition` holds, or fails after `timeout` of waiting (``poll(timeout:_:)``): the
/// condition is work another process does (a NOTIFY delivered, a server back), so there is no
/// event to await; no sleep stands in for it.
/// - Returns: the wall time the wait took.
@discardableResult
func waitUntil(
    timeout: Duration = .seconds(30),
    _ condition: @Sendable () async -> Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Duration {
    let (held, elapsed) = try await poll(timeout: timeout, condition)
    if !held { Issue.record("condition not met within \(timeout)", sourceLocation: sourceLocation) }
    return elapsed
}
#endif
