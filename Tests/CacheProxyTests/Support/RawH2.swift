// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import NIOPosix

/// HTTP/2 frames written by hand (RFC 9113 §4.1) and a connection that sends them and reads what
/// comes back until the server closes it.
enum RawH2 {
    enum FrameType: UInt8 {
        case data = 0
        case headers = 1
        case rstStream = 3
        case settings = 4
        case ping = 6
        case goAway = 7
        case windowUpdate = 8
        case continuation = 9
    }

    static let endStream: UInt8 = 0x1
    static let endHeaders: UInt8 = 0x4
    static let protocolError: UInt32 = 0x1
    static let enhanceYourCalm: UInt32 = 0xb
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + frame(.settings, stream: 0, [])

    static func frame(_ type: FrameType, flags: UInt8 = 0, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let length = UInt32(payload.count)
        return [UInt8(length >> 16), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type.rawValue, flags]
            + [UInt8(stream >> 24), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)]
            + payload
    }

    /// An HPACK integer (RFC 7541 §5.1) in the low `prefixBits` of its first byte.
    static func integer(_ value: Int, prefixBits: Int) -> [UInt8] {
        let limit = (1 << prefixBits) - 1
        guard value >= limit else { return [UInt8(value)] }
        var bytes = [UInt8(limit)]
        var rest = value - limit
        while rest >= 128 {
            bytes.append(UInt8(rest & 0x7f) | 0x80)
            rest >>= 7
        }
        return bytes + [UInt8(rest)]
    }

    /// A literal field without indexing, with a new name.
    static func literal(_ name: String, _ value: String) -> [UInt8] {
        [0] + integer(name.utf8.count, prefixBits: 7) + Array(name.utf8) + integer(value.utf8.count, prefixBits: 7)
            + Array(value.utf8)
    }

    /// The header block of `GET path` for `localhost` over `http`.
    static func get(_ path: String) -> [UInt8] {
        // :method GET (static 2), :scheme http (static 6), :path and :authority literal with
        // their static names (4 and 1), not indexed.
        [0x82, 0x86, 0x04] + integer(path.utf8.count, prefixBits: 7) + Array(path.utf8) + [0x01, 9]
            + Array("localhost".utf8)
    }

    /// What the server sent.
    struct Outcome {
        var frameTypes: [UInt8] = []
        var goAwayError: UInt32?
        var settingsAcks = 0
        var resets = 0
        var resetStream1 = false
        /// The error code of stream 1's `RST_STREAM`.
        var stream1ResetError: UInt32?
        var answeredStream1 = false
        /// The body sent on stream 1, and whether it ended.
        var stream1Body: [UInt8] = []
        var stream1Ended = false
        /// Whether the server closed the connection.
        var closed = false

        mutating func record(type: UInt8, flags: UInt8, stream: UInt32, _ payload: [UInt8]) {
            frameTypes.append(type)
            switch FrameType(rawValue: type) {
            case .goAway where payload.count >= 8:
                goAwayError = payload[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
            case .settings where flags & 0x1 != 0:
                settingsAcks += 1
            case .rstStream:
                resets += 1
                if stream == 1 {
                    resetStream1 = true
                    if payload.count >= 4 { stream1ResetError = payload[0..<4].reduce(0) { $0 << 8 | UInt32($1) } }
                }
            case .headers where stream == 1:
                answeredStream1 = true
                if flags & RawH2.endStream != 0 { stream1Ended = true }
            case .data where stream == 1:
                stream1Body += payload
                if flags & RawH2.endStream != 0 { stream1Ended = true }
            default:
                break
            }
        }
    }

    /// Sends `bytes` on a new connection to 127.0.0.1:`port` and reads frames until the server
    /// closes the connection or `until` holds (then this side closes it).
    static func exchange(
        port: Int,
        _ bytes: [UInt8],
        until done: @escaping (Outcome) -> Bool = { _ in false }
    ) async throws -> Outcome {
        let connection = try await Connection.open(port: port)
        connection.send(bytes)
        let outcome = await connection.read(until: done)
        connection.close()
        return outcome
    }

    /// A connection that frames are written to and read from, the outcome accumulated.
    final class Connection {
        let channel: any Channel
        private var received: AsyncStream<ByteBuffer>.Iterator
        private var pending: [UInt8] = []
        private(set) var outcome = Outcome()

        private init(channel: any Channel, received: AsyncStream<ByteBuffer>) {
            self.channel = channel
            self.received = received.makeAsyncIterator()
        }

        static func open(port: Int) async throws -> Connection {
            let (received, sink) = AsyncStream.makeStream(of: ByteBuffer.self)
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(Reader(sink: sink))
                    }
                }
                .connect(host: "127.0.0.1", port: port).get()
            return Connection(channel: channel, received: received)
        }

        /// Writes `bytes`. The server may close before it has read everything: a failed write is
        /// part of an attack test.
        func send(_ bytes: [UInt8]) {
            channel.writeAndFlush(ByteBuffer(bytes: bytes), promise: nil)
        }

        /// Ends this side's writing (a TCP half-close).
        func closeOutput() async throws {
            try await channel.close(mode: .output)
        }

        func close() {
            channel.close(promise: nil)
        }

        /// Reads frames until `done` holds, or the server closes the connection (then
        /// ``Outcome/closed``).
        func read(until done: (Outcome) -> Bool = { _ in false }) async -> Outcome {
            if done(outcome) { return outcome }
            while let buffer = await received.next() {
                pending += buffer.readableBytesView
                while pending.count >= 9 {
                    let length = Int(pending[0]) << 16 | Int(pending[1]) << 8 | Int(pending[2])
                    guard pending.count >= 9 + length else { break }
                    let stream =
                        UInt32(pending[5] & 0x7f) << 24 | UInt32(pending[6]) << 16 | UInt32(pending[7]) << 8
                        | UInt32(pending[8])
                    outcome.record(
                        type: pending[3],
                        flags: pending[4],
                        stream: stream,
                        Array(pending[9..<(9 + length)])
                    )
                    pending.removeFirst(9 + length)
                    if done(outcome) { return outcome }
                }
            }
            outcome.closed = true
            return outcome
        }
    }

    private final class Reader: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let sink: AsyncStream<ByteBuffer>.Continuation
        init(sink: AsyncStream<ByteBuffer>.Continuation) { self.sink = sink }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { sink.yield(unwrapInboundIn(data)) }
        func channelInactive(context: ChannelHandlerContext) {
            sink.finish()
            context.fireChannelInactive()
        }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }
}
#endif
