// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
public import HTTPCaching
import HTTPTypes
public import Hummingbird
import Logging
public import Tracing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A Hummingbird middleware that caches what an app's own handlers answer, by the HTTP caching
/// rules (RFC 9111): the `Cache-Control`, `Expires`, `Vary`, `ETag` and `Last-Modified` the
/// handlers set decide what is stored and for how long.
///
/// ```swift
/// let router = Router()
/// router.add(middleware: try ResponseCacheMiddleware())   // shared mode, 64 MiB in memory
/// router.get("/items") { _, _ in
///     Response(status: .ok, headers: [.cacheControl: "max-age=60"], body: .init(byteBuffer: items))
/// }
/// ```
///
/// What it does with a `GET` (or `HEAD`) request:
/// - A fresh stored answer (or a stale one the request's `max-stale` accepts) is served without
///   calling the handler, with `Age`; a 304 when the request's `If-None-Match` (or, without it,
///   `If-Modified-Since`) matches it (RFC 9110 §13.1).
/// - A stale answer with validators is revalidated: the handler gets the request with
///   `If-None-Match` / `If-Modified-Since`; a 304 from it freshens what is stored (one that
///   selects nothing stored sends the request again without them), a failure (5xx, 429) leaves
///   it and is answered with it within `stale-if-error`, anything else replaces it.
///   `stale-while-revalidate` revalidates in the foreground too.
/// - `only-if-cached` with nothing usable is answered 504 (RFC 9111 §5.2.1.7); the other request
///   directives (`no-cache`, `no-store`, `max-age`, `min-fresh`, `max-stale`) are honoured.
/// - Otherwise the handler answers. A storable answer's body is copied into the cache while it
///   streams to the client (up to ``Configuration/maximumBodyBytes``); an answer that is not
///   storable — and every streaming body that is not — passes through untouched.
///
/// These are the request engine's rules (HTTPCaching's, which `CachingHTTPClient` and
/// `cache-proxy` run too), with the app's handler as the origin.
///
/// Never stored: answers to requests with credentials (`Authorization`, `Cookie`) unless the
/// answer allows it (`public`, `s-maxage` or `must-revalidate`, RFC 9111 §3.5), answers that set
/// a cookie, `private` answers in the shared mode, `no-store`, server errors (5xx, 429), partial
/// content and answers with trailers. Unsafe methods (`POST`, `PUT`, `DELETE`, …) pass through and, on success, invalidate
/// the target URI (RFC 9111 §4.4).
///
/// Per route: add one middleware to each route group, over one shared `ResponseCache`
/// (``init(cache:configuration:)``) with a delegate each. Run ``cache`` as a service of the
/// application (`app.addServices(middleware.cache)`) when it has a disk tier.
public struct ResponseCacheMiddleware<Context: RequestContext>: RouterMiddleware {
    /// How the middleware behaves. Every property has a documented default.
    public struct Configuration: Sendable {
        /// The cache's configuration, used by ``ResponseCacheMiddleware/init(configuration:)``.
        /// Defaults to a memory tier of 64 MiB in the shared mode: an app's answers are cached
        /// for every user, as a reverse proxy would (a `private` answer is never stored).
        public var cache: ResponseCache.Configuration
        /// The delegate that has the last word on what is stored: its `willCache(_:for:)` runs
        /// after the cache's hooks, for a new answer and for one a 304 freshened. A client's
        /// delegate (`CachingHTTPClientDelegate`) is one: it is asked with a `FetchContext` whose
        /// policy is `useProtocolCachePolicy`. Defaults to nil.
        public var delegate: (any ResponseCacheDelegate)?
        /// The cache's name in an RFC 9211 `Cache-Status` field added to every answer
        /// (`Cache-Status: LayeredCache; hit; ttl=42`), or nil for no field. Defaults to nil.
        public var cacheStatusName: String?
        /// The largest body that is cached; a larger one streams through and is not stored.
        /// Defaults to 1 MiB.
        public var maximumBodyBytes: Int
        /// The scheme and authority of the keys when a request carries no authority (no `Host`).
        /// Defaults to `http` and `localhost`.
        public var defaultScheme: String
        /// See ``defaultScheme``.
        public var defaultAuthority: String
        /// The tracer of the middleware's span (`layeredcache.middleware`, with the answer's cache
        /// status; docs/tracing.md), under the request's span (Hummingbird's `TracingMiddleware`).
        /// Defaults to nil: the tracer bootstrapped with `InstrumentationSystem` when the
        /// middleware is made; with none, no span and no cost.
        public var tracer: (any Tracer)?

        /// Creates a configuration; every parameter has the default documented on its property.
        public init(
            cache: ResponseCache.Configuration = .init(mode: .shared),
            delegate: (any ResponseCacheDelegate)? = nil,
            cacheStatusName: String? = nil,
            maximumBodyBytes: Int = 1 << 20,
            defaultScheme: String = "http",
            defaultAuthority: String = "localhost",
            tracer: (any Tracer)? = nil
        ) {
            self.tracer = tracer
            self.cache = cache
            self.delegate = delegate
            self.cacheStatusName = cacheStatusName
            self.maximumBodyBytes = maximumBodyBytes
            self.defaultScheme = defaultScheme
            self.defaultAuthority = defaultAuthority
        }
    }

    /// The cache the middleware stores into and answers from.
    public let cache: ResponseCache
    /// The configuration it was made with.
    public let configuration: Configuration
    /// The request engine, over the cache's rules.
    private let engine: RequestEngine
    /// The tracer of the middleware's span; nil when it is the no-op one.
    let tracer: (any Tracer)?

    /// A middleware over a new `ResponseCache` built from
    /// ``Configuration/cache``.
    /// - Throws: `HTTPCachingError` when the cache cannot be opened (an invalid configuration, a
    ///   disk directory that is locked or cannot be created).
    public init(configuration: Configuration = .init()) throws {
        try self.init(cache: ResponseCache(configuration: configuration.cache), configuration: configuration)
    }

    /// A middleware over `cache`, which other middlewares (other route groups) and clients may
    /// share; its own configuration (mode, tiers, hooks) applies and ``Configuration/cache`` is
    /// not used.
    public init(cache: ResponseCache, configuration: Configuration = .init()) {
        precondition(configuration.maximumBodyBytes >= 0, "maximumBodyBytes must not be negative")
        self.cache = cache
        self.configuration = configuration
        self.engine = RequestEngine(rules: cache.rules)
        let tracer = configuration.tracer ?? InstrumentationSystem.tracer
        self.tracer = tracer is NoOpTracer ? nil : tracer
    }

    /// Answers `request` from the cache, or through `next` and stores what it answers: the
    /// request engine's plan (HTTPCaching's, the client's and the proxy's too), run with the
    /// app's handler as the origin.
    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let tracer else { return try await respond(to: request, context: context, next: next) }
        return try await tracer.withSpan("layeredcache.middleware", ofKind: .internal) { span in
            let recorder = CacheStatusRecorder()
            let response = try await CacheStatusRecorder.$current.withValue(recorder) {
                try await respond(to: request, context: context, next: next)
            }
            if let status = recorder.status { span.attributes["layeredcache.cache_status"] = status }
            span.attributes["http.response.status_code"] = response.status.code
            return response
        }
    }

    /// ``handle(_:context:next:)`` without its span.
    private func respond(
        to request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let keyed = keyedRequest(request.head)
        guard request.method == .get || request.method == .head else {
            let requestTime = cache.configuration.now()
            let response = try await next(request, context)
            let outcome = engine.outcome(of: response.head, sent: keyed, original: keyed)
            guard outcome == .invalidate || outcome.storedAs != nil else { return response }
            do {
                try await cache.invalidate(after: response.head, to: keyed)
            } catch {
                context.logger.warning("could not invalidate cached responses", metadata: ["error": "\(error)"])
            }
            guard let get = outcome.storedAs else { return response }
            // A POST's answer that is its target's current representation (RFC 9110 §9.3.3).
            let lookup = await cache.lookup(get)
            return try await store(
                response,
                for: lookup,
                requestTime: requestTime,
                status: .miss(.method),
                context: context
            )
        }
        let lookup = await cache.lookup(keyed)
        switch engine.plan(RequestEngine.Read(keyed), lookup: lookup, now: cache.configuration.now()) {
        case .answer(let offer):
            let status = CacheStatusValue.hit(ttl: offer.lifetime - offer.age)
            return answer(from: offer.stored, age: offer.age, to: request.head, status: status)
        case .missing:
            return Self.gatewayTimeout.withStatus(status(.miss(.request)))
        case .answerAndRefresh(_, let exchange), .answerThenForward(_, let exchange), .forward(let exchange):
            // A refresh runs in the foreground here: the handler it calls belongs to the request.
            guard let stored = lookup.stored else {
                return try await forward(request, lookup: lookup, context: context, status: .miss(.uriMiss), next: next)
            }
            return try await revalidate(
                stored,
                lookup: lookup,
                exchange: exchange,
                request: request,
                context: context,
                next: next
            )
        }
    }

    /// Sends the exchange's request (conditional when `stored` has validators) to the handler,
    /// and does what the engine says its answer does: a 304 freshens `stored` (or, selecting
    /// nothing stored, the request goes again without the conditions); a failure (5xx, 429)
    /// leaves it, and it answers stale where `stale-if-error` allows; anything else replaces it.
    private func revalidate(
        _ stored: CachedResponse,
        lookup: ResponseLookup,
        exchange: RequestEngine.Exchange,
        request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var head = request.head
        head.headerFields[.ifNoneMatch] = exchange.request.headerFields[.ifNoneMatch]
        head.headerFields[.ifModifiedSince] = exchange.request.headerFields[.ifModifiedSince]
        let requestTime = cache.configuration.now()
        let response = try await next(Request(head: head, body: request.body), context)
        let outcome = engine.outcome(
            of: response.head,
            sent: exchange.request,
            original: lookup.request,
            mayAnswerStale: exchange.fallback
        )
        switch outcome {
        case .freshen:
            break
        case .failed where exchange.fallback:
            let age = CacheRules.currentAge(of: stored, now: cache.configuration.now())
            return answer(from: stored, age: age, to: request.head, status: .staleOnError(response.status.code))
        default:
            return try await store(
                response,
                for: lookup,
                requestTime: requestTime,
                status: .miss(.stale),
                context: context
            )
        }
        let freshened: CachedResponse?
        do {
            // Through the pipeline as a new answer is: the 304's fields (a visitor's Set-Cookie, any
            // field the delegate strips) are judged before the merged answer is stored for everyone.
            freshened = try await cache.freshened(
                with: response.head,
                for: lookup,
                requestTime: requestTime,
                responseTime: cache.configuration.now(),
                through: storagePipeline
            )?.stored
        } catch {
            context.logger.warning("could not store a freshened response", metadata: ["error": "\(error)"])
            freshened = CacheRules.freshened(
                stored,
                with: response.head,
                requestTime: requestTime,
                responseTime: cache.configuration.now()
            )
        }
        guard let freshened else {
            // The 304 selects nothing stored (RFC 9111 §4.3.3): the request goes again as it came.
            return try await forward(request, lookup: lookup, context: context, status: .miss(.stale), next: next)
        }
        let age = CacheRules.currentAge(of: freshened, now: cache.configuration.now())
        return answer(from: freshened, age: age, to: request.head, status: .revalidated)
    }

    /// Calls the handler and stores its answer when the rules allow it.
    private func forward(
        _ request: Request,
        lookup: ResponseLookup,
        context: Context,
        status: CacheStatusValue,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let requestTime = cache.configuration.now()
        let response = try await next(request, context)
        return try await store(response, for: lookup, requestTime: requestTime, status: status, context: context)
    }

    /// `response` with its body copied into the cache as it is written, when it may be stored;
    /// else `response` as it is.
    private func store(
        _ response: Response,
        for lookup: ResponseLookup,
        requestTime: Date,
        status: CacheStatusValue,
        context: Context
    ) async throws -> Response {
        let head = response.head
        var response = response.withStatus(self.status(status))
        guard lookup.request.method == .get,
            engine.outcome(of: head, sent: lookup.request, original: lookup.request) == .store,
            mayStore(head, for: lookup.request, context: context),
            (response.body.contentLength ?? 0) <= configuration.maximumBodyBytes
        else { return response }
        let store = Storing(
            cache: cache,
            lookup: lookup,
            head: head,
            requestTime: requestTime,
            pipeline: storagePipeline,
            logger: context.logger
        )
        response.body = CachingBodyWriter.tee(response.body, limit: configuration.maximumBodyBytes, into: store)
        return response
    }

    /// Whether the rules let `response` be stored (the middleware's own rules run in its
    /// ``storagePipeline``, on every answer it stores).
    private func mayStore(_ response: HTTPResponse, for request: HTTPRequest, context: Context) -> Bool {
        if let reason = cache.rules.reasonNotToStore(response, for: request) {
            context.logger.trace("not caching a response", metadata: ["reason": "\(reason)"])
            return false
        }
        return true
    }

    /// What every answer the middleware stores — a handler's new answer or one a 304 freshened —
    /// passes through after the cache's own hook: ``visitorRules``, then the delegate.
    var storagePipeline: StoragePipeline {
        StoragePipeline(willCache: Self.visitorRules, steps: configuration.delegate.map { [$0.storageStep] } ?? [])
    }

    /// The rules that keep one visitor's own data out of what is stored for every visitor: an
    /// answer that sets a cookie is never stored, nor one to a request with credentials
    /// (`Authorization`, `Cookie`) unless the answer allows it (`public`, `s-maxage` or
    /// `must-revalidate`; RFC 9111 §3.5, for a cookie as for `Authorization`).
    static var visitorRules: WillCache {
        WillCache { response, request in
            let fields = response.response.headerFields
            if fields[.setCookie] != nil || fields[HTTPField.Name("Set-Cookie2")!] != nil { return nil }
            if request.headerFields[.cookie] != nil || request.headerFields[.authorization] != nil {
                let directives = CacheControl(fields)
                guard directives.isPublic || directives.sharedMaxAge != nil || directives.mustRevalidate else {
                    return nil
                }
            }
            return response
        }
    }

    /// The request the cache keys by: the server's request with a scheme and an authority.
    func keyedRequest(_ head: HTTPRequest) -> HTTPRequest {
        var keyed = head
        if keyed.scheme == nil { keyed.scheme = configuration.defaultScheme }
        if keyed.authority == nil { keyed.authority = configuration.defaultAuthority }
        return keyed
    }

    private static var gatewayTimeout: Response {
        Response(status: .gatewayTimeout, headers: [.cacheControl: "no-store"])
    }
}
#endif
