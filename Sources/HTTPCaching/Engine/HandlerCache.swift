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

    /// What the cache makes of a request before any handler runs.
    package enum Start: Sendable {
        /// Answered without the handler: the head, with its `Age` and `Cache-Status`, and the
        /// body (nil for a 304, a `HEAD` or a 504; the head says what `Content-Length` to send).
        case answer(HTTPResponse, body: [UInt8]?)
        /// The handler is called: ``respond(continuing:with:logger:next:)`` does the rest.
        case handler(Pending)
    }

    /// A request the handler answers, with what its lookup found.
    package struct Pending: Sendable {
        enum Step: Sendable {
            /// An unsafe method: the handler answers, and a success invalidates the target (the
            /// request as the cache keys it).
            case unsafe(keyed: HTTPRequest)
            /// Nothing stored: the request goes to the handler as it came.
            case forward(ResponseLookup)
            /// A stored answer the plan revalidates.
            case revalidate(ResponseLookup, CachedResponse, RequestEngine.Exchange)
        }
        let request: HTTPRequest
        let step: Step
    }

    /// Answers `request` from the cache, or through `next` and stores what it answers; in a
    /// `layeredcache.middleware` span when the middleware is traced (under `context`, the
    /// request's when the framework keeps it on the request, or the task's), with the answer's
    /// cache status and status code.
    ///
    /// Inlinable, so that a framework's middleware runs it specialized for its responses: a fresh
    /// hit is ``start(_:)`` and the framework's own `response(head:body:)`, with no generic call
    /// between them.
    /// - Parameters:
    ///   - request: the request as the server received it.
    ///   - next: calls the app's next responder with the request as it came (nil), or with this
    ///     head instead (a revalidation's, with its `If-None-Match` / `If-Modified-Since`); the
    ///     request's body is the framework's to pass on.
    @inlinable
    package func respond<Responses: HandlerResponses>(
        to request: HTTPRequest,
        with responses: Responses,
        logger: Logger,
        context: ServiceContext?,
        next: (HTTPRequest?) async throws -> Responses.Response
    ) async throws -> Responses.Response {
        guard let tracer else {
            return try await respondWithoutSpan(to: request, with: responses, logger: logger, next: next)
        }
        return try await tracedRespond(
            to: request,
            with: responses,
            logger: logger,
            in: tracer,
            context: context,
            next: next
        )
    }

    /// ``respond(to:with:logger:context:next:)`` without a span.
    @inlinable
    package func respondWithoutSpan<Responses: HandlerResponses>(
        to request: HTTPRequest,
        with responses: Responses,
        logger: Logger,
        next: (HTTPRequest?) async throws -> Responses.Response
    ) async throws -> Responses.Response {
        switch await start(request) {
        case .answer(let head, let body):
            return responses.response(head: head, body: body)
        case .handler(let pending):
            return try await respond(continuing: pending, with: responses, logger: logger, next: next)
        }
    }

    /// ``respond(to:with:logger:context:next:)`` in its span, made by `tracer`.
    package func tracedRespond<Responses: HandlerResponses>(
        to request: HTTPRequest,
        with responses: Responses,
        logger: Logger,
        in tracer: any Tracer,
        context: ServiceContext?,
        next: (HTTPRequest?) async throws -> Responses.Response
    ) async throws -> Responses.Response {
        let context = context ?? ServiceContext.current ?? .topLevel
        return try await tracer.withSpan("layeredcache.middleware", context: context, ofKind: .internal) { span in
            let recorder = CacheStatusRecorder()
            let response = try await CacheStatusRecorder.$current.withValue(recorder) {
                try await respondWithoutSpan(to: request, with: responses, logger: logger, next: next)
            }
            if let status = recorder.status { span.attributes["layeredcache.cache_status"] = status }
            span.attributes["http.response.status_code"] = responses.head(of: response).status.code
            return response
        }
    }

    /// Looks `request` up: the answer when the cache has one without the handler (a fresh hit, a
    /// 304 to the client's own validators, a 504 to `only-if-cached`), else what the handler is
    /// to be called for. Not generic: the hit path is the same code for every framework.
    package func start(_ request: HTTPRequest) async -> Start {
        let keyed = keyedRequest(request)
        guard request.method == .get || request.method == .head else {
            return .handler(Pending(request: request, step: .unsafe(keyed: keyed)))
        }
        let lookup = await cache.lookup(keyed)
        switch engine.plan(RequestEngine.Read(keyed), lookup: lookup, now: cache.configuration.now()) {
        case .answer(let offer):
            let (head, body) = answer(
                from: offer.stored,
                age: offer.age,
                to: request,
                status: .hit(ttl: offer.lifetime - offer.age)
            )
            return .answer(head, body: body)
        case .missing:
            var head = HTTPResponse(status: .gatewayTimeout)
            head.headerFields[.cacheControl] = "no-store"
            head.headerFields[.contentLength] = "0"
            appendStatus(.miss(.request), to: &head)
            return .answer(head, body: nil)
        case .answerAndRefresh(_, let plan), .answerThenForward(_, let plan), .forward(let plan):
            // A refresh runs in the foreground here: the handler it calls belongs to the request.
            guard let stored = lookup.stored else {
                return .handler(Pending(request: request, step: .forward(lookup)))
            }
            return .handler(Pending(request: request, step: .revalidate(lookup, stored, plan)))
        }
    }

    /// The rest of a request ``start(_:)`` could not answer: calls the handler through `next`
    /// (see ``respond(to:with:logger:context:next:)``) and stores, freshens or invalidates as
    /// its answer says.
    package func respond<Responses: HandlerResponses>(
        continuing pending: Pending,
        with responses: Responses,
        logger: Logger,
        next: (HTTPRequest?) async throws -> Responses.Response
    ) async throws -> Responses.Response {
        switch pending.step {
        case .unsafe(let keyed):
            return try await respondUnsafe(keyed, with: responses, logger: logger, next: next)
        case .forward(let lookup):
            let exchange = Exchange(cache: self, responses: responses, logger: logger, lookup: lookup)
            return try await exchange.forward(status: .miss(.uriMiss), next: next)
        case .revalidate(let lookup, let stored, let plan):
            let exchange = Exchange(cache: self, responses: responses, logger: logger, lookup: lookup)
            return try await exchange.revalidate(stored, plan: plan, request: pending.request, next: next)
        }
    }

    /// An unsafe method's request: the handler answers it as it came; a success invalidates the
    /// target (RFC 9111 §4.4), and an answer that is the target's current representation is
    /// stored for it.
    private func respondUnsafe<Responses: HandlerResponses>(
        _ keyed: HTTPRequest,
        with responses: Responses,
        logger: Logger,
        next: (HTTPRequest?) async throws -> Responses.Response
    ) async throws -> Responses.Response {
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

    /// The answer made from `stored`: its head with `Age` (RFC 9111 §5.1) and its body, or a 304
    /// when `request`'s preconditions say the client's copy is current; a `HEAD` gets the head.
    func answer(
        from stored: CachedResponse,
        age: TimeInterval,
        to request: HTTPRequest,
        status: CacheStatusValue
    ) -> (HTTPResponse, [UInt8]?) {
        var head = stored.response
        head.headerFields[.age] = String(Int(min(Double(Int32.max), max(0, age).rounded(.down))))
        appendStatus(status, to: &head)
        if CacheRules.isNotModified(request, head) {
            head.status = .notModified
            head.headerFields[.contentLength] = nil
            return (head, nil)
        }
        head.headerFields[.contentLength] = String(stored.body.count)
        return (head, request.method == .head ? nil : stored.body)
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

    /// `head` with the `Cache-Status` member for `status` appended (none when the middleware adds
    /// none).
    private func appendStatus(_ status: CacheStatusValue, to head: inout HTTPResponse) {
        if let value = statusValue(status) { head.headerFields[values: cacheStatusField].append(value) }
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
