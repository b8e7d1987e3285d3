// SPDX-License-Identifier: Apache-2.0

#if Proxy
import Metrics

/// The proxy's counters, one per ``CacheStatus`` (documented in docs/cache-proxy.md).
struct ProxyMetrics: Sendable {
    static let hitsLabel = "cache_proxy_hits_total"
    static let staleLabel = "cache_proxy_stale_total"
    static let revalidationsLabel = "cache_proxy_revalidations_total"
    static let missesLabel = "cache_proxy_misses_total"
    static let errorsLabel = "cache_proxy_errors_total"
    static let purgesLabel = "cache_proxy_purges_total"

    private let hits: Counter
    private let stale: Counter
    private let revalidations: Counter
    private let misses: Counter
    private let errors: Counter
    private let purges: Counter

    init(factory: any MetricsFactory) {
        func counter(_ label: String) -> Counter { Counter(label: label, dimensions: [], factory: factory) }
        hits = counter(Self.hitsLabel)
        stale = counter(Self.staleLabel)
        revalidations = counter(Self.revalidationsLabel)
        misses = counter(Self.missesLabel)
        errors = counter(Self.errorsLabel)
        purges = counter(Self.purgesLabel)
    }

    func record(_ status: CacheStatus) {
        switch status {
        case .hit: hits.increment()
        case .stale: stale.increment()
        case .revalidated: revalidations.increment()
        case .miss: misses.increment()
        case .error: errors.increment()
        case .purge: purges.increment()
        }
    }
}
#endif
