// SPDX-License-Identifier: Apache-2.0

public import Tracing

/// How a server middleware that caches an app's own answers behaves: HummingbirdLayeredCache's
/// `ResponseCacheMiddleware` and VaporLayeredCache's `HTTPCacheMiddleware` take this one
/// configuration (each as its `Configuration`), because they run one request engine. Every
/// property has a documented default.
public struct MiddlewareConfiguration: Sendable {
    /// The cache's configuration, used when the middleware makes its own cache (its
    /// `init(configuration:)`). Defaults to a memory tier of 64 MiB in the shared mode: an app's
    /// answers are cached for every user, as a reverse proxy would (a `private` answer is never
    /// stored).
    public var cache: ResponseCache.Configuration
    /// The delegate that has the last word on what is stored: its `willCache(_:for:)` runs after
    /// the cache's hooks, for a new answer and for one a 304 freshened. A client's delegate
    /// (`CachingHTTPClientDelegate`) is one: it is asked with a `FetchContext` whose policy is
    /// `useProtocolCachePolicy`. Defaults to nil.
    public var delegate: (any ResponseCacheDelegate)?
    /// The cache's name in an RFC 9211 `Cache-Status` field added to every answer
    /// (`Cache-Status: LayeredCache; hit; ttl=42`), or nil for no field. Defaults to nil.
    public var cacheStatusName: String?
    /// The largest body that is cached; a larger one is sent and not stored. Defaults to 1 MiB.
    public var maximumBodyBytes: Int
    /// The scheme of the keys when a request carries none (requests to a server usually do not).
    /// Defaults to `http`.
    public var defaultScheme: String
    /// The authority of the keys when a request carries none (no `Host`). Defaults to
    /// `localhost`.
    public var defaultAuthority: String
    /// The tracer of the middleware's span (`layeredcache.middleware`, with the answer's cache
    /// status; docs/tracing.md), under the request's span (the framework's `TracingMiddleware`).
    /// Defaults to nil: the tracer bootstrapped with `InstrumentationSystem` when the middleware
    /// is made; with none, no span and no cost.
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
        self.cache = cache
        self.delegate = delegate
        self.cacheStatusName = cacheStatusName
        self.maximumBodyBytes = maximumBodyBytes
        self.defaultScheme = defaultScheme
        self.defaultAuthority = defaultAuthority
        self.tracer = tracer
    }
}
