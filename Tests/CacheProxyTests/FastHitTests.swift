// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import Foundation
import HTTPCaching
import HTTPTypes
import MetricsTestKit
import NIOCore
import Synchronization
import Testing

@testable import CacheProxyCore

/// Fresh memory hits answered on the event loop: exactly the plain cases, the rest left to the
/// caching client.
@Suite struct FastHitTests {
    static let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    static func make() throws -> (FastHit, ResponseCache, ManualDate, TestMetrics) {
        let date = ManualDate()
        let cache = try ResponseCache(configuration: .init(mode: .shared, now: { date.now }))
        let metrics = TestMetrics()
        let fastHit = FastHit(
            cache: cache,
            upstream: try Upstream("http://origin:8000"),
            statusHeader: HTTPField.Name("X-Cache"),
            metrics: ProxyMetrics(factory: metrics),
            bodies: HitBodyBuffers(limitBytes: 1 << 20),
            tracing: nil
        )
        return (fastHit, cache, date, metrics)
    }

    static func incoming(_ path: String, _ fields: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: nil, authority: "proxy:8002", path: path, headerFields: fields)
    }

    static func store(
        _ cache: ResponseCache,
        _ path: String,
        _ fields: HTTPFields,
        body: [UInt8] = Array("0123456789".utf8),
        at date: Date
    ) async throws {
        let request = HTTPRequest(method: .get, scheme: "http", authority: "origin:8000", path: path)
        let response = CachedResponse(
            response: HTTPResponse(status: .ok, headerFields: fields),
            body: body,
            requestTime: date,
            responseTime: date
        )
        #expect(try await cache.storeCachedResponse(response, for: request))
    }

    @Test func aFreshPlainHitIsAnsweredWithItsAge() async throws {
        let (fastHit, cache, date, metrics) = try Self.make()
        try await Self.store(cache, "/a", [.cacheControl: "max-age=60", .contentLength: "10"], at: date.now)
        date.advance(7)
        let answer = try #require(fastHit.answer(Self.incoming("/a")))
        #expect(answer.response.status == .ok && answer.body.readableBytes == 10)
        #expect(answer.response.headerFields[.age] == "7" && answer.response.headerFields[.contentLength] == "10")
        #expect(answer.response.headerFields[HTTPField.Name("X-Cache")!] == "HIT")
        #expect(try metrics.expectCounter(ProxyMetrics.hitsLabel).totalValue == 1)
        let ranged = try #require(fastHit.answer(Self.incoming("/a", [.range: "bytes=-3"])))
        #expect(ranged.response.status.code == 206 && Array(ranged.body.readableBytesView) == Array("789".utf8))
        let conditional = try #require(
            fastHit.answer(Self.incoming("/a", [.ifModifiedSince: HTTPDate.format(date.now)]))
        )
        #expect(conditional.response.status == .ok)  // no Last-Modified: nothing to compare, whole answer
    }

    @Test func aLargeBodyIsWrittenFromOneBufferUntilItsRecordIsReplaced() async throws {
        let (fastHit, cache, date, _) = try Self.make()
        let fields: HTTPFields = [.cacheControl: "max-age=60", .lastModified: HTTPDate.format(date.now)]
        let old = (0..<65_536).map { UInt8(truncatingIfNeeded: $0) }
        try await Self.store(cache, "/big", fields, body: old, at: date.now)
        let first = try #require(fastHit.answer(Self.incoming("/big")))
        let second = try #require(fastHit.answer(Self.incoming("/big")))
        #expect(Array(first.body.readableBytesView) == old && Array(second.body.readableBytesView) == old)
        #expect(HitBodyBuffersTests.storage(of: first.body) == HitBodyBuffersTests.storage(of: second.body))
        // A range, a 304: cut from the same stored body, never the shared buffer.
        let ranged = try #require(fastHit.answer(Self.incoming("/big", [.range: "bytes=100-199"])))
        #expect(ranged.response.status.code == 206 && Array(ranged.body.readableBytesView) == Array(old[100...199]))
        let conditional = try #require(
            fastHit.answer(Self.incoming("/big", [.ifModifiedSince: HTTPDate.format(date.now)]))
        )
        #expect(conditional.response.status == .notModified && conditional.body.readableBytes == 0)
        // The record replaced by one of the same length: the new bytes, twice.
        let new = old.map { $0 ^ 0xFF }
        try await Self.store(cache, "/big", fields, body: new, at: date.now)
        for _ in 0..<2 {
            let answer = try #require(fastHit.answer(Self.incoming("/big")))
            #expect(Array(answer.body.readableBytesView) == new)
        }
        #expect(Array(first.body.readableBytesView) == old)  // a write in flight keeps its bytes
    }

    @Test func aVariantIsFoundByTheRequestsFields() async throws {
        let (fastHit, cache, date, _) = try Self.make()
        let request = HTTPRequest(
            method: .get,
            scheme: "http",
            authority: "origin:8000",
            path: "/v",
            headerFields: [.acceptEncoding: "gzip, br"]
        )
        let response = CachedResponse(
            response: HTTPResponse(
                status: .ok,
                headerFields: [.cacheControl: "max-age=60", .vary: "Accept-Encoding"]
            ),
            body: [1],
            requestTime: date.now,
            responseTime: date.now
        )
        #expect(try await cache.storeCachedResponse(response, for: request))
        #expect(fastHit.answer(Self.incoming("/v", [.acceptEncoding: "br,GZIP"])) != nil)
        #expect(fastHit.answer(Self.incoming("/v", [.acceptEncoding: "gzip"])) == nil)
        #expect(fastHit.answer(Self.incoming("/v")) == nil)
    }

    @Test func everythingElseTakesTheOrdinaryPath() async throws {
        let (fastHit, cache, date, _) = try Self.make()
        try await Self.store(cache, "/a", [.cacheControl: "max-age=60"], at: date.now)
        try await Self.store(cache, "/v", [.cacheControl: "max-age=60", .vary: "Accept"], at: date.now)
        #expect(fastHit.answer(Self.incoming("/missing")) == nil)
        #expect(fastHit.answer(Self.incoming("/v", [.accept: "text/html"])) == nil)  // another variant
        #expect(fastHit.answer(Self.incoming("/a", [.cacheControl: "no-cache"])) == nil)
        #expect(fastHit.answer(Self.incoming("/a", [.contentLength: "0"])) == nil)
        #expect(fastHit.answer(Self.incoming("/a", [HTTPField.Name("Host")!: "second"])) == nil)
        var head = Self.incoming("/a")
        head.method = .head
        #expect(fastHit.answer(head) == nil)
        date.advance(61)  // stale
        #expect(fastHit.answer(Self.incoming("/a")) == nil)
    }
}
#endif
