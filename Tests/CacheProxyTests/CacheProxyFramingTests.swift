// SPDX-License-Identifier: Apache-2.0

#if Proxy
import TestOriginSupport
import Testing

/// Requests a proxy must refuse with a framed answer, closing the connection where what follows
/// cannot be trusted (RFC 9112): no Host or two, a broken chunked body, CONNECT, a method the
/// HTTP/1.1 parser does not know.
@Suite struct CacheProxyFramingTests {
    @Test(arguments: [
        ("GET /a HTTP/1.1\r\n\r\n", "400 Bad Request", "exactly one Host"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "400 Bad Request", "exactly one Host"),
        (
            "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
            "400 Bad Request", "malformed"
        ),
        ("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", "501 Not Implemented", ""),
        ("FOO /a HTTP/1.1\r\nHost: a\r\n\r\n", "400 Bad Request", ""),
    ])
    func malformedRequestsGetAFramedRefusalAndTheConnectionCloses(
        request: String,
        status: String,
        message: String
    ) async throws {
        let f = try await ProxyFixture.start()
        let port = f.port
        let outcome = await RawConnection.exchange(port: port, request)
        #expect(
            outcome.text.hasPrefix("HTTP/1.1 \(status)\r\n"),
            "got: \(outcome.text.debugDescription), errno \(outcome.readError)"
        )
        #expect(outcome.text.contains(message))
        #expect(outcome.closed, "the connection must close, not hang")
        #expect(f.origin.requestCount == 0)
        try await f.stop()
    }

    /// Pipelined on one connection: a hit written as bytes past NIO's encoder, then a `HEAD` and
    /// `GET`s answered the ordinary way. Each answer keeps its framing: the encoder pairs every
    /// answer with its request's method, so a hit that skipped it would leave the `GET` after the
    /// `HEAD` without its body.
    @Test func aHitWrittenAsBytesKeepsTheAnswersAfterItFramed() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("fine", headers: [("Cache-Control", "max-age=60")]), for: "/p")
        #expect(try await f.send("/p").cache == "MISS")
        let get = "GET /p HTTP/1.1\r\nHost: a\r\n\r\n"
        let outcome = await RawConnection.exchange(
            port: f.port,
            get + "HEAD /p HTTP/1.1\r\nHost: a\r\n\r\n" + get
                + "GET /p HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        )
        let answers = outcome.text.split(separator: "HTTP/1.1 200 OK\r\n", omittingEmptySubsequences: false).dropFirst()
        #expect(answers.count == 4, "got: \(outcome.text.debugDescription)")
        #expect(answers.map { $0.hasSuffix("\r\n\r\nfine") } == [true, false, true, true])
        #expect(outcome.closed)
        #expect(f.origin.requestCount == 1)
        try await f.stop()
    }

    /// A well-formed request on the same kind of connection still goes upstream.
    @Test func aWellFormedRawRequestIsForwarded() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("fine", headers: [("Cache-Control", "max-age=60")]), for: "/ok")
        let port = f.port
        let outcome = await RawConnection.exchange(
            port: port,
            "GET /ok HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        )
        #expect(
            outcome.text.hasPrefix("HTTP/1.1 200 OK\r\n") && outcome.text.hasSuffix("fine"),
            "got: \(outcome.text.debugDescription), errno \(outcome.readError)"
        )
        #expect(f.origin.requestCount == 1)
        try await f.stop()
    }
}
#endif
