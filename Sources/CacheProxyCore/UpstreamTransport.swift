// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPTypes
import Metrics

/// The proxy's transport: the one it was given, with the hop-by-hop fields of every response removed
/// before the cache sees them, so that they are neither stored nor replayed; each exchange is
/// timed and counted in flight (``ProxyMetrics``).
struct UpstreamTransport: HTTPTransport {
    let base: any HTTPTransport
    let metrics: ProxyMetrics

    func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse {
        metrics.upstreamInFlight.increment()
        let start = ContinuousClock.now
        defer {
            metrics.upstreamDuration.record(duration: ContinuousClock.now - start)
            metrics.upstreamInFlight.decrement()
        }
        var answer = try await base.send(request, body: body, timeout: timeout)
        answer.response.headerFields = HopByHop.stripped(answer.response.headerFields)
        return answer
    }
}

#endif
