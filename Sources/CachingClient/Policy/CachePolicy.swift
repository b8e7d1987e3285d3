// SPDX-License-Identifier: Apache-2.0

package import HTTPCaching

/// How ``CachingHTTPClient`` answers a request: from the cache, from the network, or from both,
/// and what it falls back to when the network fails.
///
/// URLCache's four request cache policies are here under their names; the offline-first read
/// policies add what URLCache lacks. Every policy that uses the network stores what it gets
/// (write-through), by RFC 9111's storage rules and the cache's ``HTTPCaching/WillCache`` hooks.
///
/// | policy | fresh entry | stale entry | no entry | network fails |
/// |---|---|---|---|---|
/// | ``useProtocolCachePolicy`` | cache | revalidate (304 or new) | network | stale only where `stale-if-error` allows |
/// | ``cacheFirst`` | cache | cache, refresh behind | network | stale |
/// | ``networkFirst`` | network | network | network | stale after the timeout |
/// | ``staleWhileRevalidate`` | cache | cache, then network | network | stale |
/// | ``cacheThenNetwork`` | cache, then network | cache, then network | network | the error |
/// | ``cacheOnly`` | cache | cache | "missing" (no error) | — |
/// | ``returnCacheDataDontLoad`` | cache | cache | "missing", error `notCached` | — |
/// | ``networkOnly`` | network | network | network | the error |
/// | ``returnCacheDataElseLoad`` | cache | cache | network | the error |
///
/// "Stale" here is by the request's ``FreshnessClass`` TTLs when it has them, else by HTTP
/// freshness. An entry past the hard TTL counts as no entry, except as a fallback.
///
/// In the terms of a technical cache's request lifecycle (``FetchEvent``): ``cacheOnly`` (and
/// ``returnCacheDataDontLoad``) is the passive mode — it never touches the network and never
/// changes what is stored; ``cacheThenNetwork`` is the active mode — the cached answer (or
/// "nothing cached") first, then always the server's answer or the failure; every other policy
/// is active too, asking the network when its rule says so.
public struct CachePolicy: Hashable, Sendable, CustomStringConvertible {
    /// The engine's read policy this one is.
    package typealias Kind = ReadPolicy
    package let kind: Kind

    /// RFC 9111: a fresh stored response answers; a stale one is revalidated (conditionally, when
    /// it has an `ETag` or `Last-Modified`), unless `max-stale` or `stale-while-revalidate` allow
    /// serving it; `stale-if-error` allows serving it when the network fails. URLCache's
    /// `.useProtocolCachePolicy`, and the default.
    // swift-format-ignore: DontRepeatTypeInStaticProperties
    public static let useProtocolCachePolicy = CachePolicy(kind: .useProtocol)
    /// Load from the network whatever is stored, and store the answer. URLCache's
    /// `.reloadIgnoringLocalCacheData`; the same as ``networkOnly``.
    public static let reloadIgnoringCacheData = CachePolicy(kind: .networkOnly)
    /// Answer with any stored response whatever its age; load only when nothing is stored.
    /// URLCache's `.returnCacheDataElseLoad`.
    public static let returnCacheDataElseLoad = CachePolicy(kind: .returnCacheDataElseLoad)
    /// Answer with any stored response whatever its age, never touch the network: URLCache's
    /// `.returnCacheDataDontLoad`. It differs from ``cacheOnly`` where URLCache does: with nothing
    /// stored, the answer carries ``CachingClientError/Code/notCached`` as its error (URLSession
    /// fails such a load with `NSURLErrorResourceUnavailable`), where ``cacheOnly`` answers
    /// "missing" without an error.
    public static let returnCacheDataDontLoad = CachePolicy(kind: .returnCacheDataDontLoad)

    /// Answer from the cache when it holds an entry within the hard TTL; when that entry is
    /// stale, refresh it in the background. Without one, load, and fall back to a stale entry if
    /// the network fails.
    public static let cacheFirst = CachePolicy(kind: .cacheFirst)
    /// Load from the network first, with the client's configured timeout; when the network fails
    /// or the timeout passes, answer with the stored entry, stale. A request that timed out goes
    /// on and updates the cache when it completes.
    public static let networkFirst = CachePolicy(kind: .networkFirst(timeout: nil))
    /// ``networkFirst`` with its own timeout.
    public static func networkFirst(timeout: Duration) -> CachePolicy {
        CachePolicy(kind: .networkFirst(timeout: timeout))
    }
    /// Answer a stale entry (within the hard TTL) from the cache at once, then with the network's
    /// answer: `results(for:body:policy:freshness:willCache:delegate:)` yields both,
    /// `fetch(_:body:policy:freshness:willCache:delegate:)` returns the second. A fresh
    /// entry answers alone; past the hard TTL there is no intermediate answer.
    public static let staleWhileRevalidate = CachePolicy(kind: .staleWhileRevalidate)
    /// The active mode of a technical cache: answer with what is stored at once (not final; any
    /// age), then always ask the server and answer with what it sends, or with the failure (no
    /// stale fallback). What the server sends replaces what was stored; a failure leaves the cache
    /// as it was.
    public static let cacheThenNetwork = CachePolicy(kind: .cacheThenNetwork)
    /// Answer from the cache only, at any age, saying how fresh; never touch the network.
    public static let cacheOnly = CachePolicy(kind: .cacheOnly)
    /// Always load from the network (unconditionally) and store the answer; never answer from
    /// the cache, not even when the network fails.
    public static let networkOnly = CachePolicy(kind: .networkOnly)

    public var description: String {
        switch kind {
        case .useProtocol: "useProtocolCachePolicy"
        case .cacheFirst: "cacheFirst"
        case .networkFirst(let timeout): timeout.map { "networkFirst(timeout: \($0))" } ?? "networkFirst"
        case .staleWhileRevalidate: "staleWhileRevalidate"
        case .cacheThenNetwork: "cacheThenNetwork"
        case .cacheOnly: "cacheOnly"
        case .returnCacheDataDontLoad: "returnCacheDataDontLoad"
        case .networkOnly: "networkOnly"
        case .returnCacheDataElseLoad: "returnCacheDataElseLoad"
        }
    }
}

extension CachePolicy {
    /// Whether the policy never asks the network (the passive mode).
    var isPassive: Bool { kind.isPassive }
}
