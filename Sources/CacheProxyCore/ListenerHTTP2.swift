// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP2

extension CacheProxy {
    /// HTTP/2 on the listener: chosen by ALPN (`h2`) over TLS, and in cleartext (h2c) by a client
    /// that opens the connection with HTTP/2's preface (prior knowledge, RFC 9113 §3.3). Clients
    /// that do neither speak HTTP/1.1 as before.
    ///
    /// The limits below are sent to clients in the first `SETTINGS` frame. The attacks known on
    /// HTTP/2 are bounded by SwiftNIO's HTTP/2 handler, with its defaults: a connection that
    /// resets more than 200 streams in 30 seconds (rapid reset, CVE-2023-44487), sends more than
    /// 200 `PING`, `SETTINGS` or `PRIORITY` frames in 30 seconds, or more than 5 `CONTINUATION`
    /// frames in a row, is closed; a header block whose decoded fields exceed
    /// ``maximumHeaderListSize`` (an HPACK bomb) closes its connection.
    public struct HTTP2: Sendable, Hashable {
        /// The most streams a client may have open on one connection
        /// (`SETTINGS_MAX_CONCURRENT_STREAMS`). Default 100.
        public var maximumConcurrentStreams: Int
        /// The largest request header list accepted, in bytes as RFC 9113 counts them (each
        /// field's name and value plus 32) (`SETTINGS_MAX_HEADER_LIST_SIZE`). Default 16 KiB.
        public var maximumHeaderListSize: Int
        /// The flow-control window of each stream's request body, in bytes
        /// (`SETTINGS_INITIAL_WINDOW_SIZE`). Default 65,535.
        public var streamWindowSize: Int
        /// The flow-control window of a connection's request bodies together, in bytes. Default
        /// 1 MiB.
        public var connectionWindowSize: Int

        /// Creates HTTP/2 settings.
        public init(
            maximumConcurrentStreams: Int = 100,
            maximumHeaderListSize: Int = 16 << 10,
            streamWindowSize: Int = 65_535,
            connectionWindowSize: Int = 1 << 20
        ) {
            self.maximumConcurrentStreams = maximumConcurrentStreams
            self.maximumHeaderListSize = maximumHeaderListSize
            self.streamWindowSize = streamWindowSize
            self.connectionWindowSize = connectionWindowSize
        }

        /// Whether the values are ones HTTP/2 allows (RFC 9113 §6.5.2).
        var isValid: Bool {
            maximumConcurrentStreams >= 1 && maximumHeaderListSize >= 1
                && (1...Int(Int32.max)).contains(streamWindowSize)
                && (65_535...Int(Int32.max)).contains(connectionWindowSize)
        }
    }
}

/// An HTTP/2 connection on the listener: NIO's HTTP/2 handler with the configured limits, then
/// a ``FastHitFrameHandler`` (fresh memory hits answered from the frames, on the event loop: no
/// stream channel, no task), then NIO's stream multiplexer for the other requests: an
/// ``HTTP2StreamHandOff`` on each of their streams, and HummingbirdCore's HTTP/1.1 channel's
/// request loop (a stream is one request, as HummingbirdHTTP2 serves it) in a task each.
///
/// HummingbirdHTTP2's own channel was not used: it starts a task for every stream before its
/// request is read, and sets none of HTTP/2's limits. NIO's inline multiplexer was used before
/// the frame handler: it makes a stream channel for every request, before any handler of ours
/// sees it, and that cost half the CPU of a hit.
struct FastHitHTTP2Channel: Sendable {
    /// Serves a stream that is not a fast hit.
    let http1: FastHitHTTP1Channel
    let fastHit: FastHit
    /// How long a connection without open streams stays open; nil for ever.
    let idleTimeout: Duration?
    /// NIO's HTTP/2 configuration for the limits: made once, used by every connection.
    private let connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration
    private let settings: CacheProxy.HTTP2

    init(http1: FastHitHTTP1Channel, fastHit: FastHit, settings: CacheProxy.HTTP2, idleTimeout: Duration?) {
        self.http1 = http1
        self.fastHit = fastHit
        self.idleTimeout = idleTimeout
        self.settings = settings
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        // Received blocks are checked by ``FastHitFrameHandler`` (``HTTP2HeaderBlockCheck``); sent
        // ones are made from valid fields.
        connection.headerBlockValidation = .disabled
        connection.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: settings.maximumConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: settings.maximumHeaderListSize),
            HTTP2Setting(parameter: .initialWindowSize, value: settings.streamWindowSize),
        ]
        self.connectionConfiguration = connection
    }

    /// A connection set up: the streams to serve in tasks.
    struct Connection: Sendable {
        let channel: any Channel
        let streams: AsyncStream<HTTP1Channel.Value>
    }

    /// Sets the connection's pipeline up (on its event loop).
    func setup(channel: any Channel, logger: Logger) throws -> Connection {
        let (streams, handOff) = AsyncStream.makeStream(of: HTTP1Channel.Value.self)
        channel.closeFuture.whenComplete { _ in handOff.finish() }
        let keeper = HTTP2ConnectionKeeper(idleTimeout: idleTimeout.map(TimeAmount.init))
        let fastHit = self.fastHit
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(
            NIOHTTP2Handler(mode: .server, connectionConfiguration: connectionConfiguration)
        )
        try pipeline.addHandler(keeper)
        try pipeline.addHandler(FastHitFrameHandler(fastHit, connectionWindowSize: settings.connectionWindowSize))
        try pipeline.addHandler(
            HTTP2StreamMultiplexer(
                mode: .server,
                channel: channel,
                targetWindowSize: settings.streamWindowSize,
                outboundBufferSizeHighWatermark: 8192,
                outboundBufferSizeLowWatermark: 4096
            ) { streamChannel in
                streamChannel.eventLoop.makeCompletedFuture {
                    try streamChannel.pipeline.syncOperations.addHandlers(
                        HTTP2FramePayloadToHTTPServerCodec(),
                        HTTP2StreamHandOff(handOff: handOff)
                    )
                }
            }
        )
        return Connection(channel: channel, streams: streams)
    }

    /// Serves the streams that are not fast hits until the connection closes.
    func handle(_ connection: Connection, logger: Logger) async {
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                for await stream in connection.streams {
                    group.addTask { await http1.handle(value: stream, logger: logger) }
                }
            }
        } onCancel: {
            connection.channel.close(promise: nil)
        }
    }
}

/// Hands a stream that ``FastHitFrameHandler`` did not answer to the connection's task: wraps it
/// for HummingbirdCore's request loop, with the request parts read so far. It does not look the
/// request up again: a request that could be a fast hit was looked up from its frames.
///
/// The head is held until its end or first body part, to mark a body of unknown length.
final class HTTP2StreamHandOff: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        case idle
        case head(HTTPRequest)
        case passedOn
    }

    private let handOff: AsyncStream<HTTP1Channel.Value>.Continuation
    private var state = State.idle

    init(handOff: AsyncStream<HTTP1Channel.Value>.Continuation) {
        self.handOff = handOff
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (state, part) {
        case (.idle, .head(let request)):
            state = .head(request)
        case (.head(var request), .body):
            // A body without `Content-Length` is legal in HTTP/2 (its DATA frames end it); the
            // ordinary path reads requests with HTTP/1.1's framing, where a body of unknown length
            // is chunked (RFC 9112 §6.3: without either field there is no body).
            if request.headerFields[.contentLength] == nil { request.headerFields[.transferEncoding] = "chunked" }
            passOn(request, then: part, context: context)
        case (.head(let request), _):
            passOn(request, then: part, context: context)
        case (.idle, _), (.passedOn, _):
            context.fireChannelRead(data)
        }
    }

    /// Wraps the stream for HummingbirdCore (its handlers go after this one), passes the parts
    /// read on to them, and hands the stream to the connection's task.
    private func passOn(_ request: HTTPRequest, then part: HTTPRequestPart, context: ChannelHandlerContext) {
        state = .passedOn
        do {
            let stream = try HTTP1Channel.Value(wrappingChannelSynchronously: context.channel)
            context.fireChannelRead(wrapInboundOut(.head(request)))
            context.fireChannelRead(wrapInboundOut(part))
            handOff.yield(stream)
        } catch {
            context.close(promise: nil)
        }
    }

    /// An error before the request was passed on is the conversion's of its head or first part
    /// (a header block whose `:method` HTTP's types refuse, say): the stream is closed, and with
    /// it reset. Left alone, it stayed open and unanswered until the connection closed. Later
    /// errors are HummingbirdCore's.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard case .passedOn = state else {
            context.close(promise: nil)
            return
        }
        context.fireErrorCaught(error)
    }

    /// Answers from the ordinary path lose the fields HTTP/2 forbids.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(let response) = unwrapOutboundIn(data), let stripped = Self.forHTTP2(response) else {
            context.write(data, promise: promise)
            return
        }
        context.write(wrapOutboundOut(.head(stripped)), promise: promise)
    }

    /// `response` without its hop-by-hop fields, which HTTP/2 forbids as connection-specific
    /// (RFC 9113 §8.2.2); nil when it has none (answers from the cache lost them before they were
    /// stored, so hits rarely do).
    static func forHTTP2(_ response: HTTPResponse) -> HTTPResponse? {
        let fields = HopByHop.stripped(response.headerFields)
        guard fields.count != response.headerFields.count else { return nil }
        var response = response
        response.headerFields = fields
        return response
    }
}

/// Closes an HTTP/2 connection: at once on a connection error (a flood, a protocol violation);
/// gracefully on the server's quiesce event (a shutdown), when the client ends its side, and
/// after ``idleTimeout`` without open streams — it sends `GOAWAY` naming the last stream it took,
/// lets the open streams finish, then closes. It counts streams by NIO's HTTP/2 handler's events.
final class HTTP2ConnectionKeeper: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let idleTimeout: TimeAmount?
    private var context: ChannelHandlerContext?
    private var openStreams = 0
    private var lastStream = HTTP2StreamID(0)
    private var closing = false
    private var idleTimer: Scheduled<Void>?
    /// When the last open stream closed; nil while a stream is open. The idle timer is not moved
    /// for each stream (a cancel and a schedule on the event loop's timer heap, 1.2% of an HTTP/2
    /// hit's CPU): when it fires, it goes away only if no stream was open for ``idleTimeout``, and
    /// else waits again for what is left of it.
    private var idleSince: NIODeadline?

    init(idleTimeout: TimeAmount?) {
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        idleSince = context.eventLoop.now
        armIdleTimer()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        self.context = nil
    }

    private func streamCreated(_ id: HTTP2StreamID) {
        openStreams += 1
        if id > lastStream { lastStream = id }
        idleSince = nil
    }

    private func streamClosed() {
        openStreams -= 1
        guard openStreams == 0 else { return }
        if closing {
            // NIO tells of a stream's close while it writes the stream's last frame: closing now
            // would drop that frame. On the next turn of the loop, a last `GOAWAY` goes after
            // it, and the connection closes once that is written.
            guard let context else { return }
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.execute { loopBound.value.sendGoAwayThenClose() }
        } else if idleTimeout != nil, let context {
            idleSince = context.eventLoop.now
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // NIO's HTTP/2 handler tells of every stream, the ones answered from the frames too. The
        // two events of every stream are told by their type first, a comparison of metadata
        // pointers: a conditional cast is a call into the runtime.
        let type = Swift.type(of: event)
        if type == StreamClosedEvent.self {
            streamClosed()
            context.fireUserInboundEventTriggered(event)
        } else if type == NIOHTTP2StreamCreatedEvent.self, let created = event as? NIOHTTP2StreamCreatedEvent {
            streamCreated(created.streamID)
            context.fireUserInboundEventTriggered(event)
        } else if event is ChannelShouldQuiesceEvent {
            goAway()
        } else if case ChannelEvent.inputClosed = event {
            // The client sent its last byte (HummingbirdCore's listener allows half-closed
            // connections): the open streams are answered, then the connection closes, rather
            // than stay open until the idle timeout, or for ever without one.
            goAway()
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// A connection error: NIO's HTTP/2 handler has sent `GOAWAY` with its code (a flood is
    /// `ENHANCE_YOUR_CALM`) and leaves the closing to the pipeline. Left open, the connection would
    /// read on and answer each further frame with another `GOAWAY`.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream's error (a malformed request, a stream reset) is its stream's, which the
        // multiplexer hands it to.
        guard error is NIOHTTP2Errors.StreamError else {
            context.close(promise: nil)
            return
        }
        context.fireErrorCaught(error)
    }

    private func armIdleTimer(in delay: TimeAmount? = nil) {
        guard let idleTimeout, let context, !closing else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(in: delay ?? idleTimeout) { loopBound.value.idleTimerFired() }
    }

    /// Goes away when no stream has been open for ``idleTimeout``; else waits again, for what is
    /// left of it (all of it while a stream is open).
    private func idleTimerFired() {
        guard let idleTimeout, let context else { return }
        guard let idleSince else {
            armIdleTimer()
            return
        }
        let left = idleSince + idleTimeout - context.eventLoop.now
        if left > .zero {
            armIdleTimer(in: left)
        } else {
            goAway()
        }
    }

    /// Tells the client that no stream after the last one taken will be served, and closes once
    /// none is open.
    private func goAway() {
        guard !closing, let context else { return }
        closing = true
        idleTimer?.cancel()
        if openStreams == 0 {
            sendGoAwayThenClose()
        } else {
            context.writeAndFlush(wrapOutboundOut(goAwayFrame), promise: nil)
        }
    }

    /// `GOAWAY` naming the last stream taken (sent again when the last stream closes: RFC 9113
    /// §6.8 allows more than one, the last stream never rising).
    private var goAwayFrame: HTTP2Frame {
        HTTP2Frame(
            streamID: .rootStream,
            payload: .goAway(lastStreamID: lastStream, errorCode: .noError, opaqueData: nil)
        )
    }

    /// Sends `GOAWAY` and closes once it — and so every frame written before it — is written.
    private func sendGoAwayThenClose() {
        guard let context else { return }
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(goAwayFrame), promise: written)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        written.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
    }
}
#endif
