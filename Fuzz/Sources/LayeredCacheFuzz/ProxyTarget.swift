// SPDX-License-Identifier: Apache-2.0

import CoreMetrics
import HTTPCaching
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1

@testable import CacheProxyCore

#if canImport(Dispatch)
import Dispatch
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The proxy's request handling: bytes from a client into cache-proxy's server pipeline on an
/// `EmbeddedChannel` (HummingbirdCore's HTTP/1.1 channel with the fast-hit handler, as
/// ``CacheProxy`` builds it), over a memory cache holding fresh answers for a few URLs; the
/// answers out, decoded. Either a program of requests (methods, targets, ranges, conditions,
/// framing fields, bodies, pipelined, cut into reads anywhere) or arbitrary bytes. Checked:
/// - the n-th answer answers the n-th request: the URL it maps to, never another's;
/// - a 200 carries the whole stored body, a 206 the slice its `Content-Range` names of it, a
///   `HEAD` none; nothing is answered after a request that took the ordinary path (pipelining
///   keeps order);
/// - from arbitrary bytes, an answer is only ever for a URL the bytes name.
enum ProxyTarget {
    static let paths = ["/a", "/b", "/c/d", "/v"]

    static func body(of path: String) -> [UInt8] {
        Array(String(repeating: "body of \(path);", count: path == "/b" ? 300 : 3).utf8)
    }

    /// A memory cache with a fresh answer for each of ``paths``, made once.
    static let fastHit: FastHit = {
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let cache = try! ResponseCache(configuration: .init(mode: .shared, now: { now }))
        let done = DispatchSemaphore(value: 0)
        Task {
            for path in paths {
                var fields: HTTPFields = [
                    .cacheControl: "max-age=3600", .eTag: "\"\(path)\"", HTTPField.Name("X-URL")!: path,
                    .contentLength: String(body(of: path).count), .lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
                ]
                if path == "/v" { fields[.vary] = "Accept" }
                let request = HTTPRequest(
                    method: .get,
                    scheme: "http",
                    authority: "origin:8000",
                    path: path,
                    headerFields: path == "/v" ? [.accept: "text/plain"] : [:]
                )
                let response = CachedResponse(
                    response: HTTPResponse(status: .ok, headerFields: fields),
                    body: body(of: path),
                    requestTime: now,
                    responseTime: now
                )
                _ = try? await cache.storeCachedResponse(response, for: request)
            }
            done.signal()
        }
        done.wait()
        return FastHit(
            cache: cache,
            upstream: try! Upstream("http://origin:8000"),
            statusHeader: HTTPField.Name("X-Cache"),
            metrics: ProxyMetrics(factory: NOOPMetricsHandler.instance),
            bodies: HitBodyBuffers(limitBytes: 1 << 20),
            tracing: nil
        )
    }()

    /// One request of a program: what is sent, and the path its answer must be for.
    struct Sent {
        var bytes: [UInt8]
        var method: HTTPMethod
        var path: String?
    }

    static let targets: [(String, String?)] = [
        ("/a", "/a"), ("/b", "/b"), ("/c/d", "/c/d"), ("/v", "/v"), ("/missing", nil), ("/a?q=1", nil),
        ("http://origin:8000/b", "/b"), ("http://elsewhere/a", "/a"), ("/c/d/", nil), ("*", nil), ("/A", nil),
        ("//a", nil),
    ]

    static let extraFields = [
        "", "Range: bytes=0-4\r\n", "Range: bytes=-3\r\n", "Range: bytes=5-1\r\n", "Range: bytes=0-1,3-4\r\n",
        "If-None-Match: \"/a\"\r\n", "If-None-Match: \"/b\", \"/c/d\"\r\n", "If-None-Match: *\r\n",
        "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n", "Accept: text/plain\r\n", "Accept: text/html\r\n",
        "Cache-Control: no-cache\r\n", "Host: second\r\n", "Connection: close\r\n", "Content-Length: 3\r\n\r\nabc",
        "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n", "If-Range: \"/a\"\r\nRange: bytes=1-2\r\n",
        "Expect: 100-continue\r\n", "Pragma: no-cache\r\n",
    ]

    static let methods: [HTTPMethod] = [.GET, .GET, .GET, .HEAD, .POST, .OPTIONS, .DELETE]

    static func run(_ data: UnsafeRawBufferPointer) {
        var input = FuzzInput(data)
        let structured = input.byte() & 1 == 0
        var sent: [Sent] = []
        var stream: [UInt8] = []
        if structured {
            while !input.isAtEnd, sent.count < 8 {
                let method = methods[Int(input.byte()) % methods.count]
                let (target, path) = targets[Int(input.byte()) % targets.count]
                let extra = extraFields[Int(input.byte()) % extraFields.count]
                // The last line ends the head, or a chunked body.
                let text = "\(method.rawValue) \(target) HTTP/1.1\r\nHost: proxy:8002\r\n" + extra + "\r\n"
                let request = Sent(bytes: Array(text.utf8), method: method, path: path)
                sent.append(request)
                stream += request.bytes
            }
        } else {
            stream = input.rest()
        }
        let answers = exchange(stream, cut: structured ? 7 : 64)
        if structured {
            checkStructured(answers, sent)
        } else {
            for answer in answers {
                guard let path = answer.head.headers["X-URL"].first else { continue }
                check(stream.firstRange(of: Array(path.utf8)) != nil, "an answer for \(path), which was never asked")
            }
        }
    }

    private static func checkStructured(_ answers: [Answer], _ sent: [Sent]) {
        check(answers.count <= sent.count, "more answers than requests")
        for (answer, request) in zip(answers, sent) {
            let url = answer.head.headers["X-URL"].first
            check(
                url == nil || url == request.path,
                "an answer for \(url ?? "-") to a request for \(request.path ?? "-")"
            )
            guard let path = request.path, url != nil else { continue }
            let stored = body(of: path)
            switch answer.head.status.code {
            case 200:
                check(answer.body == (request.method == .HEAD ? [] : stored), "a 200 without the stored body")
            case 206:
                let range = answer.head.headers["Content-Range"].first ?? ""
                let bounds = range.dropFirst("bytes ".count).split(separator: "/").first?.split(separator: "-")
                    .compactMap { Int($0) }
                guard let bounds, bounds.count == 2, bounds[0] <= bounds[1], bounds[1] < stored.count else {
                    check(false, "a 206 with Content-Range \(range)")
                    continue
                }
                check(answer.body == Array(stored[bounds[0]...bounds[1]]), "a 206 with another slice")
            default:
                break
            }
        }
    }

    struct Answer {
        var head: HTTPResponseHead
        var body: [UInt8]
    }

    /// Sends `stream` through the server pipeline in reads of `cut` bytes and decodes what it
    /// answers.
    private static func exchange(_ stream: [UInt8], cut: Int) -> [Answer] {
        let channel = EmbeddedChannel()
        let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
        let child = FastHitHTTP1Channel(
            base: HTTP1Channel(responder: { _, _, _ in }, configuration: .init()),
            fastHit: fastHit,
            idleTimeout: nil
        )
        guard let value = try? child.setup(channel: channel, logger: logger).wait() else {
            check(false, "the pipeline sets up")
            return []
        }
        defer { (value as any FinishableOutbound).finishOutbound() }
        _ = try? channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8002)).wait()
        var rest = stream[...]
        while !rest.isEmpty, channel.isActive {
            let read = rest.prefix(cut)
            rest = rest.dropFirst(cut)
            if (try? channel.writeInbound(ByteBuffer(bytes: read))) == nil { break }
        }
        channel.embeddedEventLoop.run()
        var written = ByteBuffer()
        while let part = try? channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(var buffer) = part { written.writeBuffer(&buffer) }
        }
        _ = try? channel.finish()
        return decode(written, requests: stream)
    }

    /// The answers in `written`, decoded as a client that sent `requests` would.
    private static func decode(_ written: ByteBuffer, requests: [UInt8]) -> [Answer] {
        let client = EmbeddedChannel()
        try? client.pipeline.syncOperations.addHandlers([
            HTTPRequestEncoder(), ByteToMessageHandler(HTTPResponseDecoder(informationalResponseStrategy: .forward)),
        ])
        // The decoder frames an answer by its request's method: tell it the methods, in order.
        let server = EmbeddedChannel()
        try? server.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
        _ = try? server.writeInbound(ByteBuffer(bytes: requests))
        while let part = try? server.readInbound(as: HTTPServerRequestPart.self) {
            if case .head(let head) = part {
                _ = try? client.writeOutbound(HTTPClientRequestPart.head(head))
                _ = try? client.writeOutbound(HTTPClientRequestPart.end(nil))
            }
        }
        _ = try? server.finish()
        _ = try? client.writeInbound(written)
        var answers: [Answer] = []
        while let part = try? client.readInbound(as: HTTPClientResponsePart.self) {
            switch part {
            case .head(let head) where head.status.code >= 200: answers.append(Answer(head: head, body: []))
            case .body(let buffer) where !answers.isEmpty:
                answers[answers.count - 1].body += Array(buffer.readableBytesView)
            default: break
            }
        }
        _ = try? client.finish()
        return answers
    }

    static func seeds() throws -> [[UInt8]] {
        [
            [0, 0, 0, 0, 0, 1, 1, 0, 2, 0],
            [0, 0, 0, 1, 3, 1, 2, 4, 0, 5],
            [0, 0, 6, 9, 0, 7, 20, 3, 1, 0, 4, 0],
            [0, 0, 3, 14, 0, 10, 0, 0, 0, 1],
            [1]
                + Array("GET /a HTTP/1.1\r\nHost: p\r\n\r\nGET /b HTTP/1.1\r\nHost: p\r\nRange: bytes=2-9\r\n\r\n".utf8),
        ]
    }
}

/// The end of an `NIOAsyncChannel` that no task runs: its writer must be finished before it goes
/// (a precondition of NIO's), and `executeThenClose`, the way an async server does it, needs a
/// task, which an `EmbeddedChannel` cannot serve.
protocol FinishableOutbound {
    func finishOutbound()
}

extension NIOAsyncChannel: FinishableOutbound {
    @available(*, deprecated, message: "for the fuzz target's EmbeddedChannel only")
    func finishOutbound() {
        outbound.finish()
    }
}
