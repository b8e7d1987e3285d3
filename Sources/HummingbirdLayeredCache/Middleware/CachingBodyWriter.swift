// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
import HTTPCaching
import HTTPTypes
import Hummingbird
import Logging
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
    let storing: Storing

    /// `body` written through a copying writer that stores into `storing` when it ends.
    static func tee(_ body: ResponseBody, limit: Int, into storing: Storing) -> ResponseBody {
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
            await storing.store(body: copy)
        }
        try await parent.finish(trailingHeaders)
    }
}

/// What the middleware needs to store one answer once its body is complete.
struct Storing: Sendable {
    let cache: ResponseCache
    let lookup: ResponseLookup
    let head: HTTPResponse
    let requestTime: Date
    let pipeline: StoragePipeline
    let logger: Logger

    /// Stores the answer with `body` through the lookup and the middleware's pipeline.
    /// A failure to store is logged: the client has its answer all the same.
    func store(body: [UInt8]) async {
        let cached = CachedResponse(
            response: head,
            body: body,
            requestTime: requestTime,
            responseTime: cache.configuration.now()
        )
        do {
            _ = try await cache.store(cached, for: lookup, through: pipeline)
        } catch {
            logger.warning("could not store a response", metadata: ["error": "\(error)"])
        }
    }
}
#endif
