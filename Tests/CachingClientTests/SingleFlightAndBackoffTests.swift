// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import Foundation
import HTTPCaching
import HTTPTypes
import Synchronization
import TestOriginSupport
import Testing

@testable import CachingClient

@Suite struct SingleFlightAndBackoffTests {
    @Test func aHundredConcurrentMissesMakeOneRequest() async throws {
        let f = try await Fixture.make(keepAlive: true)
        let gate = TestOrigin.Gate()
        f.origin.enqueue(.hold(gate, then: .ok("shared", headers: [("Cache-Control", "max-age=60")])), for: "/sf")
        let results = await withTaskGroup(of: FetchResult.self) { group in
            for _ in 0..<100 { group.addTask { await f.client.fetch(f.request("/sf")) } }
            await f.origin.waitForRequests(1)
            while f.client.flights.waiterCount < 100 { await Task.yield() }
            gate.open()
            var all: [FetchResult] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 100)
        #expect(results.allSatisfy { $0.text == "shared" && $0.source == .network })
        #expect(f.origin.requestCount == 1 && f.client.networkRequestCount == 1)
        await f.stop()
    }

    @Test func cancellingOneCallerDoesNotCancelTheOthers() async throws {
        let f = try await Fixture.make()
        let gate = TestOrigin.Gate()
        f.origin.enqueue(.hold(gate, then: .ok("done")), for: "/c")
        let first = Task { await f.client.fetch(f.request("/c")) }
        let second = Task { await f.client.fetch(f.request("/c")) }
        await f.origin.waitForRequests(1)
        while f.client.flights.waiterCount < 2 { await Task.yield() }
        first.cancel()
        let cancelled = await first.value
        #expect(cancelled.error?.code == .cancelled && cancelled.body == nil)
        gate.open()
        let answered = await second.value
        #expect(answered.text == "done" && answered.source == .network && f.origin.requestCount == 1)
        await f.stop()
    }

    @Test func requestsThatDifferOnlyInTracingFieldsShareAFlight() async throws {
        let f = try await Fixture.make(keepAlive: true)
        let gate = TestOrigin.Gate()
        f.origin.enqueue(.hold(gate, then: .ok("one")), for: "/t")
        let traceparent = HTTPField.Name("traceparent")!
        async let a = f.client.fetch(f.request("/t", headers: [traceparent: "00-aaaa-01-01"]))
        async let b = f.client.fetch(f.request("/t", headers: [traceparent: "00-bbbb-02-01"]))
        await f.origin.waitForRequests(1)
        while f.client.flights.waiterCount < 2 { await Task.yield() }
        gate.open()
        let (first, second) = await (a, b)
        #expect(first.text == "one" && second.text == "one" && f.origin.requestCount == 1)
        await f.stop()
    }

    @Test func differentRequestsDoNotShareAFlight() async throws {
        let f = try await Fixture.make()
        f.origin.setDefault(.ok("x"), for: "/d")
        async let a = f.client.fetch(f.request("/d", headers: [.accept: "text/plain"]))
        async let b = f.client.fetch(f.request("/d", headers: [.accept: "application/json"]))
        _ = await (a, b)
        #expect(f.origin.requestCount == 2)
        await f.stop()
    }

    /// A delegate that counts its calls.
    final class CountingDelegate: CachingHTTPClientDelegate {
        let calls = Mutex(0)
        func willCache(_ response: CachedResponse, for context: FetchContext) async -> CachedResponse? {
            calls.withLock { $0 += 1 }
            return response
        }
    }

    /// A call with a hook or a delegate of its own does not join another's flight (nor is joined):
    /// what is stored on its behalf passes its own pipeline, which a shared flight would skip.
    @Test(.timeLimit(.minutes(3)))
    func aCallWithItsOwnHooksHasAFlightOfItsOwn() async throws {
        let f = try await Fixture.make(keepAlive: true)
        let gate = TestOrigin.Gate()
        f.origin.setDefault(.hold(gate, then: .ok("held", headers: [("Cache-Control", "max-age=60")])), for: "/own")
        let hooked = Mutex(0)
        let hook = WillCache { response, _ in
            hooked.withLock { $0 += 1 }
            return response
        }
        let delegate = CountingDelegate()
        async let plain = f.client.fetch(f.request("/own"))
        await f.origin.waitForRequests(1)
        async let withHook = f.client.fetch(f.request("/own"), willCache: hook)
        await f.origin.waitForRequests(2)
        async let withDelegate = f.client.fetch(f.request("/own"), delegate: delegate)
        await f.origin.waitForRequests(3)
        // And a second plain call still joins the first.
        async let joiner = f.client.fetch(f.request("/own"))
        while f.client.flights.waiterCount < 4 { await Task.yield() }
        gate.open()
        let answers = await [plain, withHook, withDelegate, joiner]
        #expect(answers.allSatisfy { $0.text == "held" && $0.source == .network })
        #expect(hooked.withLock { $0 } == 1 && delegate.calls.withLock { $0 } == 1)
        #expect(f.origin.requestCount == 3)
        await f.stop()
    }

    @Test func failuresBackOffWithFullJitterOnTheInjectedClock() async throws {
        // Jitter is injected as "the top of the range": waits of 1 s, 2 s, 4 s.
        let f = try await Fixture.make(backoff: Backoff(initial: .seconds(1), maximum: .seconds(4)))
        f.origin.setDefault(.respond(status: 503), for: "/b")
        let first = await f.client.fetch(f.request("/b"))
        #expect(first.error?.code == .server && f.origin.requestCount == 1)

        let backingOff = await f.client.fetch(f.request("/b"))
        #expect(backingOff.error?.code == .backingOff && f.origin.requestCount == 1)
        #expect((backingOff.error?.underlying as? CachingClientError)?.code == .server)

        f.clock.advance(by: .milliseconds(1001))
        _ = await f.client.fetch(f.request("/b"))
        #expect(f.origin.requestCount == 2)
        f.clock.advance(by: .milliseconds(1500))
        _ = await f.client.fetch(f.request("/b"))
        #expect(f.origin.requestCount == 2)
        f.clock.advance(by: .milliseconds(600))
        _ = await f.client.fetch(f.request("/b"))
        #expect(f.origin.requestCount == 3)
        // The ceiling stops at the maximum (4 s), and a success ends the backoff.
        f.clock.advance(by: .seconds(4))
        f.origin.setDefault(.ok("up"), for: "/b")
        #expect(await f.client.fetch(f.request("/b")).text == "up")
        #expect(await f.client.fetch(f.request("/b")).text == "up")
        #expect(f.origin.requestCount == 5)
        await f.stop()
    }

    @Test func whileBackingOffStaleDataAnswersWithoutANetworkCall() async throws {
        let f = try await Fixture.make(backoff: Backoff(initial: .seconds(10), maximum: .seconds(10)))
        f.origin.enqueue(.ok("stale", headers: [("Cache-Control", "max-age=1")]), for: "/s")
        _ = await f.client.fetch(f.request("/s"))
        f.advance(5)
        await f.origin.stop()
        let offline = await f.client.fetch(
            f.request("/s"),
            policy: .cacheFirst,
            freshness: try .init("p", hardTTL: .seconds(2))
        )
        #expect(offline.freshness == .stale(.offline) && offline.error?.code == .noConnection)
        let backingOff = await f.client.fetch(f.request("/s"), policy: .networkFirst)
        #expect(backingOff.text == "stale" && backingOff.freshness == .stale(.offline))
        #expect(backingOff.error?.code == .backingOff && f.client.networkRequestCount == 2)
    }

    @Test func backoffCeilingsDoubleUpToTheMaximum() {
        let policy = Backoff(initial: .milliseconds(500), maximum: .seconds(3))
        #expect([1, 2, 3, 4, 5, 100].map { policy.ceiling(afterFailures: $0) } == [0.5, 1, 2, 3, 3, 3])
    }
}
#endif
