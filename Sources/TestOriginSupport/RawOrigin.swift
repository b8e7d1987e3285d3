// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An origin on 127.0.0.1 that answers each request with exactly the bytes it is told to, framed
/// or not: for tests of a client against an origin that breaks HTTP/1.1's framing (bytes past an
/// answer, a second answer in the same write, bytes sent while a connection is idle).
///
/// It reads a request up to the end of its head (requests with bodies are not supported) and
/// answers with ``Answer``'s bytes in one write; the connection stays open until the client
/// closes it or the origin stops.
public final class RawOrigin: Sendable {
    /// The bytes to answer a request with, given its method and its path (with the query).
    public typealias Answer = @Sendable (_ method: String, _ path: String) -> [UInt8]
    /// The bytes to answer a request with, given its method, its path and its whole head (the
    /// request line and the header lines, without the blank line).
    public typealias HeadAnswer = @Sendable (_ method: String, _ path: String, _ head: String) -> [UInt8]

    struct State {
        var requests: [String] = []
        var children: [ObjectIdentifier: any Channel] = [:]
        var accepted = 0
    }

    let state = Mutex(State())
    private let closed = Tally()
    let answer: HeadAnswer
    private let channel: Mutex<(any Channel)?>
    /// The port it listens on.
    public let port: Int

    private init(channel: any Channel, port: Int, answer: @escaping HeadAnswer) {
        self.channel = Mutex(channel)
        self.port = port
        self.answer = answer
    }

    /// Starts an origin on a free port that answers with `answer`'s bytes.
    public static func start(answer: @escaping Answer) async throws -> RawOrigin {
        try await start(answeringHeads: { method, path, _ in answer(method, path) })
    }

    /// Starts an origin on a free port that answers with `answer`'s bytes, given each request's
    /// head too (a conditional request's validators, say).
    public static func start(answeringHeads answer: @escaping HeadAnswer) async throws -> RawOrigin {
        let box = Mutex<RawOrigin?>(nil)
        let listener = try Socket.makeListener()
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { channel in
                    guard let origin = box.withLock({ $0 }) else { return channel.close() }
                    origin.accepted(channel)
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(RawOriginHandler(origin: origin))
                    }
                }
                .withBoundSocket(listener)
                .get()
        } catch {
            close(listener)
            throw error
        }
        let origin = RawOrigin(channel: channel, port: channel.localAddress?.port ?? 0, answer: answer)
        box.withLock { $0 = origin }
        return origin
    }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    /// `127.0.0.1:PORT`.
    public var authority: String { "127.0.0.1:\(port)" }

    /// The request lines received (`GET /a`), in order.
    public var requests: [String] { state.withLock { $0.requests } }
    /// How many connections it has accepted.
    public var connectionCount: Int { state.withLock { $0.accepted } }

    /// Writes `bytes` on every open connection, unasked, and returns once they are written.
    public func send(_ bytes: [UInt8]) async throws {
        let children = state.withLock { Array($0.children.values) }
        for child in children { try await child.writeAndFlush(ByteBuffer(bytes: bytes)) }
    }

    /// Closes every open connection (an origin that dies mid-answer) and keeps listening.
    public func closeConnections() async {
        let children = state.withLock { Array($0.children.values) }
        // A connection that fails to close is closed already.
        for child in children { try? await child.close() }
    }

    /// Returns once at least `count` connections have been closed (by either side).
    public func waitForClosedConnections(_ count: Int) async {
        await closed.wait(for: count)
    }

    /// Stops listening and closes every open connection.
    public func stop() async {
        let server = channel.withLock { channel in
            defer { channel = nil }
            return channel
        }
        try? await server?.close()
        let children = state.withLock { Array($0.children.values) }
        for child in children { try? await child.close() }
    }

    private func accepted(_ channel: any Channel) {
        state.withLock { state in
            state.children[ObjectIdentifier(channel)] = channel
            state.accepted += 1
        }
        channel.closeFuture.whenComplete { _ in
            _ = self.state.withLock { $0.children.removeValue(forKey: ObjectIdentifier(channel)) }
            self.closed.increment()
        }
    }
}

/// Reads request heads and writes the ``RawOrigin``'s bytes for each.
final class RawOriginHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let origin: RawOrigin
    private var received: [UInt8] = []

    init(origin: RawOrigin) {
        self.origin = origin
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytesView
        while let end = Self.endOfHead(received) {
            let head = String(decoding: received[..<end], as: UTF8.self)
            received.removeSubrange(..<(end + 4))
            let line = head.split(separator: "\r\n", maxSplits: 1).first ?? ""
            let words = line.split(separator: " ")
            guard words.count >= 2 else {
                context.close(promise: nil)
                return
            }
            let (method, path) = (String(words[0]), String(words[1]))
            origin.state.withLock { $0.requests.append("\(method) \(path)") }
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: origin.answer(method, path, head))), promise: nil)
        }
    }

    /// The offset of the blank line that ends a head in `bytes`.
    private static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
#endif
