// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
import CacheTestSupport
import CachingClient
import HTTPCaching
import HTTPTypes
import Hummingbird
import HummingbirdLayeredCache
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

@Suite struct ResponseCacheMiddlewareTests {
    /// An app whose routes count their calls, behind a middleware on a manual clock.
    struct App {
        let clock = ManualDate()
        let calls = Counter()
        let router = Router()
        let middleware: ResponseCacheMiddleware<BasicRequestContext>

        init(delegate: (any ResponseCacheDelegate)? = nil, maximumBodyBytes: Int = 1 << 20) throws {
            let configuration = ResponseCacheMiddleware<BasicRequestContext>.Configuration(
                cache: .init(mode: .shared, now: clock.now),
                delegate: delegate,
                cacheStatusName: "LayeredCache",
                maximumBodyBytes: maximumBodyBytes
            )
            middleware = try ResponseCacheMiddleware(configuration: configuration)
            router.add(middleware: middleware)
        }

        /// A route answering `body` with `fields`, counting its calls.
        func route(_ path: RouterPath, _ fields: HTTPFields, body: String = "hello") {
            let calls = calls
            router.get(path) { _, _ in
                calls.increment()
                return Response(status: .ok, headers: fields, body: .init(byteBuffer: ByteBuffer(string: body)))
            }
        }

        func test(_ body: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
            try await Application(router: router).test(.router, body)
        }
    }

    final class Counter: Sendable {
        private let value = Mutex(0)
        func increment() { value.withLock { $0 += 1 } }
        var count: Int { value.withLock { $0 } }
    }

    static let cacheStatus = HTTPField.Name("Cache-Status")!

    @Test func storesThenAnswersWithAgeWithoutTheHandler() async throws {
        let app = try App()
        app.route("/items", [.cacheControl: "max-age=60", .eTag: "\"v1\""])
        let clock = app.clock
        try await app.test { client in
            try await client.execute(uri: "/items", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "hello")
                #expect(response.headers[Self.cacheStatus] == "LayeredCache; fwd=uri-miss")
                #expect(response.headers[.age] == nil)
            }
            clock.advance(by: 10)
            try await client.execute(uri: "/items", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "hello")
                #expect(response.headers[.age] == "10")
                #expect(response.headers[Self.cacheStatus] == "LayeredCache; hit; ttl=50")
                #expect(response.headers[.contentLength] == "5")
            }
        }
        #expect(app.calls.count == 1)
    }

    @Test func answersConditionalRequestsWith304FromTheCache() async throws {
        let app = try App()
        app.route("/items", [.cacheControl: "max-age=60", .eTag: "W/\"v1\""])
        try await app.test { client in
            _ = try await client.execute(uri: "/items", method: .get)
            try await client.execute(uri: "/items", method: .get, headers: [.ifNoneMatch: "\"v0\", \"v1\""]) {
                #expect($0.status == .notModified)
                #expect($0.body.readableBytes == 0)
                #expect($0.headers[.eTag] == "W/\"v1\"")
            }
            try await client.execute(uri: "/items", method: .get, headers: [.ifNoneMatch: "\"v2\""]) {
                #expect($0.status == .ok)
            }
        }
        #expect(app.calls.count == 1)
    }

    @Test func revalidatesAStaleAnswerWithTheHandler() async throws {
        let app = try App()
        let seen = Mutex<[String?]>([])
        let calls = app.calls
        app.router.get("/doc") { request, _ in
            calls.increment()
            seen.withLock { $0.append(request.headers[.ifNoneMatch]) }
            if request.headers[.ifNoneMatch] == "\"v1\"" {
                return Response(status: .notModified, headers: [.cacheControl: "max-age=30", .eTag: "\"v1\""])
            }
            let fields: HTTPFields = [.cacheControl: "max-age=10", .eTag: "\"v1\""]
            return Response(status: .ok, headers: fields, body: .init(byteBuffer: ByteBuffer(string: "doc")))
        }
        let clock = app.clock
        try await app.test { client in
            _ = try await client.execute(uri: "/doc", method: .get)
            clock.advance(by: 20)
            try await client.execute(uri: "/doc", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "doc")
                #expect(response.headers[Self.cacheStatus] == "LayeredCache; fwd=stale; fwd-status=304")
                #expect(response.headers[.cacheControl] == "max-age=30")
            }
            clock.advance(by: 5)
            try await client.execute(uri: "/doc", method: .get) { response in
                #expect(response.headers[Self.cacheStatus] == "LayeredCache; hit; ttl=25")
            }
        }
        #expect(seen.withLock { $0 } == [nil, "\"v1\""])
    }

    @Test func honoursTheRequestDirectives() async throws {
        let app = try App()
        app.route("/items", [.cacheControl: "max-age=60"])
        let (clock, calls) = (app.clock, app.calls)
        try await app.test { client in
            try await client.execute(uri: "/items", method: .get, headers: [.cacheControl: "only-if-cached"]) {
                #expect($0.status == .gatewayTimeout)
            }
            try await client.execute(uri: "/items", method: .get, headers: [.cacheControl: "no-store"]) {
                #expect($0.status == .ok)
            }
            #expect(calls.count == 1)
            _ = try await client.execute(uri: "/items", method: .get)
            #expect(calls.count == 2)
            _ = try await client.execute(uri: "/items", method: .get, headers: [.cacheControl: "no-cache"])
            #expect(calls.count == 3)
            clock.advance(by: 30)
            _ = try await client.execute(uri: "/items", method: .get, headers: [.cacheControl: "max-age=10"])
            #expect(calls.count == 4)
            _ = try await client.execute(uri: "/items", method: .get, headers: [.cacheControl: "only-if-cached"])
            #expect(calls.count == 4)
        }
    }

    @Test(arguments: [
        (HTTPFields([HTTPField(name: .authorization, value: "Bearer a")]), "max-age=60", false),
        (HTTPFields([HTTPField(name: .cookie, value: "session=a")]), "max-age=60", false),
        (HTTPFields([HTTPField(name: .authorization, value: "Bearer a")]), "public, max-age=60", true),
        (HTTPFields([HTTPField(name: .cookie, value: "session=a")]), "s-maxage=60", true),
        (HTTPFields(), "private, max-age=60", false),
        (HTTPFields(), "no-store", false),
    ])
    func storesAnswersToCredentialsOnlyWhenAllowed(
        request: HTTPFields,
        cacheControl: String,
        stored: Bool
    )
        async throws
    {
        let app = try App()
        app.route("/me", [.cacheControl: cacheControl])
        try await app.test { client in
            _ = try await client.execute(uri: "/me", method: .get, headers: request)
            _ = try await client.execute(uri: "/me", method: .get, headers: request)
        }
        #expect(app.calls.count == (stored ? 1 : 2))
    }

    @Test func neverStoresAnAnswerThatSetsACookie() async throws {
        let app = try App()
        app.route("/login", [.cacheControl: "public, max-age=60", .setCookie: "session=abc"])
        try await app.test { client in
            _ = try await client.execute(uri: "/login", method: .get)
            _ = try await client.execute(uri: "/login", method: .get)
        }
        #expect(app.calls.count == 2)
    }

    @Test func keepsOneVariantPerVaryingField() async throws {
        let app = try App()
        let calls = app.calls
        app.router.get("/greeting") { request, _ in
            calls.increment()
            let language = request.headers[.acceptLanguage] ?? "en"
            let fields: HTTPFields = [.cacheControl: "max-age=60", .vary: "Accept-Language"]
            return Response(status: .ok, headers: fields, body: .init(byteBuffer: ByteBuffer(string: language)))
        }
        try await app.test { client in
            for language in ["fr", "de", "fr", "de"] {
                try await client.execute(uri: "/greeting", method: .get, headers: [.acceptLanguage: language]) {
                    #expect(String(buffer: $0.body) == language)
                }
            }
        }
        #expect(app.calls.count == 2)
    }

    @Test func streamsABodyThatIsNotCacheableUntouched() async throws {
        let app = try App()
        let chunks = (0..<50).map { ByteBuffer(string: "chunk \($0);") }
        app.router.get("/stream") { _, _ in
            Response(
                status: .ok,
                headers: [.cacheControl: "no-store"],
                body: .init(asyncSequence: AsyncChunks(chunks: chunks))
            )
        }
        let calls = app.calls
        app.router.get("/feed") { _, _ in
            calls.increment()
            return Response(
                status: .ok,
                headers: [.cacheControl: "max-age=60"],
                body: .init(asyncSequence: AsyncChunks(chunks: chunks))
            )
        }
        let whole = chunks.map { String(buffer: $0) }.joined()
        try await app.test { client in
            try await client.execute(uri: "/stream", method: .get) { #expect(String(buffer: $0.body) == whole) }
            try await client.execute(uri: "/feed", method: .get) { #expect(String(buffer: $0.body) == whole) }
            try await client.execute(uri: "/feed", method: .get) {
                #expect(String(buffer: $0.body) == whole)
                #expect($0.headers[.contentLength] == String(whole.utf8.count))
            }
        }
        #expect(app.calls.count == 1)
    }

    @Test func passesALargerBodyThroughWithoutStoringIt() async throws {
        let app = try App(maximumBodyBytes: 4)
        app.route("/big", [.cacheControl: "max-age=60"], body: "more than four bytes")
        try await app.test { client in
            for _ in 0..<2 {
                try await client.execute(uri: "/big", method: .get) {
                    #expect(String(buffer: $0.body) == "more than four bytes")
                }
            }
        }
        #expect(app.calls.count == 2)
    }

    @Test func runsTheDelegateWithAFetchContext() async throws {
        let delegate = RecordingDelegate()
        let app = try App(delegate: delegate)
        app.route("/public", [.cacheControl: "max-age=60"])
        app.route("/secret", [.cacheControl: "max-age=60"])
        try await app.test { client in
            for path in ["/public", "/secret", "/public", "/secret"] {
                _ = try await client.execute(uri: path, method: .get)
            }
        }
        #expect(app.calls.count == 3)
        #expect(delegate.paths == ["/public", "/secret", "/secret"])
        let stored = await app.middleware.cache.cachedResponse(
            for: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/public")
        )
        #expect(stored?.userInfo["route"] == .string("/public"))
    }

    @Test func perRouteGroupsShareOneCacheWithTheirOwnDelegates() async throws {
        let clock = ManualDate()
        let cache = try ResponseCache(configuration: .init(mode: .shared, now: clock.now))
        let router = Router()
        let calls = Counter()
        router.group("open").add(middleware: ResponseCacheMiddleware(cache: cache))
            .get("items") { _, _ in
                calls.increment()
                return Response(status: .ok, headers: [.cacheControl: "max-age=60"])
            }
        router.group("closed").add(
            middleware: ResponseCacheMiddleware(
                cache: cache,
                configuration: .init(delegate: WillCache.never { _, _ in true })
            )
        ).get("items") { _, _ in
            calls.increment()
            return Response(status: .ok, headers: [.cacheControl: "max-age=60"])
        }
        try await Application(router: router).test(.router) { client in
            for path in ["/open/items", "/closed/items", "/open/items", "/closed/items"] {
                _ = try await client.execute(uri: path, method: .get)
            }
        }
        #expect(calls.count == 3)
    }

    @Test func unsafeMethodsPassThroughAndInvalidate() async throws {
        let app = try App()
        app.route("/items", [.cacheControl: "max-age=60"])
        app.router.post("/items") { _, _ in Response(status: .created) }
        try await app.test { client in
            _ = try await client.execute(uri: "/items", method: .get)
            _ = try await client.execute(uri: "/items", method: .get)
            try await client.execute(uri: "/items", method: .post) { #expect($0.status == .created) }
            _ = try await client.execute(uri: "/items", method: .get)
        }
        #expect(app.calls.count == 2)
    }

    @Test func answersHeadFromAStoredGet() async throws {
        let app = try App()
        app.route("/items", [.cacheControl: "max-age=60"])
        try await app.test { client in
            _ = try await client.execute(uri: "/items", method: .get)
            try await client.execute(uri: "/items", method: .head) { response in
                #expect(response.status == .ok)
                #expect(response.body.readableBytes == 0)
                #expect(response.headers[.contentLength] == "5")
            }
        }
        #expect(app.calls.count == 1)
    }

    @Test func servesHitsOverALiveServer() async throws {
        let app = try App()
        app.route("/items", [.cacheControl: "max-age=60"], body: "live")
        try await Application(router: app.router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            .test(.live) { client in
                for expected in ["LayeredCache; fwd=uri-miss", "LayeredCache; hit; ttl=60"] {
                    try await client.execute(uri: "/items", method: .get) { response in
                        #expect(String(buffer: response.body) == "live")
                        #expect(response.headers[Self.cacheStatus] == expected)
                    }
                }
            }
        #expect(app.calls.count == 1)
    }
}

/// Vetoes `/secret`, tags the rest with its route in userInfo, and records the paths it saw.
final class RecordingDelegate: CachingHTTPClientDelegate {
    private let seen = Mutex<[String]>([])
    var paths: [String] { seen.withLock { $0 } }

    func willCache(_ response: CachedResponse, for context: FetchContext) async -> CachedResponse? {
        let path = context.request.path ?? ""
        seen.withLock { $0.append(path) }
        guard path != "/secret" else { return nil }
        var response = response
        response.userInfo["route"] = .string(path)
        return response
    }
}

/// Chunks as an async sequence: a streaming body.
struct AsyncChunks: AsyncSequence, Sendable {
    let chunks: [ByteBuffer]
    struct AsyncIterator: AsyncIteratorProtocol {
        var index = 0
        let chunks: [ByteBuffer]
        mutating func next() async -> ByteBuffer? {
            guard index < chunks.count else { return nil }
            defer { index += 1 }
            return chunks[index]
        }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: chunks) }
}
#endif
