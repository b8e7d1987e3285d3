// SPDX-License-Identifier: Apache-2.0

#if Proxy
import AsyncHTTPClient
import AsyncHTTPClientTransport
import CachingClient
import HTTPCaching
import HTTPTypes
import NIOCore
import NIOHTTP1
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// A hostile origin that sends more than its answer — a second response, the start of one, body
/// bytes past the `Content-Length`, a body after a `HEAD`'s answer, bytes while the connection is
/// idle — never has those bytes read as another request's answer (a response desync): the
/// connection they came on is closed, never kept.
@Suite struct OriginDesyncTests {
    /// The start of a response that would make the next request's answer a day-long `200`.
    static let poison = "HTTP/1.1 200 OK\r\nCache-Control: public, max-age=86400\r\nX-Junk: "
    /// `/b`'s real answer.
    static let notFound = "HTTP/1.1 404 Not Found\r\nCache-Control: no-store\r\nContent-Length: 9\r\n\r\nnot found"

    /// How `/a` is answered, and with which method it is asked.
    struct Variant: Sendable, CustomTestStringConvertible {
        let name: String
        let method: HTTPRequest.Method
        let answer: String
        var testDescription: String { name }
    }

    static let variants: [Variant] = [
        Variant(
            name: "the start of a head after a length-framed answer",
            method: .get,
            answer: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na" + poison
        ),
        Variant(
            name: "a whole second response",
            method: .get,
            answer: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"
                + "HTTP/1.1 200 OK\r\nCache-Control: public, max-age=86400\r\nContent-Length: 4\r\n\r\nevil"
        ),
        Variant(
            name: "body bytes past the Content-Length",
            method: .get,
            answer: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naEXTRA BYTES"
        ),
        Variant(
            name: "the start of a head after a chunked answer",
            method: .get,
            answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n" + poison
        ),
        Variant(
            name: "a body after a HEAD's answer",
            method: .head,
            answer: "HTTP/1.1 200 OK\r\nContent-Length: \(poison.utf8.count)\r\n\r\n" + poison
        ),
        Variant(
            name: "the start of a head after a 304",
            method: .get,
            answer: "HTTP/1.1 304 Not Modified\r\nETag: \"1\"\r\n\r\n" + poison
        ),
    ]

    /// An origin that answers `/a` with `answerA` and `/b` with a plain 404.
    static func origin(answering answerA: String) async throws -> RawOrigin {
        try await RawOrigin.start { _, path in
            Array((path == "/a" ? answerA : notFound).utf8)
        }
    }

    static func request(_ origin: RawOrigin, _ path: String, method: HTTPRequest.Method = .get) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: origin.authority, path: path)
    }

    @Test(arguments: variants)
    func theTransportClosesAConnectionThatHeldMoreThanTheAnswer(variant: Variant) async throws {
        let origin = try await Self.origin(answering: variant.answer)
        let transport = OriginTransport()
        let first = try await transport.send(
            Self.request(origin, "/a", method: variant.method),
            body: nil,
            timeout: .seconds(30)
        )
        #expect([200, 304].contains(first.response.status.code))
        #expect(first.body == (variant.method == .head || first.response.status == .notModified ? [] : Array("a".utf8)))
        let second = try await transport.send(Self.request(origin, "/b"), body: nil, timeout: .seconds(30))
        #expect(second.response.status == .notFound)
        #expect(String(decoding: second.body, as: UTF8.self) == "not found")
        #expect(second.response.headerFields[HTTPField.Name("X-Junk")!] == nil)
        #expect(origin.connectionCount == 2)
        await transport.shutdown()
        await origin.stop()
    }

    /// Bytes an origin sends on a connection kept idle close it before it carries a request.
    @Test func bytesOnAnIdleConnectionCloseIt() async throws {
        let origin = try await Self.origin(answering: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na")
        let transport = OriginTransport()
        let first = try await transport.send(Self.request(origin, "/a"), body: nil, timeout: .seconds(30))
        #expect(first.response.status == .ok)
        try await origin.send(Array(Self.poison.utf8))
        await origin.waitForClosedConnections(1)
        let second = try await transport.send(Self.request(origin, "/b"), body: nil, timeout: .seconds(30))
        #expect(second.response.status == .notFound)
        #expect(origin.connectionCount == 2)
        await transport.shutdown()
        await origin.stop()
    }

    /// An answer that ends where the origin's bytes do keeps its connection (the desync checks do
    /// not cost a connection per request).
    @Test func aCleanAnswerKeepsItsConnection() async throws {
        let origin = try await Self.origin(
            answering: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"
        )
        let transport = OriginTransport()
        for path in ["/a", "/b", "/a", "/b"] {
            let answer = try await transport.send(Self.request(origin, path), body: nil, timeout: .seconds(30))
            #expect(answer.response.status == (path == "/a" ? .ok : .notFound))
        }
        #expect(origin.connectionCount == 1)
        await transport.shutdown()
        await origin.stop()
    }

    /// Through the proxy, as the issue reproduced it: `/a`'s junk never becomes `/b`'s stored
    /// answer, with either upstream client (AsyncHTTPClient as cache-proxy configures it).
    @Test(arguments: [ProxyFixture.UpstreamClient.origin, .asyncHTTPClient])
    func theProxyNeverStoresAnotherRequestsJunk(client: ProxyFixture.UpstreamClient) async throws {
        let origin = try await Self.origin(
            answering: "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: 1\r\n\r\na" + Self.poison
        )
        let transport: any HTTPTransport
        let originTransport = client == .origin ? OriginTransport() : nil
        let http =
            client == .asyncHTTPClient
            ? HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: HTTPClientTransport.clientConfiguration()
            ) : nil
        if let originTransport {
            transport = originTransport
        } else {
            transport = HTTPClientTransport(client: http!)
        }
        let running = try await RunningProxy.start(
            .init(
                upstream: Upstream(origin.baseURL),
                listen: .loopback(port: 0),
                cache: .init(mode: .shared),
                cacheStatusHeader: HTTPField.Name("X-Cache")
            ),
            transport: transport
        )
        var seen: [String] = []
        for path in ["/a", "/b", "/b"] {
            let request = HTTPClientRequest(url: "http://127.0.0.1:\(running.port)\(path)")
            let response = try await ProxyFixture.user.execute(request, timeout: .seconds(30))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
            #expect(response.headers.first(name: "X-Junk") == nil)
            seen.append("\(response.status.code) \(response.headers.first(name: "X-Cache") ?? "") \(body)")
        }
        #expect(seen == ["200 MISS a", "404 MISS not found", "404 MISS not found"])
        #expect(origin.requests == ["GET /a", "GET /b", "GET /b"])
        try await running.stop()
        await originTransport?.shutdown()
        try await http?.shutdown()
        await origin.stop()
    }
}
#endif
