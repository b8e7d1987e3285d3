// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import CacheTiers
import CachingClient
import EntityCaching
import Foundation

/// A task API on loopback, its fetchers, a manual clock and a store of tasks over `cache`.
struct Fixture {
    static let today: [TaskItem] = [
        TaskItem(id: 1, title: "standup", due: "today", time: 9),
        TaskItem(id: 2, title: "review", due: "today", time: 11),
        TaskItem(id: 3, title: "lunch", due: "today", time: 12),
        TaskItem(id: 4, title: "deploy", due: "today", time: 16),
        TaskItem(id: 5, title: "plan", due: "tomorrow", time: 10),
    ]
    static let dueToday = EntityQuery("tasks", parameters: ["due": "today"])
    static let dueTomorrow = EntityQuery("tasks", parameters: ["due": "tomorrow"])

    let api: TaskAPI
    let fetchers: TaskFetchers
    let clock = ManualDate()
    let cache: TieredCache
    let store: EntityStore<TaskItem>

    init(
        cache: TieredCache = TieredCache(memory: MemoryTier(), disk: nil),
        storagePolicy: StoragePolicy = .allowed,
        patch: (@Sendable (EntityQuery, [TaskItem], EntityChange<TaskItem>) -> [TaskItem]?)? = nil
    ) async throws {
        api = TaskAPI(tasks: Self.today)
        try await api.start()
        fetchers = TaskFetchers(baseURL: api.baseURL)
        self.cache = cache
        store = try EntityStore(
            kind: "task",
            cache: cache,
            configuration: .init(storagePolicy: storagePolicy, patch: patch, now: clock.now)
        )
    }

    /// Another store over the same cache, with the same clock.
    func reopenedStore(over cache: TieredCache) throws -> EntityStore<TaskItem> {
        try EntityStore(kind: "task", cache: cache, configuration: .init(now: clock.now))
    }

    /// Every answer of one observation, in order.
    func answers(
        _ query: EntityQuery = Fixture.dueToday,
        policy: CachePolicy,
        freshness: FreshnessClass = .http
    ) async -> [QueryResult<TaskItem>] {
        var all: [QueryResult<TaskItem>] = []
        for await result in store.observe(query, policy: policy, freshness: freshness, using: fetchers.query) {
            all.append(result)
        }
        return all
    }

    func stop() async { await api.stop() }
}

#endif
