// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import Logging
import ServiceLifecycle

@testable import CacheProxyCore

/// A proxy running in its own service group, listening on a free loopback port.
struct RunningProxy {
    let proxy: CacheProxy
    let port: Int
    /// The admin listener's port, when the configuration has one.
    let adminPort: Int?
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    /// Starts a proxy over `transport` and returns once it listens.
    static func start(_ configuration: CacheProxy.Configuration, transport: any HTTPTransport) async throws -> Self {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let (adminPorts, adminContinuation) = AsyncStream.makeStream(of: Int.self)
        if configuration.admin == nil { adminContinuation.finish() }
        let proxy = try CacheProxy(
            configuration: configuration,
            transport: transport,
            onListening: { port in
                continuation.yield(port)
                continuation.finish()
            },
            onAdminListening: { port in
                adminContinuation.yield(port)
                adminContinuation.finish()
            }
        )
        let group = ServiceGroup(
            services: [proxy],
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let running = Task { try await group.run() }
        var port = 0
        for await bound in ports { port = bound }
        var adminPort: Int?
        for await bound in adminPorts { adminPort = bound }
        return RunningProxy(proxy: proxy, port: port, adminPort: adminPort, group: group, running: running)
    }

    /// Shuts the proxy down gracefully and waits for it.
    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await running.value
    }
}
#endif
