// SPDX-License-Identifier: Apache-2.0

#if Proxy
public import CachingClient
public import HTTPCaching
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import NIOPosix
import Prometheus
public import ServiceLifecycle
import Synchronization

/// A caching HTTP/1.1 reverse proxy: a ``CachingClient/CachingHTTPClient`` with the protocol
/// cache policy (RFC 9111) over a ``HTTPCaching/ResponseCache``, behind a HummingbirdCore
/// listener, sending to the upstream through any ``CachingClient/HTTPTransport``.
///
/// ```swift
/// let http = HTTPClient(eventLoopGroupProvider: .singleton)   // AsyncHTTPClient
/// let proxy = try CacheProxy(
///     configuration: .init(
///         upstream: try Upstream("http://127.0.0.1:8000"),
///         cache: .init(disk: .init(directory: "/var/cache/proxy"), mode: .shared)
///     ),
///     transport: HTTPClientTransport(client: http)   // AsyncHTTPClientTransport
/// )
/// let group = ServiceGroup(services: [proxy], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// try await group.run()
/// ```
///
/// In ``HTTPCaching/ResponseCache/Mode/shared`` mode (the configuration's ``Configuration/cache``
/// decides) it is a shared cache (`s-maxage`, no
/// `private` responses, `Authorization` rules); in ``HTTPCaching/ResponseCache/Mode/private``
/// mode it behaves as one user's client cache. Every method, path, query, status and end-to-end
/// field passes through; hop-by-hop fields are dropped both ways. When the upstream cannot answer,
/// a stored response is served where `stale-if-error` allows it, else a 502 (504 after a
/// timeout). See docs/cache-proxy.md.
///
/// ``run()`` runs the cache, the client and the listener in a `ServiceGroup` and returns after a
/// graceful shutdown: the listener stops accepting and finishes the requests in flight, then the
/// client's work is cancelled, the cache's last index snapshot written and its directory
/// released. The transport is the caller's: the proxy neither starts nor shuts it down. A proxy
/// runs once.
public final class CacheProxy: Service, Sendable {
    /// The configuration.
    public let configuration: Configuration
    /// The response cache.
    public let cache: ResponseCache
    /// Where requests go upstream.
    public let transport: any HTTPTransport
    private let onListening: @Sendable (Int) async -> Void
    private let onAdminListening: @Sendable (Int) async -> Void
    /// The client while ``run()`` runs (for tests).
    let runningClient = Mutex<CachingHTTPClient?>(nil)
    /// The listener's TLS context, with ``Configuration/tls``.
    private let certificates: ListenerCertificates?

    /// Creates a proxy and opens its cache.
    /// - Parameters:
    ///   - configuration: the upstream, the listen address, the cache.
    ///   - transport: sends requests to the upstream (`HTTPClientTransport` from the module
    ///     `AsyncHTTPClientTransport`, or any other); the proxy drops hop-by-hop fields from its
    ///     answers before the cache sees them.
    ///   - onListening: called with the bound port once the listener accepts connections.
    ///   - onAdminListening: called with the admin listener's bound port once it accepts
    ///     connections (``Configuration/admin``).
    /// - Throws: ``CacheProxyError`` for a body limit below 1 or a listener certificate or key
    ///   that cannot be read (``CacheProxyError/Code/invalidCertificate``); the cache's
    ///   `HTTPCachingError` for an invalid cache configuration or a directory that cannot be opened
    ///   (another process holds it, say).
    public init(
        configuration: Configuration,
        transport: any HTTPTransport,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in },
        onAdminListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        guard configuration.maximumBodyBytes > 0 else {
            throw CacheProxyError(code: .invalidArgument, message: "the body limit must be positive")
        }
        if let http2 = configuration.http2, !http2.isValid {
            throw CacheProxyError(
                code: .invalidArgument,
                message: "HTTP/2 limits out of range: \(http2) (streams and header list size at least 1, "
                    + "windows up to 2^31-1, the connection's at least 65,535)"
            )
        }
        self.configuration = configuration
        self.transport = transport
        self.onListening = onListening
        self.onAdminListening = onAdminListening
        self.certificates = try configuration.tls.map { files throws(CacheProxyError) in
            try ListenerCertificates(files, offersHTTP2: configuration.http2 != nil)
        }
        var cacheConfiguration = configuration.cache
        if !configuration.tagFields.isEmpty {
            // The tags go on before the app's hook, which sees (and may change) them.
            cacheConfiguration.willCache = SurrogateKeys.hook(
                names: configuration.tagFields,
                strip: !configuration.exposesTagFields
            ).then(cacheConfiguration.willCache)
        }
        self.cache = try ResponseCache(configuration: cacheConfiguration)
    }

    /// Reads the listener's certificate chain and private key again (``Configuration/tls``):
    /// connections accepted from now on are offered them; open connections keep the certificate
    /// they were accepted with, so none is dropped. cache-proxy calls this on `SIGHUP`.
    /// - Throws: ``CacheProxyError/Code/invalidCertificate`` when the files cannot be read or do
    ///   not belong together (the certificate in use then stays), ``CacheProxyError/Code/invalidArgument``
    ///   when the listener has no TLS.
    public func reloadCertificates() throws(CacheProxyError) {
        guard let certificates else {
            throw CacheProxyError(code: .invalidArgument, message: "the listener has no TLS to reload")
        }
        try certificates.reload()
    }

    /// Listens and answers until graceful shutdown (or cancellation).
    /// - Throws: when the listener cannot bind, or a service fails.
    public func run() async throws {
        let registry = configuration.admin.map { _ in PrometheusCollectorRegistry() }
        let metrics = ProxyMetrics(factory: metricsFactory(alsoCollectingIn: registry))
        let client = CachingHTTPClient(
            transport: UpstreamTransport(base: transport, metrics: metrics),
            cache: cache,
            configuration: .init(
                policy: .useProtocolCachePolicy,
                requestTimeout: configuration.requestTimeout,
                backoff: .disabled,
                clock: configuration.clock,
                logger: configuration.logger,
                // A shared cache follows RFC 9111: a cacheable 404 replaces what was stored.
                errorResponses: .protocolRules,
                // Clients behind a proxy differ in every field; they wait on one exchange per URL.
                coalescing: .byCacheKey,
                tracer: configuration.tracer
            )
        )
        runningClient.withLock { $0 = client }
        defer { runningClient.withLock { $0 = nil } }
        var failure: (any Error)?
        do {
            try await serve(client, metrics: metrics, registry: registry)
        } catch {
            failure = error
        }
        do {
            try await cache.close()
        } catch {
            configuration.logger.warning("could not close the disk tier", metadata: ["error": "\(error)"])
        }
        if let failure { throw failure }
    }

    /// The configured factory (or the bootstrapped one), and with an admin listener also its
    /// Prometheus registry: `/metrics` shows the proxy's metrics whatever the app bootstrapped.
    private func metricsFactory(alsoCollectingIn registry: PrometheusCollectorRegistry?) -> any MetricsFactory {
        let base = configuration.metricsFactory ?? MetricsSystem.factory
        guard let registry else { return base }
        return MultiplexMetricsHandler(factories: [base, PrometheusMetricsFactory(registry: registry)])
    }

    private func serve(
        _ client: CachingHTTPClient,
        metrics: ProxyMetrics,
        registry: PrometheusCollectorRegistry?
    ) async throws {
        let tracing = ProxyTracer.resolve(configuration.tracer)
        let purger = Purger(
            cache: cache,
            token: configuration.purgeToken.map { Array($0.utf8) },
            tagFields: configuration.tagFields,
            logger: configuration.logger
        )
        let handler = ProxyHandler(
            client: client,
            upstream: configuration.upstream,
            statusHeader: configuration.cacheStatusHeader,
            maximumRequestBodyBytes: configuration.maximumBodyBytes,
            metrics: metrics,
            logger: configuration.logger,
            purger: purger,
            strippedFields: configuration.exposesTagFields ? [] : configuration.tagFields,
            forwardsRanges: configuration.forwardsRanges,
            tracing: tracing
        )
        // Fresh memory hits are answered on the event loop; everything else goes to the handler.
        let bodyBufferLimit = Self.hitBufferLimit(memoryCapacity: cache.memoryCapacity)
        let fastHit = FastHit(
            cache: cache,
            upstream: configuration.upstream,
            statusHeader: configuration.cacheStatusHeader,
            metrics: metrics,
            bodies: HitBodyBuffers(limitBytes: bodyBufferLimit),
            tracing: tracing
        )
        // No idle timeout of HummingbirdCore's: raw hits never reach its state handler, so the
        // raw path keeps the timeout (``RawHitHandler``).
        let channelConfiguration = HTTP1Channel.Configuration(idleTimeout: nil)
        let onListening = self.onListening
        let eventLoopGroup = configuration.eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        let certificates = self.certificates
        let http2 = configuration.http2
        let idleTimeout = configuration.idleTimeout
        let server = try HTTPServerBuilder { responder -> any ServerChildChannel in
            let http1 = FastHitHTTP1Channel(
                base: HTTP1Channel(responder: responder, configuration: channelConfiguration),
                fastHit: fastHit,
                idleTimeout: idleTimeout
            )
            return ProxyListenerChannel(
                http1: http1,
                http2: http2.map {
                    FastHitHTTP2Channel(http1: http1, fastHit: fastHit, settings: $0, idleTimeout: idleTimeout)
                },
                certificates: certificates,
                idleTimeout: idleTimeout
            )
        }.buildServer(
            configuration: ServerConfiguration(
                address: .hostname(configuration.listen.host, port: configuration.listen.port),
                backlog: 1024
            ),
            eventLoopGroup: eventLoopGroup,
            logger: configuration.logger,
            responder: { request, writer, channel in
                try await handler.respond(to: request, writer: writer, channel: channel)
            },
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) }
        )
        // Shut down in reverse order: the listeners first (they drain), then the client, the cache.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            // Without a disk tier the cache's run() returns at once: that is not an exit.
            .init(service: cache, successTerminationBehavior: .ignore),
            .init(service: client),
            .init(service: server),
        ]
        if let admin = configuration.admin, let registry {
            let adminHandler = AdminHandler(
                cache: cache,
                upstream: configuration.upstream,
                purger: purger,
                metrics: metrics,
                registry: registry
            )
            let onAdminListening = self.onAdminListening
            let adminServer = try HTTPServerBuilder.http1(configuration: channelConfiguration).buildServer(
                configuration: ServerConfiguration(address: .hostname(admin.host, port: admin.port)),
                eventLoopGroup: eventLoopGroup,
                logger: configuration.logger,
                responder: { request, writer, _ in try await adminHandler.respond(to: request, writer: writer) },
                onServerRunning: { channel in await onAdminListening(channel.localAddress?.port ?? 0) }
            )
            services.append(.init(service: adminServer))
        }
        let group = ServiceGroup(configuration: .init(services: services, logger: configuration.logger))
        try await group.run()
    }
}

extension CacheProxy {
    /// The most bytes the shared buffers of hit bodies (``HitBodyBuffers``) are charged: an
    /// eighth of the memory tier's budget, at most 64 MiB: what these buffers can add to the
    /// cache's own memory.
    static func hitBufferLimit(memoryCapacity: Int) -> Int {
        min(memoryCapacity / 8, 64 << 20)
    }

    /// The most entries a memory tier of `memoryCapacity` bytes holds by default: 100,000 per
    /// 64 MiB, as the memory tier's own defaults, and at least 100,000. A count fixed at 100,000
    /// kept a 1 GB budget of 1 KB responses about a third full.
    package static func memoryEntryLimit(memoryCapacity: Int) -> Int {
        max(100_000, Int(min(Double(Int32.max), Double(memoryCapacity) * 100_000 / Double(64 << 20))))
    }
}

#endif
