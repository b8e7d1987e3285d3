// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import CachingClient
import HTTPCaching
import Hummingbird
import HummingbirdLayeredCache

/// Where the example keeps its caches; nil keeps everything in memory (the tests).
public struct AppOptions: Sendable {
    public var hostname = "127.0.0.1"
    public var port = 8080
    public var cacheDirectory: String?

    public init(hostname: String = "127.0.0.1", port: Int = 8080, cacheDirectory: String? = nil) {
        self.hostname = hostname
        self.port = port
        self.cacheDirectory = cacheDirectory
    }
}

/// Keeps `/account` answers in memory only: they never reach the disk.
struct AccountDelegate: CachingHTTPClientDelegate {
    func willCache(_ response: CachedResponse, for context: FetchContext) async -> CachedResponse? {
        var response = response
        response.storagePolicy = .allowedInMemoryOnly
        return response
    }
}

/// The example app: `/catalog` is cached for everyone for 30 s, `/account` in memory only, and
/// `/visits/{name}` counts visits in the persist driver.
public func buildApplication(_ options: AppOptions) throws -> some ApplicationProtocol {
    var responses = ResponseCache.Configuration(mode: .shared)
    var state: DiskTier?
    if let directory = options.cacheDirectory {
        responses.disk = DiskTier.Configuration(directory: directory + "/http")
        state = try DiskTier(configuration: .init(directory: directory + "/state"))
    }
    let cache = try ResponseCache(configuration: responses)
    let tiers = TieredCache(memory: MemoryTier(configuration: .init(capacityBytes: 8 << 20)), disk: state)
    let persist = TieredPersistDriver(cache: tiers)

    let router = Router()
    let status = ResponseCacheMiddleware<BasicRequestContext>.Configuration(cacheStatusName: "example")
    router.group("catalog")
        .add(middleware: ResponseCacheMiddleware(cache: cache, configuration: status))
        .get { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json", .cacheControl: "public, max-age=30", .eTag: "\"c1\""],
                body: .init(byteBuffer: ByteBuffer(string: #"{"items":["tea","coffee"]}"#))
            )
        }
    var accountStatus = status
    accountStatus.delegate = AccountDelegate()
    router.group("account")
        .add(middleware: ResponseCacheMiddleware(cache: cache, configuration: accountStatus))
        .get { _, _ in
            Response(
                status: .ok,
                headers: [.cacheControl: "max-age=10"],
                body: .init(byteBuffer: ByteBuffer(string: "you"))
            )
        }
    router.get("visits/{name}") { _, context in
        let name = try context.parameters.require("name")
        let count = (try await persist.get(key: "visits:\(name)", as: Int.self) ?? 0) + 1
        try await persist.set(key: "visits:\(name)", value: count, expires: .seconds(3600))
        return "\(name): \(count)\n"
    }
    var app = Application(
        router: router,
        configuration: .init(address: .hostname(options.hostname, port: options.port))
    )
    app.addServices(cache, tiers)
    return app
}
