// SPDX-License-Identifier: Apache-2.0

package import HTTPTypes

extension RequestEngine {
    /// What the origin's answer to an ``Exchange`` does to the cache.
    package enum Outcome: Hashable, Sendable {
        /// A 304 to the engine's conditional request: freshen the stored responses it selects
        /// (RFC 9111 §4.3.4) through the storage pipeline, as a new answer is; when it selects
        /// none, send the read's own request again, without the engine's conditions (§4.3.3).
        case freshen
        /// A safe method's answer: store it, as the rules and the storage pipeline allow.
        case store
        /// The origin failed (5xx, 429): nothing is stored, what is stored stays, and it may
        /// answer stale where the exchange allows (``Exchange/fallback``).
        case failed
        /// An unsafe method's success: invalidate its target URIs (RFC 9111 §4.4).
        case invalidate
        /// Nothing changes in the cache (an unsafe method's failure).
        case keep
    }

    /// What `response`, the origin's answer to `sent` (an ``Exchange/request``), does to the
    /// cache; `original` is the read's own request.
    package static func outcome(
        of response: HTTPResponse,
        sent: HTTPRequest,
        original: HTTPRequest
    ) -> Outcome {
        let status = response.status.code
        // Only a 304 to conditions the engine added is the cache's to apply; a 304 to the
        // client's own conditions is its answer.
        if status == 304, sent != original { return .freshen }
        if status >= 500 || status == 429 { return .failed }
        if original.method == .get || original.method == .head { return .store }
        return status < 400 ? .invalidate : .keep
    }
}

extension CacheRules {
    /// Whether `request`'s `If-None-Match` (weak comparison, RFC 9110 §13.1.2) or, without it,
    /// its `If-Modified-Since` (§13.1.3; against `Last-Modified`, else `Date`, as RFC 9111 §4.3.2
    /// says) says the client's copy of the 200 `response` is current:
    /// the one evaluation of preconditions every door uses when it answers a conditional `GET` or
    /// `HEAD` from storage, with the one entity-tag parser (``entityTags(_:)``).
    package static func isNotModified(_ request: HTTPRequest, _ response: HTTPResponse) -> Bool {
        guard request.method == .get || request.method == .head, response.status.code == 200 else { return false }
        let noneMatch = request.headerFields[values: .ifNoneMatch].flatMap(entityTags)
        if !noneMatch.isEmpty {
            if noneMatch.contains("*") { return true }
            guard let current = response.headerFields[.eTag].flatMap({ entityTags($0).first }) else { return false }
            return noneMatch.contains { weakMatch($0, current) }
        }
        // A field that is present but lists no valid tag is not a condition that held. Without
        // `Last-Modified` the stored response's `Date` stands in (RFC 9111 §4.3.2): it was not
        // modified after it was sent.
        guard request.headerFields[values: .ifNoneMatch].isEmpty,
            let since = request.headerFields[.ifModifiedSince].flatMap({ HTTPDate.parse($0) }),
            let modified = (response.headerFields[.lastModified] ?? response.headerFields[.date])
                .flatMap({ HTTPDate.parse($0) })
        else { return false }
        return modified <= since
    }
}
