// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import AsyncHTTPClient
import AsyncHTTPClientTransport
import CacheTestSupport
import CacheTiers
import CachingClient
import HTTPCaching
import HTTPTypes
import TestOriginSupport

/// A client over a real loopback origin, a memory cache and a test clock.
struct Fixture {
    let origin: TestOrigin
    let clock: TestClock
    let cache: ResponseCache
    let client: CachingHTTPClient

    static func make(
        backoff: Backoff = .disabled,
        directory: String? = nil,
        keepAlive: Bool = false,
        mode: ResponseCache.Mode = .private,
        configure: (inout CachingHTTPClient.Configuration) -> Void = { _ in }
    ) async throws -> Fixture {
        let origin = try await TestOrigin.start(keepAlive: keepAlive)
        let clock = TestClock()
        let cache = try ResponseCache(
            configuration: .init(
                disk: directory.map { DiskTier.Configuration(directory: $0) },
                mode: mode,
                now: { clock.date }
            )
        )
        // The shared transport's deadline runs on the real clock, with the client's request
        // timeout: 30 s (the default) was missed in full runs, whose first 20-30 s hold both
        // cores (a failed first fetch, then a crash on its missing date). No test here waits on
        // that deadline; the ones that test timeouts set their own.
        var configuration = CachingHTTPClient.Configuration(
            requestTimeout: .seconds(600),
            backoff: backoff,
            clock: clock,
            random: { $0.upperBound }
        )
        configure(&configuration)
        let client = CachingHTTPClient(transport: Self.transport, cache: cache, configuration: configuration)
        return Fixture(origin: origin, clock: clock, cache: cache, client: client)
    }

    /// One HTTP client for every test, that reports a refused connection at once rather than
    /// retrying until the deadline.
    static let transport: HTTPClientTransport = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClientTransport(client: HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration))
    }()

    func request(_ path: String, method: HTTPRequest.Method = .get, headers: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: origin.authority, path: path, headerFields: headers)
    }

    /// Advances the clock (and the cache's date) by `seconds`.
    func advance(_ seconds: Int) {
        clock.advance(by: .seconds(seconds))
    }

    func stop() async {
        await origin.stop()
    }
}

extension FetchResult {
    var text: String? { body.map { String(decoding: $0, as: UTF8.self) } }
}
#endif
