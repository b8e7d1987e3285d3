// SPDX-License-Identifier: Apache-2.0

#if Vapor
import HTTPCaching
import HTTPTypes
import Vapor

/// Vapor's responses as the shared request engine (``HandlerCache``) sees them.
struct VaporResponses: HandlerResponses {
    let eventLoop: any EventLoop

    /// The response's status and fields. A field whose name HTTP does not allow (one a route set
    /// by hand) cannot be stored faithfully: the head then says `no-store`, so that the answer
    /// is sent as it is and never stored without it.
    func head(of response: Response) -> HTTPResponse {
        var fields = HTTPFields()
        fields.reserveCapacity(response.headers.count)
        var isFaithful = true
        for (name, value) in response.headers {
            if let name = HTTPField.Name(name) {
                fields.append(HTTPField(name: name, value: value))
            } else {
                isFaithful = false
            }
        }
        if !isFaithful { fields[.cacheControl] = "no-store" }
        let status = HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase)
        return HTTPResponse(status: status, headerFields: fields)
    }

    func appendingCacheStatus(_ value: String, to response: Response) -> Response {
        response.headers.add(name: cacheStatus, value: value)
        return response
    }

    /// A response with `head`'s fields as they are: its `Content-Length` is the stored body's
    /// (for a `HEAD`, whose body Vapor's server leaves out) or absent (a 304).
    func response(head: HTTPResponse, body: [UInt8]?) -> Response {
        var headers = HTTPHeaders()
        headers.reserveCapacity(head.headerFields.count)
        for field in head.headerFields { headers.add(name: field.name.rawName, value: field.value) }
        return Response(
            status: HTTPResponseStatus(statusCode: head.status.code, reasonPhrase: head.status.reasonPhrase),
            version: .http1_1,
            headersNoUpdate: headers,
            body: body.map { Response.Body(buffer: ByteBuffer(bytes: $0)) } ?? .empty
        )
    }

    /// A body in memory is stored before the response is returned; a stream of a known length
    /// within `limit` is collected first (a bounded wait), stored and sent from memory; any other
    /// stream (of unknown length, or larger) is returned untouched and not stored.
    func storing(_ response: Response, limit: Int, with store: HandlerCache.Store) async throws -> Response {
        let body = response.body
        if let buffer = body.buffer {
            guard buffer.readableBytes <= limit else { return response }
            await store(body: Array(buffer.readableBytesView))
            return response
        }
        guard Self.isStream(body) else {
            await store(body: [])
            return response
        }
        let count = body.count
        guard count >= 0, count <= limit else { return response }
        guard let collected = try await body.collect(on: eventLoop).get() else { return response }
        response.body = Response.Body(buffer: collected)
        // A stream that wrote other than it announced is sent as it came and not stored.
        if collected.readableBytes == count { await store(body: Array(collected.readableBytesView)) }
        return response
    }

    /// Whether `body` is a stream (Vapor says so only in its description).
    private static func isStream(_ body: Response.Body) -> Bool {
        body.description == "<stream>" || body.description == "<async stream>"
    }
}

extension Request {
    /// The request as HTTP types has it: the `Host` as its authority, the target as its path. Nil
    /// for a method HTTP does not allow, which the middleware passes on untouched.
    var httpRequest: HTTPRequest? {
        guard let method = HTTPRequest.Method(method.rawValue) else { return nil }
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count)
        var authority: String?
        for (name, value) in headers {
            if authority == nil, name.caseInsensitiveCompare("Host") == .orderedSame {
                authority = value
            } else if let name = HTTPField.Name(name) {
                fields.append(HTTPField(name: name, value: value))
            }
        }
        var path = url.string
        if !path.hasPrefix("/") {
            path = url.path.isEmpty ? "/" : url.path
            if let query = url.query { path += "?" + query }
        }
        return HTTPRequest(
            method: method,
            scheme: nil,
            authority: authority ?? url.host,
            path: path,
            headerFields: fields
        )
    }
}

private let cacheStatus = "Cache-Status"
#endif
