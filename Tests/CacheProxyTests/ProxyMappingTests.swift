// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPCaching
import HTTPTypes
import Testing

@testable import CacheProxyCore

/// The proxy's pure parts: addresses, the forwarded request, hop-by-hop fields, the answer.
@Suite struct ProxyMappingTests {
    @Test(arguments: [
        ("http://127.0.0.1:8000", "http", "127.0.0.1:8000", ""),
        ("https://api.example.com/v1/", "https", "api.example.com", "/v1"),
        ("HTTP://Example.com", "http", "Example.com", ""),
    ])
    func upstreamURLsParse(url: String, scheme: String, authority: String, prefix: String) throws {
        let upstream = try Upstream(url)
        #expect(upstream.scheme == scheme && upstream.authority == authority && upstream.pathPrefix == prefix)
    }

    @Test(arguments: ["ftp://x", "http://", "http://x/?q", "127.0.0.1:8000", "http://u@x", "http://:80", ""])
    func badUpstreamURLsAreRefused(url: String) {
        #expect(throws: CacheProxyError.self) { try Upstream(url) }
    }

    @Test func listenAddressesParse() throws {
        let v4 = try ListenAddress("127.0.0.1:8002")
        #expect(v4.host == "127.0.0.1" && v4.port == 8002)
        let v6 = try ListenAddress("[::1]:0")
        #expect(v6.host == "::1" && v6.port == 0 && v6.description == "[::1]:0")
        for bad in ["nohost", ":80", "h:70000", "h:-1", "h:x"] {
            #expect(throws: CacheProxyError.self, "\(bad)") { try ListenAddress(bad) }
        }
    }

    @Test func theForwardedRequestKeepsEverythingEndToEnd() throws {
        let upstream = try Upstream("http://origin:8000/base")
        var fields: HTTPFields = [
            .connection: "close, X-Hop", HTTPField.Name("X-Hop")!: "1", .contentLength: "2",
            HTTPField.Name("Expect")!: "100-continue", .accept: "a", .cookie: "c=1",
        ]
        fields.append(HTTPField(name: .accept, value: "b"))
        let incoming = HTTPRequest(
            method: .put,
            scheme: nil,
            authority: "proxy:8002",
            path: "/x?y=1",
            headerFields: fields
        )
        let outgoing = try #require(ProxyMapping.upstreamRequest(for: incoming, upstream: upstream))
        #expect(outgoing.method == .put && outgoing.scheme == "http" && outgoing.authority == "origin:8000")
        #expect(outgoing.path == "/base/x?y=1")
        #expect(outgoing.headerFields[values: .accept] == ["a", "b"] && outgoing.headerFields[.cookie] == "c=1")
        #expect(outgoing.headerFields.count == 3)

        let absolute = HTTPRequest(
            method: .get,
            scheme: nil,
            authority: nil,
            path: "http://elsewhere/z?q",
            headerFields: [:]
        )
        #expect(ProxyMapping.upstreamRequest(for: absolute, upstream: upstream)?.path == "/base/z?q")
        let star = HTTPRequest(method: .options, scheme: nil, authority: nil, path: "*", headerFields: [:])
        #expect(ProxyMapping.upstreamRequest(for: star, upstream: upstream) == nil)
    }

    @Test func rangeRequestsAskTheCacheForTheWholeResponse() {
        var ranged = HTTPRequest(method: .get, scheme: "http", authority: "o", path: "/")
        ranged.headerFields[.range] = "bytes=0-1"
        ranged.headerFields[.ifRange] = "\"a\""
        ranged.headerFields[.accept] = "*/*"
        let whole = ProxyMapping.wholeRequest(for: ranged)
        #expect(whole.headerFields[.range] == nil && whole.headerFields[.ifRange] == nil)
        #expect(whole.headerFields[.accept] == "*/*")
        var put = ranged
        put.method = .put
        #expect(ProxyMapping.wholeRequest(for: put) == put)
    }

    @Test(arguments: [
        // (Range, If-Range, status, body, Content-Range)
        ("bytes=0-3", nil as String?, 206, "0123", "bytes 0-3/10" as String?),
        ("bytes=7-", nil, 206, "789", "bytes 7-9/10"),
        ("bytes=-2", nil, 206, "89", "bytes 8-9/10"),
        ("bytes=-20", nil, 206, "0123456789", "bytes 0-9/10"),
        ("bytes=5-100", nil, 206, "56789", "bytes 5-9/10"),
        ("BYTES = 1-1", nil, 206, "1", "bytes 1-1/10"),
        ("bytes=10-", nil, 416, "", "bytes */10"),
        ("bytes=-0", nil, 416, "", "bytes */10"),
        ("bytes=0-1,3-4", nil, 200, "0123456789", nil),  // several ranges: the whole
        ("bytes=3-1", nil, 200, "0123456789", nil),  // invalid: ignored
        ("items=0-1", nil, 200, "0123456789", nil),
        ("bytes=0-1", "\"v1\"", 206, "01", "bytes 0-1/10"),
        ("bytes=0-1", "\"v0\"", 200, "0123456789", nil),  // changed since: the whole
        ("bytes=0-1", "W/\"v1\"", 200, "0123456789", nil),  // weak never matches
        ("bytes=0-1", "Sun, 06 Nov 1994 08:49:37 GMT", 206, "01", "bytes 0-1/10"),
        ("bytes=0-1", "Sun, 06 Nov 1994 08:49:38 GMT", 200, "0123456789", nil),
    ])
    func rangesAreCutFromTheWholeResponse(
        range: String,
        ifRange: String?,
        status: Int,
        body: String,
        contentRange: String?
    ) {
        let response = HTTPResponse(
            status: .ok,
            headerFields: [.eTag: "\"v1\"", .lastModified: "Sun, 06 Nov 1994 08:49:37 GMT", .contentLength: "10"]
        )
        var request = HTTPRequest(method: .get, scheme: "http", authority: "o", path: "/")
        request.headerFields[.range] = range
        if let ifRange { request.headerFields[.ifRange] = ifRange }
        let answer = ProxyMapping.ranged((response, Array("0123456789".utf8), .hit), for: request)
        #expect(answer.response.status.code == status && String(decoding: answer.body, as: UTF8.self) == body)
        #expect(answer.response.headerFields[.contentRange] == contentRange)
        #expect(answer.response.headerFields[.contentLength] == String(body.count))
    }

    @Test(arguments: [
        (CachingClientError.Code.timeout, 504), (.notCached, 504), (.noConnection, 502), (.network, 502),
        (.cancelled, 502), (.overloaded, 503),
    ])
    func noAnswerBecomes502Or503Or504(code: CachingClientError.Code, status: Int) {
        let result = FetchResult(
            response: nil,
            body: nil,
            source: .none,
            freshness: .missing,
            error: CachingClientError(code: code, message: "x")
        )
        let request = HTTPRequest(method: .get, scheme: "http", authority: "o", path: "/")
        let answer = ProxyMapping.answer(for: result, to: request, statusHeader: HTTPField.Name("X-Cache"))
        #expect(answer.response.status.code == status && answer.status == .error && !answer.body.isEmpty)
        #expect(answer.response.headerFields[.contentLength] == String(answer.body.count))
        #expect(answer.response.headerFields[HTTPField.Name("X-Cache")!] == "ERROR")
        #expect((answer.response.headerFields[.retryAfter] == "1") == (status == 503))
    }

    @Test func headAnswersCarryTheLengthOfTheBodyTheyLeaveOut() {
        let stored = HTTPResponse(status: .ok, headerFields: [.eTag: "\"a\"", .transferEncoding: "chunked"])
        let result = FetchResult(response: stored, body: Array("hello".utf8), source: .cache, freshness: .fresh)
        let head = HTTPRequest(method: .head, scheme: "http", authority: "o", path: "/")
        let answer = ProxyMapping.answer(for: result, to: head, statusHeader: nil)
        #expect(answer.body.isEmpty && answer.response.headerFields[.contentLength] == "5")
        #expect(answer.response.headerFields[.transferEncoding] == nil && answer.status == .hit)
    }

    /// How the proxy answers a precondition (the evaluation's own table is `RequestEngineTests`
    /// in HTTPCachingTests).
    @Test(arguments: [
        ("If-None-Match", "W/\"a\"", true), ("If-None-Match", "\"b\"", false),
        ("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT", true),
    ])
    func conditionalRequestsAreEvaluatedAgainstStoredAnswers(name: String, value: String, notModified: Bool) {
        let response = HTTPResponse(
            status: .ok,
            headerFields: [.eTag: "\"a\"", .lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"]
        )
        var request = HTTPRequest(method: .get, scheme: "http", authority: "o", path: "/")
        request.headerFields[HTTPField.Name(name)!] = value
        #expect(CacheRules.isNotModified(request, response) == notModified)
        let result = FetchResult(response: response, body: [1], source: .cache, freshness: .fresh)
        let answer = ProxyMapping.answer(for: result, to: request, statusHeader: nil)
        #expect((answer.response.status.code == 304) == notModified)
        #expect(answer.body.isEmpty == notModified)
        // An answer the origin just sent is the origin's to judge.
        let network = FetchResult(response: response, body: [1], source: .network, freshness: .fresh)
        #expect(ProxyMapping.answer(for: network, to: request, statusHeader: nil).response.status.code == 200)
    }

    /// The fixed hop-by-hop names, read by length and bytes, against the plain definition.
    @Test(arguments: [
        "te", "tf", "t", "", "trailer", "trailers", "upgrade", "upgradf", "connection", "connectiom", "keep-alive",
        "keep-alivf", "transfer-encoding", "transfer-encodinf", "proxy", "proxy-", "proxy-a", "proxy-connection",
        "proxy-authorization", "proxy-authenticate", "proxyxa", "xproxy-a", "content-type", "cache-control",
        "authorization", "host", "date", "prox-y-", "proxy-trailer-value-longer-than-seventeen",
    ])
    func hopByHopFixedNames(name: String) {
        let plain =
            ["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"].contains(name)
            || name.hasPrefix("proxy-")
        #expect(HopByHop.isFixed(name) == plain)
    }

    /// Stripping with extra names (a request on its way upstream), with and without `Connection`.
    @Test func hopByHopStrippingDropsExtras() {
        let request: HTTPFields = [
            HTTPField.Name("Host")!: "o", .accept: "*/*", .contentLength: "0", HTTPField.Name("Expect")!: "x",
        ]
        #expect(HopByHop.stripped(request, alsoDropping: HopByHop.requestExtras).map(\.name) == [.accept])
        let plain: HTTPFields = [.accept: "*/*", .userAgent: "u", HTTPField.Name("Proxy-Authorization")!: "t"]
        #expect(HopByHop.stripped(plain).map(\.name) == [.accept, .userAgent])
        let untouched: HTTPFields = [.accept: "*/*", .contentType: "text/plain", .cacheControl: "max-age=1"]
        #expect(HopByHop.stripped(untouched, alsoDropping: HopByHop.requestExtras) == untouched)
    }

    @Test func hopByHopStrippingKeepsOrderAndRepeats() {
        var fields: HTTPFields = [
            .connection: "X-A , x-b", HTTPField.Name("X-A")!: "1", HTTPField.Name("Keep-Alive")!: "t",
        ]
        fields.append(HTTPField(name: HTTPField.Name("X-B")!, value: "2"))
        fields.append(HTTPField(name: HTTPField.Name("Proxy-Connection")!, value: "keep-alive"))
        fields.append(HTTPField(name: .setCookie, value: "1"))
        fields.append(HTTPField(name: HTTPField.Name("Upgrade")!, value: "h2c"))
        fields.append(HTTPField(name: .setCookie, value: "2"))
        let kept = HopByHop.stripped(fields)
        #expect(kept.map(\.value) == ["1", "2"] && kept[values: .setCookie] == ["1", "2"])
    }
}
#endif
