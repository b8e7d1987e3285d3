// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPCaching
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTPTypes
import Tracing

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
    /// The spans of hits answered here; nil without a tracer.
    let tracing: ProxyTracer?
    /// The encoded heads of stored responses, copied by the plain HTTP/1 hits on them.
    let heads = HitHeads<ByteBuffer>(cost: \.readableBytes)
    /// The header blocks of stored responses, copied by the plain HTTP/2 hits on them.
    let http2Heads = HitHeads<HPACKHeaders>(cost: { $0.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count } })

    /// The answer to `incoming`, or nil when it takes the ordinary path.
    /// - Parameter allocator: allocates the body's buffer when it is not a whole stored body
    ///   already kept in ``bodies``.
    func answer(
        _ incoming: HTTPRequest,
        allocator: ByteBufferAllocator = ByteBufferAllocator()
    ) -> (response: HTTPResponse, body: ByteBuffer)? {
        guard let made = made(incoming) else { return nil }
        metrics.record(made.status)
        return (made.response, bodyBuffer(made, allocator: allocator))
    }

    /// How a hit is written.
    enum Wire {
        /// Bytes to write past NIO's encoder (``EncodedHit``): the head, with the body when it
        /// is small; else the body after it.
        case encoded(ByteBuffer, body: ByteBuffer?)
        /// A head and body for the HTTP/1 pipeline (an answer whose framing NIO's encoder
        /// decides), or for HTTP/2 frames.
        case parts(HTTPResponse, ByteBuffer)
        /// A plain hit's HTTP/2 header block (`:status` 200) and body.
        case http2(HPACKHeaders, body: ByteBuffer)

        /// The forms an answer may take.
        enum Form {
            /// ``parts(_:_:)`` only.
            case parts
            /// ``encoded(_:body:)`` where it can be, else ``parts(_:_:)``.
            case encoded
            /// ``encoded(_:body:)`` only: an answer that would be parts is nil, and counted
            /// nowhere (the raw HTTP/1 path, ``RawHitHandler``, has no encoder).
            case onlyEncoded
            /// ``http2(_:body:)`` where it can be, else ``parts(_:_:)``.
            case http2
        }

        /// The answer's status code (read from the status line of encoded bytes).
        var status: Int {
            switch self {
            case .parts(let response, _):
                return response.status.code
            case .http2:
                return 200
            case .encoded(let bytes, _):
                // "HTTP/1.1 " then three digits.
                let digits = bytes.getBytes(at: bytes.readerIndex + 9, length: 3) ?? []
                return digits.reduce(0) { $0 * 10 + Int($1 &- UInt8(ascii: "0")) }
            }
        }
    }

    /// ``answer(_:allocator:)`` as it is to be written, in `form`; nil when it takes the
    /// ordinary path.
    func wireAnswer(_ incoming: HTTPRequest, form: Wire.Form, allocator: ByteBufferAllocator) -> Wire? {
        // Compared with nil, not bound: binding copied the tracer (an existential) on every hit.
        if tracing == nil { return untracedWireAnswer(incoming, form: form, allocator: allocator) }
        let start = DefaultTracerClock.now
        let wire = untracedWireAnswer(incoming, form: form, allocator: allocator)
        if let wire, let tracing { tracing.recordHit(incoming, status: wire.status, start: start) }
        return wire
    }

    private func untracedWireAnswer(_ incoming: HTTPRequest, form: Wire.Form, allocator: ByteBufferAllocator) -> Wire? {
        guard let (whole, outgoing) = requests(for: incoming), let hit = freshHit(whole) else { return nil }
        let isPlain = Self.isPlain(outgoing)
        switch form {
        case .encoded, .onlyEncoded:
            if isPlain, let wire = plainWire(hit, allocator: allocator) { return wire }
        case .http2:
            if isPlain, let wire = plainHTTP2(hit, allocator: allocator) { return wire }
        case .parts:
            break
        }
        let made = made(hit, whole: whole, outgoing: outgoing)
        let inline = made.body.count <= EncodedHit.inlineBodyBytes
        guard form == .encoded || form == .onlyEncoded,
            let bytes = EncodedHit.encode(made.response, body: inline ? made.body : nil, allocator: allocator)
        else {
            if form == .onlyEncoded { return nil }
            metrics.record(made.status)
            return .parts(made.response, bodyBuffer(made, allocator: allocator))
        }
        metrics.record(made.status)
        return .encoded(bytes, body: inline ? nil : bodyBuffer(made, allocator: allocator))
    }

    /// The requests `incoming` amounts to: the one the cache sees (no `Range`), the one sent
    /// upstream; nil when it takes the ordinary path.
    private func requests(for incoming: HTTPRequest) -> (whole: HTTPRequest, outgoing: HTTPRequest)? {
        let fields = incoming.headerFields
        guard incoming.method == .get, incoming.authority != nil, fields[Self.host] == nil,
            fields[.contentLength] == nil, fields[.transferEncoding] == nil, fields[.connection] == nil,
            let outgoing = ProxyMapping.upstreamRequest(for: incoming, upstream: upstream)
        else { return nil }
        return (ProxyMapping.wholeRequest(for: outgoing), outgoing)
    }

    /// A fresh stored response that answers `whole` from memory: what was found, and its age.
    private func freshHit(_ whole: HTTPRequest) -> Hit? {
        let now = cache.configuration.now()
        guard let lookup = cache.memoryLookup(whole), let plain = cache.plainFreshness(of: lookup, now: now),
            let stored = lookup.stored,
            // The engine's fresh-hit rule, for the protocol's reads, which the ordinary path runs.
            RequestEngine.servesFresh(.useProtocol, .http, stored, isFreshByHTTP: plain.isFresh, now: now)
        else { return nil }
        return (lookup, String(Int(min(Double(Int32.max), max(0, plain.age.rounded(.down))))), stored)
    }

    /// What a hit answers: the answer made from the cache by ``ProxyMapping``, the stored body,
    /// and the cache status to count once the answer is sent.
    typealias Made = (response: HTTPResponse, body: [UInt8], stored: [UInt8], status: CacheStatus)

    /// The answer made from the cache by ``ProxyMapping``, and the stored body.
    private func made(_ incoming: HTTPRequest) -> Made? {
        guard let (whole, outgoing) = requests(for: incoming), let hit = freshHit(whole) else { return nil }
        return made(hit, whole: whole, outgoing: outgoing)
    }

    private func made(
        _ hit: Hit,
        whole: HTTPRequest,
        outgoing: HTTPRequest
    ) -> Made {
        var head = hit.stored.response
        head.headerFields[.age] = hit.age
        let result = FetchResult(response: head, body: hit.stored.body, source: .cache, freshness: .fresh)
        let answer = ProxyMapping.ranged(
            ProxyMapping.answer(for: result, to: whole, statusHeader: statusHeader),
            for: outgoing
        )
        return (answer.response, answer.body, hit.stored.body, answer.status)
    }

    /// A plain hit — a request without preconditions or a range, a stored 200 whose fields
    /// ``ProxyMapping/answer(for:to:statusHeader:)`` leaves as they are (no `Age`, no cache
    /// status field, no hop-by-hop field, its body's `Content-Length`) — as its record's encoded
    /// head (``heads``) followed by `Age`, the cache status and the body: the bytes
    /// ``EncodedHit`` would write for ``ProxyMapping``'s answer. Nil for any other hit.
    private func plainWire(_ hit: Hit, allocator: ByteBufferAllocator) -> Wire? {
        guard let record = hit.lookup.storedRecordID,
            let head = heads.head(for: record, make: { plainHead(hit.stored, allocator: allocator) })
        else { return nil }
        metrics.record(.hit)
        let body = hit.stored.body
        let inline = body.count <= EncodedHit.inlineBodyBytes
        var bytes = allocator.buffer(capacity: head.readableBytes + 64 + (inline ? body.count : 0))
        bytes.writeImmutableBuffer(head)
        bytes.writeStaticString("Age: ")
        bytes.writeString(hit.age)
        bytes.writeStaticString("\r\n")
        if let statusHeader {
            bytes.writeString(statusHeader.rawName)
            bytes.writeStaticString(": HIT\r\n")
        }
        bytes.writeStaticString("\r\n")
        if inline {
            bytes.writeBytes(body)
            return .encoded(bytes, body: nil)
        }
        return .encoded(bytes, body: bodies.buffer(for: body, allocator: allocator))
    }

    /// The status line and fields of `stored` when its plain hits are answered with them
    /// unchanged (``plainWire(_:allocator:)``); nil otherwise.
    private func plainHead(_ stored: CachedResponse, allocator: ByteBufferAllocator) -> ByteBuffer? {
        guard isPlain(stored), var head = EncodedHit.encode(stored.response, body: nil, allocator: allocator)
        else { return nil }
        // Without the blank line that ends it: the hit adds its fields.
        head.moveWriterIndex(to: head.writerIndex - 2)
        return head
    }

    /// The body's buffer: the whole stored body (the same storage: not cut to a range, not
    /// emptied) from its shared buffer; anything else copied.
    private func bodyBuffer(
        _ made: Made,
        allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        let isWholeBody =
            !made.body.isEmpty && made.body.count == made.stored.count
            && made.body.withUnsafeBufferPointer({ UInt(bitPattern: $0.baseAddress) })
                == made.stored.withUnsafeBufferPointer({ UInt(bitPattern: $0.baseAddress) })
        return isWholeBody
            ? bodies.buffer(for: made.stored, allocator: allocator) : allocator.buffer(bytes: made.body)
    }

    private static let host = HTTPField.Name("Host")!
}

/// Answers fresh memory hits on the event loop (``FastHit``) and passes every other request on
/// to HummingbirdCore's responder: the hits the raw path (``RawHitHandler``) left to NIO's
/// decoder. It sits after HummingbirdCore's connection state handler, which so sees every
/// request that reaches it and its answer (keep-alive, graceful shutdown; the idle timeout is the
/// raw path's); a hit is answered only when no earlier request on the connection is still being
/// answered, so answers keep their order. It counts the requests it passes on in the
/// ``SlowPath`` the raw path reads.
final class FastHitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let fastHit: FastHit
    /// Where encoded hits are written, past NIO's HTTP/1 encoder.
    private let bypass: EncoderBypass
    /// Requests passed on whose answer has not ended (shared with ``RawHitHandler``).
    private let slowPath: SlowPath
    private var passedOn: Int {
        get { slowPath.inFlight }
        set { slowPath.inFlight = newValue }
    }
    /// Whether the rest of the current request (its end) belongs to a hit answered here.
    private var answered = false
    /// Set once a hit whose request asked to close the connection is answered here: the
    /// connection closes after that answer (``VersionGate``), and nothing read after the request
    /// is answered or passed on (RFC 9112 §9.6).
    private var closing = false

    /// The context of the handler right above NIO's HTTP/1 encoder (its request decoder): the
    /// placeholder head of an encoded hit is written there, past the handlers that would convert
    /// it on its way.
    private let encoderInput: ChannelHandlerContext

    init(_ fastHit: FastHit, bypass: EncoderBypass, encoderInput: ChannelHandlerContext, slowPath: SlowPath) {
        self.fastHit = fastHit
        self.slowPath = slowPath
        self.bypass = bypass
        self.encoderInput = encoderInput
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if closing { return }
        switch unwrapInboundIn(data) {
        case .head(let request):
            if passedOn == 0, let wire = hitAnswer(request, allocator: context.channel.allocator) {
                answered = true
                write(wire, context: context)
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

    /// The answer to `request` when it is a fresh hit, else nil. A `Connection` field that says
    /// only `keep-alive` or `close` (which browsers and many clients send) does not keep a hit
    /// from being answered here: the answer to `close` is written in parts, whose head
    /// ``VersionGate`` marks `Connection: close` (RFC 9112 §9.6) before the connection closes
    /// after it. Any other option is the ordinary path's.
    private func hitAnswer(_ request: HTTPRequest, allocator: ByteBufferAllocator) -> FastHit.Wire? {
        let form: FastHit.Wire.Form = bypass.context != nil ? .encoded : .parts
        guard request.headerFields[.connection] != nil else {
            return fastHit.wireAnswer(request, form: form, allocator: allocator)
        }
        let options = HopByHop.connectionOptions(of: request.headerFields)
        guard options.isSubset(of: HopByHop.persistenceOptions) else { return nil }
        var plain = request
        plain.headerFields[.connection] = nil
        guard options.contains("close") else { return fastHit.wireAnswer(plain, form: form, allocator: allocator) }
        // As parts, whose head passes ``VersionGate``.
        guard let wire = fastHit.wireAnswer(plain, form: .parts, allocator: allocator) else { return nil }
        closing = true
        return wire
    }

    /// Writes a hit: encoded bytes past NIO's encoder between a placeholder head and end that
    /// the encoder and the connection state handler see (``EncoderBypass``), or the parts.
    private func write(_ wire: FastHit.Wire, context: ChannelHandlerContext) {
        switch wire {
        case .encoded(let bytes, let body):
            guard let bypassContext = bypass.context else { preconditionFailure("encoded without a bypass") }
            bypass.isDropping = true
            encoderInput.write(NIOAny(HTTPServerResponsePart.head(Self.placeholder)), promise: nil)
            bypass.isDropping = false
            bypassContext.write(NIOAny(IOData.byteBuffer(bytes)), promise: nil)
            if let body { bypassContext.write(NIOAny(IOData.byteBuffer(body)), promise: nil) }
            bypass.isDropping = true
            context.write(wrapOutboundOut(.end(nil)), promise: nil)
            bypass.isDropping = false
            context.flush()
        case .http2:
            preconditionFailure("HTTP/2 fields asked for HTTP/1")
        case .parts(let response, let body):
            context.write(wrapOutboundOut(.head(response)), promise: nil)
            if body.readableBytes > 0 {
                context.write(wrapOutboundOut(.body(body)), promise: nil)
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    /// The head the encoder sees for an encoded hit: a status without a body, so that it frames
    /// nothing after it. (HummingbirdCore's connection state handler only counts ends.)
    private static let placeholder = HTTPResponseHead(version: .http1_1, status: .noContent)

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), passedOn > 0 { passedOn -= 1 }
        context.write(data, promise: promise)
    }
}

/// HummingbirdCore's HTTP/1.1 child channel with a ``RawHitHandler`` before NIO's decoder and a
/// ``FastHitHandler`` after its connection state handler.
struct FastHitHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    /// HummingbirdCore's channel, without an idle timeout of its own (``RawHitHandler`` keeps it).
    let base: HTTP1Channel
    let fastHit: FastHit
    let idleTimeout: Duration?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let fastHit = self.fastHit
        let idleTimeout = self.idleTimeout.map(TimeAmount.init)
        return base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            let bypass = EncoderBypass()
            let slowPath = SlowPath()
            // Right below the response encoder: under TLS the bypass's bytes must still be
            // encrypted (the TLS handler is first). The raw path comes before it, so that it
            // reads the bytes before the decoder and writes past everything but TLS.
            let encoder = try pipeline.handler(type: HTTPResponseEncoder.self)
            try pipeline.addHandler(bypass, position: .before(encoder))
            try pipeline.addHandler(
                RawHitHandler(fastHit, slowPath: slowPath, idleTimeout: idleTimeout),
                position: .before(bypass)
            )
            let decoder = try pipeline.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(VersionGate(), position: .after(decoder.handler))
            try pipeline.addHandler(
                FastHitHandler(fastHit, bypass: bypass, encoderInput: decoder, slowPath: slowPath),
                position: .after(state)
            )
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
#endif
