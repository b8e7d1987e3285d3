// SPDX-License-Identifier: Apache-2.0

/// How long an app treats cached answers of one kind as fresh, over HTTP freshness: a soft TTL
/// (serve, then refresh) and a hard TTL (refetch before answering).
///
/// Both count from when the origin last confirmed the entry (its ``FetchResult/validatedAt``: a
/// 200 or a 304). Within the soft TTL an entry is fresh; between the soft and the hard TTL it is
/// stale but answers (``CachePolicy/cacheFirst`` and ``CachePolicy/useProtocolCachePolicy``
/// refresh it behind the answer; ``CachePolicy/staleWhileRevalidate`` answers, then loads); past
/// the hard TTL it is not answered without asking the origin first. If the origin cannot be
/// asked, the answer says so — ``Freshness/stale(_:)`` with the reason and the error — rather than
/// quietly serving older data as fresh. A missing TTL falls back to HTTP: no soft TTL means HTTP
/// freshness decides what is fresh; no hard TTL means no limit.
///
/// Define an app's classes once and use them per call:
///
/// ```swift
/// extension FreshnessClass {
///     static let critical = FreshnessClass("critical", softTTL: .zero, hardTTL: .seconds(5))
///     static let interactive = FreshnessClass("interactive", softTTL: .seconds(30), hardTTL: .seconds(600))
///     static let reference = FreshnessClass("reference", softTTL: .seconds(3600), hardTTL: .seconds(86_400 * 7))
/// }
/// let result = await client.fetch(request, policy: .cacheFirst, freshness: .interactive)
/// ```
///
/// Setting TTLs is the app taking responsibility for freshness: they apply whatever the
/// response's `Cache-Control` says (except that what HTTP forbids storing is never stored).
public struct FreshnessClass: Hashable, Sendable, CustomStringConvertible {
    /// The class's name, for logs.
    public var name: String
    /// Within this age an entry is fresh; nil: HTTP freshness decides.
    public var softTTL: Duration?
    /// Past this age an entry is refetched before answering; nil: no limit.
    public var hardTTL: Duration?

    /// Creates a class.
    /// - Parameters:
    ///   - name: a name for logs.
    ///   - softTTL: within this age an entry is fresh; nil: HTTP freshness decides.
    ///   - hardTTL: past this age an entry is refetched first; nil: no limit. Must not be below
    ///     `softTTL`.
    public init(_ name: String, softTTL: Duration? = nil, hardTTL: Duration? = nil) {
        if let softTTL, let hardTTL {
            precondition(softTTL <= hardTTL, "FreshnessClass \(name): the soft TTL is above the hard TTL")
        }
        precondition((softTTL ?? .zero) >= .zero && (hardTTL ?? .zero) >= .zero, "negative TTL in \(name)")
        self.name = name
        self.softTTL = softTTL
        self.hardTTL = hardTTL
    }

    /// HTTP freshness alone (RFC 9111), no TTLs: the default.
    public static let http = FreshnessClass("http")

    public var description: String { name }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
