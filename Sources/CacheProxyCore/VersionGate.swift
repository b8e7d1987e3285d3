// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import NIOHTTP1

/// What a request's HTTP version decides about its answer, which HummingbirdCore cannot see
/// (the HTTPTypes requests it reads carry no version):
/// - an HTTP/1.0 request gets no interim (1xx) answer: a server must not send one to an HTTP/1.0
///   client (RFC 9110 §15.2), which would read it as its final answer;
/// - the connection closes after the answer to a request that did not ask to keep it: an
///   HTTP/1.0 one without `Connection: keep-alive` (RFC 9112 §9.3), which HummingbirdCore would
///   otherwise keep open until its idle timeout, the client waiting for the end of the body, or
///   one with `Connection: close`; that answer's head says `Connection: close` (RFC 9112 §9.6).
///   (A hit's head encoded past NIO's encoder does not come this way: ``FastHitHandler`` answers
///   a request that asks to close in parts.)
///
/// It sits right after NIO's request decoder, where requests still carry their version, and
/// pairs answers with requests in order, as NIO's encoder does.
final class VersionGate: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private struct Pending {
        /// HTTP/1.0 or older.
        var isOld: Bool
        /// Whether the connection stays open after the answer.
        var keepsAlive: Bool
    }

    /// The requests not yet answered in full, oldest first.
    private var pending = CircularBuffer<Pending>(initialCapacity: 4)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            pending.append(
                Pending(isOld: (head.version.major, head.version.minor) < (1, 1), keepsAlive: head.isKeepAlive)
            )
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where (100..<200).contains(head.status.code) && head.status.code != 101:
            if pending.first?.isOld == true {
                promise?.succeed()
                return
            }
        case .head(var head) where head.status.code >= 200:
            // The connection's last answer says so (RFC 9112 §9.6), whichever path made it.
            if pending.first?.keepsAlive == false, !head.headers.contains(name: "connection") {
                head.headers.add(name: "Connection", value: "close")
                context.write(wrapOutboundOut(.head(head)), promise: promise)
                return
            }
        case .end:
            if let answered = pending.popFirst(), !answered.keepsAlive {
                let written = promise ?? context.eventLoop.makePromise()
                context.write(data, promise: written)
                written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
                return
            }
        default:
            break
        }
        context.write(data, promise: promise)
    }
}
#endif
