// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import HTTPCaching
import HTTPTypes
import NIOCore
import NIOEmbedded
import Testing

@testable import CacheProxyCore

/// `RawHitHandler`'s backpressure, on an embedded channel whose writability the test sets: the
/// socket is not read while the connection cannot take more writes, the held read is issued once
/// it can, and a request met meanwhile goes on to the decoder as bytes.
@Suite struct RawHitHandlerTests {
    /// Counts the reads that reach the socket's side of the pipeline.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = IOData
        var reads = 0

        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    static func channel() throws -> (EmbeddedChannel, ReadCounter, ResponseCache, ManualDate) {
        let (fastHit, cache, date, _) = try FastHitTests.make()
        let counter = ReadCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers([
            counter, RawHitHandler(fastHit, slowPath: SlowPath(), idleTimeout: nil),
        ])
        return (channel, counter, cache, date)
    }

    static let request = "GET /a HTTP/1.1\r\nHost: proxy:8002\r\n\r\n"

    @Test func aReadWaitsUntilTheConnectionTakesWritesAgain() throws {
        let (channel, counter, _, _) = try Self.channel()
        channel.isWritable = false
        channel.pipeline.read()
        channel.pipeline.read()
        #expect(counter.reads == 0)
        // A change that leaves it unwritable issues nothing.
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(counter.reads == 0)
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(counter.reads == 1, "the held read, once")
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(counter.reads == 1, "no read was held")
        channel.pipeline.read()
        #expect(counter.reads == 2)
        _ = try channel.finish()
    }

    @Test func aHitMetWhileUnwritableGoesToTheDecoder() async throws {
        let (channel, _, cache, date) = try Self.channel()
        try await FastHitTests.store(
            cache,
            "/a",
            [.cacheControl: "max-age=60", .contentLength: "10"],
            at: date.now
        )
        // Writable: answered here, nothing passed on.
        try channel.writeInbound(channel.allocator.buffer(string: Self.request))
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        let head = try #require(try channel.readOutbound(as: IOData.self))
        guard case .byteBuffer(let bytes) = head else {
            Issue.record("a raw hit writes byte buffers")
            return
        }
        #expect(String(buffer: bytes).hasPrefix("HTTP/1.1 200 OK\r\n"))
        while try channel.readOutbound(as: IOData.self) != nil {}
        // Unwritable: the same request goes on, byte for byte, and nothing is written.
        channel.isWritable = false
        try channel.writeInbound(channel.allocator.buffer(string: Self.request))
        let passed = try #require(try channel.readInbound(as: ByteBuffer.self))
        #expect(String(buffer: passed) == Self.request)
        #expect(try channel.readOutbound(as: IOData.self) == nil)
        _ = try channel.finish()
    }
}
#endif
