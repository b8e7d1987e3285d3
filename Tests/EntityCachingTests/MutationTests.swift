// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import CacheTiers
import CachingClient
import EntityCaching
import Synchronization
import Testing

/// Mutations reach the cached lists that hold the entity (through the reverse index), and
/// creations and deletions every list of the kind.
@Suite struct MutationTests {
    /// Loads "today" and "tomorrow" into the store.
    private func loaded(_ f: Fixture) async throws {
        _ = try await f.store.refresh(Fixture.dueToday, using: f.fetchers.query)
        _ = try await f.store.refresh(Fixture.dueTomorrow, using: f.fetchers.query)
    }

    @Test func anUpdateMarksOnlyTheListsThatHoldTheEntityStale() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        try await loaded(f)
        try await f.store.upsert([TaskItem(id: 2, title: "review PR 7", due: "today", time: 11)])

        let today = await f.store.read(Fixture.dueToday)
        #expect(today.freshness == .stale(.markedStale))
        #expect(today.items.map(\.title).contains("review PR 7"))
        #expect(await f.store.read(Fixture.dueTomorrow).freshness == .fresh)
        let entity = await f.store.entity(2)
        #expect(entity.metadata?.source == FetchResult.Source.none)  // the app's, not confirmed

        // The server confirms its list (a 304): fresh again, and the app's change, which the
        // server has not seen, stays until the server sends the entity.
        let refreshed = try await f.store.refresh(Fixture.dueToday, using: f.fetchers.query)
        #expect(refreshed.source == .revalidated && refreshed.freshness == .fresh)
        #expect(refreshed.items[1].title == "review PR 7")
    }

    @Test func aPatchRuleReordersTheListAndKeepsItFresh() async throws {
        let f = try await Fixture(patch: { query, items, change in
            guard case .upsert(let task) = change else { return nil }
            var list = items.filter { $0.id != task.id }
            if task.due == query.parameters["due"] { list.append(task) }
            return list.sorted { $0.time < $1.time }
        })
        defer { Task { await f.stop() } }
        try await loaded(f)
        try await f.store.upsert([TaskItem(id: 1, title: "standup", due: "today", time: 13)])
        let today = await f.store.read(Fixture.dueToday)
        #expect(today.items.map(\.id) == [2, 3, 1, 4])
        #expect(today.freshness == .fresh)

        // A created task goes to the lists whose rule takes it.
        try await f.store.upsert([TaskItem(id: 9, title: "gym", due: "tomorrow", time: 7)])
        #expect(await f.store.read(Fixture.dueTomorrow).items.map(\.id) == [9, 5])
        #expect(await f.store.read(Fixture.dueToday).items.map(\.id) == [2, 3, 1, 4])

        // Moved to another day: it leaves one list and joins the other... but only lists that
        // hold it are told of an update, so "tomorrow" learns of it by its next refresh.
        try await f.store.upsert([TaskItem(id: 9, title: "gym", due: "today", time: 7)])
        #expect(await f.store.read(Fixture.dueTomorrow).items.map(\.id) == [5])
    }

    @Test func createAndDeleteMarkEveryListOfTheKindStale() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        try await loaded(f)
        try await f.store.upsert([TaskItem(id: 10, title: "new", due: "someday", time: 1)])
        #expect(await f.store.read(Fixture.dueToday).freshness == .stale(.markedStale))
        #expect(await f.store.read(Fixture.dueTomorrow).freshness == .stale(.markedStale))

        _ = try await f.store.refresh(Fixture.dueToday, using: f.fetchers.query)
        try await f.store.delete([4])
        let today = await f.store.read(Fixture.dueToday)
        #expect(today.items.map(\.id) == [1, 2, 3])
        #expect(today.isComplete)  // it left the list: not a missing entity
        #expect(today.freshness == .stale(.markedStale))
        #expect(await f.store.entity(4).freshness == .missing)
    }

    @Test func anObservationFollowingChangesSeesEveryCommitOfItsList() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        try await loaded(f)
        var iterator = f.store.observe(
            Fixture.dueToday,
            policy: .cacheOnly,
            followingChanges: true,
            using: f.fetchers.query
        ).makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.items.first?.title == "standup")
        try await f.store.upsert([TaskItem(id: 1, title: "standup (moved)", due: "today", time: 9)])
        let second = await iterator.next()
        #expect(second?.items.first?.title == "standup (moved)")
        #expect(second?.freshness == .stale(.markedStale))
    }

    @Test func aChangeFeedIsAppliedWholeAndItsTokenRecorded() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        try await loaded(f)
        #expect(await f.store.changeToken() == nil)
        try await f.store.apply(
            [.upsert(TaskItem(id: 2, title: "review (feed)", due: "today", time: 11)), .delete(3)],
            upTo: "17"
        )
        #expect(await f.store.changeToken() == "17")
        let today = await f.store.read(Fixture.dueToday)
        #expect(today.changeToken == "17")
        #expect(today.items.map(\.title) == ["standup", "review (feed)", "deploy"])
        #expect(await f.store.entity(2).metadata?.source == .network)
    }

    @Test func aDetailReadIsFreshByVersionOrValidationAndRevalidatesConditionally() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        let rule = EntityFreshnessRule.validated(within: .seconds(30))
        let loaded = await f.store.entity(4, policy: .cacheFirst, rule: rule, using: f.fetchers.entity)
        #expect(loaded.source == .network && loaded.entity?.title == "deploy" && loaded.metadata?.version == "\"v1\"")
        #expect(await f.store.entity(4, policy: .cacheFirst, rule: rule, using: f.fetchers.entity).source == .cache)
        // A known current version makes it fresh at any age.
        f.clock.advance(by: 600)
        #expect(await f.store.entity(4, rule: EntityFreshnessRule(currentVersion: "\"v1\"")).freshness == .fresh)
        #expect(await f.store.entity(4, rule: rule).freshness == .stale(.expired))
        let revalidated = await f.store.entity(4, policy: .cacheFirst, rule: rule, using: f.fetchers.entity)
        #expect(revalidated.source == .revalidated && revalidated.freshness == .fresh)
        #expect(f.api.notModifiedCount == 1)
        // Deleted on the server: gone from the store.
        f.api.state.withLock { $0.tasks[4] = nil }
        f.clock.advance(by: 600)
        let deleted = await f.store.entity(4, policy: .cacheFirst, rule: rule, using: f.fetchers.entity)
        #expect(deleted.entity == nil && deleted.source == .network)
        #expect(await f.store.entity(4).freshness == .missing)
    }

    @Test func onlyTheSuspectEntitiesOfAListAreRefreshed() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        _ = try await f.store.refresh(Fixture.dueToday, using: f.fetchers.query)
        let rule = EntityFreshnessRule.validated(within: .seconds(30))
        // The list carries no versions: each detail, read once, stores its own.
        for id in 1...4 { _ = await f.store.entity(id, policy: .networkFirst, rule: rule, using: f.fetchers.entity) }
        #expect(f.api.requests.count == 5)
        // Every entity is fresh: nothing is asked.
        let none = await f.store.refreshEntities(of: Fixture.dueToday, rule: rule, using: f.fetchers.entity)
        #expect(none.items.count == 4 && f.api.requests.count == 5)

        // Past the rule, each is asked for conditionally; only the changed one comes back whole.
        f.api.update(TaskItem(id: 3, title: "lunch moved", due: "today", time: 12))
        f.clock.advance(by: 40)
        let refreshed = await f.store.refreshEntities(of: Fixture.dueToday, rule: rule, using: f.fetchers.entity)
        #expect(f.api.requests.count == 9 && f.api.notModifiedCount == 3)
        #expect(refreshed.items.map(\.title) == ["standup", "review", "lunch moved", "deploy"])
        #expect(refreshed.freshness == .stale(.markedStale))  // its order may have changed with it
        #expect(refreshed.error == nil)
    }

    @Test func badKindsAreRefused() async throws {
        let cache = TieredCache(memory: MemoryTier(), disk: nil)
        #expect(throws: CachingClientError.self) { try EntityStore<TaskItem>(kind: "", cache: cache) }
        #expect(throws: CachingClientError.self) { try EntityStore<TaskItem>(kind: "a/b", cache: cache) }
    }

    @Test func queryKeysIgnoreParameterOrderAndEscapeTheirSeparators() {
        let a = EntityQuery("tasks", parameters: ["due": "today", "sort": "time"])
        let b = EntityQuery("tasks", parameters: ["sort": "time", "due": "today"])
        #expect(a == b && a.key == b.key && a.key == "tasks?due=today&sort=time")
        let tricky = EntityQuery("tasks", parameters: ["due": "today&sort=time"])
        #expect(tricky.key != a.key && tricky.key == "tasks?due=today%26sort%3Dtime")
        #expect(EntityQuery("a/b c").key == "a%2Fb%20c")
    }
}
#endif
