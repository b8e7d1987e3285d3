// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPCaching
import Metrics

/// The proxy's metrics (documented in docs/cache-proxy.md): a counter per ``CacheStatus``, the
/// upstream's latency and exchanges in flight, and the cache's size, read when scraped.
struct ProxyMetrics: Sendable {
    static let hitsLabel = "cache_proxy_hits_total"
    static let staleLabel = "cache_proxy_stale_total"
    static let revalidationsLabel = "cache_proxy_revalidations_total"
    static let missesLabel = "cache_proxy_misses_total"
    static let errorsLabel = "cache_proxy_errors_total"
    static let purgesLabel = "cache_proxy_purges_total"
    static let upstreamDurationLabel = "cache_proxy_upstream_duration_seconds"
    static let upstreamInFlightLabel = "cache_proxy_upstream_in_flight"
    static let memoryBytesLabel = "cache_proxy_memory_bytes"
    static let memoryEntriesLabel = "cache_proxy_memory_entries"
    static let diskBytesLabel = "cache_proxy_disk_bytes"
    static let diskEntriesLabel = "cache_proxy_disk_entries"

    private let hits: Counter
    private let stale: Counter
    private let revalidations: Counter
    private let misses: Counter
    private let errors: Counter
    private let purges: Counter
    /// How long each exchange with the upstream took, whatever its outcome.
    let upstreamDuration: Metrics.Timer
    /// The exchanges with the upstream under way.
    let upstreamInFlight: Meter
    private let memoryBytes: Gauge
    private let memoryEntries: Gauge
    private let diskBytes: Gauge
    private let diskEntries: Gauge

    init(factory: any MetricsFactory) {
        func counter(_ label: String) -> Counter { Counter(label: label, dimensions: [], factory: factory) }
        func gauge(_ label: String) -> Gauge { Gauge(label: label, dimensions: [], factory: factory) }
        hits = counter(Self.hitsLabel)
        stale = counter(Self.staleLabel)
        revalidations = counter(Self.revalidationsLabel)
        misses = counter(Self.missesLabel)
        errors = counter(Self.errorsLabel)
        purges = counter(Self.purgesLabel)
        upstreamDuration = Metrics.Timer(label: Self.upstreamDurationLabel, dimensions: [], factory: factory)
        upstreamInFlight = Meter(label: Self.upstreamInFlightLabel, dimensions: [], factory: factory)
        memoryBytes = gauge(Self.memoryBytesLabel)
        memoryEntries = gauge(Self.memoryEntriesLabel)
        diskBytes = gauge(Self.diskBytesLabel)
        diskEntries = gauge(Self.diskEntriesLabel)
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

    /// Records the cache's size now (before a scrape).
    func recordUsage(of cache: ResponseCache) async {
        memoryBytes.record(cache.currentMemoryUsage)
        memoryEntries.record(cache.currentMemoryEntryCount)
        diskBytes.record(await cache.currentDiskUsage)
        diskEntries.record(await cache.currentDiskEntryCount)
    }
}
#endif
