// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// How a read uses the cache, as the ``RequestEngine`` sees it: URLCache's four request policies
/// and the offline-first read policies. `CachePolicy` (CachingClient) wraps one; a middleware
/// reads by the protocol.
package enum ReadPolicy: Hashable, Sendable {
    case useProtocol
    case cacheFirst
    case networkFirst(timeout: Duration?)
    case staleWhileRevalidate
    case cacheThenNetwork
    case cacheOnly
    case returnCacheDataDontLoad
    case networkOnly
    case returnCacheDataElseLoad

    // The predicates match cases rather than compare with `==` (the synthesized `==` of an enum
    // with a payload is a call). A hot path in another module matches the cases itself: these
    // stay calls there, `@inlinable` or not (seen in the release binary).

    /// Whether the policy never asks the network (the passive mode).
    @inlinable package var isPassive: Bool {
        switch self {
        case .cacheOnly, .returnCacheDataDontLoad: true
        default: false
        }
    }

    /// Whether the policy is ``networkOnly``: it neither reads nor answers from the cache.
    @inlinable package var isNetworkOnly: Bool {
        if case .networkOnly = self { return true }
        return false
    }

    /// Whether the policy may answer with a fresh stored response without asking the network.
    @inlinable package var answersFreshFromCache: Bool {
        switch self {
        case .networkFirst, .networkOnly, .cacheThenNetwork: false
        default: true
        }
    }
}

/// An app's TTLs over HTTP freshness (a `FreshnessClass`'s values, without its name): within the
/// soft TTL an entry is fresh, past the hard TTL it is not answered without asking the origin,
/// past the validation window it is not to be acted on until the origin confirms it. All count
/// from when the origin last confirmed the entry (``CachedResponse/validatedAt``).
package struct TTLRule: Hashable, Sendable {
    package var softTTL: Duration?
    package var hardTTL: Duration?
    package var validationWindow: Duration?

    @inlinable
    package init(softTTL: Duration? = nil, hardTTL: Duration? = nil, validationWindow: Duration? = nil) {
        self.softTTL = softTTL
        self.hardTTL = hardTTL
        self.validationWindow = validationWindow
    }

    /// HTTP freshness alone.
    package static let http = TTLRule()

    /// Whether any TTL or window is set (else HTTP freshness decides alone).
    @inlinable package var usesTTLs: Bool { softTTL != nil || hardTTL != nil || validationWindow != nil }

    /// Where `stored` stands at `now`: fresh within the soft TTL (or by HTTP without one), stale up
    /// to the hard TTL, then past it; past the validation window before anything else.
    /// - Parameter isFreshByHTTP: whether HTTP freshness (RFC 9111 §4.2) calls it fresh.
    @inlinable
    package func age(of stored: CachedResponse, isFreshByHTTP: Bool, now: Date) -> EntryAge {
        // HTTP freshness alone (the protocol's reads, every middleware hit) reads no date.
        guard usesTTLs else { return isFreshByHTTP && !stored.isMarkedStale ? .fresh : .stale }
        let sinceValidation = now.timeIntervalSince(stored.validatedAt)
        if let window = validationWindow, sinceValidation >= window.seconds { return .unvalidated }
        if let hard = hardTTL, sinceValidation >= hard.seconds { return .pastHardTTL }
        if stored.isMarkedStale { return .stale }
        if let soft = softTTL { return sinceValidation < soft.seconds ? .fresh : .stale }
        return isFreshByHTTP ? .fresh : .stale
    }
}

/// Where a stored entry stands against a read's ``TTLRule``.
package enum EntryAge: Hashable, Sendable {
    case fresh, stale, pastHardTTL
    /// Past the validation window: not answered without the origin's confirmation.
    case unvalidated
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    @inlinable package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
