// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import HTTPTypes
import NIOCore
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// HTTP/2 on the listener (issue 35, second part) over real connections: a real origin, the
/// proxy, and SwiftNIO's HTTP/2 client — over TLS by ALPN, and in cleartext by prior knowledge —
/// beside HTTP/1.1 clients on the same listener.
@Suite struct CacheProxyHTTP2Tests {
    static let fresh: [(String, String)] = [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")]

    @Test func h2OverTLSAnswersMissesHitsRangesAndRevalidationsAsHTTP1Does() async throws {
        let directory = TemporaryDirectory("h2")
        defer { directory.remove() }
        let certificate = try await TestCertificate.make(in: directory.path, serial: 30)
        let f = try await CacheProxyTLSTests.start(certificate)
        f.origin.setDefault(.ok("0123456789", headers: Self.fresh), for: "/a")
        let client = try await H2Client.connect(port: f.port, trusting: [try certificate.certificate()])

        let miss = try await client.get("/a")
        #expect(miss.status == 200 && miss.text == "0123456789" && miss.field("X-Cache") == "MISS")
        // Fresh memory hits: answered from the connection's frames, on its event loop.
        let hit = try await client.get("/a")
        #expect(hit.status == 200 && hit.text == "0123456789" && hit.field("X-Cache") == "HIT")
        #expect(hit.field("Age") == "0" && hit.field("Content-Length") == "10")
        let range = try await client.get("/a", [.range: "bytes=2-4"])
        #expect(range.status == 206 && range.text == "234" && range.field("Content-Range") == "bytes 2-4/10")
        let notModified = try await client.get("/a", [.ifNoneMatch: "\"v1\""])
        #expect(notModified.status == 304 && notModified.body.isEmpty && notModified.field("ETag") == "\"v1\"")
        #expect(f.origin.requestCount == 1)

        // Many streams at once on the one connection: every answer whole and its own.
        f.origin.setDefault(.ok("b", headers: Self.fresh), for: "/b")
        let answers = try await withThrowingTaskGroup(of: (Int, H2Client.Answer).self) { group in
            for i in 0..<60 {
                group.addTask { (i, try await client.get(i % 2 == 0 ? "/a" : "/b")) }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (i, answer) in answers {
            #expect(answer.status == 200 && answer.text == (i % 2 == 0 ? "0123456789" : "b"))
        }
        #expect(f.origin.requestCount == 2)

        // A hit larger than the client's stream window (65,535) and than a frame: its DATA waits
        // for the client's window updates, and arrives whole, on several streams at once.
        let large = String((0..<(200 << 10)).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
        f.origin.setDefault(.ok(large, headers: Self.fresh), for: "/large")
        #expect(try await client.get("/large").text == large)
        async let first = client.get("/large")
        async let second = client.get("/large")
        #expect(try await [first.text, second.text] == [large, large])
        #expect(f.origin.requestCount == 3)

        // HTTP/1.1 over TLS on the same listener (ALPN `http/1.1`).
        let http1 = try await TLSClient.connect(port: f.port, trusting: [try certificate.certificate()])
        #expect(http1.session.applicationProtocol == "http/1.1")
        #expect(try await http1.get("/a").field("X-Cache") == "HIT")
        await http1.close()
        await client.close()
        try await f.stop()
    }

    @Test func h2cByPriorKnowledgeSharesTheCleartextListenerWithHTTP1() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("plain", headers: Self.fresh), for: "/a")
        let client = try await H2Client.connect(port: f.port)
        #expect(try await client.get("/a").field("X-Cache") == "MISS")
        let hit = try await client.get("/a")
        #expect(hit.text == "plain" && hit.field("X-Cache") == "HIT")
        let http1 = try await f.send("/a")
        #expect(http1.body == "plain" && http1.cache == "HIT")
        #expect(f.origin.requestCount == 1)
        await client.close()
        try await f.stop()
    }

    @Test(.timeLimit(.minutes(1))) func theOrdinaryPathServesStreamsWithBodiesInterimAnswersAndHTTP1OnlyFields()
        async throws
    {
        let f = try await ProxyFixture.start()
        let client = try await H2Client.connect(port: f.port)
        // A 103 reaches the HTTP/2 client (RFC 9113 §8.1 allows interim answers), hop-by-hop
        // fields gone; the final answer's `Keep-Alive` (forbidden in HTTP/2) is dropped too.
        f.origin.setDefault(
            .interim(
                status: 103,
                headers: [("Link", "</s.css>; rel=preload")],
                then: .ok("hinted", headers: [("Cache-Control", "max-age=60"), ("Keep-Alive", "timeout=5")])
            ),
            for: "/h"
        )
        let hinted = try await client.get("/h")
        #expect(hinted.interim.map(\.status.code) == [103])
        #expect(hinted.interim.first?.headerFields[HTTPField.Name("Link")!] == "</s.css>; rel=preload")
        #expect(hinted.text == "hinted" && hinted.field("Keep-Alive") == nil)
        // A POST's body goes upstream; its answer comes back on the stream.
        f.origin.setDefault(.ok("posted"), for: "/p")
        let request = HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/p")
        let posted = try await client.send(request, body: Array("payload".utf8))
        #expect(posted.text == "posted")
        #expect(f.origin.requests.last?.body == Array("payload".utf8))
        // Bodies past the stream's window (64 KiB) and, together, past the connection's (1 MiB)
        // arrive whole: both windows are kept open as the proxy reads.
        let large = (0..<(1_536 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        async let first = client.send(request, body: large)
        async let second = client.send(request, body: large.reversed())
        #expect(try await [first.text, second.text] == ["posted", "posted"])
        #expect(Set(f.origin.requests.suffix(2).map(\.body)) == [large, large.reversed()])
        // A GET with a body is not a fast hit: it takes the ordinary path and is answered.
        f.origin.setDefault(.ok("g", headers: Self.fresh), for: "/g")
        _ = try await client.get("/g")
        let withBody = try await client.send(
            HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/g"),
            body: Array("x".utf8)
        )
        #expect(withBody.text == "g")
        await client.close()
        try await f.stop()
    }

    /// A client that ends its side after its request still gets the answer, then the
    /// connection closes (without an idle timeout, nothing else would close it).
    @Test(.timeLimit(.minutes(1))) func aClientThatEndsItsSideIsAnsweredThenTheConnectionCloses() async throws {
        let f = try await ProxyFixture.start { $0.idleTimeout = nil }
        f.origin.setDefault(.ok("last words"), for: "/a")
        let connection = try await RawH2.Connection.open(port: f.port)
        connection.send(
            RawH2.preface + RawH2.frame(.headers, flags: RawH2.endStream | RawH2.endHeaders, stream: 1, RawH2.get("/a"))
        )
        try await connection.closeOutput()
        let outcome = await connection.read()
        #expect(
            outcome.stream1Ended && String(decoding: outcome.stream1Body, as: UTF8.self) == "last words",
            "\(outcome)"
        )
        #expect(outcome.closed)
        try await f.stop()
    }

    /// A connection that sends nothing, or only the start of HTTP/2's preface, is closed after
    /// the idle timeout, as a silent HTTP/1.1 connection is (the protocol is not chosen yet).
    @Test(.timeLimit(.minutes(1))) func aConnectionThatNeverChoosesItsProtocolIsClosedWhenIdle() async throws {
        let f = try await ProxyFixture.start { $0.idleTimeout = .milliseconds(200) }
        for start in [[], Array("PRI * HTTP/2.0".utf8)] {
            let connection = try await RawH2.Connection.open(port: f.port)
            if !start.isEmpty { connection.send(start) }
            #expect(await connection.read().closed)
        }
        try await f.stop()
    }

    /// A graceful shutdown sends `GOAWAY` (no error), finishes the streams open, then closes.
    @Test func aShutdownSaysGoAwayAndFinishesTheOpenStreams() async throws {
        let gate = TestOrigin.Gate()
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.hold(gate, then: .ok("finished")), for: "/held")
        let connection = try await RawH2.Connection.open(port: f.port)
        connection.send(
            RawH2.preface + RawH2.frame(.settings, flags: 0x1, stream: 0, [])
                + RawH2.frame(.headers, flags: RawH2.endStream | RawH2.endHeaders, stream: 1, RawH2.get("/held"))
        )
        await f.origin.waitForRequests(1)
        async let stopped: Void = f.stopProxy()
        let told = await connection.read(until: { $0.goAwayError != nil })
        #expect(told.goAwayError == 0 && !told.answeredStream1 && !told.closed)
        gate.open()
        let outcome = await connection.read()
        #expect(outcome.stream1Ended && String(decoding: outcome.stream1Body, as: UTF8.self) == "finished")
        #expect(outcome.closed)
        try await stopped
        await f.origin.stop()
    }

    /// An origin that dies mid-body: the stream is reset, never ended as if whole, and the
    /// connection's other streams go on.
    @Test func aBodyCutUpstreamResetsItsStreamOnly() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.stallBody(firstBytes: Array("abc".utf8), declaredLength: 10), for: "/cut")
        f.origin.setDefault(.ok("whole"), for: "/whole")
        let client = try await H2Client.connect(port: f.port)
        async let cut = client.get("/cut")
        await f.origin.waitForRequests(1)
        await f.origin.dropConnections()
        do {
            let answer = try await cut
            #expect(answer.status != 200, "a cut body was presented as whole: \(answer.text)")
        } catch {
            // The stream was reset: what a client must see.
        }
        #expect(try await client.get("/whole").text == "whole")
        await client.close()
        try await f.stop()
    }

    @Test func withoutHTTP2TheListenerSpeaksHTTP1Only() async throws {
        let directory = TemporaryDirectory("h2")
        defer { directory.remove() }
        let certificate = try await TestCertificate.make(in: directory.path, serial: 31)
        let f = try await CacheProxyTLSTests.start(certificate) { $0.http2 = nil }
        f.origin.setDefault(.ok("one", headers: Self.fresh), for: "/a")
        // ALPN offers http/1.1 alone: a client that wants only h2 fails its handshake.
        await #expect(throws: (any Error).self) {
            let client = try await H2Client.connect(port: f.port, trusting: [try certificate.certificate()])
            _ = try await client.get("/a")
        }
        let http1 = try await TLSClient.connect(port: f.port, trusting: [try certificate.certificate()])
        #expect(try await http1.get("/a").body == "one")
        await http1.close()
        try await f.stop()
    }

    @Test func limitsOutOfRangeAreRefused() async throws {
        for limits in [
            CacheProxy.HTTP2(maximumConcurrentStreams: 0), CacheProxy.HTTP2(maximumHeaderListSize: 0),
            CacheProxy.HTTP2(streamWindowSize: 1 << 31), CacheProxy.HTTP2(connectionWindowSize: 1000),
        ] {
            let configuration = CacheProxy.Configuration(upstream: try Upstream("http://127.0.0.1:1"), http2: limits)
            #expect(throws: CacheProxyError.self) {
                _ = try CacheProxy(configuration: configuration, transport: OriginTransport())
            }
        }
    }
}
#endif
