// SPDX-License-Identifier: Apache-2.0

// Starts the task API on a free loopback port, then shows the list twice (the second time from
// the cache) and a detail.

import CacheTiers
import Hummingbird
import TaskList

let api = TaskAPI(tasks: [
    TaskItem(id: 1, title: "Standup", due: "today", time: 900),
    TaskItem(id: 2, title: "Review the pull request", due: "today", time: 1100),
    TaskItem(id: 3, title: "Deploy", due: "today", time: 1600),
])
let (ports, running) = AsyncStream.makeStream(of: Int.self)
let server = Task { try await api.application(port: 0, onServerRunning: { running.yield($0) }).runService() }
guard let port = await ports.first(where: { _ in true }) else { fatalError("the API did not start") }

let screens = try TaskScreens(authority: "127.0.0.1:\(port)", cache: TieredCache(memory: MemoryTier(), disk: nil))
for round in 1...2 {
    for await result in screens.list(due: "today") {
        print("round \(round): \(result.items.map(\.title)) — \(result.freshness), from \(result.source)")
    }
}
let detail = await screens.detail(2)
print("detail: \(detail.entity?.title ?? "gone") — \(detail.freshness), from \(detail.source)")
print("the API served \(api.requestCount) requests")
server.cancel()
