// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import Metrics

/// The tier's swift-metrics handles, created once.
struct SharedMetrics: Sendable {
    let hits, misses, bypassed, damagedRows, writes, writeFailures: Counter
    let admissionRefusals, lateWritesRefused, evictions, expired, invalidationsSent, invalidationsReceived: Counter

    init(factory: any MetricsFactory) {
        func counter(_ name: String) -> Counter {
            Counter(label: "layeredcache_shared_\(name)_total", dimensions: [], factory: factory)
        }
        hits = counter("hits")
        misses = counter("misses")
        bypassed = counter("bypassed")
        damagedRows = counter("damaged_rows")
        writes = counter("writes")
        writeFailures = counter("write_failures")
        admissionRefusals = counter("admission_refusals")
        lateWritesRefused = counter("late_writes_refused")
        evictions = counter("evictions")
        expired = counter("expired")
        invalidationsSent = counter("invalidations_sent")
        invalidationsReceived = counter("invalidations_received")
    }
}
#endif
