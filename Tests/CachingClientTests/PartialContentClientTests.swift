// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import HTTPCaching
import HTTPTypes
import TestOriginSupport
import Testing

@testable import CachingClient

/// Issue 34 item 2 in the client's private mode, against a real origin that serves ranges: the
/// app's own `Range` requests store partial content, later ranges it holds come from the cache,
/// and the whole is never answered from a part (as the proxy does: see
/// `CacheProxyPartialContentTests`).
@Suite struct PartialContentClientTests {
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz".utf8)

    @Test func theAppsRangesAreStoredServedAndCompleted() async throws {
        let f = try await Fixture.make()
        f.origin.setDefault(
            .servesRanges(headers: [("Cache-Control", "max-age=60"), ("ETag", "\"doc-1\"")], body: Self.alphabet),
            for: "/doc"
        )
        func ranged(_ range: String) -> HTTPRequest {
            f.request("/doc", headers: [.range: range])
        }
        let first = await f.client.fetch(ranged("bytes=0-12"))
        #expect(first.source == .network && first.response?.status == .partialContent && first.text == "abcdefghijklm")
        let held = await f.client.fetch(ranged("bytes=3-5"))
        #expect(held.source == .cache && held.text == "def")
        #expect(held.response?.headerFields[.contentRange] == "bytes 3-5/26")
        #expect(f.origin.requestCount == 1)

        // The whole is not held: it goes to the origin, and is stored whole.
        let whole = await f.client.fetch(f.request("/doc"))
        #expect(whole.source == .network && whole.response?.status == .ok && whole.body == Self.alphabet)
        #expect(f.origin.requestCount == 2)

        // A part then a part that completes the body: the whole answers from the cache.
        f.origin.setDefault(
            .servesRanges(headers: [("Cache-Control", "max-age=60"), ("ETag", "\"doc-2\"")], body: Self.alphabet),
            for: "/other"
        )
        #expect(await f.client.fetch(f.request("/other", headers: [.range: "bytes=10-"])).source == .network)
        #expect(await f.client.fetch(f.request("/other", headers: [.range: "bytes=0-9"])).source == .network)
        let completed = await f.client.fetch(f.request("/other"))
        #expect(completed.source == .cache && completed.response?.status == .ok && completed.body == Self.alphabet)
        #expect(f.origin.requestCount == 4)
        await f.stop()
    }

    /// A stale part is revalidated with the range and its entity tag; a 304 freshens it and the
    /// range is answered from it.
    @Test func aStalePartIsRevalidated() async throws {
        let f = try await Fixture.make()
        let fields = [("Cache-Control", "max-age=10"), ("ETag", "\"doc-1\"")]
        f.origin.setDefault(.servesRanges(headers: fields, body: Self.alphabet), for: "/doc")
        let request = f.request("/doc", headers: [.range: "bytes=0-9"])
        #expect(await f.client.fetch(request).source == .network)
        f.advance(20)
        f.origin.enqueue(.respond(status: 304, headers: fields), for: "/doc")
        let revalidated = await f.client.fetch(request)
        #expect(revalidated.source == .revalidated && revalidated.text == "abcdefghij")
        #expect(revalidated.response?.status == .partialContent)
        let sent = try #require(f.origin.requests.last)
        #expect(sent.header("If-None-Match") == "\"doc-1\"" && sent.header("Range") == "bytes=0-9")
        // Fresh again: the next range it holds needs no origin.
        #expect(await f.client.fetch(f.request("/doc", headers: [.range: "bytes=4-5"])).text == "ef")
        #expect(f.origin.requestCount == 2)
        await f.stop()
    }
}
#endif
