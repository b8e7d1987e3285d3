// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// Reads whole requests and answers them as the ``TestOrigin`` says.
final class OriginHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let origin: TestOrigin
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(origin: TestOrigin) {
        self.origin = origin
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(let buffer):
            body += buffer.readableBytesView
            origin.bodyBytes.increment(by: buffer.readableBytes)
        case .end:
            guard let head else { return }
            self.head = nil
            let request = TestOrigin.Request(
                method: head.method.rawValue,
                uri: head.uri,
                headers: head.headers.map { ($0.name, $0.value) },
                body: body
            )
            answer(origin.behavior(for: request), keepAlive: head.isKeepAlive && origin.keepAlive, context: context)
        }
    }

    private func answer(_ behavior: TestOrigin.Behavior, keepAlive: Bool, context: ChannelHandlerContext) {
        switch behavior {
        case .dropConnection:
            context.close(promise: nil)
        case .servesRanges(let fields, let body):
            // Resolved against the request by the origin; as a whole answer here.
            answer(.respond(status: 200, headers: fields, body: body), keepAlive: keepAlive, context: context)
        case .stallBody(let status, let fields, let firstBytes, let declaredLength):
            var headers = HTTPHeaders(fields)
            headers.replaceOrAdd(name: "Content-Length", value: "\(declaredLength)")
            let head = HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: firstBytes)))), promise: nil)
        case .interim(let status, let fields, let then):
            let head = HTTPResponseHead(
                version: .http1_1,
                status: .init(statusCode: status),
                headers: HTTPHeaders(fields)
            )
            context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
            answer(then, keepAlive: keepAlive, context: context)
        case .hold(let gate, let then):
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            gate.wait(on: context.eventLoop).whenSuccess {
                let (handler, context) = loopBound.value
                handler.answer(then, keepAlive: keepAlive, context: context)
            }
        case .respond(let status, let fields, let body):
            var headers = HTTPHeaders(fields)
            let hasBody = status != 304 && status != 204 && status >= 200
            if hasBody, !headers.contains(name: "content-length") {
                headers.add(name: "Content-Length", value: "\(body.count)")
            }
            if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
            let head = HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if hasBody, !body.isEmpty {
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
            }
            let done = context.writeAndFlushPromise()
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: done)
            if !keepAlive {
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                done.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
            }
        }
    }
}

extension ChannelHandlerContext {
    fileprivate func writeAndFlushPromise() -> EventLoopPromise<Void> {
        eventLoop.makePromise(of: Void.self)
    }
}
#endif
