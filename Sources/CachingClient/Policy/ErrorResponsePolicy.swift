// SPDX-License-Identifier: Apache-2.0

/// What ``CachingHTTPClient`` stores when the origin answers a request with an error status
/// (4xx or 5xx).
///
/// An app that caches to stay useful offline must not lose its last good answer to an error page:
/// under the default, ``keepLastGoodResponse``, a `404` or a `410` with freshness is returned to
/// the caller (classified, as every error is) but does not replace a stored `2xx`. A shared cache
/// that must follow RFC 9111 to the letter (cache-proxy) uses ``protocolRules``. Server errors
/// (`5xx`) and `429` are never stored under either: they start the key's backoff instead.
public struct ErrorResponsePolicy: Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable { case keepLastGood, protocolRules }
    private let kind: Kind

    /// An error response never replaces a stored `2xx` answer; with no good answer stored, a
    /// cacheable error response is stored as RFC 9111 allows (negative caching). The default.
    public static let keepLastGoodResponse = ErrorResponsePolicy(kind: .keepLastGood)
    /// RFC 9111 alone decides: a cacheable error response (a `404` with `max-age`, say) replaces
    /// what was stored for the request.
    public static let protocolRules = ErrorResponsePolicy(kind: .protocolRules)

    /// Whether an error response may replace a stored `2xx`.
    var replacesGoodAnswers: Bool { kind == .protocolRules }

    public var description: String { kind == .keepLastGood ? "keepLastGoodResponse" : "protocolRules" }
}
