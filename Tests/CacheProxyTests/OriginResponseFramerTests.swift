// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import Testing

@testable import CacheProxyCore

/// The origin connection's pipeline in memory: bytes in however the network cuts them, the answer
/// out, and whether the connection may be kept.
@Suite struct OriginResponseFramerTests {
    /// An origin connection's pipeline on an `EmbeddedChannel` with one exchange started.
    struct Connection {
        let channel = EmbeddedChannel()
        let answer: EventLoopFuture<OriginConnectionHandler.Received>

        init(method: HTTPMethod = .GET) throws {
            let handler = OriginConnectionHandler(budget: BufferBudget(limit: 1 << 30))
            try channel.pipeline.syncOperations.addHandlers([HTTPRequestEncoder(), OriginResponseFramer(), handler])
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
            let promise = channel.eventLoop.makePromise(of: OriginConnectionHandler.Received.self)
            handler.start(
                HTTPRequestHead(version: .http1_1, method: method, uri: "/a"),
                body: nil,
                interim: nil,
                limit: 1 << 20,
                promise: promise
            )
            answer = promise.futureResult
        }

        func receive(_ chunks: [String]) throws {
            for chunk in chunks { try channel.writeInbound(ByteBuffer(string: chunk)) }
        }

        /// The answer, once it came.
        func received() throws -> OriginConnectionHandler.Received? {
            channel.embeddedEventLoop.run()
            let result = Mutex<OriginConnectionHandler.Received?>(nil)
            answer.whenSuccess { received in result.withLock { $0 = received } }
            return result.withLock { $0 }
        }
    }

    static let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"

    /// However the reads cut a clean answer, even a byte at a time, it settles once, whole, and
    /// its connection may be kept.
    @Test(arguments: [1, 2, 7, 1000])
    func aCleanAnswerCutAnywhereKeepsItsConnection(cut: Int) throws {
        let connection = try Connection()
        let bytes = Array(("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + Self.chunked).utf8)
        let chunks = stride(from: 0, to: bytes.count, by: cut).map {
            String(decoding: bytes[$0..<min($0 + cut, bytes.count)], as: UTF8.self)
        }
        try connection.receive(chunks)
        let received = try #require(try connection.received())
        #expect(received.head.status == .ok && received.body == Array("abc".utf8) && received.reusable)
        #expect(connection.channel.isActive)
    }

    /// The start of another head in the answer's last read: the answer is whole, the connection
    /// is closed.
    @Test func bytesAfterTheAnswerInItsReadCloseTheConnection() throws {
        let connection = try Connection()
        _ = try? connection.receive([Self.chunked + "HTTP/1.1 200 OK\r\nX-Junk: "])
        let received = try #require(try connection.received())
        #expect(received.body == Array("abc".utf8) && !received.reusable)
        #expect(!connection.channel.isActive)
    }

    /// The same bytes in a read of their own come while nothing is asked: they close it too.
    @Test func bytesInALaterReadCloseTheIdleConnection() throws {
        let connection = try Connection()
        try connection.receive([Self.chunked])
        #expect(try connection.received()?.reusable == true)
        #expect(connection.channel.isActive)
        try connection.receive(["HTTP/1.1 200 OK\r\nX-Junk: "])
        #expect(!connection.channel.isActive)
    }

    /// A body without a length ends with the connection, which is then not kept.
    @Test func aBodyThatEndsWithTheConnection() throws {
        let connection = try Connection()
        try connection.receive(["HTTP/1.1 200 OK\r\n\r\nhel", "lo"])
        #expect(try connection.received() == nil)
        try connection.channel.close().wait()
        let received = try #require(try connection.received())
        #expect(received.body == Array("hello".utf8) && !received.reusable)
    }

    /// A `HEAD`'s answer ends with its head, with or without a length: its connection is kept
    /// (found by the `origin` fuzz target: without a length it was closed).
    @Test func aHeadsAnswerWithoutALengthKeepsItsConnection() throws {
        let connection = try Connection(method: .HEAD)
        try connection.receive(["HTTP/1.1 200 OK\r\nETag: \"v1\"\r\n\r\n"])
        let received = try #require(try connection.received())
        #expect(received.head.status == .ok && received.body.isEmpty && received.reusable)
        #expect(connection.channel.isActive)
    }

    /// A `HEAD`'s answer has no body: bytes sent as one are junk.
    @Test func aBodyAfterAHeadsAnswerClosesTheConnection() throws {
        let connection = try Connection(method: .HEAD)
        _ = try? connection.receive(["HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"])
        let received = try #require(try connection.received())
        #expect(received.body.isEmpty && !received.reusable)
        #expect(!connection.channel.isActive)
    }
}
#endif
