// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
public import HTTPCaching
import HTTPTypes
public import Hummingbird

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
///   streams to the client (up to `maximumBodyBytes`); an answer that is not
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
    /// How the middleware behaves: HTTPCaching's `MiddlewareConfiguration`, which every server
    /// middleware takes. Every property has a documented default.
    public typealias Configuration = MiddlewareConfiguration

    /// The cache the middleware stores into and answers from.
    public let cache: ResponseCache
    /// The configuration it was made with.
    public let configuration: Configuration
    /// The request engine with the app's handler as the origin (HTTPCaching's, which every
    /// server middleware runs).
    let handlerCache: HandlerCache

    /// A middleware over a new `ResponseCache` built from
    /// the configuration's `cache`.
    /// - Throws: `HTTPCachingError` when the cache cannot be opened (an invalid configuration, a
    ///   disk directory that is locked or cannot be created).
    public init(configuration: Configuration = .init()) throws {
        try self.init(cache: ResponseCache(configuration: configuration.cache), configuration: configuration)
    }

    /// A middleware over `cache`, which other middlewares (other route groups) and clients may
    /// share; its own configuration (mode, tiers, hooks) applies and the configuration's `cache` is
    /// not used.
    public init(cache: ResponseCache, configuration: Configuration = .init()) {
        self.cache = cache
        self.configuration = configuration
        self.handlerCache = HandlerCache(cache: cache, configuration: configuration)
    }

    /// Answers `request` from the cache, or through `next` and stores what it answers: the
    /// request engine's plan (HTTPCaching's, the client's and the proxy's too), run with the
    /// app's handler as the origin.
    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        // Under the task's span: Hummingbird's TracingMiddleware keeps the request's in the task.
        try await handlerCache.respond(
            to: request.head,
            with: HummingbirdResponses(),
            logger: context.logger,
            context: nil
        ) { head in
            guard let head else { return try await next(request, context) }
            return try await next(Request(head: head, body: request.body), context)
        }
    }
}
#endif
