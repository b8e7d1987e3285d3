// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import EntityCaching
import Hummingbird
import HummingbirdTesting
import TaskList
import Testing

@Suite struct TaskListTests {
    static let tasks = [
        TaskItem(id: 1, title: "Standup", due: "today", time: 900),
        TaskItem(id: 2, title: "Review", due: "today", time: 1100),
        TaskItem(id: 3, title: "Deploy", due: "today", time: 1600),
        TaskItem(id: 4, title: "Plan", due: "tomorrow", time: 1000),
    ]

    @Test func theListLoadsPagesAnswersFromTheCacheAndFollowsADetail() async throws {
        let api = TaskAPI(tasks: Self.tasks, pageSize: 2)
        try await api.application(port: 0).test(.live) { client in
            let screens = try TaskScreens(
                authority: "127.0.0.1:\(client.port!)",
                cache: TieredCache(memory: MemoryTier(), disk: nil)
            )
            var answers: [QueryResult<TaskItem>] = []
            for await result in screens.list(due: "today") { answers.append(result) }
            #expect(answers.map(\.source) == [.network])
            #expect(answers[0].items.map(\.id) == [1, 2] && answers[0].hasMorePages)

            let all = try await screens.nextPage(due: "today")
            #expect(all.items.map(\.title) == ["Standup", "Review", "Deploy"] && !all.hasMorePages)

            // From the cache now: no request.
            let before = api.requestCount
            var cached: [QueryResult<TaskItem>] = []
            for await result in screens.list(due: "today") { cached.append(result) }
            #expect(cached.map(\.source) == [.cache] && cached[0].items.count == 3)
            #expect(api.requestCount == before)

            // The detail was stored by the list: fresh for 30 seconds, no request.
            #expect(await screens.detail(2).source == .cache)
            // The server changes it; pulled to refresh, the detail takes the change, and the
            // list that holds it goes stale.
            api.update(TaskItem(id: 2, title: "Review PR 12", due: "today", time: 1100))
            let detail = await screens.detail(2, policy: .networkFirst)
            #expect(detail.entity?.title == "Review PR 12" && detail.source == .network)
            let list = await screens.store.read(TaskScreens.dueOn("today"))
            #expect(list.items[1].title == "Review PR 12" && list.freshness == .stale(.markedStale))
        }
    }
}
