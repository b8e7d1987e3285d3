// SPDX-License-Identifier: Apache-2.0

#if Proxy
import ArgumentParser
import AsyncHTTPClient
import AsyncHTTPClientTransport
import CacheProxyCore
import CacheTiers
import CachingClient
import HTTPCaching
import HTTPTypes
import Logging
import NIOCore
import NIOPosix
import PostgresCacheTier
import ServiceLifecycle
import UnixSignals

/// `cache-proxy`: a caching HTTP/1.1 reverse proxy in front of one upstream.
@main
struct CacheProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache-proxy",
        abstract: "A caching HTTP/1.1 reverse proxy (RFC 9111) in front of one upstream.",
        discussion: """
            Shared mode is a shared cache (s-maxage, no private responses, Authorization rules);
            private mode behaves as one user's client cache. SIGINT or SIGTERM shut it down
            gracefully. See docs/cache-proxy.md.
            """
    )

    @Option(help: "The upstream URL, such as http://127.0.0.1:8000.")
    var upstream: String

    @Option(help: "HOST:PORT to listen on (port 0 picks one).")
    var listen = "127.0.0.1:8002"

    @Option(help: "shared or private.")
    var mode = "shared"

    @Option(help: "The cache directory; without it responses are kept in memory only.")
    var directory: String?

    @Option(help: "The memory tier's budget in bytes (default: the memory tier's, 64 MiB).")
    var memoryCapacity: Int?

    @Option(
        help: """
            The most entries the memory tier holds (default: 100,000 per 64 MiB of its budget, as the \
            memory tier's defaults, and at least 100,000).
            """
    )
    var memoryEntries: Int?

    @Option(help: "The disk tier's budget in bytes (default: the disk tier's, 512 MiB).")
    var diskCapacity: Int?

    @Option(
        help: """
            Share the cache with other proxies through PostgreSQL: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE \
            (see docs/shared-tier.md).
            """
    )
    var postgres: String?

    @Option(
        help: """
            A file holding the key (32 bytes, or 64 hex digits; mode 0600) that seals the disk tier \
            and the PostgreSQL rows; never give the key itself on the command line.
            """
    )
    var keyFile: String?

    @Option(
        help: """
            A file holding the bearer token (mode 0600) that a PURGE request must carry \
            (Authorization: Bearer TOKEN) to remove a URL's stored responses; without it PURGE is \
            refused (405).
            """
    )
    var purgeTokenFile: String?

    @Option(
        help: """
            The response fields whose values (separated by spaces or commas) tag the stored \
            response, comma-separated; a PURGE carrying one of them purges by tag. "none" for none.
            """
    )
    var tagFields = "Surrogate-Key,Cache-Tag"

    @Flag(help: "Pass the tag fields on to clients (by default they are neither stored nor sent).")
    var exposeTagFields = false

    @Flag(
        help: """
            Send a Range request the cache cannot answer upstream with its Range, and store the \
            206 answers as partial content (by default the whole response is fetched and cut).
            """
    )
    var forwardRanges = false

    @Option(
        help: """
            HOST:PORT of the admin listener: GET /metrics (Prometheus), GET /healthz, and PURGE; \
            keep it where only operators reach it.
            """
    )
    var adminListen: String?

    @Option(
        help: """
            A PEM file with the listener's certificate and its intermediates: the listener then \
            speaks TLS 1.2/1.3 (with --tls-key). SIGHUP reads both files again; connections \
            accepted after it get the new certificate, open ones keep theirs.
            """
    )
    var tlsCertificate: String?

    @Option(help: "The PEM file with the private key of --tls-certificate.")
    var tlsKey: String?

    @Flag(
        inversion: .prefixedNo,
        help: "Serve HTTP/2: by ALPN over TLS, and in cleartext to clients that open with its preface."
    )
    var http2 = true

    @Option(help: "The most HTTP/2 streams a client may have open on one connection.")
    var http2MaxConcurrentStreams = 100

    @Flag(help: "Add X-Cache: HIT, STALE, REVALIDATED, MISS, ERROR or PURGE to every response.")
    var cacheStatusHeader = false

    @Option(help: "Seconds one upstream exchange may take before the answer is a 504.")
    var timeout = 30

    @Option(
        help: """
            The targeted cache-control fields obeyed in place of Cache-Control in shared mode, \
            comma-separated, first match wins (RFC 9213); "none" for none.
            """
    )
    var targetedCacheControl = "CDN-Cache-Control"

    @Option(help: "The connections kept to the upstream.")
    var upstreamConnections = 64

    @Option(
        help: """
            The upstream client: "origin" (SwiftNIO HTTP/1.1; passes interim 1xx responses on) or \
            "async-http-client" (drops them; one connection per request, see docs/cache-proxy.md). \
            Both speak TLS to an https upstream.
            """
    )
    var upstreamClient = "origin"

    @Option(
        help: """
            A PEM file of the certificate authorities an https upstream's certificate must chain \
            to, in place of the system's trust store.
            """
    )
    var upstreamCaFile: String?

    @Option(
        help: """
            The event loops (threads) that serve connections and the upstream client; default: \
            one per CPU the process may run on (its affinity mask, as taskset sets it).
            """
    )
    var eventLoops: Int?

    @Option(help: "trace, debug (a line per request), info, notice, warning, error or critical.")
    var logLevel = "info"

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        let cacheMode: ResponseCache.Mode
        switch mode {
        case "shared": cacheMode = .shared
        case "private": cacheMode = .private
        default: throw ValidationError("--mode must be shared or private, not '\(mode)'")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        guard upstreamConnections > 0 else { throw ValidationError("--upstream-connections must be positive") }
        guard eventLoops.map({ $0 > 0 }) ?? true else { throw ValidationError("--event-loops must be positive") }
        guard ["origin", "async-http-client"].contains(upstreamClient) else {
            throw ValidationError("--upstream-client must be origin or async-http-client, not '\(upstreamClient)'")
        }
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        var logger = Logger(label: "cache-proxy")
        logger.logLevel = level
        let upstreamURL: Upstream
        let address: ListenAddress
        let admin: ListenAddress?
        do {
            upstreamURL = try Upstream(upstream)
            address = try ListenAddress(listen)
            admin = try adminListen.map { text throws(CacheProxyError) in try ListenAddress(text) }
        } catch {
            throw ValidationError(error.message)
        }
        guard (tlsCertificate == nil) == (tlsKey == nil) else {
            throw ValidationError("--tls-certificate and --tls-key go together")
        }
        let tls = tlsCertificate.flatMap { chain in
            tlsKey.map { CacheProxy.ListenerTLS(certificateChainPath: chain, privateKeyPath: $0) }
        }
        var cache = ResponseCache.Configuration(mode: cacheMode, logger: logger)
        if let memoryCapacity {
            cache.memory.capacityBytes = memoryCapacity
            cache.memory.maximumEntryCount = CacheProxy.memoryEntryLimit(memoryCapacity: memoryCapacity)
        }
        if let memoryEntries {
            guard memoryEntries >= 0 else { throw ValidationError("--memory-entries must not be negative") }
            cache.memory.maximumEntryCount = memoryEntries
        }
        cache.targetedCacheControl = try Self.fieldNames(targetedCacheControl, option: "--targeted-cache-control")
        var purgeToken: String?
        if let purgeTokenFile {
            do {
                purgeToken = try Self.purgeToken(file: purgeTokenFile)
            } catch {
                throw ValidationError("--purge-token-file: \(error)")
            }
        }
        var key: EncryptionKey?
        if let keyFile {
            do {
                key = try Self.encryptionKey(file: keyFile)
            } catch {
                throw ValidationError("--key-file: \(error)")
            }
        }
        if let directory {
            cache.disk = DiskTier.Configuration(
                directory: directory,
                logger: logger,
                encryption: key.map { DiskEncryption(key: $0) }
            )
            if let diskCapacity { cache.disk?.capacityBytes = diskCapacity }
        }
        if let postgres {
            do {
                // With a key the rows are sealed, with a disk tier or without one.
                cache.shared = try PostgresSharedTier(
                    configuration: .init(url: postgres, encryption: key, logger: logger)
                )
            } catch {
                throw ValidationError("--postgres: \(error)")
            }
        }
        // The upstream client: AsyncHTTPClient, created here and shut down after the proxy stops. A
        // down upstream fails at once (then stale-if-error or 502), and each connection carries one
        // exchange: AsyncHTTPClient would read bytes an origin sent past an answer as the next one's.
        var upstreamConfiguration = HTTPClientTransport.clientConfiguration(maximumConnections: upstreamConnections)
        if let upstreamCaFile {
            upstreamConfiguration.tlsConfiguration = try Self.upstreamTLS(certificateAuthorities: upstreamCaFile)
        }
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: eventLoops ?? Self.usableCPUs())
        let http = HTTPClient(eventLoopGroupProvider: .shared(loops), configuration: upstreamConfiguration)
        // The proxy's own HTTP/1.1 client (plain or TLS) passes interim responses on.
        let origin =
            upstreamClient == "origin"
            ? OriginTransport(
                eventLoopGroup: loops,
                configuration: .init(
                    maximumIdleConnections: upstreamConnections,
                    certificateAuthorityPath: upstreamCaFile
                )
            ) : nil
        let configuration = CacheProxy.Configuration(
            upstream: upstreamURL,
            listen: address,
            cache: cache,
            cacheStatusHeader: cacheStatusHeader ? HTTPField.Name("X-Cache") : nil,
            requestTimeout: .seconds(timeout),
            logger: logger,
            eventLoopGroup: loops,
            purgeToken: purgeToken,
            tagFields: try Self.fieldNames(tagFields, option: "--tag-fields"),
            exposesTagFields: exposeTagFields,
            forwardsRanges: forwardRanges,
            admin: admin,
            tls: tls,
            http2: http2 ? CacheProxy.HTTP2(maximumConcurrentStreams: http2MaxConcurrentStreams) : nil
        )
        var failure: (any Error)?
        do {
            try await serve(configuration, transport: origin ?? HTTPClientTransport(client: http))
        } catch {
            failure = error
        }
        await origin?.shutdown()
        try? await http.shutdown()
        try? await loops.shutdownGracefully()
        if let failure { throw failure }
        logger.info("stopped")
    }

    /// `text`, comma-separated field names, or "none" for none.
    static func fieldNames(_ text: String, option: String) throws -> [HTTPField.Name] {
        guard text != "none" else { return [] }
        return try text.split(separator: ",").map { name in
            guard let field = HTTPField.Name(name.filter { $0 != " " }) else {
                throw ValidationError("\(option): '\(name)' is not a field name")
            }
            return field
        }
    }

    private func serve(_ configuration: CacheProxy.Configuration, transport: any HTTPTransport) async throws {
        let logger = configuration.logger
        let (address, upstreamURL, cacheMode) = (configuration.listen, configuration.upstream, configuration.cache.mode)
        let proxy = try CacheProxy(
            configuration: configuration,
            transport: transport,
            onListening: { [directory, postgres] port in
                logger.info(
                    "listening",
                    metadata: [
                        "address": "\(address.host):\(port)", "upstream": "\(upstreamURL)", "mode": "\(cacheMode)",
                        "directory": "\(directory ?? "(memory only)")",
                        "shared": "\(postgres == nil ? "no" : "PostgreSQL")",
                    ]
                )
            },
            onAdminListening: { [admin = configuration.admin] port in
                logger.info("admin listening", metadata: ["address": "\(admin?.host ?? ""):\(port)"])
            }
        )
        let group = ServiceGroup(
            configuration: .init(
                services: [proxy],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        // SIGHUP is trapped before the listener starts: its default action ends the process.
        let hangups = configuration.tls == nil ? nil : await UnixSignalsSequence(trapping: .sighup)
        let reloads = hangups.map { hangups in
            Task { await Self.reloadCertificates(of: proxy, on: hangups, logger: logger) }
        }
        defer { reloads?.cancel() }
        try await group.run()
    }

    /// Reads the listener's certificate and key again on every `SIGHUP`, until cancelled; a
    /// reload that fails is logged and the certificate in use stays.
    private static func reloadCertificates(
        of proxy: CacheProxy,
        on hangups: UnixSignalsSequence,
        logger: Logger
    ) async {
        for await _ in hangups {
            do {
                try proxy.reloadCertificates()
                logger.notice("reloaded the listener's certificate")
            } catch {
                logger.error("could not reload the listener's certificate", metadata: ["error": "\(error)"])
            }
        }
    }
}
#endif
