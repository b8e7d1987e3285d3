// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import AsyncHTTPClientTransport
import HTTPCaching
import HTTPTypes
import TestOriginSupport
import Testing

@testable import CachingClient

/// The exchange's deadline covers the body: an origin that sends its head and then stalls fails
/// with a timeout when the time is up, for every caller waiting on the same flight.
@Suite struct BodyTimeoutTests {
    @Test func aStalledBodyTimesOutAndEndsTheFlightForEveryWaiter() async throws {
        let f = try await Fixture.make()
        let transport = HTTPClientTransport(client: Fixture.transport.client, clock: f.clock)
        let client = CachingHTTPClient(
            transport: transport,
            cache: f.cache,
            configuration: .init(requestTimeout: .seconds(3), backoff: .disabled, clock: f.clock)
        )
        f.origin.enqueue(
            .stallBody(
                headers: [("Cache-Control", "max-age=60")],
                firstBytes: Array("{\"a\":".utf8),
                declaredLength: 1000
            ),
            for: "/slow"
        )
        async let first = client.fetch(f.request("/slow"))
        async let second = client.fetch(f.request("/slow"))
        await f.origin.waitForRequests(1)
        // The head has arrived when the body's deadline starts waiting.
        await f.clock.waitForSleepers(1)
        f.clock.advance(by: .seconds(3))
        let answers = await [first, second]
        for answer in answers {
            #expect(answer.error?.code == .timeout && answer.body == nil && answer.freshness == .missing)
        }
        #expect(f.origin.requestCount == 1)
        // Nothing of the partial body was stored.
        #expect(await f.cache.cachedResponse(for: f.request("/slow")) == nil)
        await f.stop()
    }

    @Test func aBodyThatArrivesInTimeIsNotCutShort() async throws {
        let f = try await Fixture.make()
        let transport = HTTPClientTransport(client: Fixture.transport.client, clock: f.clock)
        f.origin.enqueue(.ok("whole", headers: [("Cache-Control", "max-age=60")]), for: "/fast")
        let answer = try await transport.send(f.request("/fast"), body: nil, timeout: .seconds(3))
        #expect(String(decoding: answer.body, as: UTF8.self) == "whole")
        await f.stop()
    }
}
#endif
