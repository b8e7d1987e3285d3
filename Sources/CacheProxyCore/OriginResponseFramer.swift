// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import NIOHTTP1

/// Turns an origin connection's bytes into the parts of the one answer it waits for, and tells
/// whether that answer ended where the origin's bytes did.
///
/// A kept HTTP/1.1 connection may carry the next request only when nothing followed the answer:
/// bytes past it (a second response, the start of one, body bytes beyond the `Content-Length`, a
/// body after a `HEAD`'s answer) would be read as the next request's answer. That is a response
/// desync, and through a cache it stores one URL's answer — the origin's junk — for another. So:
/// - a decoder is made when a request head is written and dropped when its answer settles: an
///   answer is never parsed from bytes that came before its request was sent;
/// - once the read that carried the answer's end is decoded, the decoder is told the input
///   ended: a message begun after the answer makes it throw or emit a part, and the answer
///   settles as not clean (``Settled``), so the connection is closed rather than kept;
/// - a byte that comes while no request waits closes the connection (``UnaskedBytes``).
///
/// It sits between NIO's request encoder and the ``OriginConnectionHandler``, which tells it an
/// answer ended with the outbound event ``AnswerEnded`` and waits for ``Settled`` before it
/// hands the answer on.
final class OriginResponseFramer: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// Sent outbound by the handler after the framer when the final answer's end came.
    struct AnswerEnded {}

    /// Sent inbound once the read that carried an answer's end is decoded (or the connection
    /// ended it): `clean` when no byte followed the answer.
    struct Settled {
        let clean: Bool
    }

    /// Bytes came from the origin while no request waited for an answer.
    struct UnaskedBytes: Error {}

    /// The decoder of the request in flight; nil while the connection is idle.
    private var decoder: HTTPResponseDecoder?
    /// Bytes the decoder left to be read again with the next ones (a header cut by a read).
    private var pending: ByteBuffer?
    /// Whether the handler said the answer ended.
    private var ended = false
    /// Whether the decoder is parsing (closing the channel from a part re-enters the framer).
    private var isDecoding = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        if case .head = part {
            drop(context: context)
            let decoder = HTTPResponseDecoder(informationalResponseStrategy: .forward)
            decoder.decoderAdded(context: context)
            self.decoder = decoder
        }
        // The decoder learns the request's method: a HEAD's answer has no body.
        decoder?.write(data: part)
        context.write(data, promise: promise)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if event is AnswerEnded {
            ended = true
            promise?.succeed()
        } else {
            context.triggerUserOutboundEvent(event, promise: promise)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        guard let decoder, !ended else {
            // Nothing was asked: whatever this is, it must not be read as a later request's answer.
            context.fireErrorCaught(UnaskedBytes())
            context.close(promise: nil)
            return
        }
        if var pending {
            self.pending = nil
            pending.writeBuffer(&bytes)
            bytes = pending
        }
        let decoded = decoding(decoder, context: context) { try $0.decode(context: context, buffer: &bytes) }
        guard self.decoder === decoder else { return }  // the channel closed while decoding
        switch decoded {
        case .failure(let error):
            // After the answer's end, an error is the junk that followed it, not the answer's.
            ended ? settle(clean: false, context: context) : fail(error, context: context)
        case .success where ended:
            // Told the input ended, a decoder between messages neither throws (a message was
            // begun) nor emits a part (the handler counts those as junk).
            var none = ByteBuffer()
            let atBoundary =
                bytes.readableBytes == 0
                && decoding(decoder, context: context) {
                    try $0.decodeLast(context: context, buffer: &none, seenEOF: true)
                }.isSuccess
            if self.decoder === decoder { settle(clean: atBoundary, context: context) }
        case .success:
            if bytes.readableBytes > 0 { pending = bytes }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let decoder, !isDecoding {
            // The end of the connection ends a body that had no length of its own.
            var rest = pending ?? ByteBuffer()
            pending = nil
            let last = decoding(decoder, context: context) {
                try $0.decodeLast(context: context, buffer: &rest, seenEOF: true)
            }
            if self.decoder === decoder {
                switch last {
                case .failure(let error) where !ended: fail(error, context: context)
                default: if ended { settle(clean: false, context: context) }
                }
            }
        }
        drop(context: context)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        drop(context: context)
    }

    /// Runs `body` on `decoder` and, when the channel dropped the decoder meanwhile (closing it
    /// from a part re-enters the framer), removes it once its parser is free again.
    private func decoding(
        _ decoder: HTTPResponseDecoder,
        context: ChannelHandlerContext,
        _ body: (HTTPResponseDecoder) throws -> DecodingState
    ) -> Result<DecodingState, any Error> {
        isDecoding = true
        let result = Result { try body(decoder) }
        isDecoding = false
        if self.decoder !== decoder { decoder.decoderRemoved(context: context) }
        return result
    }

    /// Hands the ended answer on as `clean` or not and goes idle.
    private func settle(clean: Bool, context: ChannelHandlerContext) {
        drop(context: context)
        context.fireUserInboundEventTriggered(Settled(clean: clean))
    }

    private func fail(_ error: any Error, context: ChannelHandlerContext) {
        drop(context: context)
        context.fireErrorCaught(error)
    }

    /// Goes idle. The parser is freed here, or by ``decoding(_:context:_:)`` when it is busy.
    private func drop(context: ChannelHandlerContext) {
        if let decoder, !isDecoding { decoder.decoderRemoved(context: context) }
        decoder = nil
        pending = nil
        ended = false
    }
}

extension Result {
    fileprivate var isSuccess: Bool {
        if case .success = self { true } else { false }
    }
}
#endif
