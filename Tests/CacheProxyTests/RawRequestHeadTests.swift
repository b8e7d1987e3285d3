// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPTypes
import NIOCore
import Testing

@testable import CacheProxyCore

/// The strict HTTP/1.1 `GET` reader of the raw hit path: what it takes, as HummingbirdCore's
/// codec would make it, and every form it leaves to NIO's decoder.
@Suite struct RawRequestHeadTests {
    static func parse(_ text: String) -> RawRequestHead.Parse {
        RawRequestHead.parse(ByteBuffer(string: text))
    }

    @Test func aPlainGetIsReadAsTheCodecWouldMakeIt() {
        let head =
            "GET /v1/items?id=7&x=%20 HTTP/1.1\r\nhOsT: Example.com:8080\r\nAccept:  text/html \t\r\n"
            + "X-Trace: a\tb\r\n\r\n"
        var fields = HTTPFields()
        fields.append(HTTPField(name: .accept, value: "text/html"))
        fields.append(HTTPField(name: HTTPField.Name("X-Trace")!, value: "a\tb"))
        let expected = HTTPRequest(
            method: .get,
            scheme: "http",
            authority: "Example.com:8080",
            path: "/v1/items?id=7&x=%20",
            headerFields: fields
        )
        #expect(Self.parse(head) == .request(expected, length: head.utf8.count))
        // What follows the head (a pipelined request) is not read.
        #expect(Self.parse(head + "GET /next HTTP/1.1\r\n") == .request(expected, length: head.utf8.count))
    }

    /// `Connection: keep-alive` (any case, with whitespace around it), which browsers send and
    /// HTTP/1.1 assumes, is read and left out of the request.
    @Test func keepAliveAloneIsReadAndLeftOut() {
        let head = "GET /a HTTP/1.1\r\nConnection:  Keep-Alive \t\r\nHost: a\r\nconnection: keep-alive\r\n\r\n"
        let expected = HTTPRequest(method: .get, scheme: "http", authority: "a", path: "/a", headerFields: [:])
        #expect(Self.parse(head) == .request(expected, length: head.utf8.count))
    }

    @Test func anEmptyValueIsKept() {
        let head = "GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\n\r\n"
        guard case .request(let request, _) = Self.parse(head) else {
            Issue.record("not read")
            return
        }
        #expect(request.headerFields[HTTPField.Name("X-Empty")!] == "")
        #expect(request.path == "/")
    }

    @Test(arguments: [
        "GET /a HTTP/1.1\r\nHost: a\r\n",
        "GE",
        "GET /a HTT",
        "GET /a HTTP/1.1\r\nHost: a\r\n\r",
        "GET /a HTTP/1.1\r\nHost",
        "",
    ])
    func aHeadCutShortIsIncomplete(text: String) {
        #expect(Self.parse(text) == .incomplete)
    }

    @Test(arguments: [
        ("HEAD /a HTTP/1.1\r\nHost: a\r\n\r\n", "another method"),
        ("get /a HTTP/1.1\r\nHost: a\r\n\r\n", "a lowercase method"),
        ("GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", "absolute form"),
        ("GET * HTTP/1.1\r\nHost: a\r\n\r\n", "asterisk form"),
        ("GET /a HTTP/1.0\r\nHost: a\r\n\r\n", "HTTP/1.0"),
        ("GET /a  HTTP/1.1\r\nHost: a\r\n\r\n", "two spaces"),
        ("GET /a#f HTTP/1.1\r\nHost: a\r\n\r\n", "a fragment"),
        ("GET /a\"b HTTP/1.1\r\nHost: a\r\n\r\n", "a quote in the target"),
        ("GET /a HTTP/1.1\nHost: a\r\n\r\n", "a bare LF after the request line"),
        ("GET /a HTTP/1.1\r\nHost: a\n\r\n", "a bare LF after a field"),
        ("GET /a HTTP/1.1\r\nHost: a\r\n\n", "a bare LF ending the head"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n", "a folded line"),
        ("GET /a HTTP/1.1\r\nHost : a\r\n\r\n", "a space before the colon"),
        ("GET /a HTTP/1.1\r\n: a\r\nHost: a\r\n\r\n", "an empty name"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nX(: 1\r\n\r\n", "a name that is not a token"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nX: caf\u{E9}\r\n\r\n", "a value beyond ASCII"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nX: a\u{0}b\r\n\r\n", "a NUL in a value"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nX: a\u{1B}b\r\n\r\n", "a control byte in a value"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", "Content-Length"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nTRANSFER-ENCODING: chunked\r\n\r\n", "Transfer-Encoding"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", "Connection: close"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n", "close among options"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, X-A\r\nX-A: 1\r\n\r\n", "a named field"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n\r\n", "Connection: Upgrade"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nConnection: keep- alive\r\n\r\n", "a space inside the option"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\n\r\n", "Upgrade"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n", "Expect"),
        ("GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "two Host fields"),
        ("GET /a HTTP/1.1\r\nX: 1\r\n\r\n", "no Host"),
        ("GET /a HTTP/1.1\r\nHost: a \r\n\r\n", "a Host with trailing whitespace"),
    ])
    func everyOtherFormIsLeftToTheDecoder(text: String, reason: String) {
        #expect(Self.parse(text) == .other, "\(reason)")
    }

    @Test func limitsLeaveLargeHeadsToTheDecoder() {
        let many = (0...RawRequestHead.maxFields).map { "X-\($0): 1\r\n" }.joined()
        #expect(Self.parse("GET /a HTTP/1.1\r\nHost: a\r\n\(many)\r\n") == .other)
        let long = String(repeating: "a", count: RawRequestHead.maxHeadBytes)
        #expect(Self.parse("GET /a HTTP/1.1\r\nHost: a\r\nX: \(long)\r\n\r\n") == .other)
        // A head that has not ended within the limit is not waited for.
        #expect(Self.parse("GET /a HTTP/1.1\r\nHost: a\r\nX: \(long)") == .other)
    }
}
#endif
