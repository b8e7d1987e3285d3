// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import CacheTiers
import CachingClient
import EntityCaching
import Testing

/// Observing a query under each read policy, against a real loopback API and a manual clock.
@Suite struct QueryReadTests {
    @Test func aFirstObservationLoadsThenTheNextAnswersFromTheCache() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        let first = await f.answers(policy: .staleWhileRevalidate)
        #expect(first.count == 1)
        #expect(first[0].items.map(\.id) == [1, 2, 3, 4])
        #expect(first[0].source == .network && first[0].freshness == .fresh && first[0].isFinal)
        #expect(first[0].metadata?.validator != nil)

        let second = await f.answers(policy: .staleWhileRevalidate)
        #expect(second.map(\.source) == [.cache])
        #expect(second[0].items.map(\.title) == ["standup", "review", "lunch", "deploy"])
        #expect(f.api.requests.count == 1)
    }

    @Test func aStaleListAnswersThenIsRevalidatedWithoutRewritingAnEntity() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        _ = await f.answers(policy: .networkOnly)
        let before = await f.store.entity(2).metadata
        f.clock.advance(by: 61)

        let answers = await f.answers(policy: .staleWhileRevalidate)
        #expect(answers.count == 2)
        #expect(answers[0].freshness == .stale(.expired) && !answers[0].isFinal)
        #expect(answers[1].source == .revalidated && answers[1].freshness == .fresh && answers[1].isFinal)
        #expect(answers[1].items.map(\.id) == [1, 2, 3, 4])
        #expect(f.api.notModifiedCount == 1)
        // The 304 moved the list's validation, not the entities'.
        #expect(answers[1].metadata?.validatedAt == f.clock.current)
        #expect(await f.store.entity(2).metadata == before)
    }

    @Test func aChangedListReplacesTheIdsAndUpsertsTheEntities() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        _ = await f.answers(policy: .networkOnly)
        f.api.update(TaskItem(id: 3, title: "lunch with Ana", due: "today", time: 8))
        f.api.update(TaskItem(id: 5, title: "plan", due: "today", time: 17))
        f.clock.advance(by: 61)

        let result = try #require(await f.answers(policy: .useProtocolCachePolicy).last)
        #expect(result.source == .network)
        #expect(result.items.map(\.id) == [3, 1, 2, 4, 5])
        #expect(await f.store.entity(3).entity?.title == "lunch with Ana")
    }

    @Test func whenTheApiFailsTheStaleListStandsInWithTheError() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        _ = await f.answers(policy: .networkOnly)
        f.api.setFailing(true)

        let networkFirst = try #require(await f.answers(policy: .networkFirst).last)
        #expect(networkFirst.freshness == .stale(.revalidationFailed))
        #expect(networkFirst.error?.code == .server)
        #expect(networkFirst.items.count == 4 && networkFirst.source == .cache)

        let networkOnly = try #require(await f.answers(policy: .networkOnly).last)
        #expect(networkOnly.freshness == .missing && networkOnly.items.isEmpty && networkOnly.error?.code == .server)
    }

    @Test func passivePoliciesAnswerMissingWithoutAnError() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        let cacheOnly = await f.answers(policy: .cacheOnly)
        #expect(cacheOnly.count == 1 && cacheOnly[0].freshness == .missing && cacheOnly[0].error == nil)
        #expect(!cacheOnly[0].hasAnswer)
        let dontLoad = await f.answers(policy: .returnCacheDataDontLoad)
        #expect(dontLoad[0].error?.code == .notCached)
        let thenNetwork = await f.answers(policy: .cacheThenNetwork)
        #expect(thenNetwork.map(\.freshness) == [.missing, .fresh])
        #expect(thenNetwork.map(\.isFinal) == [false, true])
        #expect(f.api.requests.count == 1)
    }

    @Test func aListWithAnEvictedEntityIsMarkedThenRefetchedWhole() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        _ = await f.answers(policy: .networkOnly)
        try await f.cache.remove(CacheKey("entity/task/e/3"))

        let read = await f.store.read(Fixture.dueToday)
        #expect(read.items.map(\.id) == [1, 2, 4])
        #expect(read.missingIDs == [3] && !read.isComplete)

        // A policy that may load refetches, unconditionally: a 304 would not bring 3 back.
        let refetched = try #require(await f.answers(policy: .cacheFirst).last)
        #expect(refetched.isComplete && refetched.items.map(\.id) == [1, 2, 3, 4])
        #expect(f.api.notModifiedCount == 0 && f.api.requests.count == 2)
    }

    @Test func freshnessClassesJudgeTheList() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        _ = await f.answers(policy: .networkOnly)
        f.clock.advance(by: 20)
        let critical = try FreshnessClass(
            "critical",
            softTTL: .seconds(30),
            hardTTL: .seconds(300),
            validationWindow: .seconds(10)
        )
        #expect(await f.store.read(Fixture.dueToday, freshness: critical).freshness == .stale(.notValidated))
        let soft = try FreshnessClass("soft", softTTL: .seconds(10))
        #expect(await f.store.read(Fixture.dueToday, freshness: soft).freshness == .stale(.expired))
        #expect(await f.store.read(Fixture.dueToday).freshness == .fresh)
        // Past its validation window the list is not an answer to act on: cache-first asks first.
        let gated = await f.answers(policy: .cacheFirst, freshness: critical)
        #expect(gated.map(\.source) == [.revalidated])
    }

    @Test func pagesAppendAtomicallyWithTheirEntities() async throws {
        let f = try await Fixture()
        defer { Task { await f.stop() } }
        f.api.setPageSize(2)
        let first = try await f.store.refresh(Fixture.dueToday, using: f.fetchers.query)
        #expect(first.items.map(\.id) == [1, 2] && first.hasMorePages && first.metadata?.pageCount == 1)
        let second = try await f.store.loadNextPage(Fixture.dueToday, using: f.fetchers.query)
        #expect(second.items.map(\.id) == [1, 2, 3, 4] && !second.hasMorePages && second.metadata?.pageCount == 2)
        // The page's new entities do not make the list look changed.
        #expect(second.freshness == .fresh)
        await #expect(throws: CachingClientError.self) {
            _ = try await f.store.loadNextPage(Fixture.dueToday, using: f.fetchers.query)
        }
        #expect(await f.store.read(Fixture.dueToday).items.count == 4)
    }
}
#endif
