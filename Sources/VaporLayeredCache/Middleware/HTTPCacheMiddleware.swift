// SPDX-License-Identifier: Apache-2.0

#if Vapor
public import HTTPCaching
import HTTPTypes
public import Vapor

/// A Vapor middleware that caches what an app's own routes answer, by the HTTP caching rules
/// (RFC 9111): the `Cache-Control`, `Expires`, `Vary`, `ETag` and `Last-Modified` the routes set
/// decide what is stored and for how long.
///
/// ```swift
/// let middleware = try HTTPCacheMiddleware()   // shared mode, 64 MiB in memory
/// app.middleware.use(middleware)
/// app.lifecycle.use(CacheLifecycle(middleware.cache))
/// app.get("items") { _ in
///     Response(status: .ok, headers: ["Cache-Control": "max-age=60"], body: .init(string: "[]"))
/// }
/// ```
///
/// It runs the same request engine as HummingbirdLayeredCache's `ResponseCacheMiddleware`,
/// `CachingHTTPClient` and `cache-proxy`, with the app's routes as the origin:
/// - A fresh stored answer (or a stale one the request's `max-stale` accepts) is served without
///   calling the route, with `Age`; a 304 when the request's `If-None-Match` (or, without it,
///   `If-Modified-Since`) matches it. A `HEAD` is answered from a stored `GET`.
/// - A stale answer with validators is revalidated: the route gets the request with
///   `If-None-Match` / `If-Modified-Since`; a 304 from it freshens what is stored, a failure (5xx,
///   429) is answered stale within `stale-if-error`, anything else replaces it.
/// - `only-if-cached` with nothing usable is answered 504; the other request directives are
///   honoured.
/// - Otherwise the route answers. A storable answer with a body in memory (a string, data, a
///   buffer, `Content`) is stored before it is sent, up to `maximumBodyBytes`; a
///   streamed body of a known length within that limit (a file from `req.fileio`) is collected,
///   stored and sent; any other stream passes through untouched and is not stored.
///
/// Never stored: answers to requests with credentials (`Authorization`, `Cookie`) unless the
/// answer allows it (`public`, `s-maxage` or `must-revalidate`, RFC 9111 §3.5), answers that set
/// a cookie (a session's), `private` answers in the shared mode, `no-store`, server errors and
/// partial content. Unsafe methods pass through and, on success, invalidate the target URI.
///
/// Register it before the middleware that sets cookies (`SessionsMiddleware`), so that it sees
/// what they add to an answer.
public struct HTTPCacheMiddleware: AsyncMiddleware {
    /// How the middleware behaves: HTTPCaching's `MiddlewareConfiguration`, which every server
    /// middleware takes. Every property has a documented default.
    public typealias Configuration = MiddlewareConfiguration

    /// The cache the middleware stores into and answers from.
    public let cache: ResponseCache
    /// The configuration it was made with.
    public let configuration: Configuration
    private let handlerCache: HandlerCache

    /// A middleware over a new `ResponseCache` built from the configuration's `cache`.
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

    /// Answers `request` from the cache, or through `next` and stores what it answers.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        guard let head = request.httpRequest else { return try await next.respond(to: request) }
        let original = (request.headers[ifNoneMatch], request.headers[ifModifiedSince])
        var isRewritten = false
        return try await handlerCache.respond(
            to: head,
            with: VaporResponses(eventLoop: request.eventLoop),
            logger: request.logger,
            // Vapor's TracingMiddleware keeps the request's span on the request, not in the task.
            context: handlerCache.tracer == nil ? nil : request.serviceContext
        ) { conditional in
            // A revalidation sends the route the request with the engine's conditions; a request
            // sent as it came after one gets its own back.
            if conditional != nil || isRewritten {
                request.headers.set(ifNoneMatch, to: conditional?.headerFields[values: .ifNoneMatch] ?? original.0)
                request.headers.set(
                    ifModifiedSince,
                    to: conditional?.headerFields[values: .ifModifiedSince] ?? original.1
                )
                isRewritten = conditional != nil
            }
            return try await next.respond(to: request)
        }
    }
}

extension HTTPHeaders {
    /// The field `name` with exactly `values`.
    fileprivate mutating func set(_ name: String, to values: [String]) {
        remove(name: name)
        for value in values { add(name: name, value: value) }
    }
}

private let ifNoneMatch = "If-None-Match"
private let ifModifiedSince = "If-Modified-Since"
#endif
