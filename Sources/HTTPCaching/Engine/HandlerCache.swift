// SPDX-License-Identifier: Apache-2.0

package import HTTPTypes
package import Logging
package import Tracing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A server framework's responses as ``HandlerCache`` sees them: the adapter between an app's own
/// handler, as the origin, and the request engine. Each framework's middleware has one.
package protocol HandlerResponses: Sendable {
    /// The framework's response.
    associatedtype Response

    /// The response's head: its status and fields.
    func head(of response: Response) -> HTTPResponse
    /// `response` with `value` appended to its `Cache-Status` field.
    func appendingCacheStatus(_ value: String, to response: Response) -> Response
    /// The answer made from a stored head and body; nil for none (a 304, a `HEAD`): `head`
    /// already says what `Content-Length` to send.
    func response(head: HTTPResponse, body: [UInt8]?) -> Response
    /// `response`, with its body handed to `store` once it is complete, within `limit` bytes and
    /// without trailers; or `response` as it is when its body cannot be stored (too large, or a
    /// stream the framework gives no way to copy as it is written).
    func storing(_ response: Response, limit: Int, with store: HandlerCache.Store) async throws -> Response
}

/// The request engine with an app's own handler as the origin: what every server middleware
/// (Hummingbird's, Vapor's) runs, so that one set of rules — what is answered from the cache,
/// how a stale answer is revalidated, what is never stored for every visitor — holds at every
/// door. A framework brings its ``HandlerResponses`` and the call to its next responder.
package struct HandlerCache: Sendable {
    /// The cache answers come from and go to.
    package let cache: ResponseCache
    /// The middleware's configuration.
    package let configuration: MiddlewareConfiguration
    /// The tracer of the middleware's span; nil when it is the no-op one (then no span, and the
    /// cache status is not recorded: an untraced answer reads no task-local).
    package let tracer: (any Tracer)?
    let engine: RequestEngine

    /// The engine over `cache`, as `configuration` says (its `cache` is not used).
    package init(cache: ResponseCache, configuration: MiddlewareConfiguration) {
        precondition(configuration.maximumBodyBytes >= 0, "maximumBodyBytes must not be negative")
        self.cache = cache
        self.configuration = configuration
        let tracer = configuration.tracer ?? InstrumentationSystem.tracer
        self.tracer = tracer is NoOpTracer ? nil : tracer
        self.engine = RequestEngine(rules: cache.rules)
    }

    /// ``respond(to:with:logger:next:)`` in a `layeredcache.middleware` span when the middleware
    /// is traced: under `context` (the request's, when the framework keeps it on the request) or
    /// the task's, with the answer's cache status and status code.
    package func respond<Responses: HandlerResponses>(
        to request: HTTPRequest,
        with responses: Responses,
        logger: Logger,
        context: ServiceContext?,
        next: (HTTPRequest?) async throws -> Responses.Response
    ) async throws -> Responses.Response {
        guard let tracer else { return try await respond(to: request, with: responses, logger: logger, next: next) }
        let context = context ?? ServiceContext.current ?? .topLevel
        return try await tracer.withSpan("layeredcache.middleware", context: context, ofKind: .internal) { span in
            let recorder = CacheStatusRecorder()
            let response = try await CacheStatusRecorder.$current.withValue(recorder) {
                try await respond(to: request, with: responses, logger: logger, next: next)
            }
            if let status = recorder.status { span.attributes["layeredcache.cache_status"] = status }
            span.attributes["http.response.status_code"] = responses.head(of: response).status.code
            return response
        }
    }

    /// Answers `request` from the cache, or through `next` and stores what it answers.
    /// - Parameters:
    ///   - request: the request as the server received it.
    ///   - next: calls the app's next responder with the request as it came (nil), or with this
    ///     head instead (a revalidation's, with its `If-None-Match` / `If-Modified-Since`); the
    ///     request's body is the framework's to pass on.
    package func respond<Responses: HandlerResponses>(
        to request: HTTPRequest,
        with responses: Responses,
        logger: Logger,
        next: (HTTPRequest?) async throws -> Responses.Response
    ) async throws -> Responses.Response {
        let keyed = keyedRequest(request)
        guard request.method == .get || request.method == .head else {
            let requestTime = cache.configuration.now()
            let response = try await next(nil)
            let head = responses.head(of: response)
            let outcome = engine.outcome(of: head, sent: keyed, original: keyed)
            guard outcome == .invalidate || outcome.storedAs != nil else { return response }
            do {
                try await cache.invalidate(after: head, to: keyed)
            } catch {
                logger.warning("could not invalidate cached responses", metadata: ["error": "\(error)"])
            }
            guard let get = outcome.storedAs else { return response }
            // A POST's answer that is its target's current representation (RFC 9110 §9.3.3).
            let lookup = await cache.lookup(get)
            let exchange = Exchange(cache: self, responses: responses, logger: logger, lookup: lookup)
            return try await exchange.store(response, requestTime: requestTime, status: .miss(.method))
        }
        let lookup = await cache.lookup(keyed)
        let exchange = Exchange(cache: self, responses: responses, logger: logger, lookup: lookup)
        switch engine.plan(RequestEngine.Read(keyed), lookup: lookup, now: cache.configuration.now()) {
        case .answer(let offer):
            return exchange.answer(
                from: offer.stored,
                age: offer.age,
                to: request,
                status: .hit(ttl: offer.lifetime - offer.age)
            )
        case .missing:
            var head = HTTPResponse(status: .gatewayTimeout)
            head.headerFields[.cacheControl] = "no-store"
            head.headerFields[.contentLength] = "0"
            return exchange.withStatus(responses.response(head: head, body: nil), .miss(.request))
        case .answerAndRefresh(_, let plan), .answerThenForward(_, let plan), .forward(let plan):
            // A refresh runs in the foreground here: the handler it calls belongs to the request.
            guard let stored = lookup.stored else {
                return try await exchange.forward(status: .miss(.uriMiss), next: next)
            }
            return try await exchange.revalidate(stored, plan: plan, request: request, next: next)
        }
    }

    /// What every answer a middleware stores — a handler's new answer or one a 304 freshened —
    /// passes through after the cache's own hook: ``visitorRules``, then the delegate.
    package var storagePipeline: StoragePipeline {
        StoragePipeline(willCache: Self.visitorRules, steps: configuration.delegate.map { [$0.storageStep] } ?? [])
    }

    /// The rules that keep one visitor's own data out of what is stored for every visitor: an
    /// answer that sets a cookie is never stored, nor one to a request with credentials
    /// (`Authorization`, `Cookie`) unless the answer allows it (`public`, `s-maxage` or
    /// `must-revalidate`; RFC 9111 §3.5, for a cookie as for `Authorization`).
    package static var visitorRules: WillCache {
        WillCache { response, request in
            let fields = response.response.headerFields
            if fields[.setCookie] != nil || fields[setCookie2] != nil { return nil }
            if request.headerFields[.cookie] != nil || request.headerFields[.authorization] != nil {
                let directives = CacheControl(fields)
                guard directives.isPublic || directives.sharedMaxAge != nil || directives.mustRevalidate else {
                    return nil
                }
            }
            return response
        }
    }

    /// The request the cache keys by: the server's request with a scheme and an authority.
    package func keyedRequest(_ head: HTTPRequest) -> HTTPRequest {
        var keyed = head
        if keyed.scheme == nil { keyed.scheme = configuration.defaultScheme }
        if keyed.authority == nil { keyed.authority = configuration.defaultAuthority }
        return keyed
    }

    /// The `Cache-Status` member for `status`, or nil when the middleware adds none; recorded for
    /// the middleware's span when it is traced.
    func statusValue(_ status: CacheStatusValue) -> String? {
        if tracer != nil, let recorder = CacheStatusRecorder.current { recorder.record(status.parameters) }
        return configuration.cacheStatusName.map { "\($0); \(status.parameters)" }
    }
}

/// The `Set-Cookie2` field name (RFC 2965, obsolete but still refused), made once.
private let setCookie2 = HTTPField.Name("Set-Cookie2")!
