// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPTypes
import NIOCore

/// A fast hit written as bytes: its head encoded here, straight from the answer's fields, rather
/// than converted to NIOHTTP1's head (`HTTP1ToHTTPServerCodec`) and encoded by NIO's
/// `HTTPResponseEncoder` — together about a sixth of a 1 KB hit's CPU time.
enum EncodedHit {
    /// `response` as HTTP/1.1 bytes (status line, fields, blank line), followed by `body` when
    /// given; nil when NIO's encoder would change the head's framing (`Transfer-Encoding`, or a
    /// status with a body and no `Content-Length`), so that the bytes are always those the
    /// encoder would write.
    static func encode(_ response: HTTPResponse, body: [UInt8]?, allocator: ByteBufferAllocator) -> ByteBuffer? {
        let fields = response.headerFields
        let code = response.status.code
        let mayHaveBody = code >= 200 && code != 204 && code != 304
        guard code >= 200, fields[.transferEncoding] == nil, !mayHaveBody || fields[.contentLength] != nil else {
            return nil
        }
        var size = 32 + response.status.reasonPhrase.utf8.count + (body?.count ?? 0)
        for field in fields { size += field.name.rawName.utf8.count + field.value.utf8.count + 4 }
        var bytes = allocator.buffer(capacity: size)
        bytes.writeStaticString("HTTP/1.1 ")
        bytes.writeString(String(code))
        bytes.writeStaticString(" ")
        bytes.writeString(response.status.reasonPhrase)
        bytes.writeStaticString("\r\n")
        for field in fields {
            bytes.writeString(field.name.rawName)
            bytes.writeStaticString(": ")
            bytes.writeString(field.value)
            bytes.writeStaticString("\r\n")
        }
        bytes.writeStaticString("\r\n")
        if let body { bytes.writeBytes(body) }
        return bytes
    }

    /// Bodies up to this size go in the head's buffer (one write rather than two).
    static let inlineBodyBytes = 2_048
}

/// The first handler after the channel's head, below NIO's HTTP/1 encoder: it passes the
/// encoder's bytes on, drops them while a fast hit writes its own (``isDropping``), and is where
/// those are written (``context``).
///
/// NIO's `HTTPResponseEncoder` pairs each response head with the method of the request it answers
/// (`configureHTTPServerPipeline` feeds it every decoded request's method, to frame `HEAD` and
/// `CONNECT` answers without a body). A hit written past the encoder would leave that queue one
/// behind, and a later `GET` answer could be framed as a `HEAD` one and lose its body. So the
/// encoder still sees a head and an end for each hit — a bodiless placeholder, dropped here — and
/// HummingbirdCore's connection state handler sees the end (it counts answers: keep-alive,
/// graceful shutdown).
final class EncoderBypass: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    /// Whether the encoder's writes are dropped (while a fast hit sends its placeholder).
    var isDropping = false
    /// This handler's context, where a fast hit's bytes are written; nil once removed.
    private(set) var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if isDropping {
            promise?.succeed(())
        } else {
            context.write(data, promise: promise)
        }
    }
}
#endif
