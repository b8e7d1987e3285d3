// SPDX-License-Identifier: Apache-2.0

import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization

@testable import CacheProxyCore

/// `OriginTransport`'s response handling (`OriginResponseFramer` and `OriginConnectionHandler`
/// on an `EmbeddedChannel`): an origin's bytes in, cut into reads as the input says, the answer
/// out. Either the origin sends a well-formed answer (interim heads, a length, chunks, or a body
/// to the connection's end) and then junk, in the answer's last read or in a read of its own, or
/// arbitrary bytes. Checked:
/// - a well-formed answer comes back whole: its status, its body and nothing else;
/// - a connection that received a byte past an answer, or while idle, is closed and never kept;
/// - an answer never has fewer body bytes than its `Content-Length` (never a stored short body);
/// - a second request on a kept connection gets its own answer, never bytes from before it;
/// - every byte taken from the budget is given back.
enum OriginTarget {
    private final class Connection {
        let channel = EmbeddedChannel()
        let handler: OriginConnectionHandler
        let budget = BufferBudget(limit: 1 << 20)

        init() {
            handler = OriginConnectionHandler(budget: budget)
            try? channel.pipeline.syncOperations.addHandlers([HTTPRequestEncoder(), OriginResponseFramer(), handler])
            _ = try? channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        }

        func start(_ method: HTTPMethod, uri: String) -> EventLoopFuture<OriginConnectionHandler.Received> {
            let promise = channel.eventLoop.makePromise(of: OriginConnectionHandler.Received.self)
            handler.start(
                HTTPRequestHead(version: .http1_1, method: method, uri: uri),
                body: nil,
                interim: nil,
                limit: 64 << 10,
                promise: promise
            )
            while let _ = try? channel.readOutbound(as: IOData.self) {}
            return promise.futureResult
        }

        /// Delivers `bytes` as one read; false when the channel refused them (closed, or an error).
        @discardableResult
        func receive(_ bytes: [UInt8]) -> Bool {
            guard channel.isActive else { return false }
            do {
                try channel.writeInbound(ByteBuffer(bytes: bytes))
                return true
            } catch {
                return false
            }
        }
    }

    private enum Outcome: Sendable {
        case pending
        case answered(OriginConnectionHandler.Received)
        case failed
    }

    private static func outcome(
        _ future: EventLoopFuture<OriginConnectionHandler.Received>,
        _ connection: Connection
    )
        -> Outcome
    {
        connection.channel.embeddedEventLoop.run()
        let outcome = Mutex(Outcome.pending)
        future.whenComplete { result in
            switch result {
            case .success(let received): outcome.withLock { $0 = .answered(received) }
            case .failure: outcome.withLock { $0 = .failed }
            }
        }
        return outcome.withLock { $0 }
    }

    static func run(_ data: UnsafeRawBufferPointer) {
        var input = FuzzInput(data)
        let mode = input.byte()
        let connection = Connection()
        let method: HTTPMethod = mode & 1 == 0 ? .GET : .HEAD
        let answer = connection.start(method, uri: "/a")
        if mode & 2 == 0 {
            wellFormed(&input, method: method, connection: connection, answer: answer)
        } else {
            arbitrary(&input, method: method, connection: connection, answer: answer)
        }
        if connection.channel.isActive { _ = try? connection.channel.close().wait() }
        connection.channel.embeddedEventLoop.run()
        check(connection.budget.bytesInUse == 0, "\(connection.budget.bytesInUse) bytes kept from the budget")
    }

    /// A well-formed answer from the input, junk after it, and a second exchange.
    private static func wellFormed(
        _ input: inout FuzzInput,
        method: HTTPMethod,
        connection: Connection,
        answer: EventLoopFuture<OriginConnectionHandler.Received>
    ) {
        let statuses = [200, 203, 204, 206, 301, 304, 404, 500]
        let status = statuses[Int(input.byte()) % statuses.count]
        let framing = input.byte() % 3  // 0 Content-Length, 1 chunked, 2 to the connection's end
        let keepAlive = input.bool()
        let interim = input.bool()
        let body = input.bytes(upTo: 200)
        let sent = input.bytes(upTo: 64)
        let junkInItsOwnRead = input.bool()
        // Empty lines (CR, LF) in the answer's last read are skipped by NIO's decoder, as RFC 9112
        // §2.2 lets a recipient skip them before a message: they cannot be read as an answer, and
        // the connection may be kept. Any other byte past the answer, and any byte at all in a
        // read of its own (the connection is idle then), is junk. (This target's finding in CI,
        // 2026-11-26: a lone LF after an answer; the invariant was stricter than the framer.)
        let blankLines = !junkInItsOwnRead && sent.allSatisfy { $0 == 13 || $0 == 10 }
        let junk = blankLines ? [] : sent
        let hasBody = method != .HEAD && status != 204 && status != 304
        var text = interim ? "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n" : ""
        text += "HTTP/1.1 \(status) X\r\nX-Answer: a\r\n"
        if !keepAlive { text += "Connection: close\r\n" }
        var bytes: [UInt8]
        switch framing {
        case 0:
            text += "Content-Length: \(body.count)\r\n\r\n"
            bytes = Array(text.utf8) + (hasBody ? body : [])
        case 1 where hasBody:
            text += "Transfer-Encoding: chunked\r\n\r\n"
            bytes = Array(text.utf8)
            if !body.isEmpty { bytes += Array((String(body.count, radix: 16) + "\r\n").utf8) + body + [13, 10] }
            bytes += Array("0\r\n\r\n".utf8)
        default:
            bytes = Array((text + "\r\n").utf8) + (hasBody ? body : [])
        }
        let framed = !hasBody || framing == 0 || framing == 1
        let expectedBody = hasBody ? body : []
        // The junk goes in the answer's last read, or in a read of its own after it.
        var reads = cut(bytes, &input)
        if !junkInItsOwnRead { reads[reads.count - 1] += sent }
        for read in reads { connection.receive(read) }
        if junkInItsOwnRead, !sent.isEmpty { connection.receive(sent) }
        if !framed { _ = try? connection.channel.close().wait() }
        let received: OriginConnectionHandler.Received
        switch outcome(answer, connection) {
        case .answered(let answer): received = answer
        case .pending:
            check(false, "a whole answer is still pending")
            return
        case .failed:
            // A framed answer always comes, whatever follows it.
            check(!framed, "a well-formed answer failed")
            return
        }
        check(received.head.status.code == status, "the status of another answer")
        check(received.head.headers["X-Answer"] == ["a"], "the head of another answer")
        if framed {
            check(received.body == expectedBody, "a body of \(received.body.count) bytes, not \(expectedBody.count)")
        } else {
            check(received.body.starts(with: expectedBody), "a body that is not the one sent")
        }
        if !junk.isEmpty || !keepAlive || !framed {
            check(!received.reusable || (junkInItsOwnRead && keepAlive && framed), "a connection with junk is kept")
            if !junk.isEmpty { check(!connection.channel.isActive, "a connection that received junk stays open") }
        }
        if junk.isEmpty, keepAlive, framed {
            check(received.reusable && connection.channel.isActive, "a clean answer's connection is not kept")
        }
        // A second request gets its own answer, or fails on a closed connection.
        let second = connection.start(.GET, uri: "/b")
        connection.receive(Array("HTTP/1.1 404 Not Found\r\nX-Answer: b\r\nContent-Length: 0\r\n\r\n".utf8))
        switch outcome(second, connection) {
        case .answered(let answer):
            check(received.reusable && answer.head.headers["X-Answer"] == ["b"], "the second request's answer")
            check(answer.head.status.code == 404, "the second answer's status")
        case .failed:
            check(!received.reusable || !junk.isEmpty, "a kept connection failed its next request")
        case .pending:
            check(false, "the second answer is pending")
        }
    }

    /// Arbitrary bytes from the origin.
    private static func arbitrary(
        _ input: inout FuzzInput,
        method: HTTPMethod,
        connection: Connection,
        answer: EventLoopFuture<OriginConnectionHandler.Received>
    ) {
        let closes = input.bool()
        let size = max(1, Int(input.byte()))
        var rest = input.rest()[...]
        // Whether a read came after the answer was complete: bytes on an idle connection, which
        // the framer answers by closing it (issue 33, item 1).
        var readWhileIdle = false
        while !rest.isEmpty {
            if case .answered = outcome(answer, connection) { readWhileIdle = true }
            guard connection.receive(Array(rest.prefix(size))) else { break }
            rest = rest.dropFirst(size)
        }
        if closes { _ = try? connection.channel.close().wait() }
        guard case .answered(let received) = outcome(answer, connection) else { return }
        let lengths = received.head.headers["content-length"]
        let code = received.head.status.code
        if method == .GET, code >= 200, code != 204, code != 304, lengths.count == 1, let length = Int(lengths[0]) {
            check(received.body.count == length, "a body of \(received.body.count) bytes for a length of \(length)")
        }
        // Unless this target closed it itself after the bytes (`closes`; found in the second
        // campaign: the invariant blamed the framer for the target's own close), or bytes came
        // while it was idle (third campaign: a HEAD's answer, then a body byte by byte; closing
        // is the framer's duty then).
        if received.reusable, !closes, !readWhileIdle {
            check(connection.channel.isActive, "a kept connection is closed")
        }
    }

    /// `bytes` cut into reads at the lengths the input gives.
    private static func cut(_ bytes: [UInt8], _ input: inout FuzzInput) -> [[UInt8]] {
        var reads: [[UInt8]] = []
        var rest = bytes[...]
        while !rest.isEmpty {
            let length = max(1, Int(input.byte()))
            reads.append(Array(rest.prefix(length)))
            rest = rest.dropFirst(length)
        }
        return reads
    }

    static func seeds() throws -> [[UInt8]] {
        [
            [0, 0, 0, 1, 0, 5] + Array("hello".utf8) + [0, 0, 255],
            [0, 0, 1, 1, 1, 3] + Array("abc".utf8) + [10] + Array("HTTP/1.1 2".utf8) + [0, 7, 255],
            [1, 0, 0, 1, 0, 5] + Array("hello".utf8) + [0, 0, 255],
            [0, 0, 2, 0, 0, 4] + Array("body".utf8) + [0, 0, 255],
            [2, 1, 16] + Array("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\n".utf8),
        ]
    }
}
