// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPCaching
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// The answer to a plain `GET` that the memory tier answers fresh, made on the event loop
/// without a task: the same answer ``ProxyHandler`` gives through the caching client (RFC 9111
/// with the protocol cache policy: the one stored response or variant that answers, fresh, for a request
/// without cache directives, with its current `Age`), conditional and range requests included.
/// Anything else — a miss, a stale entry, a body, cache directives, a second `Host` —
/// is nil and takes the ordinary path.
struct FastHit: Sendable {
    let cache: ResponseCache
    let upstream: Upstream
    let statusHeader: HTTPField.Name?
    let metrics: ProxyMetrics
    /// The buffers of whole stored bodies, shared by the hits on them.
    let bodies: HitBodyBuffers

    /// The answer to `incoming`, or nil when it takes the ordinary path.
    /// - Parameter allocator: allocates the body's buffer when it is not a whole stored body
    ///   already kept in ``bodies``.
    func answer(
        _ incoming: HTTPRequest,
        allocator: ByteBufferAllocator = ByteBufferAllocator()
    ) -> (response: HTTPResponse, body: ByteBuffer)? {
        let fields = incoming.headerFields
        guard incoming.method == .get, incoming.authority != nil, fields[Self.host] == nil,
            fields[.contentLength] == nil, fields[.transferEncoding] == nil, fields[.connection] == nil,
            let outgoing = ProxyMapping.upstreamRequest(for: incoming, upstream: upstream)
        else { return nil }
        let whole = ProxyMapping.wholeRequest(for: outgoing)
        guard let lookup = cache.memoryLookup(whole),
            let plain = cache.plainFreshness(of: lookup, now: cache.configuration.now()), plain.isFresh,
            var head = lookup.stored?.response, let body = lookup.stored?.body
        else { return nil }
        head.headerFields[.age] = String(Int(min(Double(Int32.max), max(0, plain.age.rounded(.down)))))
        let result = FetchResult(response: head, body: body, source: .cache, freshness: .fresh)
        let answer = ProxyMapping.ranged(
            ProxyMapping.answer(for: result, to: whole, statusHeader: statusHeader),
            for: outgoing
        )
        metrics.record(answer.status)
        // The whole stored body (the same storage: not cut to a range, not emptied) is written
        // from its shared buffer; anything else is copied.
        let isWholeBody =
            !answer.body.isEmpty && answer.body.count == body.count
            && answer.body.withUnsafeBufferPointer({ UInt(bitPattern: $0.baseAddress) })
                == body.withUnsafeBufferPointer({ UInt(bitPattern: $0.baseAddress) })
        let buffer =
            isWholeBody ? bodies.buffer(for: body, allocator: allocator) : allocator.buffer(bytes: answer.body)
        return (answer.response, buffer)
    }

    private static let host = HTTPField.Name("Host")!
}

/// Answers fresh memory hits on the event loop (``FastHit``) and passes every other request on
/// to HummingbirdCore's responder. It sits after HummingbirdCore's connection state handler,
/// which so sees every request and answer (keep-alive, idle timeout, graceful shutdown); a hit
/// is answered only when no earlier request on the connection is still being answered, so
/// answers keep their order.
final class FastHitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let fastHit: FastHit
    /// Requests passed on whose answer has not ended.
    private var passedOn = 0
    /// Whether the rest of the current request (its end) belongs to a hit answered here.
    private var answered = false

    init(_ fastHit: FastHit) {
        self.fastHit = fastHit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            if passedOn == 0, let (response, body) = fastHit.answer(request, allocator: context.channel.allocator) {
                answered = true
                context.write(wrapOutboundOut(.head(response)), promise: nil)
                if body.readableBytes > 0 {
                    context.write(wrapOutboundOut(.body(body)), promise: nil)
                }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                return
            }
            passedOn += 1
            context.fireChannelRead(data)
        case .body:
            if !answered { context.fireChannelRead(data) }
        case .end:
            if answered {
                answered = false
            } else {
                context.fireChannelRead(data)
            }
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), passedOn > 0 { passedOn -= 1 }
        context.write(data, promise: promise)
    }
}

/// HummingbirdCore's HTTP/1.1 child channel with a ``FastHitHandler`` after its connection state
/// handler.
struct FastHitHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let base: HTTP1Channel
    let fastHit: FastHit

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let fastHit = self.fastHit
        return base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            try pipeline.addHandler(FastHitHandler(fastHit), position: .after(state))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
#endif
