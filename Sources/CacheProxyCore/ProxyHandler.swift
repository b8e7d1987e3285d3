// SPDX-License-Identifier: Apache-2.0

import CachingClient
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore

/// Answers one downstream request: forwards it through the caching client and writes the answer.
struct ProxyHandler: Sendable {
    let client: CachingHTTPClient
    let upstream: Upstream
    let statusHeader: HTTPField.Name?
    let maximumRequestBodyBytes: Int
    let metrics: ProxyMetrics
    let logger: Logger

    func respond(to request: Request, writer: consuming ResponseWriter) async throws {
        let start = ContinuousClock.now
        var request = request
        var (response, body, status) = await answer(&request)
        if let statusHeader, response.headerFields[statusHeader] == nil {
            response.headerFields[statusHeader] = status.rawValue
        }
        metrics.record(status)
        logger.debug(
            "request",
            metadata: [
                "method": "\(request.method)",
                "path": "\(request.head.path ?? "")",
                "status": "\(response.status.code)",
                "cache": "\(status.rawValue)",
                "duration": "\(ContinuousClock.now - start)",
            ]
        )
        let responseBody = body.isEmpty ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        try await writer.write(response: response, body: responseBody)
    }

    private func answer(_ request: inout Request) async -> (HTTPResponse, [UInt8], CacheStatus) {
        guard let outgoing = ProxyMapping.upstreamRequest(for: request.head, upstream: upstream) else {
            return Self.refusal(.badRequest, "the request target must be a path or an absolute URL\n")
        }
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > maximumRequestBodyBytes {
            return Self.refusal(.contentTooLarge, "the request body is larger than \(maximumRequestBodyBytes) bytes\n")
        }
        let received: ByteBuffer
        do {
            received = try await request.collectBody(upTo: maximumRequestBodyBytes)
        } catch {
            return Self.refusal(.contentTooLarge, "the request body could not be read whole: \(error)\n")
        }
        let isBodyless = [.get, .head, .options, .trace, .delete].contains(outgoing.method)
        let body: [UInt8]? =
            received.readableBytes > 0 ? Array(received.readableBytesView) : (isBodyless ? nil : [])
        let result = await client.fetch(outgoing, body: body, policy: ProxyMapping.policy(for: outgoing))
        if let error = result.error, result.response == nil {
            logger.debug("no answer from the upstream", metadata: ["error": "\(error)"])
        }
        return ProxyMapping.answer(for: result, to: outgoing, statusHeader: statusHeader)
    }

    private static func refusal(
        _ status: HTTPResponse.Status,
        _ message: String
    ) -> (HTTPResponse, [UInt8], CacheStatus) {
        let body = Array(message.utf8)
        let fields: HTTPFields = [.contentType: "text/plain; charset=utf-8", .contentLength: String(body.count)]
        return (HTTPResponse(status: status, headerFields: fields), body, .error)
    }
}
