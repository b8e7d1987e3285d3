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
        /// The origin failed (5xx but 501, 429): nothing is stored, what is stored stays, and it may
        /// answer stale where the exchange allows (``Exchange/fallback``). A shared cache stores
        /// a failure the origin made explicitly fresh instead (see ``outcome(of:sent:original:mayAnswerStale:)``).
        case failed
        /// An unsafe method's success: invalidate its target URIs (RFC 9111 §4.4).
        case invalidate
        /// A `POST`'s answer that says it is the target's current representation (explicitly
        /// fresh, `Content-Location` the target URI; RFC 9110 §9.3.3, RFC 9111 §4): invalidate
        /// as for ``invalidate``, then store the answer for `get`, a `GET` of the target with the
        /// `POST`'s fields, through the storage pipeline, so that a later `GET` reuses it.
        case invalidateThenStore(get: HTTPRequest)
        /// Nothing changes in the cache (an unsafe method's failure).
        case keep

        /// The `GET` an ``invalidateThenStore(get:)`` stores for; nil for any other outcome.
        package var storedAs: HTTPRequest? {
            if case .invalidateThenStore(let get) = self { return get }
            return nil
        }
    }

    /// What `response`, the origin's answer to `sent` (an ``Exchange/request``), does to the
    /// cache; `original` is the read's own request.
    ///
    /// A failure (5xx, 429) is ``Outcome/failed``, but in a shared cache one that the origin made
    /// explicitly fresh (`s-maxage`, `max-age` or `Expires`, RFC 9111 §4.2.1; not a heuristic) is
    /// stored and reused like any other answer (RFC 9111 §3 allows it; Varnish and nginx do):
    /// unless a stored response may answer stale in its place (`mayAnswerStale`, the exchange's
    /// ``Exchange/fallback`` with something stored), which then keeps it. Whether an error may
    /// replace a stored good answer at all is the door's own rule (the client's
    /// `ErrorResponsePolicy`).
    package func outcome(
        of response: HTTPResponse,
        sent: HTTPRequest,
        original: HTTPRequest,
        mayAnswerStale: Bool = false
    ) -> Outcome {
        let status = response.status.code
        // Only a 304 to conditions the engine added is the cache's to apply; a 304 to the
        // client's own conditions is its answer.
        if status == 304, sent != original { return .freshen }
        let isSafe = original.method == .get || original.method == .head
        // 501 is an answer (the method is not implemented), heuristically cacheable (RFC 9110
        // §15.1) and not an error stale-if-error covers (RFC 5861 §4): stored as any answer.
        if (status >= 500 && status != 501) || status == 429 {
            guard isSafe, rules.mode.isShared, !mayAnswerStale, rules.isExplicitlyFresh(response) else {
                return .failed
            }
            return .store
        }
        if isSafe { return .store }
        guard status < 400 else { return .keep }
        if let get = rules.getReusing(response, toPOST: original) { return .invalidateThenStore(get: get) }
        return .invalidate
    }
}

extension CacheRules {
    /// The `GET` that `response`, the answer to the `POST` `request`, may answer later
    /// ([RFC 9110 §9.3.3](https://www.rfc-editor.org/rfc/rfc9110#section-9.3.3)): when it is a
    /// 2xx with explicit freshness (``isExplicitlyFresh(_:)``) and a `Content-Location` that is
    /// the request's target URI. The `GET` carries the `POST`'s fields, but those of its body
    /// (`Content-Length`, `Content-Type`, `Content-Encoding`, `Transfer-Encoding`), so that a
    /// `Vary` on a request field reads what the origin saw. Nil otherwise.
    package func getReusing(_ response: HTTPResponse, toPOST request: HTTPRequest) -> HTTPRequest? {
        guard request.method == .post, (200..<300).contains(response.status.code),
            let contentLocation = response.headerFields[.contentLocation],
            let scheme = request.scheme, let authority = request.authority
        else { return nil }
        let path = request.path ?? "/"
        guard let target = Self.resolve(contentLocation, scheme: scheme, authority: authority, basePath: path),
            target.path == path, isExplicitlyFresh(response)
        else { return nil }
        var get = request
        get.method = .get
        for name in [HTTPField.Name.contentLength, .contentType, .contentEncoding, .transferEncoding] {
            get.headerFields[name] = nil
        }
        return get
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
