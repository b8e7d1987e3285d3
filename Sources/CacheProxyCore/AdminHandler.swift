// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPCaching
import HTTPTypes
import HummingbirdCore
import NIOCore
import Prometheus

/// The admin listener's answers (``CacheProxy/Configuration/admin``): `GET /metrics` in the
/// Prometheus text format, `GET /healthz`, and `PURGE` as on the main listener.
struct AdminHandler: Sendable {
    let cache: ResponseCache
    let upstream: Upstream
    let purger: Purger
    let metrics: ProxyMetrics
    /// Where the proxy's metrics are collected for `/metrics`.
    let registry: PrometheusCollectorRegistry

    func respond(to request: Request, writer: consuming ResponseWriter) async throws {
        let (response, body) = await answer(request.head)
        let responseBody = body.isEmpty ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        try await writer.write(response: response, body: responseBody)
    }

    /// The answer to `request` (its body, if any, is not read).
    func answer(_ request: HTTPRequest) async -> (HTTPResponse, [UInt8]) {
        if request.method == Purger.method {
            guard let target = ProxyMapping.upstreamRequest(for: request, upstream: upstream) else {
                return Self.text(.badRequest, "the request target must be a path or an absolute URL\n")
            }
            let (response, body, status) = await purger.purge(target, fields: request.headerFields)
            metrics.record(status)
            return (response, body)
        }
        guard request.method == .get || request.method == .head else {
            var answer = Self.text(.methodNotAllowed, "the admin listener answers GET, HEAD and PURGE\n")
            answer.0.headerFields[.allow] = "GET, HEAD, PURGE"
            return answer
        }
        let answer: (HTTPResponse, [UInt8])
        switch request.path?.split(separator: "?", maxSplits: 1).first {
        case "/healthz":
            answer = cache.isOpen ? Self.text(.ok, "ok\n") : Self.text(.serviceUnavailable, "the cache is closed\n")
        case "/metrics":
            await metrics.recordUsage(of: cache)
            let body = registry.emitToBuffer()
            answer = (
                HTTPResponse(
                    status: .ok,
                    headerFields: [
                        .contentType: "text/plain; version=0.0.4; charset=utf-8",
                        .contentLength: String(body.count),
                        .cacheControl: "no-store",
                    ]
                ),
                body
            )
        default:
            answer = Self.text(.notFound, "the admin listener has /metrics, /healthz and PURGE\n")
        }
        return request.method == .head ? (answer.0, []) : answer
    }

    private static func text(_ status: HTTPResponse.Status, _ message: String) -> (HTTPResponse, [UInt8]) {
        var (response, body, _) = ProxyHandler.refusal(status, message)
        response.headerFields[.cacheControl] = "no-store"
        return (response, body)
    }
}
#endif
