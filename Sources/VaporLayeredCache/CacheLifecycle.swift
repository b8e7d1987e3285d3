// SPDX-License-Identifier: Apache-2.0

#if Vapor
public import CacheTiers
public import HTTPCaching
public import Vapor
import Synchronization

/// Ties a cache to a Vapor application's lifecycle: once the application has booted, the cache's
/// `run()` (the disk tier's maintenance, the shared tier's connections and invalidations) runs
/// beside it; when it shuts down, that stops and the cache closes, which writes the disk tier's
/// index snapshot so that the next start replays nothing.
///
/// ```swift
/// let middleware = try HTTPCacheMiddleware(configuration: .init(cache: .init(disk: .init(directory: path), mode: .shared)))
/// app.middleware.use(middleware)
/// app.lifecycle.use(CacheLifecycle(middleware.cache))
/// ```
///
/// `app.caches.use(.layered(tiers))` registers one for its tiers. The cache closes in
/// `shutdownAsync`: an application shut down with the asynchronous `asyncShutdown()` (what
/// `Application.make` and `execute()` lead to), not the deprecated blocking `shutdown()`.
public final class CacheLifecycle: LifecycleHandler {
    private let name: String
    private let run: @Sendable () async throws -> Void
    private let close: @Sendable () async throws -> Void
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// The lifecycle of `cache`: `run()` while the application runs, `close()` at shutdown.
    public convenience init(_ cache: TieredCache) {
        self.init(name: "tiered cache", run: { try await cache.run() }, close: { try await cache.close() })
    }

    /// The lifecycle of `cache`: `run()` while the application runs, `close()` at shutdown.
    public convenience init(_ cache: ResponseCache) {
        self.init(name: "response cache", run: { try await cache.run() }, close: { try await cache.close() })
    }

    private init(
        name: String,
        run: @escaping @Sendable () async throws -> Void,
        close: @escaping @Sendable () async throws -> Void
    ) {
        self.name = name
        self.run = run
        self.close = close
    }

    /// Starts the cache's `run()`.
    public func didBootAsync(_ application: Application) async throws {
        start(logger: application.logger)
    }

    /// Starts the cache's `run()`.
    public func didBoot(_ application: Application) throws {
        start(logger: application.logger)
    }

    private func start(logger: Logger) {
        let run = self.run
        let name = self.name
        let started = Task {
            do {
                try await run()
            } catch is CancellationError {
            } catch {
                logger.error("the \(name) stopped running", metadata: ["error": "\(error)"])
            }
        }
        task.withLock { $0 = started }
    }

    /// Stops the cache's `run()` and closes the cache.
    public func shutdownAsync(_ application: Application) async {
        let running = task.withLock { task in
            defer { task = nil }
            return task
        }
        running?.cancel()
        await running?.value
        do {
            try await close()
        } catch {
            application.logger.error("the \(name) did not close cleanly", metadata: ["error": "\(error)"])
        }
    }
}
#endif
