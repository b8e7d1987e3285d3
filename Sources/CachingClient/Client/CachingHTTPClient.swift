// SPDX-License-Identifier: Apache-2.0

public import CacheTiers
public import HTTPCaching
import HTTPTypes
public import Logging
public import ServiceLifecycle
import Synchronization
public import Tracing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif

/// Fetches through a `ResponseCache`: what a Swift server app calls instead of its
/// HTTP client when it wants cached, offline-first answers that say how fresh they are.
///
/// ```swift
/// let client = CachingHTTPClient(transport: HTTPClientTransport(), cache: try ResponseCache())
/// let result = await client.fetch(request, policy: .cacheFirst, freshness: .interactive)
/// if let body = result.body, result.freshness.isFresh { … }
/// ```
///
/// - Every answer is a ``FetchResult``: response and body, source, freshness, times, the network
///   error. `fetch(_:body:policy:freshness:willCache:delegate:)` returns the final one;
///   `results(for:body:policy:freshness:willCache:delegate:)` also yields an answer from the cache first
///   under ``CachePolicy/staleWhileRevalidate``.
/// - Concurrent identical `GET` / `HEAD` requests make one network request (single-flight); a
///   caller that is cancelled stops waiting without cancelling the others.
/// - After a failure a key backs off (``Backoff``): no network call until its wait is over.
/// - Each call looks the cache up once (`lookup(_:)`); what to do is
///   then decided without I/O from that lookup, the policy, the freshness class and the time, and
///   the answer is stored through the same lookup. Flights and backoff are keyed by the lookup's
///   normalized key.
/// - An error response does not replace a stored good answer (``Configuration/errorResponses``).
/// - Background refreshes (soft TTL, `stale-while-revalidate`) run as single-flight work too.
///   ``run()`` cancels all of them when the app shuts down.
///
/// The client never sleeps on the wall clock: timeouts wait on ``Configuration/clock`` and dates
/// come from the cache's `now`, both injectable.
public final class CachingHTTPClient: Sendable, Service {
    /// How the client behaves when a call does not say.
    public struct Configuration: Sendable {
        /// The policy of calls that name none. Default ``CachePolicy/useProtocolCachePolicy``.
        public var policy: CachePolicy
        /// The freshness class of calls that name none. Default ``FreshnessClass/http``.
        public var freshness: FreshnessClass
        /// How long one exchange with the origin may take (given to the transport). Default 30 s.
        public var requestTimeout: Duration
        /// How long ``CachePolicy/networkFirst`` waits before it answers from the cache.
        /// Default 3 s.
        public var networkFirstTimeout: Duration
        /// The backoff after failures. Default 1 s doubling to 60 s, full jitter.
        public var backoff: Backoff
        /// The clock timeouts wait on. Default `ContinuousClock()`.
        public var clock: any Clock<Duration>
        /// The source of jitter: a uniform random number in the range. Default
        /// `Double.random(in:)`.
        public var random: @Sendable (ClosedRange<Double>) -> Double
        /// Where the client logs (at debug: each network exchange; at warning: failed stores).
        /// Defaults to `Logger.current`, the task-local logger the app binds with `withLogger`.
        public var logger: Logger
        /// Whether an error response (4xx) may replace a stored good answer. Default
        /// ``ErrorResponsePolicy/keepLastGoodResponse``.
        public var errorResponses: ErrorResponsePolicy
        /// The delegate every request's response passes through before it is stored (after the
        /// cache's hooks) and that hears every request's ``FetchEvent``s. Default nil.
        public var delegate: (any CachingHTTPClientDelegate)?
        /// Which requests in flight share one exchange with the origin. Default
        /// ``Coalescing/identicalRequests``; a shared cache in front of many clients (the proxy)
        /// wants ``Coalescing/byCacheKey``.
        public var coalescing: Coalescing
        /// The tracer a fetch's spans go to (docs/tracing.md): `layeredcache.fetch`, its lookup,
        /// its exchange with the origin (whose request carries the trace context) and its store.
        /// Default nil: the tracer bootstrapped with `InstrumentationSystem` when the client is
        /// created; with none bootstrapped, no spans and no cost.
        public var tracer: (any Tracer)?

        /// Creates a configuration; every parameter has the default documented on its property.
        public init(
            policy: CachePolicy = .useProtocolCachePolicy,
            freshness: FreshnessClass = .http,
            requestTimeout: Duration = .seconds(30),
            networkFirstTimeout: Duration = .seconds(3),
            backoff: Backoff = Backoff(),
            clock: any Clock<Duration> = ContinuousClock(),
            random: @escaping @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) },
            logger: Logger = Logger.current,
            errorResponses: ErrorResponsePolicy = .keepLastGoodResponse,
            delegate: (any CachingHTTPClientDelegate)? = nil,
            coalescing: Coalescing = .identicalRequests,
            tracer: (any Tracer)? = nil
        ) {
            self.coalescing = coalescing
            self.tracer = tracer
            self.errorResponses = errorResponses
            self.delegate = delegate
            self.policy = policy
            self.freshness = freshness
            self.requestTimeout = requestTimeout
            self.networkFirstTimeout = networkFirstTimeout
            self.backoff = backoff
            self.clock = clock
            self.random = random
            self.logger = logger
        }
    }

    /// The transport requests go through.
    public let transport: any HTTPTransport
    /// The transport as one that streams, when it does (cast once, not per exchange).
    let streamingTransport: (any StreamingHTTPTransport)?
    /// The cache answers come from and go to.
    public let cache: ResponseCache
    /// The configuration.
    public let configuration: Configuration

    let flights = SingleFlight<String, NetworkOutcome>()
    /// The keys whose requests do not coalesce by key for now (``Coalescing/byCacheKey``).
    let uncacheableKeys = Mutex(UncacheableKeys())
    /// Bodies still arriving that will be stored, by the coalescing key of their flight
    /// (``Coalescing/byCacheKey``): a request that comes after the head did waits for the store
    /// rather than asking again.
    let bodiesInFlight = Mutex<[String: StreamedBody]>([:])
    private let wallClock: @Sendable () -> Date
    let backoffTable = Mutex(BackoffTable())
    let exchanges = Atomic<Int>(0)
    /// Whether the configuration has a delegate (read on every fetch without copying it).
    let hasDelegate: Bool
    /// The TTL facts of the configuration's freshness class, read on every fetch that names none.
    let defaultTTLFacts: TTLFacts
    /// The request engine, over the cache's rules.
    let engine: RequestEngine
    /// The spans of fetches; nil when the tracer is the no-op one.
    let tracing: FetchTracer?
    /// Neither a delegate nor spans: a fetch takes the shortest path (read once per fetch).
    let isPlain: Bool

    /// Creates a client.
    /// - Parameters:
    ///   - transport: sends requests to the network.
    ///   - cache: the response cache; its mode (shared or private) and hooks apply.
    ///   - configuration: defaults for calls, timeouts, backoff, clock.
    public init(transport: any HTTPTransport, cache: ResponseCache, configuration: Configuration = .init()) {
        self.transport = transport
        self.streamingTransport = transport as? any StreamingHTTPTransport
        self.cache = cache
        self.configuration = configuration
        self.wallClock = cache.configuration.now
        self.hasDelegate = configuration.delegate != nil
        self.defaultTTLFacts = TTLFacts(configuration.freshness)
        self.engine = RequestEngine(rules: cache.rules)
        self.tracing = FetchTracer.resolve(configuration.tracer)
        self.isPlain = !hasDelegate && tracing == nil
    }

    /// How many requests the client has sent to the transport.
    public var networkRequestCount: Int { exchanges.load(ordering: .relaxed) }

    /// Waits until the app shuts down, then cancels the network work in flight (background
    /// refreshes and requests whose callers went away). Run it in the app's service group.
    public func run() async throws {
        // Returns on graceful shutdown, throws on cancellation: either way, the work stops.
        try? await gracefulShutdown()
        flights.cancelAll()
    }

    /// Cancels the network work in flight now.
    public func cancelAll() {
        flights.cancelAll()
    }

    /// Closes the cache (`close()`): requests then go to the network
    /// without storing (active policies) or fail with ``CachingClientError/Code/closed``
    /// (``CachePolicy/cacheOnly``).
    /// - Throws: as `close()`.
    public func close() async throws(HTTPCachingError) {
        try await cache.close()
    }

    /// Opens the closed cache again with `encryption` (`reopen(encryption:)`).
    /// - Throws: as `reopen(encryption:)`; opening an open cache is an
    ///   error.
    public func reopen(encryption: DiskEncryption?) async throws(HTTPCachingError) {
        try await cache.reopen(encryption: encryption)
    }

    /// Wipes the closed cache (`reset()`).
    /// - Throws: as `reset()`; resetting an open cache is an error.
    public func reset() async throws(HTTPCachingError) {
        try await cache.reset()
    }

    /// The cache's wall clock, read without copying the cache's configuration on every call.
    var now: Date { wallClock() }
}
