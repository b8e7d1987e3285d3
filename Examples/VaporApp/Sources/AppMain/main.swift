// SPDX-License-Identifier: Apache-2.0

import App
import Foundation
import OTel
import ServiceLifecycle
import Vapor

// swift run AppMain [serve --port 8080] ; LAYEREDCACHE_DIRECTORY=/tmp/example-cache keeps the caches on disk.
// With OTEL_EXPORTER_OTLP_ENDPOINT set (e.g. http://127.0.0.1:4318), the request spans and the
// cache's own (layeredcache.middleware) are exported over OTLP/HTTP through swift-otel.
let environment = ProcessInfo.processInfo.environment
var observability: (any Service)?
if environment["OTEL_EXPORTER_OTLP_ENDPOINT"] != nil {
    var configuration = OTel.Configuration.default
    configuration.serviceName = "vapor-example"
    configuration.traces.otlpExporter.protocol = .httpProtobuf
    configuration.metrics.enabled = false
    configuration.logs.enabled = false
    observability = try OTel.bootstrap(configuration: configuration)
}

let app = try await Application.make(try Environment.detect())
// The request's span first, so that the cache's span is its child.
app.middleware.use(TracingMiddleware(), at: .beginning)
do {
    try configure(app, AppOptions(cacheDirectory: environment["LAYEREDCACHE_DIRECTORY"]))
    try await withThrowingTaskGroup(of: Void.self) { group in
        if let observability { group.addTask { try await observability.run() } }
        try await app.execute()
        group.cancelAll()
    }
} catch {
    app.logger.report(error: error)
    try? await app.asyncShutdown()
    throw error
}
try await app.asyncShutdown()
