// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
import HTTPCaching
import HTTPTypes
import Hummingbird
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A response body writer that passes every buffer on to the server's writer and keeps a copy;
/// when the body ends complete, without trailers and within its limit, the copy is stored before
/// the end is passed on (so a client that has the whole answer finds it stored).
struct CachingBodyWriter: ResponseBodyWriter {
    var parent: any ResponseBodyWriter
    var copy: [UInt8] = []
    var isOverLimit = false
    let limit: Int
    let storing: HandlerCache.Store

    /// `body` written through a copying writer that stores into `storing` when it ends.
    static func tee(_ body: ResponseBody, limit: Int, into storing: HandlerCache.Store) -> ResponseBody {
        ResponseBody(contentLength: body.contentLength) { writer in
            try await body.write(CachingBodyWriter(parent: writer, limit: limit, storing: storing))
        }
    }

    mutating func write(_ buffer: ByteBuffer) async throws {
        if !isOverLimit {
            if copy.count + buffer.readableBytes > limit {
                isOverLimit = true
                copy = []
            } else {
                copy.append(contentsOf: buffer.readableBytesView)
            }
        }
        try await parent.write(buffer)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        if !isOverLimit, trailingHeaders?.isEmpty ?? true {
            await storing(body: copy)
        }
        try await parent.finish(trailingHeaders)
    }
}
#endif
