// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
import HTTPCaching
import HTTPTypes
import Hummingbird
import NIOCore

/// Hummingbird's responses as the shared request engine (``HandlerCache``) sees them.
struct HummingbirdResponses: HandlerResponses {
    func head(of response: Response) -> HTTPResponse { response.head }

    func appendingCacheStatus(_ value: String, to response: Response) -> Response {
        var response = response
        response.headers[values: cacheStatusField].append(value)
        return response
    }

    func response(head: HTTPResponse, body: [UInt8]?) -> Response {
        guard let body else { return Response(status: head.status, headers: head.headerFields) }
        return Response(
            status: head.status,
            headers: head.headerFields,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        )
    }

    /// The body copied into the cache as it is written (``CachingBodyWriter``), when its length
    /// is unknown or within `limit`.
    func storing(_ response: Response, limit: Int, with store: HandlerCache.Store) async throws -> Response {
        guard (response.body.contentLength ?? 0) <= limit else { return response }
        var response = response
        response.body = CachingBodyWriter.tee(response.body, limit: limit, into: store)
        return response
    }
}

/// The `Cache-Status` field name (RFC 9211), made once.
private let cacheStatusField = HTTPField.Name("Cache-Status")!
#endif
