// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Testing

/// A certificate and key the test makes with `openssl` (self-signed, for `localhost` and
/// 127.0.0.1, with the serial number given), in PEM files.
struct TestCertificate {
    let certificatePath: String
    let keyPath: String
    let serial: Int

    /// The certificate, to trust.
    func certificate() throws -> NIOSSLCertificate {
        try #require(try NIOSSLCertificate.fromPEMFile(certificatePath).first)
    }

    /// Makes the files (overwriting what is there).
    static func make(in directory: String, name: String = "server", serial: Int) async throws -> TestCertificate {
        let certificatePath = "\(directory)/\(name).pem"
        let keyPath = "\(directory)/\(name).key"
        try await makeSelfSignedCertificate(certificatePath: certificatePath, keyPath: keyPath, serial: serial)
        return TestCertificate(certificatePath: certificatePath, keyPath: keyPath, serial: serial)
    }
}

/// An HTTP/1.1 client over TLS (swift-nio-ssl) on one connection, reading answers framed by
/// `Content-Length`: it reports what the handshake settled (the server's certificate serial, the
/// TLS version, the ALPN protocol), so that a test can tell connections and certificates apart.
final class TLSClient {
    /// One answer: the status line and fields as text, and the body.
    struct Answer {
        var head: String
        var body: String
        var status: Int? { head.split(separator: " ").dropFirst().first.flatMap { Int($0) } }
        /// The value of the field `name` (case-insensitive), first occurrence.
        func field(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    /// What the handshake settled.
    struct Session: Equatable {
        var serial: Int
        var version: TLSVersion? = nil
        var applicationProtocol: String? = nil
    }

    let channel: any Channel
    let session: Session
    private var received: AsyncStream<ByteBuffer>.Iterator
    private var pending: [UInt8] = []

    private init(channel: any Channel, session: Session, received: AsyncStream<ByteBuffer>) {
        self.channel = channel
        self.session = session
        self.received = received.makeAsyncIterator()
    }

    /// Connects to 127.0.0.1:`port` trusting `trusted`, and completes the handshake.
    static func connect(
        port: Int,
        trusting trusted: [NIOSSLCertificate],
        maximumVersion: TLSVersion = .tlsv13
    ) async throws -> TLSClient {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(trusted)
        configuration.maximumTLSVersion = maximumVersion
        configuration.applicationProtocols = ["http/1.1"]
        let context = try NIOSSLContext(configuration: configuration)
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
        let handshake = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: String?.self)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let ssl = try NIOSSLClientHandler(context: context, serverHostname: "localhost")
                    try channel.pipeline.syncOperations.addHandler(ssl)
                    try channel.pipeline.syncOperations.addHandler(
                        Collector(handshake: handshake, continuation: continuation)
                    )
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        let applicationProtocol: String?
        do {
            applicationProtocol = try await handshake.futureResult.get()
        } catch {
            channel.close(promise: nil)
            throw error
        }
        let session = try await channel.eventLoop.submit {
            let ssl = try channel.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
            let serial = ssl.peerCertificate?.serialNumber.reduce(0) { $0 << 8 | Int($1) } ?? -1
            return Session(serial: serial, version: ssl.tlsVersion, applicationProtocol: applicationProtocol)
        }.get()
        return TLSClient(channel: channel, session: session, received: stream)
    }

    /// Sends `GET path` and reads the answer (framed by `Content-Length`; none means no body).
    func get(_ path: String) async throws -> Answer {
        try await channel.writeAndFlush(ByteBuffer(string: "GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n"))
        while true {
            if let end = pending.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
                let length = Answer(head: head, body: "").field("Content-Length").flatMap { Int($0) } ?? 0
                if pending.count - end.upperBound >= length {
                    let bodyEnd = end.upperBound + length
                    let body = String(decoding: pending[end.upperBound..<bodyEnd], as: UTF8.self)
                    pending.removeFirst(bodyEnd)
                    return Answer(head: head, body: body)
                }
            }
            guard let buffer = await received.next() else { throw ChannelError.eof }
            pending += buffer.readableBytesView
        }
    }

    /// Closes the connection.
    func close() async {
        channel.close(promise: nil)
        await withCheckedContinuation { done in channel.closeFuture.whenComplete { _ in done.resume() } }
    }
}

/// Completes `handshake` with the negotiated ALPN protocol when the TLS handshake completes
/// (fails it when the connection fails or closes first), and passes what arrives to `continuation`.
private final class Collector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    private let handshake: EventLoopPromise<String?>
    private let continuation: AsyncStream<ByteBuffer>.Continuation
    private var completed = false

    init(handshake: EventLoopPromise<String?>, continuation: AsyncStream<ByteBuffer>.Continuation) {
        self.handshake = handshake
        self.continuation = continuation
    }

    private func complete(_ result: Result<String?, any Error>) {
        guard !completed else { return }
        completed = true
        handshake.completeWith(result)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        continuation.yield(unwrapInboundIn(data))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let negotiated) = event { complete(.success(negotiated)) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        complete(.failure(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        complete(.failure(ChannelError.eof))
        continuation.finish()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        complete(.failure(ChannelError.ioOnClosedChannel))
        continuation.finish()
    }
}
#endif
