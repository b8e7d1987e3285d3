// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HummingbirdCore
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// A connection on the listener: TLS when configured (with the context current when it was
/// accepted), then HTTP/1.1 or, with ``CacheProxy/Configuration/http2``, HTTP/2 — chosen by ALPN
/// over TLS, by the client's first bytes in cleartext (HTTP/2's preface: prior knowledge).
struct ProxyListenerChannel: ServerChildChannel {
    /// The protocol a connection speaks once chosen, set up.
    enum Negotiated: Sendable {
        case http1(HTTP1Channel.Value)
        case http2(FastHitHTTP2Channel.Connection)
    }

    struct Value: ServerChildChannelValue {
        let channel: any Channel
        let negotiated: EventLoopFuture<Negotiated>
    }

    let http1: FastHitHTTP1Channel
    let http2: FastHitHTTP2Channel?
    let certificates: ListenerCertificates?
    /// How long a connection may take to choose its protocol (its TLS handshake, its first
    /// bytes) before it is closed; nil for ever. HTTP/1.1's idle timeout starts only once chosen.
    let idleTimeout: Duration?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let http1 = self.http1
        let http2 = self.http2
        let choose: @Sendable (Bool) -> EventLoopFuture<Negotiated> = { isHTTP2 in
            if isHTTP2, let http2 {
                return channel.eventLoop.makeCompletedFuture {
                    .http2(try http2.setup(channel: channel, logger: logger))
                }
            }
            return http1.setup(channel: channel, logger: logger).map { .http1($0) }
        }
        return channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            if let certificates {
                try pipeline.addHandler(NIOSSLServerHandler(context: certificates.current))
            }
            switch (certificates, http2) {
            case (_, nil):
                return nil
            case (.some, .some):
                let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result in
                    switch result {
                    case .negotiated("h2"): choose(true)
                    case .negotiated("http/1.1"), .fallback: choose(false)
                    // Only h2 and http/1.1 are offered.
                    case .negotiated:
                        channel.close().flatMapThrowing { throw ChannelError.inappropriateOperationForState }
                    }
                }
                try pipeline.addHandler(negotiation)
                return negotiation.protocolNegotiationResult
            case (nil, .some):
                let sniffer = PriorKnowledgeSniffer<Negotiated>(choose: choose)
                try pipeline.addHandler(sniffer)
                return sniffer.result
            }
        }.flatMap { (negotiated: EventLoopFuture<Negotiated>?) in
            guard let negotiated else {
                return http1.setup(channel: channel, logger: logger).map {
                    Value(channel: channel, negotiated: channel.eventLoop.makeSucceededFuture(.http1($0)))
                }
            }
            if let idleTimeout {
                let deadline = channel.eventLoop.scheduleTask(in: TimeAmount(idleTimeout)) {
                    channel.close(promise: nil)
                }
                negotiated.whenComplete { _ in deadline.cancel() }
            }
            return channel.eventLoop.makeSucceededFuture(Value(channel: channel, negotiated: negotiated))
        }
    }

    func handle(value: Value, logger: Logger) async {
        await RequestTasks.run(on: EventLoopTaskExecutor(value.channel.eventLoop)) {
            await handleOnLoop(value: value, logger: logger)
        }
    }

    private func handleOnLoop(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1(let connection):
                await http1.handle(value: connection, logger: logger)
            case .http2(let connection):
                await http2?.handle(connection, logger: logger)
            }
        } catch {
            // The connection ended (or failed its handshake) before it chose a protocol.
            logger.trace("connection closed before it chose HTTP/1.1 or HTTP/2: \(error)")
        }
    }
}

/// Runs the jobs of the tasks that prefer it on one event loop's thread: a listener connection's
/// task prefers its channel's loop (and through ``CachingClient/RequestTasks`` so do the tasks the
/// client starts for its requests), so that a miss resumes where its bytes arrive instead of
/// waking a thread of the global pool to hand each step back (a 1 KB miss: 2 context switches
/// instead of 10–11). Work that would hold the loop leaves it (a lower tier's read, a large
/// store). A job enqueued after the loop shut down is dropped, as the loop drops any task then.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// The first handler of a cleartext connection when HTTP/2 is on: it reads the connection's
/// first bytes, and a client that starts with HTTP/2's connection preface (`PRI *
/// HTTP/2.0\r\n\r\nSM\r\n\r\n`, RFC 9113 §3.4) speaks HTTP/2 by prior knowledge; any other first
/// bytes speak HTTP/1.1 (no HTTP/1.1 request starts with `PRI`). The pipeline for the chosen
/// protocol is set up after this handler, which then passes the bytes read on and leaves.
final class PriorKnowledgeSniffer<Result: Sendable>: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private static var preface: StaticString { "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" }

    private enum State {
        case sniffing(ByteBuffer?)
        /// The protocol is chosen and being set up; reads wait here.
        case choosing(CircularBuffer<ByteBuffer>)
        case done
    }

    private let choose: (Bool) -> EventLoopFuture<Result>
    private var state = State.sniffing(nil)
    private var promise: EventLoopPromise<Result>?

    /// - Parameter choose: sets the pipeline up after this handler, for HTTP/2 (true) or HTTP/1.1.
    init(choose: @escaping (Bool) -> EventLoopFuture<Result>) {
        self.choose = choose
    }

    /// The protocol's setup, once chosen; failed when the connection ends first.
    var result: EventLoopFuture<Result> {
        guard let promise else { preconditionFailure("the sniffer's result before it was added") }
        return promise.futureResult
    }

    func handlerAdded(context: ChannelHandlerContext) {
        promise = context.eventLoop.makePromise()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        promise?.fail(ChannelError.inappropriateOperationForState)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        switch state {
        case .sniffing(var read):
            if read == nil {
                read = bytes
            } else {
                read!.writeBuffer(&bytes)
            }
            guard let isHTTP2 = Self.startsHTTP2(read!) else {
                state = .sniffing(read)
                return
            }
            state = .choosing([read!])
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            choose(isHTTP2).hop(to: context.eventLoop).whenComplete { result in
                let (sniffer, context) = loopBound.value
                sniffer.chosen(result, context: context)
            }
        case .choosing(var waiting):
            waiting.append(bytes)
            state = .choosing(waiting)
        case .done:
            context.fireChannelRead(data)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise?.fail(ChannelError.eof)
        promise = nil
        context.fireChannelInactive()
    }

    /// Whether `bytes` start HTTP/2's preface; nil while they are a prefix of it.
    static func startsHTTP2(_ bytes: ByteBuffer) -> Bool? {
        preface.withUTF8Buffer { preface in
            let count = min(bytes.readableBytes, preface.count)
            let matches = bytes.withUnsafeReadableBytes { read in
                (0..<count).allSatisfy { read[$0] == preface[$0] }
            }
            if !matches { return false }
            return count == preface.count ? true : nil
        }
    }

    private func chosen(_ result: Swift.Result<Result, any Error>, context: ChannelHandlerContext) {
        guard case .choosing(let waiting) = state else { return }
        state = .done
        let promise = self.promise
        self.promise = nil
        switch result {
        case .success(let value):
            promise?.succeed(value)
            for bytes in waiting { context.fireChannelRead(wrapInboundOut(bytes)) }
            context.fireChannelReadComplete()
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        case .failure(let error):
            promise?.fail(error)
            context.close(promise: nil)
        }
    }
}
#endif
