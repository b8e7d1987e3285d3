// SPDX-License-Identifier: Apache-2.0

#if Proxy
import AsyncHTTPClient
import AsyncHTTPClientTransport
import CacheTiers
import CachingClient
import Foundation
import HTTPCaching
import HTTPTypes
import Logging
import MetricsTestKit
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization
import Testing
import TestOriginSupport

@testable import CacheProxyCore

/// A real loopback origin, a real proxy listening on a free port in front of it, and a date the
/// test moves; requests go through a real HTTP client, as a user's would.
struct ProxyFixture {
    let origin: TestOrigin
    let running: RunningProxy
    let metrics: TestMetrics
    private let date: ManualDate
    /// The proxy's transport when it is its own HTTP/1.1 client (as cache-proxy's is).
    private let originTransport: OriginTransport?

    /// The client the proxy sends upstream through.
    enum UpstreamClient {
        /// ``OriginTransport``: cache-proxy's own for an http upstream.
        case origin
        /// AsyncHTTPClient through `HTTPClientTransport`.
        case asyncHTTPClient
    }

    var proxy: CacheProxy { running.proxy }
    var port: Int { running.port }

    /// The answer a user got.
    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: String

        /// The `X-Cache` value.
        var cache: String? { headers.first(name: "X-Cache") }
        /// The `Age` value as a number.
        var age: Int? { headers.first(name: "Age").flatMap { Int($0) } }
    }

    static func start(
        mode: ResponseCache.Mode = .shared,
        directory: String? = nil,
        statusHeader: Bool = true,
        requestTimeout: Duration = .seconds(30),
        origin: TestOrigin? = nil,
        targetedCacheControl: [HTTPField.Name]? = nil,
        upstreamClient: UpstreamClient = .origin,
        purgeToken: String? = nil,
        originTransport originConfiguration: OriginTransport.Configuration = .init(),
        configure: (inout CacheProxy.Configuration) throws -> Void = { _ in }
    ) async throws -> ProxyFixture {
        let origin = try await Self.origin(origin)
        let date = ManualDate()
        let metrics = TestMetrics()
        var cache = ResponseCache.Configuration(
            disk: directory.map { DiskTier.Configuration(directory: $0) },
            mode: mode,
            now: { date.now }
        )
        if let targetedCacheControl { cache.targetedCacheControl = targetedCacheControl }
        let originTransport = upstreamClient == .origin ? OriginTransport(configuration: originConfiguration) : nil
        var configuration = CacheProxy.Configuration(
            upstream: try Upstream(origin.baseURL),
            listen: .loopback(port: 0),
            cache: cache,
            cacheStatusHeader: statusHeader ? HTTPField.Name("X-Cache") : nil,
            requestTimeout: requestTimeout,
            metricsFactory: metrics,
            purgeToken: purgeToken
        )
        try configure(&configuration)
        let running = try await RunningProxy.start(
            configuration,
            transport: originTransport ?? HTTPClientTransport(client: Self.upstream)
        )
        return ProxyFixture(
            origin: origin,
            running: running,
            metrics: metrics,
            date: date,
            originTransport: originTransport
        )
    }

    private static func origin(_ given: TestOrigin?) async throws -> TestOrigin {
        if let given { return given }
        return try await TestOrigin.start(keepAlive: false)
    }

    /// Moves the cache's date forward.
    func advance(_ seconds: Int) {
        date.advance(seconds)
    }

    /// Sends a request to the proxy (`toAdmin`: to its admin listener) and collects the answer.
    func send(
        _ path: String,
        method: HTTPMethod = .GET,
        headers: [(String, String)] = [],
        body: String? = nil,
        toAdmin: Bool = false
    ) async throws -> Answer {
        let port = toAdmin ? try #require(running.adminPort) : port
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await Self.user.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Answer(
            status: Int(response.status.code),
            headers: response.headers,
            body: String(buffer: bytes)
        )
    }

    /// Stops the proxy gracefully, then the origin.
    func stop() async throws {
        try await stopProxy()
        await origin.stop()
    }

    /// Stops the proxy gracefully and leaves the origin running.
    func stopProxy() async throws {
        try await running.stop()
        await originTransport?.shutdown()
    }

    /// The value of the proxy's counter `label`.
    func counter(_ label: String) -> Int64 {
        (try? metrics.expectCounter(label).totalValue) ?? 0
    }

    /// The proxy's HTTP client to the origin, shared by the fixtures (the proxy does not own its
    /// transport): redirects not followed, a refused connection not retried, bodies as sent.
    static let upstream: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// The user's HTTP client: up to 256 connections to the proxy, redirects not followed.
    static let user: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 256
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()
}

/// A wall date that moves only when a test moves it.
final class ManualDate: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_790_000_000))

    var now: Date { current.withLock { $0 } }

    func advance(_ seconds: Int) {
        current.withLock { $0 += TimeInterval(seconds) }
    }
}
#endif
