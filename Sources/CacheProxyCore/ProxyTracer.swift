// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPTypes
import Tracing

/// The proxy's spans (docs/tracing.md): one server span per request, named after its method, under
/// the context its fields carry (W3C `traceparent` with an OpenTelemetry tracer), with
/// OpenTelemetry's HTTP server attributes and the cache's status (`layeredcache.cache_status`:
/// `HIT`, `MISS`, `STALE`, ...). The client's `layeredcache.fetch` span and its exchange with the
/// upstream are its children. A fresh hit answered on the event loop is one span, made after the
/// answer, from its start.
///
/// With the no-op tracer (nothing bootstrapped, none configured) the proxy has no `ProxyTracer`.
struct ProxyTracer: Sendable {
    let tracer: any Tracer

    /// The configured tracer, else the bootstrapped one; nil when that is the no-op tracer.
    static func resolve(_ configured: (any Tracer)?) -> ProxyTracer? {
        FetchTracer.activeTracer(configured).map(ProxyTracer.init(tracer:))
    }

    /// Runs `answer` in the request's server span.
    func serve(
        _ request: HTTPRequest,
        _ answer: () async -> ProxyHandler.Reply
    ) async -> ProxyHandler.Reply {
        await tracer.withSpan(request.method.rawValue, context: context(of: request), ofKind: .server) { span in
            let answered = await answer()
            Self.describe(request, answered.0.status.code, answered.2, in: span)
            return answered
        }
    }

    /// Records the span of a hit answered on the event loop, started at `start`.
    func recordHit(_ request: HTTPRequest, status: Int, start: DefaultTracerClock.Instant) {
        let span = tracer.startSpan(request.method.rawValue, context: context(of: request), ofKind: .server, at: start)
        Self.describe(request, status, .hit, in: span)
        span.end()
    }

    /// The context `request` carries, under the current one.
    private func context(of request: HTTPRequest) -> ServiceContext {
        var context = ServiceContext.current ?? .topLevel
        tracer.extract(request.headerFields, into: &context, using: HTTPFieldsExtractor())
        return context
    }

    /// OpenTelemetry's HTTP server attributes (the path without its query, which may carry
    /// credentials) and the cache's status.
    private static func describe(_ request: HTTPRequest, _ status: Int, _ cacheStatus: CacheStatus, in span: any Span) {
        span.attributes["http.request.method"] = request.method.rawValue
        span.attributes["url.path"] = FetchTracer.pathWithoutQuery(request.path)
        span.attributes["url.scheme"] = "http"
        span.attributes["http.response.status_code"] = status
        span.attributes["layeredcache.cache_status"] = cacheStatus.rawValue
        if status >= 500 {
            span.attributes["error.type"] = String(status)
            span.setStatus(SpanStatus(code: .error))
        }
    }
}

/// Reads a tracer's context from request fields.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { fields[$0] }
    }
}
#endif
