// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPCaching
import HTTPTypes

/// The pure half of the proxy: the request sent upstream, the cache policy, and the answer made
/// from a ``CachingClient/FetchResult``. No I/O, so it is tested without sockets.
enum ProxyMapping {
    /// The request to send upstream for the `incoming` one: same method, path, query and
    /// end-to-end fields, the upstream's scheme and authority, its path prefix before the path.
    /// Hop-by-hop fields go, and so do `Host` (the authority replaces it), the framing fields
    /// `Content-Length` and `Transfer-Encoding` (the body is re-framed) and `Expect` (the proxy
    /// has read the body already).
    /// - Returns: nil when the request target is neither origin-form (`/path?query`) nor
    ///   absolute-form (`http://host/path`).
    static func upstreamRequest(for incoming: HTTPRequest, upstream: Upstream) -> HTTPRequest? {
        guard var path = incoming.path, !path.isEmpty else { return nil }
        if !path.hasPrefix("/") {
            guard let schemeEnd = path.firstRange(of: "://") else { return nil }
            let afterAuthority = path[schemeEnd.upperBound...]
            path =
                afterAuthority.firstIndex(where: { $0 == "/" || $0 == "?" }).map { String(afterAuthority[$0...]) }
                ?? "/"
            if path.hasPrefix("?") { path = "/" + path }
        }
        let fields = HopByHop.stripped(incoming.headerFields, alsoDropping: HopByHop.requestExtras)
        return HTTPRequest(
            method: incoming.method,
            scheme: upstream.scheme,
            authority: upstream.authority,
            path: upstream.pathPrefix + path,
            headerFields: fields
        )
    }

    /// The request the cache sees for the `forwarded` one: a `GET` or `HEAD` without `Range`
    /// and `If-Range`, so that a range is answered from the whole response, stored or fetched
    /// (``ranged(_:for:)`` cuts it); other methods as they are.
    static func wholeRequest(for forwarded: HTTPRequest) -> HTTPRequest {
        guard forwarded.method == .get || forwarded.method == .head,
            forwarded.headerFields[.range] != nil || forwarded.headerFields[.ifRange] != nil
        else { return forwarded }
        var whole = forwarded
        whole.headerFields[.range] = nil
        whole.headerFields[.ifRange] = nil
        return whole
    }

    /// `answer` cut to the `Range` of `request` (RFC 9110 §14, ``HTTPCaching/RangeRule``): a 200
    /// becomes a 206 with `Content-Range`, or a 416 when no byte is in the range; anything else,
    /// or a range the proxy does not serve, goes as it is.
    static func ranged(
        _ answer: (response: HTTPResponse, body: [UInt8], status: CacheStatus),
        for request: HTTPRequest
    ) -> (response: HTTPResponse, body: [UInt8], status: CacheStatus) {
        guard request.method == .get, request.headerFields[.range] != nil, answer.response.status == .ok else {
            return answer
        }
        var (response, body, status) = answer
        let length = body.count
        let rule = RangeRule.evaluate(request, response: response, length: length)
        if let bytes = rule.bytes {
            response.status = .partialContent
            response.headerFields[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(length)"
            body = Array(body[bytes])
        } else if rule == .unsatisfiable {
            response.status = .rangeNotSatisfiable
            response.headerFields[.contentRange] = "bytes */\(length)"
            body = []
        } else {
            return answer
        }
        response.headerFields[.contentLength] = String(body.count)
        return (response, body, status)
    }

    /// The answer to send downstream for `result`, and how it was made.
    ///
    /// - The response as the client gave it (with `Age` on answers from the cache), hop-by-hop
    ///   fields removed, `Content-Length` set from the body.
    /// - A `GET` / `HEAD` answered from the cache becomes a 304 when the request's
    ///   `If-None-Match` (or, without one, `If-Modified-Since`) matches it (RFC 9110 §13.1).
    /// - `HEAD` gets the head alone, with the `Content-Length` of the body it would have had.
    /// - No answer: 504 (Gateway Timeout) when the origin timed out or `only-if-cached` found
    ///   nothing, 503 (Service Unavailable, `Retry-After: 1`) when the upstream client's budget for
    ///   answers in flight was spent, 502 (Bad Gateway) otherwise.
    /// - Parameter statusHeader: the field that tells `HIT`, `MISS`…, or nil for none.
    static func answer(
        for result: FetchResult,
        to request: HTTPRequest,
        statusHeader: HTTPField.Name?
    ) -> (response: HTTPResponse, body: [UInt8], status: CacheStatus) {
        // `result.response` builds the head with its `Age` on every read: read it once.
        let head = result.response
        let status = CacheStatus(result, response: head)
        var (response, body) = answerParts(result, head)
        if status != .miss, status != .error, CacheRules.isNotModified(request, response) {
            response.status = .notModified
            body = []
        }
        // Stored responses lost their hop-by-hop fields before they were stored: then the fields
        // are used as they are, and changed (copied) only where the framing differs.
        var fields = HopByHop.stripped(response.headerFields)
        let code = response.status.code
        let mayHaveBody = code >= 200 && code != 204 && code != 304
        let length: String?
        if request.method == .head {
            length = mayHaveBody ? (body.isEmpty ? response.headerFields[.contentLength] : String(body.count)) : nil
            body = []
        } else if mayHaveBody {
            // A body still arriving keeps the length the origin declared, or goes chunked.
            length = result.bodyStream != nil ? response.headerFields[.contentLength] : String(body.count)
        } else {
            length = nil
            body = []
        }
        if fields[.contentLength] != length { fields[.contentLength] = length }
        if let statusHeader { fields[statusHeader] = status.rawValue }
        response.headerFields = fields
        return (response, body, status)
    }

    private static func answerParts(_ result: FetchResult, _ head: HTTPResponse?) -> (HTTPResponse, [UInt8]) {
        if let head { return (head, result.body ?? []) }
        let (status, message): (HTTPResponse.Status, String) =
            switch result.error?.code {
            case .timeout?, .notCached?: (.gatewayTimeout, "the upstream did not answer in time\n")
            case .overloaded?: (.serviceUnavailable, "the proxy holds as many answers in flight as it may\n")
            default: (.badGateway, "the upstream could not be reached or failed\n")
            }
        var fields: HTTPFields = [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"]
        if status == .serviceUnavailable { fields[.retryAfter] = "1" }
        return (HTTPResponse(status: status, headerFields: fields), Array(message.utf8))
    }
}
#endif
