// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import AsyncHTTPClient
import CacheTestSupport
import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes
import NIOCore
import TestOriginSupport
import Testing

@testable import AsyncHTTPClientTransport
@testable import CachingClient

@Suite struct ErrorKindTests {
    @Test(arguments: [
        (401, "authentication"), (403, "authentication"), (404, "server"), (500, "server"), (999, "server"),
    ])
    func statusesAreClassified(status: Int, kind: String) async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.respond(status: status, body: Array("why".utf8)), for: "/s")
        let result = await f.client.fetch(f.request("/s"))
        #expect(result.response?.status.code == status && result.text == "why")
        #expect(result.error?.code.description == kind && result.error?.response?.status.code == status)
        #expect(throws: CachingClientError.self) { try result.requireBody() }
        await f.stop()
    }

    @Test func authenticationFailuresDoNotFallBackToStaleData() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("private", headers: [("Cache-Control", "max-age=1")]), for: "/me")
        _ = await f.client.fetch(f.request("/me"))
        f.advance(10)
        f.origin.enqueue(.respond(status: 401), for: "/me")
        let result = await f.client.fetch(f.request("/me"), policy: .networkFirst)
        #expect(result.source == .network && result.response?.status.code == 401)
        #expect(result.error?.code == .authentication)
        await f.stop()
    }

    @Test func aDroppedConnectionIsANetworkError() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.dropConnection, for: "/drop")
        let result = await f.client.fetch(f.request("/drop"))
        #expect(result.error?.code == .network && result.freshness == .missing && result.body == nil)
        await f.stop()
    }

    @Test func aStoppedOriginIsNoConnection() async throws {
        let f = try await Fixture.make()
        await f.origin.stop()
        let result = await f.client.fetch(f.request("/gone"))
        #expect(result.error?.code == .noConnection && result.source == .none)
    }

    @Test func transportTimeoutsAreTimeouts() {
        for error in [HTTPClientError.deadlineExceeded, .readTimeout, .connectTimeout] {
            #expect((HTTPClientTransport.classify(error) as? CachingClientError)?.code == .timeout)
        }
        #expect(
            (HTTPClientTransport.classify(HTTPClientError.remoteConnectionClosed) as? CachingClientError)?.code
                == .network
        )
        #expect(HTTPClientTransport.classify(HTTPClientError.cancelled) is CancellationError)
    }

    @Test(arguments: [
        (
            IOError(errnoCode: ECONNREFUSED, reason: "connect(descriptor:addr:size:)"),
            CachingClientError.Code.noConnection
        ),
        (IOError(errnoCode: ECONNRESET, reason: "finishing a non-blocking connect failed"), .noConnection),
        (IOError(errnoCode: EHOSTUNREACH, reason: "read(descriptor:pointer:size:)"), .noConnection),
        (IOError(errnoCode: ECONNRESET, reason: "read(descriptor:pointer:size:)"), .network),
        (IOError(errnoCode: EPIPE, reason: "write(descriptor:pointer:size:)"), .network),
    ])
    func socketErrorsAreClassedByWhetherAConnectionWasMade(error: IOError, code: CachingClientError.Code) {
        #expect((HTTPClientTransport.classify(error) as? CachingClientError)?.code == code)
    }

    struct Item: Decodable, Equatable { var id: Int }

    @Test func decodingReturnsTheValueWithItsFreshnessOrAParseError() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok(#"{"id": 7}"#, headers: [("Cache-Control", "max-age=60")]), for: "/item")
        let decoded = try await f.client.fetch(Item.self, for: f.request("/item"))
        #expect(decoded.value == Item(id: 7) && decoded.freshness == .fresh && decoded.source == .network)
        let again = try await f.client.fetch(Item.self, for: f.request("/item"))
        #expect(again.source == .cache)

        f.origin.enqueue(.ok("not json"), for: "/bad")
        await #expect {
            _ = try await f.client.fetch(Item.self, for: f.request("/bad"))
        } throws: { error in
            (error as? CachingClientError)?.code == .parse && (error as? CachingClientError)?.underlying != nil
        }
        await #expect {
            _ = try await f.client.fetch(Item.self, for: f.request("/none"), policy: .cacheOnly)
        } throws: { error in
            (error as? CachingClientError)?.code == .notCached
        }
        await f.stop()
    }

    @Test func answersSurviveARestartThroughTheDiskTier() async throws {
        let directory = TemporaryDirectory()
        let f = try await Fixture.make(directory: directory.path)
        f.origin.enqueue(.ok("on disk", headers: [("Cache-Control", "max-age=60")]), for: "/p")
        _ = await f.client.fetch(f.request("/p"))
        try await f.cache.tiers.disk?.close()
        await f.stop()

        let reopened = try ResponseCache(
            configuration: .init(disk: .init(directory: directory.path), now: { f.clock.date })
        )
        let client = CachingHTTPClient(transport: Fixture.transport, cache: reopened)
        let result = await client.fetch(f.request("/p"), policy: .cacheOnly)
        #expect(result.text == "on disk" && result.freshness == .fresh && result.source == .cache)
        let online = await client.fetch(f.request("/p"))
        #expect(online.source == .cache && client.networkRequestCount == 0)
    }
}
#endif
