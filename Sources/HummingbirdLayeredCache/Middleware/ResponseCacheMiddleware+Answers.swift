// SPDX-License-Identifier: Apache-2.0

#if Hummingbird
import HTTPCaching
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ResponseCacheMiddleware {
    /// The answer made from `stored`: its head with `Age` (RFC 9111 §5.1) and its body, or a 304
    /// when `request`'s preconditions say the client's copy is current; a `HEAD` gets the head.
    func answer(
        from stored: CachedResponse,
        age: TimeInterval,
        to request: HTTPRequest,
        status: CacheStatusValue
    )
        -> Response
    {
        var head = stored.response
        head.headerFields[.age] = String(Int(min(Double(Int32.max), max(0, age).rounded(.down))))
        if let value = self.status(status) { Self.appendCacheStatus(value, to: &head.headerFields) }
        if CacheRules.isNotModified(request, head) {
            head.status = .notModified
            head.headerFields[.contentLength] = nil
            return Response(status: .notModified, headers: head.headerFields)
        }
        head.headerFields[.contentLength] = String(stored.body.count)
        let body = request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: stored.body))
        return Response(status: head.status, headers: head.headerFields, body: body)
    }

    /// The `Cache-Status` member for `status`, or nil when the configuration adds none.
    func status(_ status: CacheStatusValue) -> String? {
        // Only a traced request has a recorder: an untraced one reads no task-local.
        if tracer != nil, let recorder = CacheStatusRecorder.current { recorder.record(status.parameters) }
        return configuration.cacheStatusName.map { "\($0); \(status.parameters)" }
    }

    /// Appends `value` to the `Cache-Status` list: RFC 9211 §2 lists caches from the origin
    /// outward, so an inner cache's member (a handler's) stays first.
    static func appendCacheStatus(_ value: String, to fields: inout HTTPFields) {
        fields[values: cacheStatusField].append(value)
    }

    static var cacheStatusField: HTTPField.Name { cacheStatusFieldName }
}

extension Response {
    /// The response with `value` appended to its `Cache-Status` field (none when nil).
    func withStatus(_ value: String?) -> Response {
        guard let value else { return self }
        var response = self
        response.headers[values: HTTPField.Name("Cache-Status")!].append(value)
        return response
    }
}

/// How the middleware answered, as RFC 9211 `Cache-Status` parameters.
enum CacheStatusValue: Sendable, Equatable {
    /// Why the handler was called (RFC 9211 §2.2 `fwd`).
    enum Forward: String, Sendable {
        /// Nothing was stored for the URL.
        case uriMiss = "uri-miss"
        /// Something was stored but the request's directives or method did not let it be used.
        case request
        /// What was stored was stale and could not be revalidated with a 304.
        case stale
        /// The request's method is not answered from the cache (a `POST` whose answer is
        /// stored for a later `GET`).
        case method
    }

    /// Answered from the cache; `ttl` is the remaining freshness in seconds (negative when stale).
    case hit(ttl: TimeInterval)
    /// Answered from the cache after the handler confirmed it with a 304.
    case revalidated
    /// Answered from the cache, stale, because the handler failed with this status and
    /// `stale-if-error` allowed it (RFC 5861 §4).
    case staleOnError(Int)
    /// The handler answered.
    case miss(Forward)

    var parameters: String {
        switch self {
        case .hit(let ttl): "hit; ttl=\(Int(ttl.rounded(.down)))"
        case .revalidated: "fwd=stale; fwd-status=304"
        case .staleOnError(let status): "fwd=stale; fwd-status=\(status)"
        case .miss(let forward): "fwd=\(forward.rawValue)"
        }
    }
}
/// The `Cache-Status` field name (RFC 9211), made once.
private let cacheStatusFieldName = HTTPField.Name("Cache-Status")!

/// The cache status of the answer a traced request got, for its span: set where the status is
/// decided (``ResponseCacheMiddleware/status(_:)``), read when the answer is made.
final class CacheStatusRecorder: Sendable {
    @TaskLocal static var current: CacheStatusRecorder?
    private let value = Mutex<String?>(nil)

    func record(_ status: String) { value.withLock { $0 = status } }
    var status: String? { value.withLock { $0 } }
}
#endif
