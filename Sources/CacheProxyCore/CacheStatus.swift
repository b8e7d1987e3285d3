// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPTypes

/// How the proxy answered a request: the value of the optional cache status header and the
/// metric it counts in.
enum CacheStatus: String, Sendable {
    /// A fresh stored response, without asking the origin.
    case hit = "HIT"
    /// A stale stored response (`stale-if-error`, `stale-while-revalidate`, `max-stale`).
    case stale = "STALE"
    /// A stored response the origin confirmed with a 304.
    case revalidated = "REVALIDATED"
    /// The origin's response (a miss, or a request that passes through: unsafe methods, ranges).
    case miss = "MISS"
    /// No answer: the proxy made a 502 or a 504 (or refused the request itself).
    case error = "ERROR"
    /// An authorized `PURGE`: what was stored for the URL is removed.
    case purge = "PURGE"

    /// The status of `result`, whose response (`result.response`, built anew on every read) is
    /// `response`.
    init(_ result: FetchResult, response: HTTPResponse?) {
        guard response != nil else {
            self = .error
            return
        }
        switch result.source {
        case .cache: self = result.freshness.isFresh ? .hit : .stale
        case .revalidated: self = .revalidated
        default: self = .miss
        }
    }
}
#endif
