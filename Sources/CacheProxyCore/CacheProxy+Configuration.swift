// SPDX-License-Identifier: Apache-2.0

#if Proxy
public import HTTPCaching
public import HTTPTypes
public import Logging
public import Metrics
public import NIOCore
public import Tracing

extension CacheProxy {
    /// How a proxy is set up; every parameter but the upstream has a default.
    public struct Configuration: Sendable {
        /// Where requests go.
        public var upstream: Upstream
        /// Where the proxy listens. Default `127.0.0.1:8002`.
        public var listen: ListenAddress
        /// The response cache: its mode (shared, a proxy for many users, or private, one user's
        /// cache), its memory tier, its disk tier (nil keeps responses in memory only), hooks and
        /// clock. Default: `ResponseCache.Configuration(mode: .shared)` (memory only, 64 MiB).
        public var cache: ResponseCache.Configuration
        /// A response field that tells `HIT`, `STALE`, `REVALIDATED`, `MISS` or `ERROR`; nil for
        /// none. Default nil.
        public var cacheStatusHeader: HTTPField.Name?
        /// How long one exchange with the upstream may take; past it the answer is a 504 (or a
        /// stale response where allowed). Default 30 s.
        public var requestTimeout: Duration
        /// The largest request body accepted (the transport bounds response bodies). Default
        /// 64 MiB.
        public var maximumBodyBytes: Int
        /// How long an idle downstream connection stays open; nil for ever. Default 60 s. An
        /// HTTP/1.1 connection is idle while nothing is read or written and no request is being
        /// answered; an HTTP/2 one while no stream is open.
        public var idleTimeout: Duration?
        /// Where the proxy logs: a line per request at debug level. Default: nowhere.
        public var logger: Logger
        /// Where the counters go; nil for the bootstrapped `MetricsSystem`. Default nil.
        public var metricsFactory: (any MetricsFactory)?
        /// The clock the client's timeouts wait on. Default `ContinuousClock()`.
        public var clock: any Clock<Duration>
        /// The event loops the listener serves connections on (fresh hits are answered there).
        /// Default nil: SwiftNIO's singleton group, one loop per core NIO counts — which does not
        /// see a CPU affinity mask: a proxy pinned to fewer CPUs should be given as many loops as
        /// it has CPUs, or its loops take turns on one CPU and a request waits for the other
        /// loop's turn (measured: p99 latency about 1.5x).
        public var eventLoopGroup: (any EventLoopGroup)?
        /// The bearer token a `PURGE` request must carry (`Authorization: Bearer TOKEN`) to remove
        /// what is stored for its URL: every variant, for `GET` and `HEAD`, and with a shared
        /// tier for every instance. Nil (the default) refuses `PURGE` with 405; a wrong or missing
        /// token is a 401 and removes nothing.
        public var purgeToken: String?
        /// The response fields whose values become a stored response's tags, so that a `PURGE`
        /// carrying one of these fields (`Surrogate-Key: product-42`) removes every response
        /// tagged with it. Separated by spaces or commas; at most 64 tags of at most 256 bytes a
        /// response. Default `Surrogate-Key` (Fastly) and `Cache-Tag` (Cloudflare); empty for no
        /// tags.
        public var tagFields: [HTTPField.Name]
        /// Whether the ``tagFields`` reach clients. Default false: they are not stored, and the
        /// origin's answers lose them on their way to the client (tags are the operator's).
        public var exposesTagFields: Bool
        /// Whether a `Range` request the cache cannot answer goes upstream with its `Range`. Default
        /// false: the proxy fetches the whole response, stores it and cuts the range from it, as
        /// Varnish and nginx do by default. True suits large files that clients read in ranges
        /// (video, downloads): the origin's `206` answers are stored as partial content (with a
        /// strong `ETag`), later ranges are served from them, and ranges that complete the body
        /// become the whole response (RFC 9111 §3.3–3.4).
        public var forwardsRanges: Bool
        /// Where the admin listener listens: `GET /metrics` (Prometheus text format), `GET
        /// /healthz`, and `PURGE` as on the main listener. Nil (the default) for none. Keep it
        /// where only operators reach it.
        public var admin: ListenAddress?
        /// The tracer the proxy's spans go to (docs/tracing.md): a server span per request with
        /// its cache status, the client's fetch and its exchange with the upstream under it (the
        /// upstream request carries the trace context). Nil (the default): the tracer bootstrapped
        /// with `InstrumentationSystem` when the proxy runs; with none, no spans and no cost.
        public var tracer: (any Tracer)?
        /// TLS on the listener (TLS 1.2 or 1.3); nil (the default): cleartext. The admin listener
        /// stays cleartext: bind it to a private address.
        public var tls: ListenerTLS?
        /// HTTP/2 on the listener and its limits: over TLS for clients that choose `h2` by ALPN,
        /// in cleartext for clients that open with HTTP/2's preface (prior knowledge). Default
        /// ``HTTP2/init(maximumConcurrentStreams:maximumHeaderListSize:streamWindowSize:connectionWindowSize:)``;
        /// nil for HTTP/1.1 only.
        public var http2: HTTP2?

        /// Creates a configuration.
        public init(
            upstream: Upstream,
            listen: ListenAddress = .loopback(port: 8002),
            cache: ResponseCache.Configuration = .init(mode: .shared),
            cacheStatusHeader: HTTPField.Name? = nil,
            requestTimeout: Duration = .seconds(30),
            maximumBodyBytes: Int = 64 << 20,
            idleTimeout: Duration? = .seconds(60),
            logger: Logger = Logger(label: "LayeredCache.CacheProxy", factory: { _ in SwiftLogNoOpLogHandler() }),
            metricsFactory: (any MetricsFactory)? = nil,
            clock: any Clock<Duration> = ContinuousClock(),
            eventLoopGroup: (any EventLoopGroup)? = nil,
            purgeToken: String? = nil,
            tagFields: [HTTPField.Name] = [.surrogateKey, .cacheTag],
            exposesTagFields: Bool = false,
            forwardsRanges: Bool = false,
            admin: ListenAddress? = nil,
            tracer: (any Tracer)? = nil,
            tls: ListenerTLS? = nil,
            http2: HTTP2? = HTTP2()
        ) {
            self.upstream = upstream
            self.listen = listen
            self.cache = cache
            self.cacheStatusHeader = cacheStatusHeader
            self.requestTimeout = requestTimeout
            self.maximumBodyBytes = maximumBodyBytes
            self.idleTimeout = idleTimeout
            self.logger = logger
            self.metricsFactory = metricsFactory
            self.clock = clock
            self.eventLoopGroup = eventLoopGroup
            self.purgeToken = purgeToken
            self.tagFields = tagFields
            self.exposesTagFields = exposesTagFields
            self.forwardsRanges = forwardsRanges
            self.admin = admin
            self.tracer = tracer
            self.tls = tls
            self.http2 = http2
        }
    }
}

extension HTTPField.Name {
    /// `Surrogate-Key`: a response's tags, separated by spaces (Fastly's field).
    public static var surrogateKey: Self { Self("Surrogate-Key")! }
    /// `Cache-Tag`: a response's tags, separated by commas (Cloudflare's field).
    public static var cacheTag: Self { Self("Cache-Tag")! }
}
#endif
