// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPTypes
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Answers fresh memory hits from an HTTP/2 connection's frames, before a stream channel exists:
/// a `HEADERS` frame that opens a stream and ends it (a request without a body) is looked up
/// (``FastHit``), and a hit is written back as `HEADERS` and `DATA` frames on the connection. Every
/// other frame goes on to NIO's stream multiplexer, which makes a stream channel for each request
/// that was not a hit (``FastHitHTTP2Channel``).
///
/// A stream channel (its pipeline, handlers and activation) cost about half the CPU of an HTTP/2
/// hit; a hit answered here makes none.
///
/// It checks every header block the client sends (``HTTP2HeaderBlockCheck``) and resets the
/// stream of one that is malformed, before anything else sees it.
///
/// It also keeps the connection's flow-control window for request bodies at its target, as the
/// multiplexer does for each stream: the multiplexer keeps only one size for both.
final class FastHitFrameHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let fastHit: FastHit
    private let connectionWindowSize: Int
    /// The highest stream the client opened: a `HEADERS` frame on a higher one opens a stream
    /// (NIO's handler refuses a client stream that does not rise), one on a lower one carries a
    /// passed-on request's trailers.
    private var highestStream = HTTP2StreamID(0)
    /// Whether hits (or resets of malformed streams) were written in this read and wait for its
    /// flush.
    private var unflushed = false

    init(_ fastHit: FastHit, connectionWindowSize: Int) {
        self.fastHit = fastHit
        self.connectionWindowSize = connectionWindowSize
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard case .headers(let headers) = frame.payload else {
            context.fireChannelRead(data)
            return
        }
        let opens = frame.streamID > highestStream
        if opens { highestStream = frame.streamID }
        // Every received block is checked here (NIO's handler checks none: ``HTTP2HeaderBlockCheck``).
        guard HTTP2HeaderBlockCheck.isWellFormed(headers.headers, opens ? .request : .trailers) else {
            let reset = HTTP2Frame(streamID: frame.streamID, payload: .rstStream(.protocolError))
            context.write(wrapOutboundOut(reset), promise: nil)
            unflushed = true
            return
        }
        guard opens else {
            context.fireChannelRead(data)
            return
        }
        guard headers.endStream, let request = Self.request(headers.headers),
            let wire = fastHit.wireAnswer(request, form: .http2, allocator: context.channel.allocator)
        else {
            context.fireChannelRead(data)
            return
        }
        let (fields, body): (HPACKHeaders, ByteBuffer)
        switch wire {
        case .http2(let block, let buffer): (fields, body) = (block, buffer)
        case .parts(let response, let buffer): (fields, body) = (Self.fields(of: response), buffer)
        case .encoded: preconditionFailure("HTTP/1 bytes asked for HTTP/2")
        }
        let endsWithHead = body.readableBytes == 0
        let head = HTTP2Frame.FramePayload.Headers(headers: fields, endStream: endsWithHead)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .headers(head))), promise: nil)
        if !endsWithHead {
            let data = HTTP2Frame.FramePayload.Data(data: .byteBuffer(body), endStream: true)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .data(data))), promise: nil)
        }
        unflushed = true
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // One flush for the hits of a read, as the multiplexer flushes its streams' answers.
        if unflushed {
            unflushed = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The connection's window is this handler's to keep (the multiplexer would keep it at
        // the streams' size).
        // Told by its type first (a comparison of metadata pointers): every stream's events come
        // this way too, and a conditional cast is a call into the runtime.
        if Swift.type(of: event) == NIOHTTP2WindowUpdatedEvent.self, let window = event as? NIOHTTP2WindowUpdatedEvent,
            window.streamID == .rootStream
        {
            if let size = window.inboundWindowSize, size <= connectionWindowSize / 2 {
                let update = HTTP2Frame(
                    streamID: .rootStream,
                    payload: .windowUpdate(windowSizeIncrement: connectionWindowSize - size)
                )
                context.writeAndFlush(wrapOutboundOut(update), promise: nil)
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// The request a header block carries; nil when it is not a plain request (a pseudo-header
    /// missing or unknown, a field HTTP does not allow), which the ordinary path answers.
    static func request(_ headers: HPACKHeaders) -> HTTPRequest? {
        var method: HTTPRequest.Method?
        var scheme: String?
        var authority: String?
        var path: String?
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count)
        for (name, value, _) in headers {
            if name.utf8.first == UInt8(ascii: ":") {
                switch name {
                case ":method": method = HTTPRequest.Method(value)
                case ":scheme": scheme = value
                case ":authority": authority = value
                case ":path": path = value
                default: return nil
                }
            } else {
                guard let fieldName = HTTPField.Name(name) else { return nil }
                fields.append(HTTPField(name: fieldName, value: value))
            }
        }
        guard let method, scheme != nil, path != nil else { return nil }
        return HTTPRequest(method: method, scheme: scheme, authority: authority, path: path, headerFields: fields)
    }

    /// A response's header block: its status and its fields less the hop-by-hop ones, which
    /// HTTP/2 forbids (RFC 9113 §8.2.2).
    static func fields(of response: HTTPResponse) -> HPACKHeaders {
        let fields = HopByHop.stripped(response.headerFields)
        var headers = HPACKHeaders()
        headers.reserveCapacity(fields.count + 1)
        headers.add(name: ":status", value: String(response.status.code))
        for field in fields {
            headers.add(name: field.name.canonicalName, value: field.value)
        }
        return headers
    }
}
#endif
