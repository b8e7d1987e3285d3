// SPDX-License-Identifier: Apache-2.0

import HTTPCaching
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP1

@testable import CacheProxyCore

/// The raw hit path's request reader (`RawRequestHead`) against NIO's HTTP/1 decoder (llhttp),
/// on arbitrary bytes. Whenever the reader takes a request of `length` bytes, the decoder, given
/// those bytes alone, must read exactly one whole request from them — a head, then its end, no
/// body, nothing more — and the same one: `GET`, HTTP/1.1, the same target, the same `Host`,
/// the same other fields in the same order (but `Connection: keep-alive`, which the reader leaves
/// out, and after which the decoder must keep the connection). So the two can never frame the
/// stream differently (the raw path answers a request the decoder would have read the same way).
enum RawHeadTarget {
    static func run(_ data: UnsafeRawBufferPointer) {
        guard case .request(let request, let length) = RawRequestHead.parse(data) else { return }
        check(length > 0 && length <= data.count, "a length of \(length) for \(data.count) bytes")
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        try? channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
        do {
            try channel.writeInbound(ByteBuffer(bytes: UnsafeRawBufferPointer(rebasing: data[..<length])))
        } catch {
            check(false, "the decoder refused a head the raw reader took: \(error)")
        }
        var parts: [HTTPServerRequestPart] = []
        while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) { parts.append(part) }
        guard parts.count == 2, case .head(let head) = parts[0], case .end(nil) = parts[1] else {
            check(false, "the decoder read \(parts) where the raw reader read one request")
            return
        }
        check(head.method == .GET && head.version == .http1_1, "\(head.method) \(head.version)")
        check(head.isKeepAlive, "the decoder closes after a head the raw reader keeps the connection for")
        check(head.uri == request.path, "target \(head.uri) against \(request.path ?? "-")")
        let hosts = head.headers["Host"]
        check(hosts == [request.authority ?? ""], "Host \(hosts) against \(request.authority ?? "-")")
        var others: [String] = []
        var skippedHost = false
        for (name, value) in head.headers {
            if !skippedHost, name.lowercased() == "host" {
                skippedHost = true
                continue
            }
            if name.lowercased() == "connection", value.trimmingOWS().lowercased() == "keep-alive" { continue }
            // As HummingbirdCore's codec makes the request's fields (HTTPTypes trims the value).
            let field = HTTPField.Name(name).map { HTTPField(name: $0, value: value) }
            others.append(field.map { "\($0.name.canonicalName): \($0.value)" } ?? "dropped \(name)")
        }
        let taken = request.headerFields.map { "\($0.name.canonicalName): \($0.value)" }
        check(others == taken, "fields \(others) against \(taken)")
    }

    static func seeds() throws -> [[UInt8]] {
        [
            "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /v1/items?id=7&x=%20 HTTP/1.1\r\nHost: example.com:8080\r\nAccept:  text/html \t\r\n\r\n",
            "GET /a HTTP/1.1\r\nHost: a\r\nX-Empty:\r\nCookie: a=1; b=2\r\n\r\nGET /b HTTP/1.1\r\n",
            "GET /a HTTP/1.1\r\nhost: A\r\nUser-Agent: curl/8.0 (x86_64)\r\nAccept-Encoding: gzip, br\r\n\r\n",
            "GET /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
            "GET /a HTTP/1.1\r\nConnection: Keep-Alive\r\nHost: a\r\nAccept: */*\r\n\r\n",
            "GET /a HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n",
        ].map { Array($0.utf8) }
    }
}
