// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore

/// What the raw path (``RawHitHandler``) knows of the decoder's path on the same connection:
/// ``FastHitHandler`` counts the requests it passed on to HummingbirdCore whose answer has not
/// ended.
final class SlowPath {
    var inFlight = 0
}

/// Answers fresh memory hits of plain HTTP/1.1 `GET`s (``RawRequestHead``) from the connection's
/// bytes, before NIO's HTTP/1 decoder: no decoded head, no conversion to HTTPTypes' request by
/// the codec, no pass through HummingbirdCore's connection state handler or NIO's encoder.
/// Everything else goes on to the decoder as bytes.
///
/// - Order: a hit is answered here only while no request passed on is still being answered
///   (``SlowPath``); while one is, every request goes on (``FastHitHandler`` and
///   HummingbirdCore answer in order). A request passed on must be one this reader framed
///   whole, so that the decoder is left at a request's start; anything else (a body, a head cut
///   between reads, a form this reader does not take) turns the raw path off for the
///   connection, and the decoder reads the rest.
/// - Backpressure: the socket is not read while the connection cannot take more writes (as
///   NIO's `BackPressureHandler`), and a request met then goes on to the decoder's path.
/// - Idle timeout: kept here, as HummingbirdCore's state handler never sees a raw hit: the
///   connection closes when no request passed on is in flight and nothing was read or written
///   for `idleTimeout`.
final class RawHitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private enum Mode {
        /// Hits are answered here.
        case raw
        /// A request passed on is being answered: the next ones go on too, framed.
        case waiting
        /// The decoder reads everything.
        case off
    }

    private let fastHit: FastHit
    private let slowPath: SlowPath
    private let idleTimeout: TimeAmount?
    private var mode = Mode.raw
    private var lastActivity = NIODeadline.now()
    private var idleCheck: Scheduled<Void>?
    private var heldRead = false

    init(_ fastHit: FastHit, slowPath: SlowPath, idleTimeout: TimeAmount?) {
        self.fastHit = fastHit
        self.slowPath = slowPath
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        scheduleIdleCheck(context: context, at: .now() + (idleTimeout ?? .zero))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if idleTimeout != nil { lastActivity = .now() }
        guard mode != .off else {
            context.fireChannelRead(data)
            return
        }
        var buffer = unwrapInboundIn(data)
        var wrote = false
        while buffer.readableBytes > 0 {
            if mode == .waiting, slowPath.inFlight == 0 { mode = .raw }
            guard case .request(let request, let length) = RawRequestHead.parse(buffer) else {
                mode = .off
                break
            }
            if mode == .raw, context.channel.isWritable,
                case .encoded(let head, let body) = fastHit.wireAnswer(
                    request,
                    form: .onlyEncoded,
                    allocator: context.channel.allocator
                )
            {
                context.write(wrapOutboundOut(.byteBuffer(head)), promise: nil)
                if let body { context.write(wrapOutboundOut(.byteBuffer(body)), promise: nil) }
                wrote = true
                buffer.moveReaderIndex(forwardBy: length)
                continue
            }
            let passed = buffer.readSlice(length: length)!
            context.fireChannelRead(wrapInboundOut(passed))
            mode = slowPath.inFlight == 0 ? .raw : .waiting
        }
        if buffer.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(buffer)) }
        if wrote { context.flush() }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if idleTimeout != nil { lastActivity = .now() }
        context.write(data, promise: promise)
    }

    func read(context: ChannelHandlerContext) {
        guard context.channel.isWritable else {
            heldRead = true
            return
        }
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if heldRead, context.channel.isWritable {
            heldRead = false
            context.read()
        }
        context.fireChannelWritabilityChanged()
    }

    private func scheduleIdleCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        guard let idleTimeout else { return }
        idleCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            idleCheck = nil
            let due = lastActivity + idleTimeout
            if slowPath.inFlight == 0, due <= .now() {
                context.close(promise: nil)
            } else {
                scheduleIdleCheck(context: context, at: slowPath.inFlight > 0 ? .now() + idleTimeout : due)
            }
        }
    }
}
#endif
