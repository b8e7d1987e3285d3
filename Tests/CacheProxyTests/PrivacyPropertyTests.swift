// SPDX-License-Identifier: Apache-2.0

#if Proxy && Hummingbird
import AsyncHTTPClient
import AsyncHTTPClientTransport
import CacheTestSupport
import CacheTiers
import CachingClient
import Foundation
import HTTPCaching
import HTTPTypes
import Hummingbird
import HummingbirdLayeredCache
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import PostgresNIO
import Synchronization
import Testing
import TestOriginSupport

@testable import CacheProxyCore
@testable import PostgresCacheTier

/// Privacy proven, not promised (issue 38): random sequences of requests through all three doors
/// — the client, the Hummingbird middleware and the proxy — each over a real disk directory and
/// one real PostgreSQL shared tier, with stores, revalidations whose 304 carries `Set-Cookie` and a
/// custom secret field, `Vary` on credentials, strip / memory-only / veto hooks on random
/// requests, concurrent identical requests and close/reopen. After every sequence every byte
/// written to the directories since (and every 25 sequences every row) is scanned for the
/// secrets: no hook-stripped field, no credential, and nothing of a memory-only or vetoed
/// response may be there; at the end, everything once more, whole.
///
/// `PRIVACY_SEED` replays a run (the seed is in every failure); `PRIVACY_SEQUENCES` sets how many
/// sequences run: 100 in `make test`, 3,000 in `make privacy`, which CI runs on its
/// own after `make test` (about a minute, without starving the rest of the suite).
@Suite(.enabled(if: PrivacyDatabase.isEnabled, "no PostgreSQL server (make test starts one)"))
struct PrivacyPropertyTests {
    static let secretField = HTTPField.Name("X-Secret")!

    @Test(.timeLimit(.minutes(10))) func noSecretReachesADiskOrARowThroughAnyDoor() async throws {
        // With the server up throughout: a test of another suite crashes it.
        try await DatabaseServerGate.server.shared { try await runSequences() }
    }

    private func runSequences() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["PRIVACY_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        let sequences = environment["PRIVACY_SEQUENCES"].flatMap { Int($0) } ?? 100
        let url = try #require(PrivacyDatabase.url, "CI=true but LAYEREDCACHE_POSTGRES_URL is not set")
        let world = World(seed: seed)
        let origin = try await RawOrigin.start(answeringHeads: { _, path, head in world.answer(path: path, head: head) }
        )
        let table = "privacy_\(UInt32.random(in: 0...UInt32.max))"
        let directories = (0..<3).map { _ in TemporaryDirectory("privacy") }
        defer { for directory in directories { directory.remove() } }
        let scanner = Scanner(directories: directories.map(\.path))
        func shared() throws -> PostgresSharedTier {
            try PostgresSharedTier(configuration: .init(url: url, table: table, sweepInterval: .seconds(3600)))
        }
        func cacheConfiguration(
            _ index: Int,
            mode: ResponseCache.Mode,
            hook: WillCache
        ) throws -> ResponseCache.Configuration {
            var configuration = ResponseCache.Configuration(
                disk: DiskTier.Configuration(directory: directories[index].path),
                shared: try shared(),
                mode: mode,
                willCache: hook,
                logger: Logger(label: "privacy", factory: { _ in SwiftLogNoOpLogHandler() })
            )
            configuration.sharedOptions.writers = 1
            return configuration
        }

        // The client: a private cache whose own hook strips; the per-request hooks keep in or veto.
        let clientCache = try ResponseCache(configuration: cacheConfiguration(0, mode: .private, hook: World.strip))
        let client = CachingHTTPClient(
            transport: HTTPClientTransport(client: ProxyFixture.upstream),
            cache: clientCache,
            configuration: .init(backoff: .disabled)
        )
        // The middleware: a shared cache; its delegate strips, keeps in or vetoes.
        let middlewareCache = try ResponseCache(configuration: cacheConfiguration(1, mode: .shared, hook: .identity))
        let middleware = ResponseCacheMiddleware<BasicRequestContext>(
            cache: middlewareCache,
            configuration: .init(delegate: World.strip.then(World.byPath))
        )
        let router = Router()
        router.add(middleware: middleware)
        router.get("**") { request, _ in
            let (status, fields, body) = world.plannedAnswer(
                path: request.uri.path,
                ifNoneMatch: request.headers[.ifNoneMatch]
            )
            var headers = HTTPFields()
            for (name, value) in fields { headers.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
            return Response(
                status: .init(code: status),
                headers: headers,
                body: .init(byteBuffer: ByteBuffer(bytes: body))
            )
        }
        // The proxy: a shared cache whose hook strips, keeps in or vetoes.
        let proxyCacheConfiguration = try cacheConfiguration(2, mode: .shared, hook: World.strip.then(World.byPath))
        let originTransport = OriginTransport()
        let proxy = try await RunningProxy.start(
            .init(
                upstream: Upstream(origin.baseURL),
                listen: .loopback(port: 0),
                cache: proxyCacheConfiguration,
                cacheStatusHeader: nil
            ),
            transport: originTransport
        )

        let failures = Findings()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for cache in [clientCache, middlewareCache] {
                group.addTask {
                    do {
                        try await cache.run()
                    } catch is CancellationError {
                    } catch {
                        failures.append("the shared tier stopped: \(String(reflecting: error))")
                    }
                }
            }
            try await Application(router: router).test(.router) { app in
                for index in 0..<sequences {
                    let steps = world.makeSequence(index)
                    for step in steps {
                        switch index % 3 {
                        case 0: try await Self.send(step, to: client, authority: origin.authority, world: world)
                        case 1: _ = try await app.execute(uri: step.path, method: .get, headers: step.fields)
                        default:
                            var request = HTTPClientRequest(url: "http://127.0.0.1:\(proxy.port)\(step.path)")
                            for field in step.fields {
                                request.headers.add(name: field.name.rawName, value: field.value)
                            }
                            let response = try await ProxyFixture.user.execute(request, timeout: .seconds(30))
                            _ = try await response.body.collect(upTo: 1 << 20)
                        }
                    }
                    // The rows every 25 sequences (the table grows; the files are read from where
                    // the last scan ended).
                    let rows = index % 25 == 24 ? clientCache.configuration.shared : nil
                    let found = try await scanner.scan(world.secrets, rows: rows, table: table)
                    if !found.isEmpty {
                        failures.append("sequence \(index) (door \(index % 3)): \(found.prefix(3))")
                        break
                    }
                }
            }
            group.cancelAll()
        }
        try await proxy.stop()
        await originTransport.shutdown()
        for cache in [clientCache, middlewareCache] { try? await cache.close() }
        await origin.stop()
        // Everything, whole, once more: what the write queues and the closes wrote last.
        scanner.rescanEverything()
        let last = try await Self.finalRows(url: url, table: table, secrets: world.secrets, scanner: scanner)
        let found = failures.items + (last.isEmpty ? [] : ["after the run: \(last.prefix(3))"])
        #expect(
            found.isEmpty,
            "secrets written (seed \(seed), \(sequences) sequences; PRIVACY_SEED=\(seed) replays): \(found)"
        )
        // The run proves something only if the doors stored and shared (and so could have leaked).
        #expect(world.answered.load(ordering: .relaxed) > sequences, "the origin answered too little")
        #expect(scanner.rowCounts.withLock { $0.last ?? 0 } > 0, "nothing reached the shared tier")
        #expect(scanner.bytesRead.load(ordering: .relaxed) > 10_000, "nothing reached the disks")
    }

    /// One step through the client: a per-request hook or delegate on random requests, sometimes
    /// two identical requests at once, sometimes a close and a reopen first.
    static func send(_ step: Step, to client: CachingHTTPClient, authority: String, world: World) async throws {
        if step.reopenFirst {
            try await client.close()
            try await client.reopen(encryption: nil)
        }
        let request = HTTPRequest(
            method: .get,
            scheme: "http",
            authority: authority,
            path: step.path,
            headerFields: step.fields
        )
        let hook: WillCache? = step.perRequestHook ? World.byPath : nil
        let delegate: (any CachingHTTPClientDelegate)? = step.perRequestHook ? nil : World.byPath
        if step.concurrent {
            async let first = client.fetch(request, willCache: hook, delegate: delegate)
            async let second = client.fetch(request, willCache: hook, delegate: delegate)
            _ = await (first, second)
        } else {
            _ = await client.fetch(request, willCache: hook, delegate: delegate)
        }
    }

    /// The rows of the table that hold a secret, read after the tiers closed.
    static func finalRows(url: String, table: String, secrets: Secrets, scanner: Scanner) async throws -> [String] {
        let tier = try PostgresSharedTier(configuration: .init(url: url, table: table, sweepInterval: .seconds(3600)))
        return try await withThrowingTaskGroup(of: [String].self) { group in
            group.addTask {
                try await tier.run(onInvalidation: { _ in })
                return []
            }
            let found = try await scanner.scanRows(of: tier, table: table, secrets: secrets)
            group.cancelAll()
            return found
        }
    }
}

/// The throwaway server scripts/with-postgres.sh starts (`make test` does); with CI=true the test
/// runs, and fails, without one.
enum PrivacyDatabase {
    static let url = ProcessInfo.processInfo.environment["LAYEREDCACHE_POSTGRES_URL"]
    static let isEnabled = url != nil || ProcessInfo.processInfo.environment["CI"] == "true"
}

/// What went wrong, from any task.
final class Findings: Sendable {
    private let list = Mutex<[String]>([])
    func append(_ item: String) { list.withLock { $0.append(item) } }
    var items: [String] { list.withLock { $0 } }
}

/// One request of a sequence.
struct Step: Sendable {
    var path: String
    var fields: HTTPFields
    var perRequestHook: Bool
    var concurrent: Bool
    var reopenFirst: Bool
}

/// The secrets made so far: every value a hook strips, every credential, every body of a
/// memory-only or vetoed response. All are 24 random letters and digits.
final class Secrets: Sendable {
    static let length = 24
    private let values = Mutex<Set<[UInt8]>>([])
    func insert(_ secret: String) { values.withLock { _ = $0.insert(Array(secret.utf8)) } }
    func contains(_ bytes: ArraySlice<UInt8>) -> Bool { values.withLock { $0.contains(Array(bytes)) } }
    var count: Int { values.withLock { $0.count } }
}

/// The random world: sequences, and what the origin answers each path with (the plan the
/// sequence made for it; the middleware's route answers by the same plans).
final class World: Sendable {
    struct Plan: Sendable {
        var cacheControl: String
        var vary: String?
        var etag: String
        var setCookie: String?
        var secret: String
        var body: [UInt8]
        var notModifiedCookie: String
        var notModifiedSecret: String
    }

    let secrets = Secrets()
    let answered = Atomic<Int>(0)
    private let state: Mutex<(random: SplitMix64, plans: [String: Plan])>

    init(seed: UInt64) {
        state = Mutex((SplitMix64(seed: seed), [:]))
    }

    /// Strips the fields that carry one visitor's secrets from what is stored.
    static let strip = WillCache.stripHeaders([.setCookie, PrivacyPropertyTests.secretField])
    /// Keeps `/memory/` answers in memory and vetoes `/veto/` ones.
    static let byPath = WillCache { response, request in
        let path = request.path ?? ""
        if path.contains("/veto/") { return nil }
        if path.contains("/memory/") {
            var response = response
            response.storagePolicy = .allowedInMemoryOnly
            return response
        }
        return response
    }

    private func token(_ random: inout SplitMix64) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        let bytes = (0..<Secrets.length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
        let secret = String(decoding: bytes, as: UTF8.self)
        secrets.insert(secret)
        return secret
    }

    /// A sequence of 3 to 8 requests over a few paths of its own, each with a new plan.
    func makeSequence(_ index: Int) -> [Step] {
        state.withLock { state in
            var steps: [Step] = []
            let count = 3 + Int(state.random.next() % 6)
            for _ in 0..<count {
                let kind = ["plain", "plain", "memory", "veto"][Int(state.random.next() % 4)]
                let path = "/s\(index)/\(kind)/\(state.random.next() % 2)"
                var fields = HTTPFields()
                let credentials = state.random.next() % 4
                if credentials == 1 || credentials == 3 {
                    fields[.authorization] = "Bearer \(token(&state.random))"
                }
                if credentials >= 2 { fields[.cookie] = "sid=\(token(&state.random))" }
                let control = [
                    "public, max-age=0", "public, max-age=600", "max-age=600", "private, max-age=600",
                    "public, s-maxage=600",
                ][Int(state.random.next() % 5)]
                let vary = [nil, "Authorization", "Cookie", "Accept-Encoding, Cookie"][Int(state.random.next() % 4)]
                let previous = state.plans[path]
                state.plans[path] = Plan(
                    cacheControl: control,
                    vary: vary,
                    // The validator stays while the path lives, so that a stored answer revalidates.
                    etag: previous?.etag ?? "\"e\(index)-\(state.random.next() % 1000)\"",
                    setCookie: state.random.next() % 2 == 0 ? "session=\(token(&state.random))" : nil,
                    secret: token(&state.random),
                    body: kind == "plain"
                        ? Array("body \(path) \(state.random.next())".utf8) : Array(token(&state.random).utf8),
                    notModifiedCookie: "session=\(token(&state.random))",
                    notModifiedSecret: token(&state.random)
                )
                steps.append(
                    Step(
                        path: path,
                        fields: fields,
                        perRequestHook: state.random.next() % 2 == 0,
                        concurrent: state.random.next() % 8 == 0,
                        reopenFirst: state.random.next() % 16 == 0
                    )
                )
            }
            return steps
        }
    }

    /// The answer the plan for `path` gives: a 304 (with a visitor's cookie and secret) to a
    /// request that carries the plan's validator, else a 200.
    func plannedAnswer(path: String, ifNoneMatch: String?) -> (status: Int, fields: [(String, String)], body: [UInt8]) {
        answered.add(1, ordering: .relaxed)
        guard let plan = state.withLock({ $0.plans[path] }) else { return (404, [("Cache-Control", "no-store")], []) }
        var fields = [("Cache-Control", plan.cacheControl), ("ETag", plan.etag)]
        if let vary = plan.vary { fields.append(("Vary", vary)) }
        if ifNoneMatch == plan.etag {
            fields += [("Set-Cookie", plan.notModifiedCookie), ("X-Secret", plan.notModifiedSecret)]
            return (304, fields, [])
        }
        if let cookie = plan.setCookie { fields.append(("Set-Cookie", cookie)) }
        fields.append(("X-Secret", plan.secret))
        return (200, fields, plan.body)
    }

    /// ``plannedAnswer(path:ifNoneMatch:)`` as HTTP/1.1 bytes, for the origin of the client and
    /// the proxy.
    func answer(path: String, head: String) -> [UInt8] {
        let ifNoneMatch = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("if-none-match:") }
            .map { String($0.dropFirst("if-none-match:".count)).trimmingCharacters(in: .whitespaces) }
        let (status, fields, body) = plannedAnswer(path: path, ifNoneMatch: ifNoneMatch)
        var text = "HTTP/1.1 \(status) \(status == 304 ? "Not Modified" : status == 200 ? "OK" : "Not Found")\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        if status != 304 { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }
}

#endif
