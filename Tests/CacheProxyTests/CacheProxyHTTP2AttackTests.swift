// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import NIOPosix
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// The known attacks on HTTP/2 servers, sent as raw frames over a cleartext (prior knowledge)
/// connection: each ends with the proxy closing that connection — it does not keep reading,
/// decoding or forwarding what the attacker sends — and serving the next client.
@Suite struct CacheProxyHTTP2AttackTests {
    /// CVE-2023-44487: streams opened and reset at once, so that the server starts work for each
    /// while the client's concurrency limit never fills.
    @Test func rapidResetClosesTheConnection() async throws {
        let f = try await ProxyFixture.start()
        f.origin.setDefault(.ok("r"), for: "/r")
        var attack = RawH2.preface
        for i in 0..<2_000 {
            let stream = UInt32(2 * i + 1)
            attack += RawH2.frame(.headers, flags: RawH2.endStream | RawH2.endHeaders, stream: stream, RawH2.get("/r"))
            attack += RawH2.frame(.rstStream, stream: stream, [0, 0, 0, 8])  // CANCEL
        }
        let outcome = try await RawH2.exchange(port: f.port, attack)
        #expect(outcome.closed)
        #expect(outcome.goAwayError == RawH2.enhanceYourCalm, "got \(outcome.frameTypes)")
        // The streams reset before the limit may have gone upstream; the rest never did.
        #expect(f.origin.requestCount < 400, "\(f.origin.requestCount) went upstream")
        try await Self.expectServes(f)
        try await f.stop()
    }

    /// A header block that never ends: `CONTINUATION` frames without `END_HEADERS`, which a
    /// server would buffer until memory runs out.
    @Test func aContinuationFloodClosesTheConnection() async throws {
        let f = try await ProxyFixture.start()
        var attack = RawH2.preface + RawH2.frame(.headers, stream: 1, RawH2.get("/c"))
        for _ in 0..<10_000 {
            attack += RawH2.frame(
                .continuation,
                stream: 1,
                RawH2.literal("x-filler", String(repeating: "f", count: 64))
            )
        }
        let outcome = try await RawH2.exchange(port: f.port, attack)
        #expect(outcome.closed && outcome.goAwayError != nil, "got \(outcome.frameTypes)")
        #expect(f.origin.requestCount == 0)
        try await Self.expectServes(f)
        try await f.stop()
    }

    /// An HPACK bomb: one 4,000-byte field put in the dynamic table, then referenced 2,000 times
    /// by one byte each — 6 KB on the wire that decode to 8 MB of fields.
    @Test func anHPACKBombIsRefusedAtTheHeaderListLimit() async throws {
        let f = try await ProxyFixture.start()
        var block = RawH2.get("/b")
        // Literal with incremental indexing, new name: "x-big: aaaa…" (4,000 bytes; index 62).
        block +=
            [0x40, 5] + Array("x-big".utf8) + RawH2.integer(4_000, prefixBits: 7) + Array(repeating: 0x61, count: 4_000)
        block += Array(repeating: 0x80 | 62, count: 2_000)
        let attack = RawH2.preface + RawH2.frame(.headers, flags: RawH2.endStream | RawH2.endHeaders, stream: 1, block)
        let outcome = try await RawH2.exchange(port: f.port, attack)
        #expect(!outcome.answeredStream1, "the bomb's request was answered: \(outcome.frameTypes)")
        #expect(outcome.goAwayError != nil || outcome.resetStream1, "got \(outcome.frameTypes)")
        #expect(f.origin.requestCount == 0)
        try await Self.expectServes(f)
        try await f.stop()
    }

    /// `SETTINGS` frames, each of which the server must acknowledge, sent without end.
    @Test func aSettingsFloodClosesTheConnection() async throws {
        let f = try await ProxyFixture.start()
        var attack = RawH2.preface
        for _ in 0..<20_000 { attack += RawH2.frame(.settings, stream: 0, []) }
        let outcome = try await RawH2.exchange(port: f.port, attack)
        #expect(outcome.closed)
        #expect(outcome.goAwayError == RawH2.enhanceYourCalm, "got \(outcome.frameTypes)")
        #expect(outcome.settingsAcks < 20_000, "every flooded SETTINGS was acknowledged")
        try await Self.expectServes(f)
        try await f.stop()
    }

    /// More streams at once than the limit the proxy announced: a protocol error (RFC 9113
    /// §5.1.2), which NIO's handler — as RFC 9113 §5.4 allows — ends the connection for. The
    /// streams within the limit were taken; none past it went upstream.
    @Test func streamsPastTheConcurrencyLimitEndTheConnection() async throws {
        let gate = TestOrigin.Gate()
        let f = try await ProxyFixture.start { configuration in
            configuration.http2 = CacheProxy.HTTP2(maximumConcurrentStreams: 4)
        }
        f.origin.setDefault(.hold(gate, then: .ok("held")), for: "/held")
        // The limit holds once the client has acknowledged the server's settings.
        var attack = RawH2.preface + RawH2.frame(.settings, flags: 0x1, stream: 0, [])
        for i in 0..<6 {
            attack += RawH2.frame(
                .headers,
                flags: RawH2.endStream | RawH2.endHeaders,
                stream: UInt32(2 * i + 1),
                RawH2.get("/held")
            )
        }
        let outcome = try await RawH2.exchange(port: f.port, attack)
        #expect(outcome.closed && outcome.goAwayError == RawH2.protocolError, "got \(outcome.frameTypes)")
        #expect(f.origin.requestCount <= 4)
        gate.open()
        // A client that keeps to the limit (NIO's queues streams past it) gets every answer.
        let client = try await H2Client.connect(port: f.port)
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<10 { group.addTask { try await client.get("/held").text } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers == Array(repeating: "held", count: 10))
        await client.close()
        try await f.stop()
    }

    /// A new client is served after the attack.
    static func expectServes(_ f: ProxyFixture) async throws {
        f.origin.setDefault(.ok("after"), for: "/after")
        let client = try await H2Client.connect(port: f.port)
        #expect(try await client.get("/after").text == "after")
        await client.close()
    }
}
#endif
