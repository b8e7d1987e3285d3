// SPDX-License-Identifier: Apache-2.0

import HTTPTypes
package import Tracing

/// The spans of a client's fetches (docs/tracing.md), through swift-distributed-tracing:
/// - `layeredcache.fetch` (internal): one per fetch, with where its answer came from and how fresh
///   it is;
/// - `layeredcache.lookup` (internal): the cache's read after the memory tier's fresh-hit probe
///   (with a delegate or through `events(for:)`, which read the cache whole, every read);
/// - the exchange with the origin (client, named after the method, with OpenTelemetry's HTTP
///   attributes), into whose request the tracer injects the context (W3C `traceparent` with an
///   OpenTelemetry tracer);
/// - `layeredcache.store` (internal): storing or freshening the answer.
///
/// A client whose tracer is the no-op one (nothing bootstrapped) has no `FetchTracer` at all: a
/// fetch then pays one nil check.
package struct FetchTracer: Sendable {
    let tracer: any Tracer

    /// The configured tracer, else the bootstrapped one; nil when that is the no-op tracer.
    static func resolve(_ configured: (any Tracer)?) -> FetchTracer? {
        activeTracer(configured).map(FetchTracer.init(tracer:))
    }

    /// The configured tracer, else the bootstrapped one; nil when that is the no-op tracer (the
    /// proxy's spans resolve theirs here too).
    package static func activeTracer(_ configured: (any Tracer)?) -> (any Tracer)? {
        let tracer = configured ?? InstrumentationSystem.tracer
        return tracer is NoOpTracer ? nil : tracer
    }

    /// `path` without its query, which may carry credentials (a signed URL's signature, an API
    /// key): what a span may say of a request's target.
    package static func pathWithoutQuery(_ path: String?) -> String {
        guard let path else { return "" }
        return path.firstIndex(of: "?").map { String(path[..<$0]) } ?? path
    }

    /// Runs `fetch` in a `layeredcache.fetch` span that says what it answered.
    func fetch(_ request: HTTPRequest, _ fetch: () async -> FetchResult) async -> FetchResult {
        await tracer.withSpan("layeredcache.fetch", ofKind: .internal) { span in
            Self.describe(request, in: span)
            let result = await fetch()
            span.attributes["layeredcache.source"] = result.source.description
            span.attributes["layeredcache.freshness"] = Self.name(of: result.freshness)
            if let status = result.response?.status.code { span.attributes["http.response.status_code"] = status }
            if let error = result.error {
                span.attributes["error.type"] = error.code.description
                span.setStatus(SpanStatus(code: .error))
            }
            return result
        }
    }

    /// Runs `body` in an internal span named `name`.
    func span<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
        try await tracer.withSpan(name, ofKind: .internal) { _ in try await body() }
    }

    /// Sends `request` through `send` in a client span, with the context injected into its fields.
    func exchange<Answer: Sendable>(
        _ request: HTTPRequest,
        head: (Answer) -> HTTPResponse,
        _ send: (HTTPRequest) async throws -> Answer
    ) async throws -> Answer {
        try await tracer.withSpan(request.method.rawValue, ofKind: .client) { span in
            Self.describe(request, in: span)
            var outgoing = request
            tracer.inject(span.context, into: &outgoing.headerFields, using: HTTPFieldsInjector())
            do {
                let answer = try await send(outgoing)
                let status = head(answer).status.code
                span.attributes["http.response.status_code"] = status
                if status >= 400 {
                    span.attributes["error.type"] = String(status)
                    span.setStatus(SpanStatus(code: .error))
                }
                return answer
            } catch {
                span.attributes["error.type"] = CachingClientError.classify(error).code.description
                throw error
            }
        }
    }

    /// OpenTelemetry's HTTP request attributes. The URL goes without its query, which may carry
    /// credentials (a signed URL's signature, an API key).
    static func describe(_ request: HTTPRequest, in span: any Span) {
        span.attributes["http.request.method"] = request.method.rawValue
        let scheme = request.scheme ?? "https"
        span.attributes["url.full"] = "\(scheme)://\(request.authority ?? "")\(pathWithoutQuery(request.path))"
        span.attributes["url.scheme"] = scheme
        if let authority = request.authority {
            let (host, port) = Self.split(authority, defaultPort: scheme == "http" ? 80 : 443)
            span.attributes["server.address"] = host
            span.attributes["server.port"] = port
        }
    }

    /// `host` and port of an authority (`[::1]:8080`, `example.com`).
    static func split(_ authority: String, defaultPort: Int) -> (String, Int) {
        guard let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]"),
            let port = Int(authority[authority.index(after: colon)...])
        else { return (authority, defaultPort) }
        return (String(authority[..<colon]), port)
    }

    static func name(of freshness: Freshness) -> String {
        if freshness.isFresh { return "fresh" }
        return freshness.staleReason == nil ? "missing" : "stale"
    }
}

/// Writes a tracer's context into request fields.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        fields[name] = value
    }
}
