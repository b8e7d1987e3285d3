// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPTypes
import Metrics
import Synchronization

/// The proxy's transport: the one it was given, with the hop-by-hop fields of every response removed
/// before the cache sees them, so that they are neither stored nor replayed; each exchange is
/// timed and counted in flight (``ProxyMetrics``).
struct UpstreamTransport: HTTPTransport, StreamingHTTPTransport {
    let base: any HTTPTransport
    let metrics: ProxyMetrics
    /// The base as a transport that streams, when it does (cast once).
    private let streamingBase: (any StreamingHTTPTransport)?

    init(base: any HTTPTransport, metrics: ProxyMetrics) {
        self.base = base
        self.metrics = metrics
        self.streamingBase = base as? any StreamingHTTPTransport
    }

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

    /// As ``send(_:body:timeout:)``, the body as it arrives when the base transport streams; the
    /// exchange is timed and counted in flight until its body ended (or was given up).
    func stream(
        _ request: HTTPRequest,
        body: [UInt8]?,
        bodyParts: RequestBodySource?,
        timeout: Duration
    ) async throws -> StreamedTransportResponse {
        guard let streaming = streamingBase else {
            let whole = try await send(request, body: try await bodyParts?.collect() ?? body, timeout: timeout)
            return StreamedTransportResponse(response: whole.response, body: ResponseBodySource(whole: whole.body))
        }
        metrics.upstreamInFlight.increment()
        let done = ExchangeEnd(metrics: metrics, start: ContinuousClock.now)
        var answer: StreamedTransportResponse
        do {
            answer = try await streaming.stream(request, body: body, bodyParts: bodyParts, timeout: timeout)
        } catch {
            done()
            throw error
        }
        answer.response.headerFields = HopByHop.stripped(answer.response.headerFields)
        if answer.whole != nil {
            done()
            return answer
        }
        let source = answer.body
        answer.body = ResponseBodySource(
            next: {
                do {
                    let part = try await source.next()
                    if part == nil { done() }
                    return part
                } catch {
                    done()
                    throw error
                }
            },
            cancel: {
                done()
                source.cancel()
            }
        )
        return answer
    }
}

/// Records an upstream exchange's end once, however many ways it ends.
private final class ExchangeEnd: Sendable {
    private let metrics: ProxyMetrics
    private let start: ContinuousClock.Instant
    private let ended = Atomic<Bool>(false)

    init(metrics: ProxyMetrics, start: ContinuousClock.Instant) {
        self.metrics = metrics
        self.start = start
    }

    func callAsFunction() {
        guard !ended.exchange(true, ordering: .relaxed) else { return }
        metrics.upstreamDuration.record(duration: ContinuousClock.now - start)
        metrics.upstreamInFlight.decrement()
    }
}

#endif
