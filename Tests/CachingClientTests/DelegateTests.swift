// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes
import TestOriginSupport
import Testing

@testable import CachingClient

/// An actor a delegate awaits, as an app awaits a keychain.
actor Vault {
    var isUnlocked = true
    func lock() { isUnlocked = false }
}

/// Strips `Set-Cookie`, keeps `/me/` in memory, marks `?page=1` incomplete, tags `/tasks`, stamps
/// the request's policy in userInfo and vetoes everything while the vault is locked.
struct AppDelegate: CachingHTTPClientDelegate {
    let vault: Vault

    func willCache(_ response: CachedResponse, for context: FetchContext) async -> CachedResponse? {
        guard await vault.isUnlocked else { return nil }
        var response = response
        response.response.headerFields[.setCookie] = nil
        let path = context.request.path ?? ""
        if path.hasPrefix("/me/") { response.storagePolicy = .allowedInMemoryOnly }
        if path.hasSuffix("page=1") { response.isComplete = false }
        if path.hasPrefix("/tasks") { response.tags.insert("tasks") }
        response.userInfo["policy"] = .string("\(context.policy)")
        response.userInfo["by"] = .string((response.userInfo["by"]?.stringValue ?? "") + "app")
        return response
    }
}

/// Appends its name to userInfo["by"], to show the order delegates run in.
struct Marker: CachingHTTPClientDelegate {
    let name: String
    func willCache(_ response: CachedResponse, for context: FetchContext) async -> CachedResponse? {
        var response = response
        response.userInfo["by"] = .string((response.userInfo["by"]?.stringValue ?? "") + name)
        return response
    }
}

extension UserInfoValue {
    var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }
}

@Suite struct DelegateTests {
    @Test func anAsyncDelegateStripsDowngradesTagsAndVetoes() async throws {
        try await withTemporaryDirectory { directory in
            let vault = Vault()
            let f = try await Fixture.make(directory: directory.path) { $0.delegate = AppDelegate(vault: vault) }
            let fields = [("Cache-Control", "max-age=600"), ("Set-Cookie", "sid=ZQX-COOKIE")]
            f.origin.enqueue(.ok("profile ZQX-PROFILE", headers: fields), for: "/me/profile")
            f.origin.enqueue(.ok("first page", headers: fields), for: "/tasks?page=1")

            let profile = await f.client.fetch(f.request("/me/profile"), policy: .cacheFirst)
            // The caller gets what the origin sent; the cache keeps what the delegate let in.
            #expect(profile.response?.headerFields[.setCookie] == "sid=ZQX-COOKIE")
            #expect(profile.userInfo["policy"] == .string("cacheFirst"))
            let page = await f.client.fetch(f.request("/tasks?page=1"), policy: .cacheFirst)
            #expect(!page.isComplete && page.freshness == .fresh)

            let cachedPage = await f.client.fetch(f.request("/tasks?page=1"), policy: .cacheOnly)
            #expect(
                cachedPage.source == .cache && !cachedPage.isComplete && cachedPage.userInfo["by"] == .string("app")
            )
            #expect(cachedPage.response?.headerFields[.setCookie] == nil)
            #expect(try await f.cache.invalidate(tag: "tasks") == 1)

            // The memory-only profile never reached disk.
            try await f.client.close()
            let disk = directory.files().compactMap { try? FileSurgery.read(directory.appending($0)) }
                .map { String(decoding: $0, as: UTF8.self) }.joined()
            #expect(!disk.contains("ZQX-PROFILE") && !disk.contains("ZQX-COOKIE"))
            try await f.client.reopen(encryption: nil)

            // Locked: the delegate vetoes.
            await vault.lock()
            f.origin.enqueue(.ok("later", headers: fields), for: "/x")
            #expect(await f.client.fetch(f.request("/x")).text == "later")
            #expect(await f.client.fetch(f.request("/x"), policy: .cacheOnly).freshness == .missing)
            await f.stop()
        }
    }

    @Test func theCachesHookThenTheClientsDelegateThenTheRequestsRun() async throws {
        let f = try await Fixture.make { $0.delegate = Marker(name: "client") }
        f.origin.enqueue(.ok("x", headers: [("Cache-Control", "max-age=60")]), for: "/o")
        let result = await f.client.fetch(
            f.request("/o"),
            willCache: .stampStoredDate(key: "at", now: { f.clock.date }),
            delegate: Marker(name: "+request")
        )
        #expect(result.userInfo["by"] == .string("client+request"))
        #expect(result.userInfo["at"] == .date(f.clock.date))
        // A WillCache is a delegate too.
        f.origin.enqueue(.ok("y", headers: [("Cache-Control", "max-age=60")]), for: "/v")
        _ = await f.client.fetch(f.request("/v"), delegate: WillCache.never { _, _ in true })
        #expect(await f.client.fetch(f.request("/v"), policy: .cacheOnly).freshness == .missing)
        await f.stop()
    }
}

/// Mark-stale and validation windows through the client.
@Suite struct FreshnessGateTests {
    @Test func aMarkedStaleAnswerSaysSoAndIsRevalidated() async throws {
        let f = try await Fixture.make()
        let tagging = WillCache.tagging { _, _ in ["tasks"] }
        let headers = [("Cache-Control", "max-age=600"), ("ETag", "\"t\"")]
        f.origin.enqueue(.ok("list", headers: headers), for: "/tasks")
        _ = await f.client.fetch(f.request("/tasks"), willCache: tagging)
        #expect(try await f.cache.markStale(tag: "tasks") == 1)

        f.origin.enqueue(.respond(status: 304, headers: [("ETag", "\"t\"")]), for: "/tasks")
        let stale = await f.client.fetch(f.request("/tasks"), policy: .cacheFirst)
        #expect(stale.source == .cache && stale.freshness == .stale(.markedStale) && stale.text == "list")
        await f.client.flights.idle()
        #expect(f.origin.requests.last?.header("If-None-Match") == "\"t\"")
        let after = await f.client.fetch(f.request("/tasks"), policy: .cacheFirst)
        #expect(after.freshness == .fresh && after.source == .cache)
        // Under the protocol policy a marked answer is revalidated before it is served.
        #expect(try await f.cache.markStale(tag: "tasks") == 1)
        f.origin.enqueue(.respond(status: 304, headers: [("ETag", "\"t\"")]), for: "/tasks")
        let revalidated = await f.client.fetch(f.request("/tasks"))
        #expect(revalidated.source == .revalidated && revalidated.freshness == .fresh)
        await f.stop()
    }

    @Test func pastItsValidationWindowAnAnswerNeedsTheOrigin() async throws {
        let f = try await Fixture.make()
        let headers = [("Cache-Control", "max-age=3600"), ("ETag", "\"b\"")]
        f.origin.enqueue(.ok("balance 10", headers: headers), for: "/balance")
        _ = await f.client.fetch(f.request("/balance"))
        let fetchedAt = f.clock.date

        f.advance(10)
        let within = await f.client.fetch(f.request("/balance"), policy: .cacheFirst, freshness: .critical)
        #expect(within.source == .cache && within.freshness == .stale(.expired))
        await f.client.flights.idle()

        f.advance(40)
        f.origin.enqueue(.respond(status: 304, headers: [("ETag", "\"b\"")]), for: "/balance")
        let confirmed = await f.client.fetch(f.request("/balance"), policy: .cacheFirst, freshness: .critical)
        #expect(confirmed.source == .revalidated && confirmed.freshness == .fresh)
        #expect(confirmed.fetchedAt == fetchedAt && confirmed.validatedAt == f.clock.date)

        f.advance(40)
        await f.origin.stop()
        let offline = await f.client.fetch(f.request("/balance"), policy: .cacheFirst, freshness: .critical)
        #expect(offline.text == "balance 10" && offline.freshness == .stale(.notValidated))
        #expect(offline.error?.code == .notValidated)
        #expect(throws: CachingClientError.self) { try offline.requireBody() }
        let passive = await f.client.fetch(f.request("/balance"), policy: .cacheOnly, freshness: .critical)
        #expect(passive.freshness == .stale(.notValidated) && passive.error?.code == .notValidated)
    }

    /// Issue 38 (API): bad input is a thrown error, never a trap.
    @Test func badFreshnessClassesAreClearErrors() throws {
        #expect(throws: CachingClientError.self) { try FreshnessClass("x", softTTL: .seconds(-1)) }
        #expect(throws: CachingClientError.self) { try FreshnessClass("x", hardTTL: .seconds(-1)) }
        #expect(throws: CachingClientError.self) { try FreshnessClass("x", validationWindow: .seconds(-1)) }
        let error = #expect(throws: CachingClientError.self) {
            try FreshnessClass("x", softTTL: .seconds(10), hardTTL: .seconds(5))
        }
        #expect(error?.code == .invalidArgument)
        let valid = try FreshnessClass("x", softTTL: .seconds(5), validationWindow: .seconds(9))
        #expect(valid.validationWindow == .seconds(9))
    }
}
#endif
