// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import NIOEmbedded
import NIOHPACK
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// The checks of a received HTTP/2 header block (RFC 9113 §8.2, §8.3), which the proxy makes in
/// place of NIO's handler: a table of blocks, then malformed requests over a real connection,
/// each of which has its stream reset with `PROTOCOL_ERROR` and never goes upstream.
@Suite struct HTTP2HeaderBlockCheckTests {
    static let get: [(String, String)] = [
        (":method", "GET"), (":scheme", "https"), (":path", "/a"), (":authority", "h"),
    ]

    static func block(_ fields: [(String, String)]) -> HPACKHeaders { HPACKHeaders(fields) }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var fields: [(String, String)]
        var kind: HTTP2HeaderBlockCheck.Kind = .request
        var wellFormed: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a GET", fields: get, wellFormed: true),
        Row(name: "without :authority", fields: Array(get.prefix(3)), wellFormed: true),
        Row(name: "te: trailers", fields: get + [("te", "trailers")], wellFormed: true),
        Row(name: "a token's other characters", fields: get + [("x-a_b.c!#$%&'*+^`|~9", "v")], wellFormed: true),
        Row(name: "a value with spaces and obs-text", fields: get + [("x-a", " a \t\u{e9} ")], wellFormed: true),
        Row(name: "CONNECT", fields: [(":method", "CONNECT"), (":authority", "h:443")], wellFormed: true),
        Row(name: "trailers", fields: [("x-checksum", "1")], kind: .trailers, wellFormed: true),

        Row(name: "an uppercase name", fields: get + [("X-Upper", "1")], wellFormed: false),
        Row(name: "an empty name", fields: get + [("", "1")], wellFormed: false),
        Row(name: "a space in a name", fields: get + [("x a", "1")], wellFormed: false),
        Row(name: "CR in a value", fields: get + [("x-a", "a\rb")], wellFormed: false),
        Row(name: "LF in a value", fields: get + [("x-a", "a\nx-b: c")], wellFormed: false),
        Row(name: "NUL in a value", fields: get + [("x-a", "a\u{0}b")], wellFormed: false),
        Row(name: "connection", fields: get + [("connection", "keep-alive")], wellFormed: false),
        Row(name: "keep-alive", fields: get + [("keep-alive", "5")], wellFormed: false),
        Row(name: "proxy-connection", fields: get + [("proxy-connection", "x")], wellFormed: false),
        Row(name: "transfer-encoding", fields: get + [("transfer-encoding", "chunked")], wellFormed: false),
        Row(name: "upgrade", fields: get + [("upgrade", "h2c")], wellFormed: false),
        Row(name: "te other than trailers", fields: get + [("te", "gzip")], wellFormed: false),
        Row(name: "a pseudo-header after a field", fields: [("x-a", "1")] + get, wellFormed: false),
        Row(name: "a repeated pseudo-header", fields: get + [(":method", "GET")], wellFormed: false),
        Row(name: "an unknown pseudo-header", fields: get + [(":foo", "x")], wellFormed: false),
        Row(name: ":status in a request", fields: get + [(":status", "200")], wellFormed: false),
        Row(name: ":protocol (no extended CONNECT)", fields: get + [(":protocol", "websocket")], wellFormed: false),
        Row(name: "no :path", fields: [(":method", "GET"), (":scheme", "https")], wellFormed: false),
        Row(name: "no :method", fields: [(":scheme", "https"), (":path", "/")], wellFormed: false),
        Row(
            name: "an empty :path",
            fields: [(":method", "GET"), (":scheme", "https"), (":path", "")],
            wellFormed: false
        ),
        Row(name: "a :method that is not a token", fields: [(":method", "G(T")] + get.dropFirst(), wellFormed: false),
        Row(
            name: "a space in :path",
            fields: [(":method", "GET"), (":scheme", "https"), (":path", "/a b")],
            wellFormed: false
        ),
        Row(name: "DEL in :authority", fields: get.dropLast() + [(":authority", "h\u{7f}")], wellFormed: false),
        Row(
            name: "CONNECT with :path",
            fields: [(":method", "CONNECT"), (":authority", "h"), (":path", "/")],
            wellFormed: false
        ),
        Row(name: "CONNECT without :authority", fields: [(":method", "CONNECT")], wellFormed: false),
        Row(name: "a pseudo-header in trailers", fields: [(":path", "/")], kind: .trailers, wellFormed: false),
        Row(name: "connection in trailers", fields: [("connection", "close")], kind: .trailers, wellFormed: false),
    ]

    @Test(arguments: rows)
    func blocks(_ row: Row) {
        #expect(HTTP2HeaderBlockCheck.isWellFormed(Self.block(row.fields), row.kind) == row.wellFormed)
    }

    /// A stream whose head HTTP's types cannot read (the conversion fails after the checks) is
    /// closed, so reset, rather than left open and unanswered; once passed on, an error is the
    /// next handler's.
    @Test func aStreamWhoseHeadCannotBeReadIsClosed() throws {
        struct Unreadable: Error {}
        let channel = EmbeddedChannel(handler: HTTP2StreamHandOff(handOff: AsyncStream.makeStream().continuation))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        #expect(channel.isActive)
        channel.pipeline.fireErrorCaught(Unreadable())
        #expect(!channel.isActive)
    }

    /// Over a cleartext (prior knowledge) connection: each malformed request's stream is reset
    /// with `PROTOCOL_ERROR`, the origin sees none of them, and a well-formed one is answered.
    @Test func malformedRequestsAreResetAndNeverGoUpstream() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("m", headers: [("Cache-Control", "max-age=60")]), for: "/m")
        let get = RawH2.get("/m")
        let malformed: [[UInt8]] = [
            get + RawH2.literal("X-Upper", "1"),
            get + RawH2.literal("x-a", "a\r\nx-injected: 1"),
            get + RawH2.literal("connection", "keep-alive"),
            get + RawH2.literal("te", "gzip"),
            RawH2.literal("x-a", "1") + get,
            get + [0x82],  // :method GET again
            get + RawH2.literal(":foo", "x"),
            RawH2.get("/m b"),
            RawH2.literal(":method", "G(T") + [0x86, 0x04, 2] + Array("/m".utf8) + [0x01, 9] + Array("localhost".utf8),
        ]
        for block in malformed {
            let outcome = try await RawH2.exchange(
                port: f.port,
                RawH2.preface + RawH2.frame(.headers, flags: RawH2.endStream | RawH2.endHeaders, stream: 1, block)
            ) { $0.resetStream1 || $0.answeredStream1 }
            #expect(outcome.stream1ResetError == RawH2.protocolError, "got \(outcome.frameTypes)")
            #expect(!outcome.answeredStream1)
        }
        #expect(f.origin.requestCount == 0)
        // Trailers with a pseudo-header, after a request with a body that went upstream.
        let post: [UInt8] = [0x83, 0x86, 0x04, 2] + Array("/m".utf8) + [0x01, 9] + Array("localhost".utf8)
        let trailers = try await RawH2.exchange(
            port: f.port,
            RawH2.preface + RawH2.frame(.headers, flags: RawH2.endHeaders, stream: 1, post)
                + RawH2.frame(.data, stream: 1, Array("body".utf8))
                + RawH2.frame(
                    .headers,
                    flags: RawH2.endStream | RawH2.endHeaders,
                    stream: 1,
                    RawH2.literal(":path", "/x")
                )
        ) { $0.resetStream1 || $0.stream1Ended }
        #expect(trailers.stream1ResetError == RawH2.protocolError, "got \(trailers.frameTypes)")
        // A well-formed request with `te: trailers` is answered (a miss, then a hit on the event loop).
        for expected in ["MISS", "HIT"] {
            let answered = try await RawH2.exchange(
                port: f.port,
                RawH2.preface
                    + RawH2.frame(
                        .headers,
                        flags: RawH2.endStream | RawH2.endHeaders,
                        stream: 1,
                        get + RawH2.literal("te", "trailers")
                    )
            ) { $0.stream1Ended || $0.resetStream1 }
            #expect(answered.answeredStream1 && !answered.resetStream1, "\(expected): got \(answered.frameTypes)")
            #expect(answered.stream1Body == Array("m".utf8), "\(expected)")
        }
        #expect(f.origin.requestCount <= 2)
        try await f.stop()
    }
}
#endif
