// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import HTTPTypes

@testable import HTTPCaching

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The HTTP record codec (`CachedResponseCodec`: head, metadata, userInfo, tags): any metadata
/// decodes or throws; what decodes encodes to bytes that decode to the same response
/// (decode(encode(x)) == x, compared as encodings so that a NaN in userInfo compares), with
/// its body untouched; its fields are fields HTTPTypes accepts; the record a response makes is
/// read back as that response.
enum ResponseCodecTarget {
    static func run(_ data: UnsafeRawBufferPointer) {
        var input = FuzzInput(data)
        let body = input.bytes(upTo: 64)
        let metadata = input.rest()
        guard let response = try? CachedResponseCodec.decode(metadata: metadata, body: body) else { return }
        check(response.body == body, "the body is the body given")
        check((100...999).contains(response.response.status.code), "a status out of range")
        let encoded = CachedResponseCodec.encodeMetadata(response)
        guard let again = try? CachedResponseCodec.decode(metadata: encoded, body: body) else {
            check(false, "an encoded response decodes")
            return
        }
        check(CachedResponseCodec.encodeMetadata(again) == encoded, "decode(encode(x)) == x")
        check(again.response.headerFields == response.response.headerFields, "the fields come back")
        check(again.tags == response.tags && again.storagePolicy == response.storagePolicy, "tags and policy")
        let storedAt = Date(timeIntervalSince1970: 1_790_000_000)
        let entry = StoredRecord.response(response).entry(storedAt: storedAt)
        guard case .response(let stored)? = try? StoredRecord(decoding: entry) else {
            check(false, "a response's record reads back as a response")
            return
        }
        check(CachedResponseCodec.encodeMetadata(stored) == encoded, "the record holds the response")
        _ = FreshnessFacts(stored, directives: nil)
    }

    static func seeds() throws -> [[UInt8]] {
        let time = Date(timeIntervalSince1970: 1_790_000_000.25)
        let responses = [
            CachedResponse(
                response: HTTPResponse(
                    status: .ok,
                    headerFields: [.cacheControl: "max-age=60", .eTag: "\"v1\"", .contentType: "text/plain"]
                ),
                body: Array("hello".utf8),
                userInfo: ["user": "a", "count": 3, "ratio": 0.5, "flag": true, "list": [1, "x"], "map": ["k": 2]],
                storagePolicy: .allowedInMemoryOnly,
                requestTime: time,
                responseTime: time.addingTimeInterval(0.125),
                varyingRequestFields: [.acceptEncoding: "gzip"],
                tags: ["t1", "t2"]
            ),
            CachedResponse(
                response: HTTPResponse(status: .init(code: 404, reasonPhrase: "Not Found")),
                body: [],
                requestTime: time,
                responseTime: time
            ),
        ]
        return responses.map { response in
            [UInt8(response.body.count)] + response.body + CachedResponseCodec.encodeMetadata(response)
        }
    }
}
