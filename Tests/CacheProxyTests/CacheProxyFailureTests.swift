// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOHTTP1
import Synchronization
import TestOriginSupport
import Testing

@testable import CacheProxyCore
@testable import CachingClient

/// The origin down, slow or rude, and many clients at once.
@Suite struct CacheProxyFailureTests {
    @Test func aDownOriginGetsStaleIfErrorWhereAllowedElse502() async throws {
        let f = try await ProxyFixture.start()
        f.origin.enqueue(.ok("kept", headers: [("Cache-Control", "max-age=10, stale-if-error=600")]), for: "/s")
        f.origin.enqueue(.ok("strict", headers: [("Cache-Control", "max-age=10")]), for: "/t")
        _ = try await f.send("/s")
        _ = try await f.send("/t")
        f.advance(20)
        await f.origin.stop()

        let stale = try await f.send("/s")
        #expect(stale.status == 200 && stale.body == "kept" && stale.cache == "STALE" && stale.age == 20)
        let strict = try await f.send("/t")
        #expect(strict.status == 502 && strict.cache == "ERROR")
        let never = try await f.send("/never")
        #expect(never.status == 502 && never.cache == "ERROR")
        #expect(f.counter(ProxyMetrics.staleLabel) == 1 && f.counter(ProxyMetrics.errorsLabel) == 2)
        try await f.stop()
    }

    @Test func aSlowOriginGets504() async throws {
        let f = try await ProxyFixture.start(requestTimeout: .milliseconds(300))
        let gate = TestOrigin.Gate()
        f.origin.enqueue(.hold(gate, then: .ok("late")), for: "/slow")
        let answer = try await f.send("/slow")
        #expect(answer.status == 504 && answer.cache == "ERROR")
        gate.open()
        try await f.stop()
    }

    @Test func aDroppedConnectionGets502() async throws {
        let f = try await ProxyFixture.start()
        f.origin.enqueue(.dropConnection, for: "/drop")
        let answer = try await f.send("/drop")
        #expect(answer.status == 502 && answer.cache == "ERROR")
        // The proxy is still well.
        f.origin.enqueue(.ok("fine"), for: "/after")
        #expect(try await f.send("/after").body == "fine")
        try await f.stop()
    }

    /// Coalescing by cache key (issue 31): clients that differ in their other fields (here each
    /// its own `User-Agent`, as behind a CDN) wait on the same exchange. The two cases one after
    /// the other: together they held some 800 sockets at once, over half of what the whole run
    /// holds at its peak.
    @Test(.serialized, arguments: [false, true])
    func twoHundredConcurrentClientsMakeOneUpstreamRequest(distinctUserAgents: Bool) async throws {
        let f = try await ProxyFixture.start()
        let gate = TestOrigin.Gate()
        f.origin.setDefault(.hold(gate, then: .ok("hot", headers: [("Cache-Control", "max-age=60")])), for: "/hot")
        let clients = 200
        let answers = try await withThrowingTaskGroup(of: ProxyFixture.Answer.self) { group in
            for index in 0..<clients {
                group.addTask {
                    try await f.send("/hot", headers: distinctUserAgents ? [("User-Agent", "client-\(index)")] : [])
                }
            }
            // Every request is waiting on the one upstream exchange before the origin answers.
            let client = try #require(f.proxy.runningClient.withLock { $0 })
            while client.flights.waiterCount < clients { await Task.yield() }
            gate.open()
            var answers: [ProxyFixture.Answer] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        #expect(answers.count == clients)
        #expect(answers.allSatisfy { $0.status == 200 && $0.body == "hot" })
        #expect(f.origin.requestCount == 1)
        #expect(try await f.send("/hot").cache == "HIT")
        try await f.stop()
    }
}
#endif
