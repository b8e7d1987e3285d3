// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPCaching
import NIOHTTP1
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// What the proxy forwards unchanged, what it drops, and malformed upstream answers.
@Suite struct CacheProxyPassThroughTests {
    @Test func methodPathQueryBodyAndRepeatedFieldsAreForwarded() async throws {
        let f = try await ProxyFixture.start()
        let path = "/items/7?x=1&y=%20z&x=2"
        f.origin.enqueue(
            .respond(
                status: 200,
                headers: [("Set-Cookie", "a=1"), ("X-Multi", "1"), ("Set-Cookie", "b=2"), ("X-Multi", "2")],
                body: Array("done".utf8)
            ),
            for: path
        )
        let answer = try await f.send(path, method: .PATCH, headers: [("X-Req", "1"), ("X-Req", "2")], body: "{}")
        #expect(answer.status == 200 && answer.body == "done")
        #expect(answer.headers["Set-Cookie"] == ["a=1", "b=2"] && answer.headers["X-Multi"] == ["1", "2"])
        let request = try #require(f.origin.requests.last)
        #expect(request.method == "PATCH" && request.uri == path && request.body == Array("{}".utf8))
        #expect(request.headers.filter { $0.name.lowercased() == "x-req" }.map(\.value) == ["1", "2"])
        #expect(request.header("Host") == f.origin.authority)
        try await f.stop()
    }

    @Test(arguments: [999, 299, 418, 599])
    func unusualStatusesPassThrough(status: Int) async throws {
        let f = try await ProxyFixture.start()
        f.origin.enqueue(.respond(status: status, headers: [("X-Odd", "1")], body: Array("odd".utf8)), for: "/odd")
        let answer = try await f.send("/odd")
        #expect(answer.status == status && answer.body == "odd" && answer.headers["X-Odd"] == ["1"])
        try await f.stop()
    }

    @Test func hopByHopFieldsAreDroppedBothWays() async throws {
        let origin = try await TestOrigin.start(keepAlive: true)
        let f = try await ProxyFixture.start(origin: origin)
        f.origin.enqueue(
            .ok(
                "hop",
                headers: [
                    ("Connection", "X-Resp-Hop"), ("X-Resp-Hop", "1"), ("Keep-Alive", "timeout=5"),
                    ("Proxy-Authenticate", "Basic"), ("Trailer", "X-T"), ("X-End", "kept"),
                ]
            ),
            for: "/hop"
        )
        let answer = try await f.send(
            "/hop",
            headers: [
                ("Connection", "X-Hop"), ("X-Hop", "1"), ("Keep-Alive", "timeout=5"), ("TE", "trailers"),
                ("Proxy-Authorization", "Basic eDp5"), ("Upgrade", "h2c"), ("X-End", "kept"),
            ]
        )
        #expect(answer.status == 200 && answer.body == "hop" && answer.headers["X-End"] == ["kept"])
        for name in ["X-Resp-Hop", "Keep-Alive", "Proxy-Authenticate", "Trailer"] {
            #expect(answer.headers[name].isEmpty, "\(name) reached the user")
        }
        let request = try #require(f.origin.requests.last)
        #expect(request.header("X-End") == "kept")
        for name in ["X-Hop", "Keep-Alive", "TE", "Proxy-Authorization", "Upgrade"] {
            #expect(request.header(name) == nil, "\(name) reached the origin")
        }
        try await f.stop()
    }

    @Test func rangesAreAnsweredFromTheStoredWholeResponse() async throws {
        let f = try await ProxyFixture.start()
        f.origin.enqueue(.ok("0123456789", headers: [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")]), for: "/r")
        // A miss with a range: the whole response is fetched (without Range), stored, and cut.
        let first = try await f.send("/r", headers: [("Range", "bytes=2-4")])
        #expect(first.status == 206 && first.body == "234" && first.cache == "MISS")
        #expect(first.headers["Content-Range"] == ["bytes 2-4/10"] && first.headers["Content-Length"] == ["3"])
        #expect(f.origin.requests.last?.header("Range") == nil)
        let suffix = try await f.send("/r", headers: [("Range", "bytes=-3")])
        #expect(suffix.status == 206 && suffix.body == "789" && suffix.cache == "HIT")
        let open = try await f.send("/r", headers: [("Range", "bytes=6-"), ("If-Range", "\"v1\"")])
        #expect(open.status == 206 && open.body == "6789")
        let changed = try await f.send("/r", headers: [("Range", "bytes=6-"), ("If-Range", "\"v0\"")])
        #expect(changed.status == 200 && changed.body == "0123456789")
        let beyond = try await f.send("/r", headers: [("Range", "bytes=10-")])
        #expect(beyond.status == 416 && beyond.body.isEmpty && beyond.headers["Content-Range"] == ["bytes */10"])
        #expect(f.origin.requestCount == 1)
        try await f.stop()
    }

    @Test func partialContentIsNeitherStoredNorServedAsWhole() async throws {
        let f = try await ProxyFixture.start()
        // An origin that answers 206 to a request without Range: passed on, never stored.
        f.origin.enqueue(
            .respond(
                status: 206,
                headers: [("Content-Range", "bytes 0-3/10"), ("Cache-Control", "max-age=60")],
                body: Array("0123".utf8)
            ),
            for: "/p"
        )
        let partial = try await f.send("/p", headers: [("Range", "bytes=0-3")])
        #expect(partial.status == 206 && partial.body == "0123" && partial.cache == "MISS")
        f.origin.enqueue(.ok("0123456789", headers: [("Cache-Control", "max-age=60")]), for: "/p")
        let whole = try await f.send("/p")
        #expect(whole.status == 200 && whole.body == "0123456789" && whole.cache == "MISS")
        #expect(f.origin.requestCount == 2)
        try await f.stop()
    }

    /// Header sets that must neither crash the proxy nor read as fresh.
    static let malformed: [[(String, String)]] = [
        [("Cache-Control", "max-age=abc")],
        [("Expires", "not a date")],
        [("Expires", "0")],
        [("Cache-Control", "max-age=60, max-age=0")],
        [("Cache-Control", "\"max-age=60"), ("Age", "-5")],
        [("Cache-Control", "max-age=-1"), ("Content-Type", "text/plain"), ("Content-Type", "application/json")],
        [("Cache-Control", "=,,;;=max-age=60"), ("Last-Modified", "yesterday")],
    ]

    @Test(arguments: malformed.indices)
    func malformedUpstreamFieldsAreNotReadAsFresh(index: Int) async throws {
        let f = try await ProxyFixture.start()
        let headers = Self.malformed[index]
        f.origin.setDefault(.ok("body", headers: headers), for: "/m")
        let first = try await f.send("/m")
        #expect(first.status == 200 && first.body == "body")
        for (name, value) in headers where name != "Age" {
            #expect(first.headers[name].contains(value), "\(name): \(value) was not passed on")
        }
        let second = try await f.send("/m")
        #expect(second.status == 200 && second.body == "body" && second.cache != "HIT")
        #expect(f.origin.requestCount == 2)
        try await f.stop()
    }

    /// Responses that can never be fresh and have nothing to revalidate or serve stale with are
    /// not stored at all (RFC 9111 §4.2.1: invalid or conflicting freshness means stale).
    @Test(arguments: ["s-maxage=-5", "max-age=3600, max-age=0", "public, s-maxage=60, s-maxage=0"])
    func neverFreshResponsesAreNotStored(cacheControl: String) async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("body", headers: [("Cache-Control", cacheControl)]), for: "/never")
        let first = try await f.send("/never")
        #expect(first.status == 200 && first.body == "body")
        #expect(f.proxy.cache.currentMemoryUsage == 0)
        try await f.stop()
    }
}
#endif
