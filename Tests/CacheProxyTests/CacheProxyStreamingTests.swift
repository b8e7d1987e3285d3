// SPDX-License-Identifier: Apache-2.0

#if Proxy
import AsyncHTTPClient
import CacheTiers
import CachingClient
import Foundation
import HTTPCaching
import HTTPTypes
import NIOCore
import NIOHTTP1
import Synchronization
import Testing
import TestOriginSupport

@testable import CacheProxyCore

/// A miss's body goes to the client as it arrives, over real sockets: a real origin that sends a
/// body in parts (and stalls, or dies, between them), the proxy, and a real client that reads
/// the parts as they come.
@Suite struct CacheProxyStreamingTests {
    /// A head whose body comes in chunks (of unknown length: streamed, however short), and the
    /// body's two halves.
    static let head = "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nTransfer-Encoding: chunked\r\n\r\n"
    static let firstHalf = "5\r\n01234\r\n"
    static let secondHalf = "5\r\n56789\r\n0\r\n\r\n"

    /// A proxy in front of `origin` with its own transport (`OriginTransport`), as cache-proxy runs.
    static func proxy(
        _ origin: RawOrigin,
        memoryBytes: Int = 64 << 20
    ) async throws -> (RunningProxy, OriginTransport) {
        let transport = OriginTransport()
        var cache = ResponseCache.Configuration(mode: .shared)
        cache.memory.capacityBytes = memoryBytes
        let configuration = CacheProxy.Configuration(
            upstream: try Upstream(origin.baseURL),
            listen: .loopback(port: 0),
            cache: cache,
            cacheStatusHeader: HTTPField.Name("X-Cache")
        )
        return (try await RunningProxy.start(configuration, transport: transport), transport)
    }

    static func get(_ port: Int, _ path: String) async throws -> HTTPClientResponse {
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        return try await ProxyFixture.user.execute(request, timeout: .seconds(30))
    }

    @Test func theFirstPartReachesTheClientBeforeTheOriginSendsTheRest() async throws {
        let origin = try await RawOrigin.start { _, _ in Array((Self.head + Self.firstHalf).utf8) }
        let (running, transport) = try await Self.proxy(origin)
        let response = try await Self.get(running.port, "/a")
        #expect(response.status == .ok)
        #expect(response.headers.first(name: "Transfer-Encoding") == "chunked")
        var parts = response.body.makeAsyncIterator()
        // The origin has sent half and waits: the half is here all the same.
        var received = try #require(try await parts.next())
        #expect(String(buffer: received) == "01234")
        try await origin.send(Array(Self.secondHalf.utf8))
        while let part = try await parts.next() { received.writeImmutableBuffer(part) }
        #expect(String(buffer: received) == "0123456789")
        // Stored once whole: the next request is a hit, and the origin saw one request.
        let again = try await Self.get(running.port, "/a")
        #expect(again.headers.first(name: "X-Cache") == "HIT")
        #expect(String(buffer: try await again.body.collect(upTo: 1 << 10)) == "0123456789")
        #expect(origin.requests.count == 1)
        try await running.stop()
        await transport.shutdown()
        await origin.stop()
    }

    @Test func anOriginThatDiesMidBodyCutsTheClientAndStoresNothing() async throws {
        // Half a body the first time, the whole one after.
        let answered = Mutex(0)
        let origin = try await RawOrigin.start { _, _ in
            let first = answered.withLock { count in
                defer { count += 1 }
                return count == 0
            }
            return Array((Self.head + Self.firstHalf + (first ? "" : Self.secondHalf)).utf8)
        }
        let (running, transport) = try await Self.proxy(origin)
        let response = try await Self.get(running.port, "/a")
        var parts = response.body.makeAsyncIterator()
        let first = try #require(try await parts.next())
        #expect(String(buffer: first) == "01234")
        await origin.closeConnections()
        // The client sees its connection end before the last chunk: an error, never a short
        // body as whole.
        await #expect(throws: (any Error).self) {
            while try await parts.next() != nil {}
        }
        // Nothing was stored: the next request goes to the origin again.
        let again = try await Self.get(running.port, "/a")
        #expect(again.headers.first(name: "X-Cache") == "MISS")
        #expect(String(buffer: try await again.body.collect(upTo: 1 << 10)) == "0123456789")
        #expect(origin.requests.count == 2)
        try await running.stop()
        await transport.shutdown()
        await origin.stop()
    }

    /// An answer of declared length whose body breaks off with the origin decoder's own error
    /// (`HTTPParserError`, what NIO's response decoder throws at an early end). HummingbirdCore
    /// answers a responder that throws an `HTTPParserError` as a request it could not parse: it
    /// wrote `HTTP/1.1 400` on the client's connection, whose first five bytes then completed a
    /// 10-byte body cut at five ("01234HTTP/"), a short body presented as whole. The proxy now
    /// closes the connection and throws an error of its own.
    @Test func anOriginParseErrorMidBodyNeverReachesTheClientAsBytes() async throws {
        let configuration = CacheProxy.Configuration(
            upstream: try Upstream("http://origin.invalid"),
            listen: .loopback(port: 0),
            cache: ResponseCache.Configuration(mode: .shared),
            cacheStatusHeader: HTTPField.Name("X-Cache")
        )
        let running = try await RunningProxy.start(configuration, transport: BreakingTransport())
        let response = try await Self.get(running.port, "/a")
        #expect(response.headers.first(name: "Content-Length") == "10")
        var received = ByteBuffer()
        let error = await #expect(throws: (any Error).self) {
            var parts = response.body.makeAsyncIterator()
            while let part = try await parts.next() { received.writeImmutableBuffer(part) }
        }
        #expect(error != nil)
        #expect(String(buffer: received) == "01234")
        try await running.stop()
    }

    @Test func aClientThatLeavesMidBodyDoesNotStopTheStore() async throws {
        let origin = try await RawOrigin.start { _, _ in Array((Self.head + Self.firstHalf).utf8) }
        let (running, transport) = try await Self.proxy(origin)
        do {
            let response = try await Self.get(running.port, "/a")
            var parts = response.body.makeAsyncIterator()
            _ = try #require(try await parts.next())
            // The client goes away after the first part.
        }
        try await origin.send(Array(Self.secondHalf.utf8))
        // The body was read to its end and stored for the others (a request that comes before
        // the store waits for it rather than asking the origin).
        let answer = try await Self.get(running.port, "/a")
        #expect(answer.headers.first(name: "X-Cache") == "HIT")
        #expect(String(buffer: try await answer.body.collect(upTo: 1 << 10)) == "0123456789")
        #expect(origin.requests.count == 1)
        try await running.stop()
        await transport.shutdown()
        await origin.stop()
    }

    /// The body's reading starts when the body is first asked for; a request that goes away
    /// before the head came never asks, and the body is read and stored all the same.
    @Test func aClientThatLeavesBeforeTheHeadDoesNotStopTheStore() async throws {
        let (requested, signal) = AsyncStream.makeStream(of: Void.self)
        let origin = try await RawOrigin.start { _, _ in
            signal.yield()
            return []
        }
        let (running, transport) = try await Self.proxy(origin)
        let client = Task { try await Self.get(running.port, "/a") }
        for await _ in requested { break }
        // The request is upstream, its head not yet answered: the client goes away.
        client.cancel()
        _ = await client.result
        try await origin.send(Array((Self.head + Self.firstHalf + Self.secondHalf).utf8))
        let answer = try await Self.get(running.port, "/a")
        #expect(answer.headers.first(name: "X-Cache") == "HIT")
        #expect(String(buffer: try await answer.body.collect(upTo: 1 << 10)) == "0123456789")
        #expect(origin.requests.count == 1)
        try await running.stop()
        await transport.shutdown()
        await origin.stop()
    }

    @Test func aBodyLongerThanATierAdmitsPassesThroughWhole() async throws {
        // 1 MiB of memory admits 52 KB: a 3 MB body is passed on, not kept.
        let body = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        let origin = try await RawOrigin.start { _, _ in
            Array("HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        }
        let (running, transport) = try await Self.proxy(origin, memoryBytes: 1 << 20)
        for round in 1...2 {
            let response = try await Self.get(running.port, "/big")
            #expect(response.status == .ok)
            let received = try await response.body.collect(upTo: 4 << 20)
            #expect(Array(received.readableBytesView) == body)
            #expect(response.headers.first(name: "X-Cache") == "MISS")
            #expect(origin.requests.count == round)
        }
        try await running.stop()
        await transport.shutdown()
        await origin.stop()
    }
}
#endif

#if Proxy
/// A request body goes upstream as the client sends it.
@Suite struct CacheProxyUploadTests {
    @Test func anUploadReachesTheOriginBeforeTheClientSentItAll() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.respond(status: 201, body: Array("stored".utf8)), for: "/upload")
        let first = [UInt8](repeating: 97, count: 300 << 10)
        let rest = [UInt8](repeating: 98, count: 200 << 10)
        let (parts, sender) = AsyncStream.makeStream(of: ByteBuffer.self)
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(f.port)/upload")
        request.method = .POST
        request.body = .stream(parts, length: .unknown)
        let answer = Task { try await ProxyFixture.user.execute(request, timeout: .seconds(30)) }
        sender.yield(ByteBuffer(bytes: first))
        // The origin has the first part while the client still holds the rest.
        await f.origin.waitForBodyBytes(first.count)
        sender.yield(ByteBuffer(bytes: rest))
        sender.finish()
        let response = try await answer.value
        #expect(response.status == .created)
        #expect(String(buffer: try await response.body.collect(upTo: 1 << 10)) == "stored")
        let received = try #require(f.origin.requests.last)
        #expect(received.body == first + rest)
        #expect(received.header("Transfer-Encoding") == "chunked")
        try await f.stop()
    }

    @Test func anUploadOverTheLimitIsRefusedAndNothingStays() async throws {
        let f = try await ProxyFixture.start { $0.maximumBodyBytes = 512 << 10 }
        f.origin.setDefault(.respond(status: 201), for: "/upload")
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(f.port)/upload")
        request.method = .POST
        let body = [UInt8](repeating: 99, count: 1 << 20)
        request.body = .stream(
            AsyncStream { continuation in
                for start in stride(from: 0, to: body.count, by: 64 << 10) {
                    continuation.yield(ByteBuffer(bytes: body[start..<start + (64 << 10)]))
                }
                continuation.finish()
            },
            length: .unknown
        )
        // Refused with 413, or cut when the proxy closes the connection first: never accepted.
        if let response = try? await ProxyFixture.user.execute(request, timeout: .seconds(30)) {
            #expect(response.status == .payloadTooLarge)
        }
        #expect(f.origin.requests.allSatisfy { $0.uri != "/upload" })
        // The proxy still answers.
        f.origin.setDefault(.respond(status: 200, body: Array("ok".utf8)), for: "/after")
        #expect(try await f.send("/after").body == "ok")
        try await f.stop()
    }
}

/// A transport whose answers declare 10 bytes and break off after five with the error NIO's
/// response decoder throws at an early end of the connection.
private struct BreakingTransport: StreamingHTTPTransport {
    func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse {
        throw HTTPParserError.invalidEOFState
    }

    func stream(
        _ request: HTTPRequest,
        body: [UInt8]?,
        bodyParts: RequestBodySource?,
        timeout: Duration
    ) async throws -> StreamedTransportResponse {
        let sent = Mutex(false)
        return StreamedTransportResponse(
            response: HTTPResponse(status: .ok, headerFields: [.contentLength: "10", .cacheControl: "max-age=600"]),
            body: ResponseBodySource(
                next: {
                    guard
                        sent.withLock({ sent in
                            defer { sent = true }
                            return !sent
                        })
                    else {
                        throw HTTPParserError.invalidEOFState
                    }
                    return Array("01234".utf8)
                },
                cancel: {}
            )
        )
    }
}
#endif
