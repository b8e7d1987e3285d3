// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPTypes
import NIOCore
import NIOHTTP1

/// One HTTP/1.1 connection of an ``OriginTransport``: one exchange at a time, its answer
/// collected whole by an ``OriginConnectionHandler`` on the channel's event loop.
final class OriginConnection: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<OriginConnectionHandler>

    /// Sets up `channel`'s pipeline (on its event loop): NIO's request encoder, the framer that
    /// decodes each answer with a decoder of its own and proves it ended where the bytes did,
    /// and the exchange handler.
    static func setUp(_ channel: any Channel, budget: BufferBudget) -> EventLoopFuture<OriginConnection> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            let handler = OriginConnectionHandler(budget: budget)
            try pipeline.addHandler(HTTPRequestEncoder())
            try pipeline.addHandler(OriginResponseFramer())
            try pipeline.addHandler(handler)
            return OriginConnection(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
        }
    }

    private init(channel: any Channel, handler: NIOLoopBound<OriginConnectionHandler>) {
        self.channel = channel
        self.handler = handler
    }

    /// Sends one request and returns its final answer; the interim ones go to `interim`.
    /// Cancelling the calling task closes the connection.
    ///
    /// With `streaming`, it returns once the final head came, the body still arriving in
    /// ``OriginConnectionHandler/Received/stream``; `release` gets the connection back when the
    /// answer ended (whether it may be kept).
    ///
    /// `bodyParts` are written as they are read, after the head (a failure to read one closes the
    /// connection); the connection is then not kept.
    func exchange(
        _ head: HTTPRequestHead,
        body: ByteBuffer?,
        bodyParts: RequestBodySource? = nil,
        interim: InterimResponseHandler?,
        limit: Int,
        streaming release: (@Sendable (_ reusable: Bool) -> Void)? = nil
    ) async throws -> OriginConnectionHandler.Received {
        let handler = self.handler
        let loop = channel.eventLoop
        let answer = loop.flatSubmit {
            let promise = loop.makePromise(of: OriginConnectionHandler.Received.self)
            handler.value.start(
                head,
                body: body,
                sendsBodyLater: bodyParts != nil,
                interim: interim,
                limit: limit,
                release: release,
                promise: promise
            )
            return promise.futureResult
        }
        // Queued on the event loop after the head (its tasks run in order).
        let feeding = bodyParts.map { parts in
            Task(executorPreference: RequestTasks.executor) { [channel] in
                do {
                    while let part = try await parts.next() {
                        try await channel.writeAndFlush(
                            HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: part)))
                        )
                    }
                    try await channel.writeAndFlush(HTTPClientRequestPart.end(nil))
                } catch {
                    channel.close(promise: nil)
                }
            }
        }
        return try await withTaskCancellationHandler {
            try await answer.get()
        } onCancel: { [channel] in
            feeding?.cancel()
            channel.close(promise: nil)
        }
    }

    func close() {
        channel.close(promise: nil)
    }
}

/// Writes a request and collects its answer: interim heads handed on as they come, the final
/// head and the whole body returned once the ``OriginResponseFramer`` has settled it.
final class OriginConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    /// A final answer.
    struct Received: Sendable {
        var head: HTTPResponseHead
        var body: [UInt8]
        /// Whether the connection may carry another request: the answer had framing of its own
        /// (a length, chunks, or no body by its status), no byte followed it, and neither side
        /// asked to close.
        var reusable: Bool
        /// A streamed answer's body, still arriving (``body`` is then empty).
        var stream: OriginBodyStream? = nil
    }

    /// An exchange that failed before any byte of its answer came, for `cause`: on a kept
    /// connection (one the origin may have closed or reset while it was idle), an idempotent
    /// request may be sent again on another.
    struct FailedBeforeAnswer: Error {
        let cause: any Error
    }

    /// Why an exchange failed on this connection.
    enum Failure: Error, Equatable {
        /// The connection closed (or was closed already) before any answer came.
        case closedBeforeAnswer
        /// The connection closed in the middle of an answer.
        case closedInAnswer
        /// The body was larger than the transport accepts.
        case tooLarge(limit: Int)
        /// The body would have taken more than the transport's budget for answers in flight.
        case overBudget(limit: Int)
        /// The origin switched protocols (101) though nothing asked it to.
        case unexpectedSwitch
    }

    private struct Exchange {
        let promise: EventLoopPromise<Received>
        let interim: InterimResponseHandler?
        let limit: Int
        /// The request is a `HEAD`, whose answer has no body whatever its fields say.
        var isHead = false
        var head: HTTPResponseHead?
        var body: [UInt8] = []
        var answered = false
        /// The bytes taken from the budget for the body.
        var taken = 0
        /// The final answer's end came; it is handed on when the framer settles it.
        var ended = false
        /// A part came after the end: the origin sent more than the answer.
        var junk = false
        /// The request's body is written as it is read: the connection is not kept after it
        /// (its answer may come before the body's end).
        var sendsBodyLater = false
        /// For a streamed answer: where the connection goes when the answer ended, and its body
        /// once the head came (the promise is then complete).
        var release: (@Sendable (_ reusable: Bool) -> Void)?
        var stream: OriginBodyStream?

        /// Fails the exchange: its promise, or once the head was handed on, its body.
        func fail(_ error: any Error) {
            if let stream {
                stream.finish(.failure(error))
                release?(false)
            } else {
                promise.fail(error)
            }
        }
    }

    private var exchange: Exchange?
    private var context: ChannelHandlerContext?
    /// The bytes every exchange of the transport may hold at once.
    private let budget: BufferBudget

    init(budget: BufferBudget) {
        self.budget = budget
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func start(
        _ head: HTTPRequestHead,
        body: ByteBuffer?,
        sendsBodyLater: Bool = false,
        interim: InterimResponseHandler?,
        limit: Int,
        release: (@Sendable (_ reusable: Bool) -> Void)? = nil,
        promise: EventLoopPromise<Received>
    ) {
        guard let context, context.channel.isActive, exchange == nil else {
            promise.fail(FailedBeforeAnswer(cause: Failure.closedBeforeAnswer))
            return
        }
        exchange = Exchange(
            promise: promise,
            interim: interim,
            limit: limit,
            isHead: head.method == .HEAD,
            sendsBodyLater: sendsBodyLater,
            release: release
        )
        guard !sendsBodyLater else {
            context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
            return
        }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body, body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard var exchange else {
            // An answer nobody asked for: the connection cannot be trusted.
            context.close(promise: nil)
            return
        }
        if exchange.ended {
            // Past the answer's end: never part of it, and never the next request's answer.
            exchange.junk = true
            self.exchange = exchange
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head) where head.status.code == 101:
            fail(Failure.unexpectedSwitch, context: context)
        case .head(let head) where head.status.code < 200:
            exchange.answered = true
            self.exchange = exchange
            exchange.interim?(Self.response(head))
        case .head(let head) where exchange.release != nil && Self.streams(head, isHead: exchange.isHead):
            exchange.answered = true
            exchange.head = head
            // Nothing more is read until the body is asked for: on a busy core, the event loop
            // reading ahead would hold back the task that writes this head to the client.
            // (Fails only on a closed channel, which reads nothing more anyway.)
            try? context.channel.syncOptions?.setOption(.autoRead, value: false)
            let stream = OriginBodyStream(channel: context.channel)
            exchange.stream = stream
            self.exchange = exchange
            exchange.promise.succeed(Received(head: head, body: [], reusable: false, stream: stream))
        case .body(let buffer) where exchange.stream != nil:
            if !exchange.stream!.append(buffer) {
                // Fails only on a closed channel, which reads nothing more anyway.
                try? context.channel.syncOptions?.setOption(.autoRead, value: false)
            }
        case .head(let head):
            exchange.answered = true
            exchange.head = head
            // The declared length is taken and allocated up front, when the budget has it.
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length <= exchange.limit,
                budget.take(length)
            {
                exchange.taken = length
                exchange.body.reserveCapacity(length)
            }
            self.exchange = exchange
        case .body(let buffer):
            let needed = exchange.body.count + buffer.readableBytes
            guard needed <= exchange.limit else {
                fail(Failure.tooLarge(limit: exchange.limit), context: context)
                return
            }
            if needed > exchange.taken {
                // Taken in steps of at least 64 KiB, so that a long body does not contend per read.
                let more = max(needed - exchange.taken, min(64 << 10, exchange.limit - exchange.taken))
                guard budget.take(more) else {
                    fail(Failure.overBudget(limit: budget.limit), context: context)
                    return
                }
                exchange.taken += more
            }
            self.exchange = nil  // the body is appended in place, without a copy of the array
            exchange.body.append(contentsOf: buffer.readableBytesView)
            self.exchange = exchange
        case .end:
            guard exchange.head != nil else {
                self.exchange = nil
                budget.give(exchange.taken)
                exchange.fail(Failure.closedInAnswer)
                context.close(promise: nil)
                return
            }
            exchange.ended = true
            self.exchange = exchange
            context.triggerUserOutboundEvent(OriginResponseFramer.AnswerEnded(), promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let settled = event as? OriginResponseFramer.Settled else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        settle(clean: settled.clean, context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let exchange {
            if exchange.ended {
                settle(clean: false, context: context)
            } else {
                self.exchange = nil
                budget.give(exchange.taken)
                exchange.fail(
                    exchange.answered ? Failure.closedInAnswer : FailedBeforeAnswer(cause: Failure.closedBeforeAnswer)
                )
            }
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error, context: context)
    }

    private func fail(_ error: any Error, context: ChannelHandlerContext) {
        if let exchange, exchange.ended {
            // The answer was whole; what failed came after it.
            settle(clean: false, context: context)
            return
        }
        if let exchange {
            self.exchange = nil
            budget.give(exchange.taken)
            exchange.fail(exchange.answered ? error : FailedBeforeAnswer(cause: error))
        }
        context.close(promise: nil)
    }

    /// Hands the ended answer on; a connection that is not clean is closed first, so it is never
    /// kept.
    private func settle(clean: Bool, context: ChannelHandlerContext) {
        guard let exchange, exchange.ended, let head = exchange.head else { return }
        self.exchange = nil
        budget.give(exchange.taken)
        let reusable =
            clean && !exchange.junk && !exchange.sendsBodyLater && Self.keepsAlive(head, isHead: exchange.isHead)
            && (exchange.isHead || Self.isFramed(head))
        if !reusable { context.close(promise: nil) }
        if let stream = exchange.stream {
            stream.finish(.success(()))
            exchange.release?(reusable)
        } else {
            exchange.promise.succeed(Received(head: head, body: exchange.body, reusable: reusable))
        }
    }

    /// The longest declared body a streamed exchange still takes whole with its head: a short
    /// answer costs no more than a whole one.
    static let streamingThreshold = 256 << 10

    /// Whether the answer `head` starts is streamed: one with a body longer than
    /// ``streamingThreshold``, or of unknown length.
    private static func streams(_ head: HTTPResponseHead, isHead: Bool) -> Bool {
        let code = head.status.code
        guard !isHead, code != 204, code != 304 else { return false }
        guard let length = head.headers.first(name: "content-length").flatMap({ Int($0) }) else { return true }
        return length > streamingThreshold
    }

    /// Whether `head` lets the connection stay open. For the answer to a `HEAD`, its version and
    /// `Connection` field decide: NIO's decoder marks such an answer without a length "close",
    /// deciding before it learns that the answer has no body.
    private static func keepsAlive(_ head: HTTPResponseHead, isHead: Bool) -> Bool {
        guard isHead else { return head.isKeepAlive }
        let tokens = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
        if tokens.contains("close") { return false }
        return (head.version.major, head.version.minor) >= (1, 1) || tokens.contains("keep-alive")
    }

    /// Whether the answer ends by its own framing rather than by the connection's end (the answer
    /// to a `HEAD` always does: it ends with its head, RFC 9112 §6.3).
    private static func isFramed(_ head: HTTPResponseHead) -> Bool {
        let code = head.status.code
        if code == 204 || code == 304 { return true }
        return head.headers.contains(name: "content-length")
            || head.headers[canonicalForm: "transfer-encoding"].contains { $0.lowercased() == "chunked" }
    }

    /// `head` as an HTTPTypes response; fields whose names HTTPTypes rejects are left out.
    static func response(_ head: HTTPResponseHead) -> HTTPResponse {
        var fields = HTTPFields()
        fields.reserveCapacity(head.headers.count)
        for (name, value) in head.headers {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        return HTTPResponse(
            status: .init(code: Int(head.status.code), reasonPhrase: head.status.reasonPhrase),
            headerFields: fields
        )
    }
}
#endif
