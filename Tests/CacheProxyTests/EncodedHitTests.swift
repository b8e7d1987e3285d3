// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import HTTPCaching
import HTTPTypes
import MetricsTestKit
import NIOCore
import Testing

@testable import CacheProxyCore

/// Fast hits written as bytes: the same bytes, whether a plain hit copies its record's encoded
/// head or the answer ``ProxyMapping`` made is encoded whole.
@Suite struct EncodedHitTests {
    /// What a hit puts on the wire: the bytes, or the parts encoded as NIO's encoder would.
    static func bytes(_ wire: FastHit.Wire) throws -> [UInt8] {
        switch wire {
        case .encoded(let head, let body):
            return Array(head.readableBytesView) + Array((body ?? ByteBuffer()).readableBytesView)
        case .parts(let response, let body):
            let head = try #require(EncodedHit.encode(response, body: nil, allocator: ByteBufferAllocator()))
            return Array(head.readableBytesView) + Array(body.readableBytesView)
        case .http2:
            Issue.record("HTTP/2 fields asked for HTTP/1")
            return []
        }
    }

    /// What a hit puts in HTTP/2 frames: the header block's fields in order, and the body.
    static func frames(_ wire: FastHit.Wire) -> (fields: [String], body: [UInt8]) {
        switch wire {
        case .http2(let headers, let body):
            return (headers.map { "\($0.name): \($0.value)" }, Array(body.readableBytesView))
        case .parts(let response, let body):
            let headers = FastHitFrameHandler.fields(of: response)
            return (headers.map { "\($0.name): \($0.value)" }, Array(body.readableBytesView))
        case .encoded:
            Issue.record("HTTP/1 bytes asked for HTTP/2")
            return ([], [])
        }
    }

    /// A fast hit over a cache holding `/a` with the `stored` fields, and a request for it with
    /// the `request` fields.
    static func stored(
        _ stored: [(HTTPField.Name, String)],
        request: [(HTTPField.Name, String)]
    ) async throws -> (FastHit, ManualDate, HTTPRequest) {
        let (fastHit, cache, date, _) = try FastHitTests.make()
        let fields = HTTPFields(stored.map { HTTPField(name: $0.0, value: $0.1) })
        try await FastHitTests.store(cache, "/a", fields, at: date.now)
        let incoming = FastHitTests.incoming("/a", HTTPFields(request.map { HTTPField(name: $0.0, value: $0.1) }))
        return (fastHit, date, incoming)
    }

    /// The answer ``ProxyMapping`` makes, encoded whole.
    static func expected(_ fastHit: FastHit, _ request: HTTPRequest) throws -> [UInt8] {
        let answer = try #require(fastHit.answer(request))
        let bytes = try #require(
            EncodedHit.encode(answer.response, body: Array(answer.body.readableBytesView), allocator: .init())
        )
        return Array(bytes.readableBytesView)
    }

    @Test(arguments: [
        // Plain: the record's head and the hit's fields.
        ([(HTTPField.Name.cacheControl, "max-age=60"), (.contentLength, "10")], [(HTTPField.Name, String)]()),
        // Fields the answer changes: an `Age`, a cache status, no or another `Content-Length`.
        ([(.cacheControl, "max-age=60"), (.age, "5"), (.contentLength, "10")], []),
        ([(.cacheControl, "max-age=60"), (HTTPField.Name("X-Cache")!, "MISS"), (.contentLength, "10")], []),
        ([(.cacheControl, "max-age=60")], []),
        ([(.cacheControl, "max-age=60"), (.contentLength, "9")], []),
        // Requests whose answer differs: a range, preconditions.
        ([(.cacheControl, "max-age=60"), (.contentLength, "10")], [(.range, "bytes=2-4")]),
        ([(.cacheControl, "max-age=60"), (.contentLength, "10"), (.eTag, "\"e\"")], [(.ifNoneMatch, "\"e\"")]),
        ([(.cacheControl, "max-age=60"), (.contentLength, "10"), (.eTag, "\"e\"")], [(.ifNoneMatch, "\"f\"")]),
    ])
    func aHitsBytesAreThoseOfTheOrdinaryAnswer(
        stored: [(HTTPField.Name, String)],
        request: [(HTTPField.Name, String)]
    ) async throws {
        let (fastHit, date, incoming) = try await Self.stored(stored, request: request)
        for seconds in [3, 4] {  // the second from the kept head, where there is one
            date.advance(seconds)
            let wire = try #require(fastHit.wireAnswer(incoming, form: .encoded, allocator: .init()))
            #expect(try Self.bytes(wire) == Self.expected(fastHit, incoming))
        }
    }

    @Test(arguments: [
        // Plain: the record's header block and the hit's fields.
        ([(HTTPField.Name.cacheControl, "max-age=60"), (.contentLength, "10")], [(HTTPField.Name, String)]()),
        ([(.cacheControl, "max-age=60"), (.age, "5"), (.contentLength, "10")], []),
        ([(.cacheControl, "max-age=60")], []),
        ([(.cacheControl, "max-age=60"), (.contentLength, "10")], [(.range, "bytes=2-4")]),
        ([(.cacheControl, "max-age=60"), (.contentLength, "10"), (.eTag, "\"e\"")], [(.ifNoneMatch, "\"e\"")]),
    ])
    func aHitsHTTP2BlockIsThatOfTheOrdinaryAnswer(
        stored: [(HTTPField.Name, String)],
        request: [(HTTPField.Name, String)]
    ) async throws {
        let (fastHit, date, incoming) = try await Self.stored(stored, request: request)
        for seconds in [3, 4] {  // the second from the kept block, where there is one
            date.advance(seconds)
            let wire = try #require(fastHit.wireAnswer(incoming, form: .http2, allocator: .init()))
            let answer = try #require(fastHit.answer(incoming))
            let expected = FastHitFrameHandler.fields(of: answer.response).map { "\($0.name): \($0.value)" }
            #expect(Self.frames(wire).fields == expected)
            #expect(Self.frames(wire).body == Array(answer.body.readableBytesView))
        }
    }

    @Test func aReplacedRecordGetsItsOwnHeadAndALargeBodyFollowsTheHead() async throws {
        let (fastHit, cache, date, metrics) = try FastHitTests.make()
        let body = (0..<5_000).map { UInt8(truncatingIfNeeded: $0) }
        let fields: HTTPFields = [.cacheControl: "max-age=60", .contentLength: "5000"]
        try await FastHitTests.store(cache, "/big", fields, body: body, at: date.now)
        let incoming = FastHitTests.incoming("/big")
        let first = try #require(fastHit.wireAnswer(incoming, form: .encoded, allocator: .init()))
        guard case .encoded(_, let separate) = first else {
            Issue.record("not encoded")
            return
        }
        #expect(separate.map { Array($0.readableBytesView) } == body)
        #expect(try Self.bytes(first) == Self.expected(fastHit, incoming))
        var changed = fields
        changed[.cacheControl] = "max-age=120"
        try await FastHitTests.store(cache, "/big", changed, body: body, at: date.now)
        let second = try #require(fastHit.wireAnswer(incoming, form: .encoded, allocator: .init()))
        #expect(String(decoding: try Self.bytes(second).prefix(200), as: UTF8.self).contains("max-age=120"))
        #expect(try Self.bytes(second) == Self.expected(fastHit, incoming))
        #expect(try metrics.expectCounter(ProxyMetrics.hitsLabel).totalValue == 4)
    }
}
#endif
