// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
import CacheTestSupport
import CacheTiers
import CachingClient
import Foundation
import HTTPCaching
import HTTPTypes
import Hummingbird
import HummingbirdLayeredCache
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// What one visitor's revalidation carries never reaches the next visitor or the disk: a 304 is
/// judged by the same rules and the same delegate as a new answer before what it freshened is
/// stored for everyone.
@Suite struct ResponseCacheMiddlewarePrivacyTests {
    static let cacheStatus = HTTPField.Name("Cache-Status")!
    static let secret = HTTPField.Name("X-Secret")!

    /// A delegate that strips `X-Secret` from what is stored.
    struct StripSecret: CachingHTTPClientDelegate {
        func willCache(_ response: CachedResponse, for context: FetchContext) async -> CachedResponse? {
            var response = response
            response.response.headerFields[values: ResponseCacheMiddlewarePrivacyTests.secret] = []
            return response
        }
    }

    /// A route on a disk-backed middleware whose first answer is a 200 with an ETag, and whose
    /// revalidations are answered, in turn, with `notModified`'s 304s.
    static func withApp(
        delegate: (any CachingHTTPClientDelegate)? = nil,
        notModified: [HTTPFields],
        _ body: @Sendable (any TestClientProtocol, ManualDate) async throws -> Void,
        files check: ([UInt8]) -> Void
    ) async throws {
        let directory = TemporaryDirectory("middleware-privacy")
        defer { directory.remove() }
        let clock = ManualDate()
        let configuration = ResponseCacheMiddleware<BasicRequestContext>.Configuration(
            cache: .init(disk: DiskTier.Configuration(directory: directory.path), mode: .shared, now: clock.now),
            delegate: delegate,
            cacheStatusName: "LayeredCache"
        )
        let middleware = try ResponseCacheMiddleware<BasicRequestContext>(configuration: configuration)
        let router = Router()
        router.add(middleware: middleware)
        let answers = Mutex(notModified)
        router.get("/items") { request, _ in
            guard request.headers[.ifNoneMatch] == "\"v1\"" else {
                let fields: HTTPFields = [.cacheControl: "public, max-age=10", .eTag: "\"v1\""]
                return Response(status: .ok, headers: fields, body: .init(byteBuffer: ByteBuffer(string: "items")))
            }
            let fields = answers.withLock { $0.isEmpty ? [:] : $0.removeFirst() }
            var headers: HTTPFields = [.cacheControl: "public, max-age=10", .eTag: "\"v1\""]
            headers.append(contentsOf: fields)
            return Response(status: .notModified, headers: headers)
        }
        try await Application(router: router).test(.router) { client in try await body(client, clock) }
        try await middleware.cache.close()
        var written: [UInt8] = []
        for path in Self.files(under: directory.path) {
            written += (try? Data(contentsOf: URL(fileURLWithPath: path))).map(Array.init) ?? []
        }
        #expect(!written.isEmpty)
        check(written)
    }

    static func files(under root: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root)
        var paths: [String] = []
        while let name = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = root + "/" + name
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                paths.append(path)
            }
        }
        return paths
    }

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let needle = Array(needle.utf8)
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    /// The reproduction: a 304 that sets a visitor's session cookie. That visitor gets
    /// it; the next visitor does not, and no file holds it.
    @Test func aRevalidationsSetCookieStaysWithItsVisitor() async throws {
        let cookie = "session=3f9c1d7be2a84c05a6d1e9f0b7c3a2d4"
        try await Self.withApp(notModified: [[.setCookie: cookie], [:]]) { client, clock in
            _ = try await client.execute(uri: "/items", method: .get)
            clock.advance(by: 20)
            try await client.execute(uri: "/items", method: .get) { response in
                #expect(response.status == .ok && String(buffer: response.body) == "items")
                #expect(response.headers[.setCookie] == cookie)
            }
            for _ in 0..<2 {
                try await client.execute(uri: "/items", method: .get) { response in
                    #expect(response.status == .ok && String(buffer: response.body) == "items")
                    #expect(response.headers[.setCookie] == nil)
                }
            }
        } files: { written in
            #expect(!Self.contains(written, "3f9c1d7be2a84c05a6d1e9f0b7c3a2d4"))
        }
    }

    /// The delegate is asked for what a 304 freshened before it is stored again: a field it
    /// strips is neither served to the next visitor nor written.
    @Test func theDelegateJudgesWhatA304Freshened() async throws {
        try await Self.withApp(delegate: StripSecret(), notModified: [[Self.secret: "e41b0c9a77d2f3186b5a"]]) {
            client,
            clock in
            _ = try await client.execute(uri: "/items", method: .get)
            clock.advance(by: 20)
            try await client.execute(uri: "/items", method: .get) { response in
                #expect(response.headers[Self.cacheStatus] == "LayeredCache; fwd=stale; fwd-status=304")
            }
            clock.advance(by: 1)
            try await client.execute(uri: "/items", method: .get) { response in
                #expect(response.headers[Self.cacheStatus] == "LayeredCache; hit; ttl=9")
                #expect(response.headers[Self.secret] == nil)
            }
        } files: { written in
            #expect(!Self.contains(written, "e41b0c9a77d2f3186b5a"))
        }
    }
}
#endif
