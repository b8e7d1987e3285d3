// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPCaching
import HTTPTypes
import NIOCore
import NIOHPACK

extension FastHit {
    /// A fresh stored response that answers a request from memory: what was found, and its age.
    typealias Hit = (lookup: ResponseLookup, age: String, stored: CachedResponse)

    /// Whether the request a hit answers is plain: no preconditions, no range.
    static func isPlain(_ outgoing: HTTPRequest) -> Bool {
        let fields = outgoing.headerFields
        return fields[.ifNoneMatch] == nil && fields[.ifModifiedSince] == nil && fields[.range] == nil
    }

    /// Whether a plain request's hits on `stored` are its fields as they are, plus `Age` and the
    /// cache status: a stored 200 that ``ProxyMapping/answer(for:to:statusHeader:)`` leaves
    /// alone (no `Age`, no cache status field, no hop-by-hop field, its body's `Content-Length`).
    func isPlain(_ stored: CachedResponse) -> Bool {
        let response = stored.response
        let fields = response.headerFields
        return response.status.code == 200 && fields[.age] == nil
            && (statusHeader.map({ fields[$0] == nil }) ?? true)
            && fields[values: .contentLength] == [String(stored.body.count)]
            && HopByHop.stripped(fields).count == fields.count
    }

    /// A plain hit on HTTP/2: its record's header block (``http2Heads``: `:status` and the
    /// stored fields) with `age` and the cache status after them, the block
    /// `FastHitFrameHandler.fields(of:)` makes of ``ProxyMapping``'s answer. Nil for any other
    /// hit.
    func plainHTTP2(_ hit: Hit, allocator: ByteBufferAllocator) -> Wire? {
        guard let record = hit.lookup.storedRecordID,
            var headers = http2Heads.head(for: record, make: { plainHTTP2Head(hit.stored) })
        else { return nil }
        metrics.record(.hit)
        headers.add(name: "age", value: hit.age)
        if let statusHeader { headers.add(name: statusHeader.canonicalName, value: "HIT") }
        let body = hit.stored.body
        let buffer = body.isEmpty ? ByteBuffer() : bodies.buffer(for: body, allocator: allocator)
        return .http2(headers, body: buffer)
    }

    private func plainHTTP2Head(_ stored: CachedResponse) -> HPACKHeaders? {
        guard isPlain(stored) else { return nil }
        var headers = HPACKHeaders()
        headers.reserveCapacity(stored.response.headerFields.count + 3)
        headers.add(name: ":status", value: "200")
        for field in stored.response.headerFields {
            headers.add(name: field.name.canonicalName, value: field.value)
        }
        return headers
    }
}
#endif
