// SPDX-License-Identifier: Apache-2.0

import HTTPCaching
import HTTPTypes
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Coalescing by cache key (``Coalescing/byCacheKey``): one exchange per URL, its answer taken by
/// each waiter only through the cache, by its own request.
extension CachingHTTPClient {
    /// The answer of a caller that was cancelled while it waited.
    static let cancelled = FetchResult(
        response: nil,
        body: nil,
        source: .none,
        freshness: .missing,
        error: CachingClientError(code: .cancelled, message: "the caller was cancelled")
    )

    /// `step` in a flight shared by cache key (``Coalescing/byCacheKey``): the answer when the
    /// flight gave this request one, nil when it should go on a flight of its own.
    func coalescedByKey(_ step: NetworkStep) async -> FetchResult? {
        let own = step.flightKey
        let key = "\u{1}" + step.backoffKey
        for _ in 0..<3 {
            guard !uncacheableKeys.withLock({ $0.isMarked(step.backoffKey, at: now.timeIntervalSinceReferenceDate) })
            else { return nil }
            if let arriving = bodiesInFlight.withLock({ $0[key] }) {
                // The answer for the URL is arriving and will be stored: taken through the cache
                // once it is, as a waiter on its flight takes it.
                guard await arriving.settled() != nil else { continue }
                switch await afterStore(step) {
                case .answer(let answer): return answer
                case .alone: return nil
                case .again: continue
                }
            }
            let (shared, joined) = await flights.valueJoining(for: key) {
                var outcome = await self.exchange(step)
                outcome.flightKey = own
                return outcome
            }
            guard let outcome = shared else { return Self.cancelled }
            // The request that was sent, or one identical to it, takes the answer as it is.
            guard joined, outcome.flightKey != own else { return await reading(outcome, for: step) }
            guard let response = outcome.response else {
                // The origin could not be reached: that is every waiter's failure.
                return result(of: outcome, for: step)
            }
            // A body still arriving is this request's only once stored, like any other answer.
            let stored = if let body = outcome.streamed { await body.settled() } else { outcome.stored }
            guard stored != nil else {
                // Another request's answer that the cache did not take: never this request's.
                if outcome.error == nil {
                    uncacheableKeys.withLock { $0.mark(step.backoffKey, at: now.timeIntervalSinceReferenceDate) }
                    return nil
                }
                // An error answer (5xx, 429) was the origin's failure: said without its content.
                let failure = CachingClientError(
                    code: outcome.error?.code ?? .server,
                    message: "the origin answered \(response.status.code) to the request this one waited on"
                )
                return result(of: NetworkOutcome(response: nil, body: nil, source: .none, error: failure), for: step)
            }
            switch await afterStore(step) {
            case .answer(let answer): return answer
            case .alone: return nil
            case .again: continue
            }
        }
        return nil
    }

    private enum AfterStore {
        /// The cache answers this request.
        case answer(FetchResult)
        /// Its variant is stored but must be validated first: it goes on a flight of its own.
        case alone
        /// Another variant was stored: it asks again, with the other requests of its variant.
        case again
    }

    /// What a request that waited on another's stored answer does next: it takes it if the cache
    /// now answers it, by its own fields.
    private func afterStore(_ step: NetworkStep) async -> AfterStore {
        let at = now
        let lookup = await cache.lookup(step.original)
        if let answer = freshAnswer(step.original, .useProtocolCachePolicy, step.freshness, lookup, now: at) {
            return .answer(answer)
        }
        if lookup.stored != nil {
            // Its variant is stored but must be validated before reuse (max-age=0, no-cache):
            // coalescing by key cannot help, as with an answer that is not stored.
            uncacheableKeys.withLock { $0.mark(step.backoffKey, at: at.timeIntervalSinceReferenceDate) }
            return .alone
        }
        return .again
    }
}
