// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPTypes
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP2
import NIOPosix
import NIOSSL
import Testing

/// An HTTP/2 client on one connection (SwiftNIO's HTTP/2 handler): over TLS choosing `h2` by ALPN,
/// or in cleartext by prior knowledge. Each request is a stream; requests may run concurrently.
final class H2Client: Sendable {
    /// One answer: the interim responses, the final one and its body.
    struct Answer {
        var interim: [HTTPResponse]
        var response: HTTPResponse
        var body: [UInt8]

        var status: Int { response.status.code }
        var text: String { String(decoding: body, as: UTF8.self) }
        func field(_ name: String) -> String? { HTTPField.Name(name).flatMap { response.headerFields[$0] } }
    }

    let channel: any Channel
    private let multiplexer: NIOHTTP2Handler.AsyncStreamMultiplexer<Void>
    private let scheme: String
    private let port: Int

    private init(
        channel: any Channel,
        multiplexer: NIOHTTP2Handler.AsyncStreamMultiplexer<Void>,
        scheme: String,
        port: Int
    ) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.scheme = scheme
        self.port = port
    }

    /// Connects to 127.0.0.1:`port`: over TLS trusting `trusted` (ALPN offering `h2` only), or
    /// in cleartext when `trusted` is nil.
    static func connect(port: Int, trusting trusted: [NIOSSLCertificate]? = nil) async throws -> H2Client {
        let context = try trusted.map { trusted in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .certificates(trusted)
            configuration.applicationProtocols = ["h2"]
            return try NIOSSLContext(configuration: configuration)
        }
        let (channel, multiplexer) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let context {
                        try pipeline.addHandler(try NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    }
                    let multiplexer = try pipeline.configureAsyncHTTP2Pipeline(mode: .client) { stream in
                        stream.eventLoop.makeSucceededVoidFuture()
                    }
                    return (channel, multiplexer)
                }
            }
        return H2Client(
            channel: channel,
            multiplexer: multiplexer,
            scheme: trusted == nil ? "http" : "https",
            port: port
        )
    }

    /// Sends `GET path` with `fields`.
    func get(_ path: String, _ fields: HTTPFields = [:]) async throws -> Answer {
        try await send(
            HTTPRequest(method: .get, scheme: scheme, authority: "localhost:\(port)", path: path, headerFields: fields)
        )
    }

    /// Sends `request` (and `body`) on a new stream and reads the answer.
    func send(_ request: HTTPRequest, body: [UInt8]? = nil) async throws -> Answer {
        let stream = try await multiplexer.openStream { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTPClientCodec())
                return try NIOAsyncChannel<HTTPResponsePart, HTTPRequestPart>(wrappingChannelSynchronously: channel)
            }
        }
        return try await stream.executeThenClose { inbound, outbound in
            try await outbound.write(.head(request))
            if let body { try await outbound.write(.body(ByteBuffer(bytes: body))) }
            try await outbound.write(.end(nil))
            var interim: [HTTPResponse] = []
            var final: HTTPResponse?
            var bytes: [UInt8] = []
            for try await part in inbound {
                switch part {
                case .head(let head) where head.status.kind == .informational:
                    interim.append(head)
                case .head(let head):
                    final = head
                case .body(let buffer):
                    bytes += buffer.readableBytesView
                case .end:
                    return Answer(interim: interim, response: try #require(final), body: bytes)
                }
            }
            throw ChannelError.eof
        }
    }

    /// Closes the connection.
    func close() async {
        channel.close(promise: nil)
        await withCheckedContinuation { done in channel.closeFuture.whenComplete { _ in done.resume() } }
    }
}
#endif
