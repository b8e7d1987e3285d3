// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
import CacheTestSupport
import HTTPCaching
import HTTPTypes
import Hummingbird
import HummingbirdLayeredCache
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// The middleware runs the request engine the client and the proxy run: the rules that the
/// middleware once had its own copy of, or lacked, hold here as they do at the other doors.
@Suite struct ResponseCacheMiddlewareEngineTests {
    typealias App = ResponseCacheMiddlewareTests.App
    static let cacheStatus = ResponseCacheMiddlewareTests.cacheStatus

    /// RFC 9111 §4.3.3: a 304 that selects nothing stored (another tag than any stored one) is not
    /// the answer to a request that had no conditions of its own; the request goes again without
    /// the cache's conditions. (The middleware used to hand the 304 to the client.)
    @Test func a304ThatSelectsNothingStoredSendsTheRequestAgainWithoutConditions() async throws {
        let app = try App()
        let seen = Mutex<[String?]>([])
        app.router.get("/doc") { request, _ in
            let condition = request.headers[.ifNoneMatch]
            seen.withLock { $0.append(condition) }
            if condition != nil {
                return Response(status: .notModified, headers: [.eTag: "\"v2\""])
            }
            let version = seen.withLock { $0.count } == 1 ? "v1" : "v2"
            return Response(
                status: .ok,
                headers: [.cacheControl: "max-age=10", .eTag: "\"\(version)\""],
                body: .init(byteBuffer: ByteBuffer(string: version))
            )
        }
        let clock = app.clock
        try await app.test { client in
            _ = try await client.execute(uri: "/doc", method: .get)
            clock.advance(by: 20)
            try await client.execute(uri: "/doc", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "v2")
            }
        }
        #expect(seen.withLock { $0 } == [nil, "\"v1\"", nil])
    }

    /// RFC 5861 §4: when the handler fails (5xx) while revalidating, a stored answer within its
    /// `stale-if-error` answers, saying so in `Cache-Status`; without it the failure passes.
    @Test(arguments: [true, false])
    func aFailingHandlerIsAnsweredStaleWhereStaleIfErrorAllows(staleIfError: Bool) async throws {
        let app = try App()
        let failing = Atomic<Bool>(false)
        let cacheControl = staleIfError ? "max-age=10, stale-if-error=60" : "max-age=10"
        app.router.get("/doc") { _, _ in
            if failing.load(ordering: .relaxed) { return Response(status: .serviceUnavailable) }
            return Response(
                status: .ok,
                headers: [.cacheControl: cacheControl, .eTag: "\"v1\""],
                body: .init(byteBuffer: ByteBuffer(string: "doc"))
            )
        }
        let clock = app.clock
        try await app.test { client in
            _ = try await client.execute(uri: "/doc", method: .get)
            clock.advance(by: 20)
            failing.store(true, ordering: .relaxed)
            try await client.execute(uri: "/doc", method: .get) { response in
                if staleIfError {
                    #expect(response.status == .ok)
                    #expect(String(buffer: response.body) == "doc")
                    #expect(response.headers[Self.cacheStatus] == "LayeredCache; fwd=stale; fwd-status=503")
                } else {
                    #expect(response.status == .serviceUnavailable)
                }
            }
        }
    }

    /// A server error is stored (shared mode) only when the handler made it explicitly fresh, as
    /// the proxy does (issue 34 item 3): without freshness every request reaches the handler.
    @Test(arguments: [true, false])
    func aServerErrorIsStoredOnlyWithExplicitFreshness(explicit: Bool) async throws {
        let app = try App()
        let calls = app.calls
        app.router.get("/broken") { _, _ in
            calls.increment()
            let headers: HTTPFields = explicit ? [.cacheControl: "max-age=60"] : [:]
            return Response(status: .internalServerError, headers: headers)
        }
        try await app.test { client in
            for _ in 0..<2 {
                try await client.execute(uri: "/broken", method: .get) { #expect($0.status == .internalServerError) }
            }
        }
        #expect(calls.count == (explicit ? 1 : 2))
    }

    /// Issue 34 item 7: a `POST`'s explicitly fresh answer whose `Content-Location` is its own URI
    /// answers the next `GET` (RFC 9110 §9.3.3), after invalidating what was stored.
    @Test func aPOSTsAnswerForItsOwnURIAnswersTheNextGET() async throws {
        let app = try App()
        let calls = app.calls
        app.router.get("/p") { _, _ in
            calls.increment()
            return Response(
                status: .ok,
                headers: [.cacheControl: "max-age=60"],
                body: .init(byteBuffer: ByteBuffer(string: "old"))
            )
        }
        app.router.post("/p") { _, _ in
            Response(
                status: .ok,
                headers: [.cacheControl: "max-age=60", .contentLocation: "/p"],
                body: .init(byteBuffer: ByteBuffer(string: "made"))
            )
        }
        try await app.test { client in
            _ = try await client.execute(uri: "/p", method: .get)
            try await client.execute(uri: "/p", method: .post, body: ByteBuffer(string: "{}")) { response in
                #expect(String(buffer: response.body) == "made")
                #expect(response.headers[Self.cacheStatus]?.contains("fwd=method") == true)
            }
            try await client.execute(uri: "/p", method: .get) { response in
                #expect(String(buffer: response.body) == "made")
                #expect(response.headers[Self.cacheStatus]?.contains("hit") == true)
            }
        }
        #expect(calls.count == 1)
    }

    /// Issue 34 item 2: a route's 206 is stored as partial content; the range it holds is
    /// answered from it, a request for the whole is not (as at the client and the proxy).
    @Test func aRoutesPartialContentAnswersOnlyTheRangesItHolds() async throws {
        let app = try App()
        let calls = app.calls
        app.router.get("/film") { request, _ in
            calls.increment()
            let body = "abcdefghijklmnopqrstuvwxyz"
            var headers: HTTPFields = [.cacheControl: "max-age=60", .eTag: "\"f1\""]
            guard request.headers[.range] == "bytes=0-9" else {
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
            }
            headers[.contentRange] = "bytes 0-9/26"
            return Response(
                status: .partialContent,
                headers: headers,
                body: .init(byteBuffer: ByteBuffer(string: String(body.prefix(10))))
            )
        }
        try await app.test { client in
            _ = try await client.execute(uri: "/film", method: .get, headers: [.range: "bytes=0-9"])
            try await client.execute(uri: "/film", method: .get, headers: [.range: "bytes=2-4"]) { response in
                #expect(response.status == .partialContent && String(buffer: response.body) == "cde")
                #expect(response.headers[.contentRange] == "bytes 2-4/26")
                #expect(response.headers[Self.cacheStatus]?.contains("hit") == true)
            }
            try await client.execute(uri: "/film", method: .get) { response in
                #expect(response.status == .ok && String(buffer: response.body).count == 26)
            }
        }
        #expect(calls.count == 2)
    }

    /// A delegate that is not a client's: the middleware asks it with the request, for what it
    /// stores, and a veto holds.
    @Test func aResponseCacheDelegateJudgesWhatIsStored() async throws {
        struct VetoPrivate: ResponseCacheDelegate {
            func willCache(_ response: CachedResponse, for request: HTTPRequest) async -> CachedResponse? {
                request.path?.hasPrefix("/private") == true ? nil : response
            }
        }
        let app = try App(delegate: VetoPrivate())
        app.route("/private/a", [.cacheControl: "public, max-age=60"])
        app.route("/public/a", [.cacheControl: "public, max-age=60"])
        try await app.test { client in
            for path in ["/private/a", "/private/a", "/public/a", "/public/a"] {
                _ = try await client.execute(uri: path, method: .get)
            }
        }
        #expect(app.calls.count == 3)
    }
}
#endif
