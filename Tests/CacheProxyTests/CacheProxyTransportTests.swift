// SPDX-License-Identifier: Apache-2.0

#if Proxy
import AsyncHTTPClient
import CachingClient
import HTTPCaching
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization
import Testing

@testable import CacheProxyCore

/// The proxy over a transport that is not AsyncHTTPClient: an in-memory origin.
@Suite struct CacheProxyTransportTests {
    /// An origin in memory: answers every request with one response and counts them.
    final class InMemoryOrigin: HTTPTransport {
        let received = Mutex<[HTTPRequest]>([])

        func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse {
            received.withLock { $0.append(request) }
            let fields: HTTPFields = [
                .cacheControl: "max-age=60", .contentType: "text/plain", .connection: "close",
            ]
            return HTTPTransportResponse(
                response: HTTPResponse(status: .ok, headerFields: fields),
                body: Array("in memory".utf8)
            )
        }
    }

    @Test func anyTransportServesTheProxy() async throws {
        let origin = InMemoryOrigin()
        let running = try await RunningProxy.start(
            .init(
                upstream: Upstream("http://origin.invalid"),
                listen: .loopback(port: 0),
                cache: .init(mode: .shared),
                cacheStatusHeader: HTTPField.Name("X-Cache")
            ),
            transport: origin
        )
        let port = running.port
        var statuses: [String] = []
        for range in [nil, "bytes=3-"] {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/m")
            if let range { request.headers.add(name: "Range", value: range) }
            let response = try await ProxyFixture.user.execute(request, timeout: .seconds(30))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
            statuses.append("\(response.status.code) \(response.headers.first(name: "X-Cache") ?? "") \(body)")
            // The transport's hop-by-hop fields are dropped: the user's connection stays open.
            #expect(!response.headers["Connection"].contains("close"))
        }
        #expect(statuses == ["200 MISS in memory", "206 HIT memory"])
        let sent = origin.received.withLock { $0 }
        #expect(sent.count == 1 && sent.first?.authority == "origin.invalid" && sent.first?.path == "/m")
        try await running.stop()
    }
}
#endif
