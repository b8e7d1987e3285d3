// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import HTTPCaching
import NIOHTTP1
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// Issue 34 item 2 end to end: with `forwardsRanges`, the origin's 206 answers are stored as
/// partial content, serve the ranges they hold, complete into the whole response, and never
/// answer a request for the whole.
@Suite struct CacheProxyPartialContentTests {
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz".utf8)
    static let fields = [("Cache-Control", "max-age=60"), ("ETag", "\"film-1\"")]

    static func start(forwardsRanges: Bool = true) async throws -> ProxyFixture {
        let f = try await ProxyFixture.start { $0.forwardsRanges = forwardsRanges }
        f.origin.setDefault(.servesRanges(headers: fields, body: alphabet), for: "/film")
        return f
    }

    @Test func rangesAreStoredServedAndCompletedIntoTheWhole() async throws {
        let f = try await Self.start()
        let first = try await f.send("/film", headers: [("Range", "bytes=0-9")])
        #expect(first.status == 206 && first.body == "abcdefghij" && first.cache == "MISS")
        #expect(first.headers["Content-Range"] == ["bytes 0-9/26"])
        #expect(f.origin.requests.last?.header("Range") == "bytes=0-9")

        let held = try await f.send("/film", headers: [("Range", "bytes=2-4")])
        #expect(held.status == 206 && held.body == "cde" && held.cache == "HIT")
        #expect(held.headers["Content-Range"] == ["bytes 2-4/26"] && held.headers["Content-Length"] == ["3"])
        #expect(f.origin.requestCount == 1)

        // Not held whole: asked of the origin as it is.
        let past = try await f.send("/film", headers: [("Range", "bytes=8-12")])
        #expect(past.status == 206 && past.body == "ijklm" && past.cache == "MISS")
        let rest = try await f.send("/film", headers: [("Range", "bytes=13-")])
        #expect(rest.status == 206 && rest.body == "nopqrstuvwxyz")
        #expect(f.origin.requestCount == 3)

        // Every byte is held: the whole response answers, and any range of it.
        let whole = try await f.send("/film")
        #expect(whole.status == 200 && whole.body == "abcdefghijklmnopqrstuvwxyz" && whole.cache == "HIT")
        #expect(whole.headers["Content-Range"].isEmpty && whole.headers["Content-Length"] == ["26"])
        let tail = try await f.send("/film", headers: [("Range", "bytes=-3")])
        #expect(tail.status == 206 && tail.body == "xyz" && tail.cache == "HIT")
        #expect(f.origin.requestCount == 3)
        try await f.stop()
    }

    @Test func aPartNeverAnswersTheWholeOrAHead() async throws {
        let f = try await Self.start()
        #expect(try await f.send("/film", headers: [("Range", "bytes=0-9")]).status == 206)
        let head = try await f.send("/film", method: .HEAD)
        #expect(head.status == 200 && head.cache == "MISS")
        let whole = try await f.send("/film")
        #expect(whole.status == 200 && whole.body == "abcdefghijklmnopqrstuvwxyz" && whole.cache == "MISS")
        #expect(f.origin.requestCount == 3)
        #expect(f.origin.requests.dropFirst().allSatisfy { $0.header("Range") == nil })
        try await f.stop()
    }

    @Test func aChangedRepresentationReplacesTheParts() async throws {
        let f = try await Self.start()
        #expect(try await f.send("/film", headers: [("Range", "bytes=0-9")]).body == "abcdefghij")
        let changed = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        f.origin.setDefault(
            .servesRanges(headers: [("Cache-Control", "max-age=60"), ("ETag", "\"film-2\"")], body: changed),
            for: "/film"
        )
        #expect(try await f.send("/film", headers: [("Range", "bytes=10-25")]).body == "KLMNOPQRSTUVWXYZ")
        // The first part was of another representation: not combined, not served.
        let start = try await f.send("/film", headers: [("Range", "bytes=0-3")])
        #expect(start.body == "ABCD" && start.cache == "MISS")
        try await f.stop()
    }

    @Test func byDefaultARangeIsCutFromTheWholeResponseFetchedWhole() async throws {
        let f = try await Self.start(forwardsRanges: false)
        let first = try await f.send("/film", headers: [("Range", "bytes=0-9")])
        #expect(first.status == 206 && first.body == "abcdefghij")
        #expect(f.origin.requests.last?.header("Range") == nil)
        let whole = try await f.send("/film")
        #expect(whole.status == 200 && whole.cache == "HIT" && f.origin.requestCount == 1)
        try await f.stop()
    }
}
#endif
