// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import Synchronization
import Testing

/// The gate that keeps a test which crashes the shared server away from the tests of other suites
/// that need it up: sharers go in together, an exclusive holder goes in alone, first come first
/// served.
@Suite struct DatabaseServerGateTests {
    @Test func anExclusiveHolderWaitsForTheSharersAndLaterSharersWaitForIt() async throws {
        let gate = DatabaseServerGate()
        let order = Order()
        let (release, releaser) = AsyncStream.makeStream(of: Void.self)
        let (firstSharerIn, firstSharerEnters) = AsyncStream.makeStream(of: Void.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await gate.shared {
                    firstSharerEnters.yield()
                    for await _ in release { break }
                    order.append("first sharer out")
                }
            }
            for await _ in firstSharerIn { break }
            // A second sharer goes in beside the first.
            await gate.shared { order.append("second sharer") }
            group.addTask { await gate.exclusive { order.append("exclusive") } }
            #expect(try await poll(timeout: .seconds(30)) { gate.waitingCount == 1 }.held)
            // A sharer that comes after the waiting exclusive holder waits behind it.
            group.addTask { await gate.shared { order.append("late sharer") } }
            #expect(try await poll(timeout: .seconds(30)) { gate.waitingCount == 2 }.held)
            #expect(order.events == ["second sharer"])
            releaser.yield()
            try await group.waitForAll()
        }
        #expect(order.events == ["second sharer", "first sharer out", "exclusive", "late sharer"])
        #expect(gate.waitingCount == 0)
        // Free again: both kinds go straight in.
        await gate.exclusive {}
        await gate.shared {}
    }

    /// What happened, in order.
    final class Order: Sendable {
        private let state = Mutex<[String]>([])
        var events: [String] { state.withLock { $0 } }
        func append(_ event: String) { state.withLock { $0.append(event) } }
    }
}
#endif
