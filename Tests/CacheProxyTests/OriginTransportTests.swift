// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import CachingClient
import HTTPTypes
import Synchronization
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// The proxy's own HTTP/1.1 client against a real loopback origin: whole answers, interim
/// answers handed on, kept connections, and failures classified.
@Suite struct OriginTransportTests {
    private static func request(
        _ origin: TestOrigin,
        _ path: String,
        method: HTTPRequest.Method = .get,
        fields: HTTPFields = [:]
    ) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: origin.authority, path: path, headerFields: fields)
    }

    @Test func aGetComesBackWholeWithItsFields() async throws {
        let origin = try await TestOrigin.start()
        let transport = OriginTransport()
        origin.setDefault(
            .ok("hello", headers: [("Cache-Control", "max-age=60"), ("X-Two", "a"), ("X-Two", "b")]),
            for: "/a"
        )
        let answer = try await transport.send(
            Self.request(origin, "/a", fields: [.accept: "text/plain"]),
            body: nil,
            timeout: .seconds(30)
        )
        #expect(answer.response.status == .ok)
        #expect(String(decoding: answer.body, as: UTF8.self) == "hello")
        #expect(answer.response.headerFields[.cacheControl] == "max-age=60")
        #expect(answer.response.headerFields[values: HTTPField.Name("X-Two")!] == ["a", "b"])
        let sent = try #require(origin.requests.first)
        #expect(sent.uri == "/a" && sent.header("Host") == origin.authority && sent.header("Accept") == "text/plain")
        await transport.shutdown()
        await origin.stop()
    }

    @Test func interimAnswersGoToTheTasksHandlerInOrder() async throws {
        let origin = try await TestOrigin.start()
        let transport = OriginTransport()
        origin.setDefault(
            .interim(
                status: 103,
                headers: [("Link", "</a.css>; rel=preload")],
                then: .interim(status: 102, then: .ok("final"))
            ),
            for: "/hints"
        )
        let seen = Mutex<[HTTPResponse]>([])
        let handler = InterimResponseHandler { interim in seen.withLock { $0.append(interim) } }
        let answer = try await InterimResponseHandler.$current.withValue(handler) {
            try await transport.send(Self.request(origin, "/hints"), body: nil, timeout: .seconds(30))
        }
        #expect(answer.response.status == .ok && String(decoding: answer.body, as: UTF8.self) == "final")
        let interims = seen.withLock { $0 }
        #expect(interims.map(\.status.code) == [103, 102])
        #expect(interims.first?.headerFields[HTTPField.Name("Link")!] == "</a.css>; rel=preload")
        // Without a handler they are read and dropped; the answer is the same.
        let again = try await transport.send(Self.request(origin, "/hints"), body: nil, timeout: .seconds(30))
        #expect(again.response.status == .ok && String(decoding: again.body, as: UTF8.self) == "final")
        await transport.shutdown()
        await origin.stop()
    }

    @Test func aBodyGoesUpWithItsLength() async throws {
        let origin = try await TestOrigin.start()
        let transport = OriginTransport()
        origin.setDefault(.respond(status: 201), for: "/post")
        let answer = try await transport.send(
            Self.request(origin, "/post", method: .post, fields: [.contentLength: "999"]),
            body: Array("payload".utf8),
            timeout: .seconds(30)
        )
        #expect(answer.response.status == .created)
        let sent = try #require(origin.requests.first)
        #expect(sent.method == "POST" && sent.body == Array("payload".utf8) && sent.header("Content-Length") == "7")
        await transport.shutdown()
        await origin.stop()
    }

    /// One connection serves answers in turn, a `HEAD`'s bodiless one among them.
    @Test func aKeptConnectionServesTheNextRequests() async throws {
        let origin = try await TestOrigin.start()
        let transport = OriginTransport()
        origin.setDefault(.ok("body"), for: "/k")
        for method in [HTTPRequest.Method.get, .head, .get] {
            let answer = try await transport.send(
                Self.request(origin, "/k", method: method),
                body: nil,
                timeout: .seconds(30)
            )
            #expect(String(decoding: answer.body, as: UTF8.self) == (method == .head ? "" : "body"))
            #expect(answer.response.headerFields[.contentLength] == "4")
        }
        #expect(origin.connectionCount == 1)
        await transport.shutdown()
        await origin.stop()
    }

    /// An origin that closed a kept connection: a `GET` goes again on a new one.
    @Test func aKeptConnectionTheOriginClosedIsReplaced() async throws {
        let origin = try await TestOrigin.start()
        let transport = OriginTransport()
        origin.setDefault(.ok("again"), for: "/r")
        _ = try await transport.send(Self.request(origin, "/r"), body: nil, timeout: .seconds(30))
        await origin.dropConnections()
        let answer = try await transport.send(Self.request(origin, "/r"), body: nil, timeout: .seconds(30))
        #expect(String(decoding: answer.body, as: UTF8.self) == "again")
        #expect(origin.connectionCount == 2)
        await transport.shutdown()
        await origin.stop()
    }

    /// `Connection: close` from the origin: the connection is not kept.
    @Test func anAnswerThatClosesIsNotKept() async throws {
        let origin = try await TestOrigin.start(keepAlive: false)
        let transport = OriginTransport()
        origin.setDefault(.ok("once"), for: "/c")
        for _ in 0..<2 {
            let answer = try await transport.send(Self.request(origin, "/c"), body: nil, timeout: .seconds(30))
            #expect(String(decoding: answer.body, as: UTF8.self) == "once")
        }
        #expect(origin.connectionCount == 2)
        await transport.shutdown()
        await origin.stop()
    }

    @Test func failuresAreClassified() async throws {
        let origin = try await TestOrigin.start()
        let transport = OriginTransport(configuration: .init(maximumBodyBytes: 8))
        origin.setDefault(.ok("more than eight bytes"), for: "/big")
        origin.setDefault(.dropConnection, for: "/drop")
        func code(_ request: HTTPRequest) async -> CachingClientError.Code? {
            do {
                _ = try await transport.send(request, body: nil, timeout: .seconds(30))
                return nil
            } catch {
                return (error as? CachingClientError)?.code
            }
        }
        #expect(await code(Self.request(origin, "/big")) == .network)
        #expect(await code(Self.request(origin, "/drop")) == .network)
        var tls = Self.request(origin, "/big")
        tls.scheme = "https"
        #expect(await code(tls) == .network)
        await origin.stop()
        #expect(await code(Self.request(origin, "/big")) == .noConnection)
        await transport.shutdown()
    }

    /// The deadline covers the body: an origin that stalls after its head fails with `timeout`.
    @Test func aStalledBodyTimesOut() async throws {
        let origin = try await TestOrigin.start()
        let clock = TestClock()
        let transport = OriginTransport(configuration: .init(clock: clock))
        origin.setDefault(.stallBody(firstBytes: Array("{".utf8), declaredLength: 100), for: "/slow")
        let request = Self.request(origin, "/slow")
        let answer = Task { try await transport.send(request, body: nil, timeout: .seconds(3)) }
        await origin.waitForRequests(1)
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(3))
        let error = await #expect(throws: CachingClientError.self) { try await answer.value }
        #expect(error?.code == .timeout)
        await transport.shutdown()
        await origin.stop()
    }

    @Test func aStreamedBodyIsReadNoFurtherAheadThanItsTaker() async throws {
        let origin = try await TestOrigin.start()
        let transport = OriginTransport()
        let body = (0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 >> 3) }
        origin.setDefault(.respond(status: 200, body: body), for: "/big")
        let answer = try await transport.stream(
            Self.request(origin, "/big"),
            body: nil,
            bodyParts: nil,
            timeout: .seconds(30)
        )
        #expect(answer.response.status == .ok)
        var received: [UInt8] = []
        var largest = 0
        while let part = try await answer.body.next() {
            // Whatever the taker is slow to take, at most the high-water mark and what the event
            // loop reads in the turn it stops (four reads of 64 KiB at most) wait.
            largest = max(largest, part.count)
            received += part
            for _ in 0..<20 { await Task.yield() }
        }
        #expect(received == body)
        #expect(largest <= OriginBodyStream.highWater + 4 * (64 << 10))
        // The connection was kept for the next exchange once the body ended.
        let again = try await transport.send(Self.request(origin, "/big"), body: nil, timeout: .seconds(30))
        #expect(again.body.count == body.count)
        await transport.shutdown()
        await origin.stop()
    }

    @Test func aShortBodyComesWholeWithItsHead() async throws {
        let origin = try await TestOrigin.start()
        let transport = OriginTransport()
        origin.setDefault(.respond(status: 200, body: Array("short".utf8)), for: "/short")
        let answer = try await transport.stream(
            Self.request(origin, "/short"),
            body: nil,
            bodyParts: nil,
            timeout: .seconds(30)
        )
        #expect(answer.whole == Array("short".utf8))
        await transport.shutdown()
        await origin.stop()
    }

    @Test func aStreamedBodyCutByTheOriginFailsAfterWhatCame() async throws {
        let origin = try await TestOrigin.start()
        let transport = OriginTransport()
        // Declared longer than what comes whole with its head: streamed.
        origin.setDefault(.stallBody(firstBytes: Array("half".utf8), declaredLength: 1 << 20), for: "/cut")
        let answer = try await transport.stream(
            Self.request(origin, "/cut"),
            body: nil,
            bodyParts: nil,
            timeout: .seconds(30)
        )
        #expect(try await answer.body.next() == Array("half".utf8))
        await origin.dropConnections()
        await #expect(throws: (any Error).self) { try await answer.body.next() }
        await transport.shutdown()
        await origin.stop()
    }

    @Test(arguments: [
        ("example.com", "example.com", 80),
        ("example.com:8080", "example.com", 8080),
        ("127.0.0.1:1", "127.0.0.1", 1),
        ("[::1]", "::1", 80),
        ("[::1]:9000", "::1", 9000),
    ])
    func authoritiesSplitIntoHostAndPort(authority: String, host: String, port: Int) {
        let split = OriginTransport.hostAndPort(authority)
        #expect(split?.host == host && split?.port == port)
    }

    @Test(arguments: ["", ":80", "host:", "host:http", "host:70000", "[::1", "[::1]x", "[::1]:"])
    func badAuthoritiesAreRefused(authority: String) {
        #expect(OriginTransport.hostAndPort(authority) == nil)
    }
}
#endif
