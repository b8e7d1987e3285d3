// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import HTTPCaching
import HTTPTypes
import Tracing
import Vapor
import VaporLayeredCache

/// Where the example keeps its caches; nil keeps everything in memory (the tests).
public struct AppOptions: Sendable {
    public var cacheDirectory: String?
    /// The middleware's tracer; nil: the one bootstrapped (swift-otel's, in `AppMain`).
    public var tracer: (any Tracer)?

    public init(cacheDirectory: String? = nil, tracer: (any Tracer)? = nil) {
        self.cacheDirectory = cacheDirectory
        self.tracer = tracer
    }
}

/// Keeps `/account` answers in memory only: they never reach the disk.
struct AccountDelegate: ResponseCacheDelegate {
    func willCache(_ response: CachedResponse, for request: HTTPRequest) async -> CachedResponse? {
        var response = response
        response.storagePolicy = .allowedInMemoryOnly
        return response
    }
}

/// The example app: `/catalog` is cached for everyone for 30 s, `/account` in memory only,
/// `POST /catalog` invalidates it, and `/visits/:name` counts visits in `app.cache`.
public func configure(_ app: Application, _ options: AppOptions = .init()) throws {
    var responses = ResponseCache.Configuration(mode: .shared)
    var state: DiskTier?
    if let directory = options.cacheDirectory {
        responses.disk = DiskTier.Configuration(directory: directory + "/http")
        state = try DiskTier(configuration: .init(directory: directory + "/state"))
    }

    // app.cache and req.cache: on the tiers, closed (snapshot written) at shutdown.
    let tiers = TieredCache(memory: MemoryTier(configuration: .init(capacityBytes: 8 << 20)), disk: state)
    app.caches.use(.layered(tiers))

    // The routes' answers: one ResponseCache, two middlewares (one per route group).
    let cache = try ResponseCache(configuration: responses)
    app.lifecycle.use(CacheLifecycle(cache))
    let status = HTTPCacheMiddleware.Configuration(cacheStatusName: "example", tracer: options.tracer)
    var accountStatus = status
    accountStatus.delegate = AccountDelegate()

    app.grouped(HTTPCacheMiddleware(cache: cache, configuration: status)).group("catalog") { catalog in
        catalog.get { _ in
            Response(
                status: .ok,
                headers: ["Content-Type": "application/json", "Cache-Control": "public, max-age=30", "ETag": "\"c1\""],
                body: .init(string: #"{"items":["tea","coffee"]}"#)
            )
        }
        catalog.post { _ in Response(status: .noContent) }
    }
    app.grouped(HTTPCacheMiddleware(cache: cache, configuration: accountStatus)).get("account") { _ in
        Response(
            status: .ok,
            headers: ["Content-Type": "application/json", "Cache-Control": "public, max-age=30"],
            body: .init(string: #"{"plan":"pro"}"#)
        )
    }
    app.get("visits", ":name") { request async throws -> String in
        let name = try request.parameters.require("name")
        let visits = (try await request.cache.get("visits:\(name)", as: Int.self) ?? 0) + 1
        try await request.cache.set("visits:\(name)", to: visits, expiresIn: .hours(1))
        return "\(name): \(visits)"
    }
}
