// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

@testable import CacheProxyCore

/// The HTTP/2 connection keeper's idle timeout, on an embedded event loop whose clock the test
/// moves: the connection goes away once it has been without an open stream for the timeout, and
/// a stream open when the timer fires keeps it (the timer is not moved for each stream).
@Suite struct HTTP2ConnectionKeeperTests {
    static func opened(_ id: Int) -> NIOHTTP2StreamCreatedEvent {
        NIOHTTP2StreamCreatedEvent(
            streamID: HTTP2StreamID(id),
            localInitialWindowSize: nil,
            remoteInitialWindowSize: nil
        )
    }

    static func closed(_ id: Int) -> StreamClosedEvent { StreamClosedEvent(streamID: HTTP2StreamID(id), reason: nil) }

    /// The frames written so far.
    static func written(_ channel: EmbeddedChannel) throws -> [HTTP2Frame] {
        var frames: [HTTP2Frame] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) { frames.append(frame) }
        return frames
    }

    /// Whether `frames` are one `GOAWAY` without error naming `last`.
    static func isGoAway(_ frames: [HTTP2Frame], last: Int) -> Bool {
        guard frames.count == 1, case .goAway(let stream, let code, _) = frames[0].payload else { return false }
        return stream == HTTP2StreamID(last) && code == .noError
    }

    @Test func aConnectionGoesAwayOnceWithoutStreamsForTheTimeout() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(handler: HTTP2ConnectionKeeper(idleTimeout: .seconds(10)), loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()

        // A stream opens at 4 s and is still open when the timer first fires (10 s).
        loop.advanceTime(by: .seconds(4))
        channel.pipeline.fireUserInboundEventTriggered(Self.opened(1))
        loop.advanceTime(by: .seconds(7))
        #expect(try Self.written(channel).isEmpty && channel.isActive)
        // It closes at 12 s: the timer, armed again at 11 s for the whole timeout, does not end
        // the connection at 21 s, since it has been idle only since 12 s.
        loop.advanceTime(by: .seconds(1))
        channel.pipeline.fireUserInboundEventTriggered(Self.closed(1))
        loop.advanceTime(by: .seconds(9))
        #expect(try Self.written(channel).isEmpty && channel.isActive)
        // Streams that open and close meanwhile move the idle start on.
        channel.pipeline.fireUserInboundEventTriggered(Self.opened(3))
        channel.pipeline.fireUserInboundEventTriggered(Self.closed(3))
        loop.advanceTime(by: .seconds(9))
        #expect(try Self.written(channel).isEmpty && channel.isActive)
        // Ten seconds after the last stream closed (at 21 s): GOAWAY naming it, then closed.
        loop.advanceTime(by: .seconds(1))
        #expect(Self.isGoAway(try Self.written(channel), last: 3))
        #expect(!channel.isActive)
    }

    @Test func aConnectionThatNeverOpensAStreamGoesAwayAfterTheTimeout() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(handler: HTTP2ConnectionKeeper(idleTimeout: .seconds(10)), loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        loop.advanceTime(by: .seconds(9))
        #expect(try Self.written(channel).isEmpty)
        loop.advanceTime(by: .seconds(1))
        #expect(Self.isGoAway(try Self.written(channel), last: 0))
        #expect(!channel.isActive)
    }
}
#endif
