// SPDX-License-Identifier: Apache-2.0

import HTTPCaching
import HTTPTypes

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One call's parameters.
struct Call: Sendable {
    var request: HTTPRequest
    var body: [UInt8]?
    var policy: CachePolicy
    var freshness: FreshnessClass
    var willCache: WillCache?
    /// The client's delegate and the call's, in order.
    var delegates: [any CachingHTTPClientDelegate]
    /// Whether the call brought a hook or a delegate of its own: its answer is then fetched and
    /// stored on its own behalf, never through another call's flight (see ``NetworkStep/flightKey``).
    var hasOwnPipeline: Bool
    /// Whether the caller reads a network answer's body as it arrives
    /// (``CachingHTTPClient/fetchStreaming(_:body:)``).
    var streams = false
    /// The request body as it comes, for a call that streams it (``body`` is then nil).
    var bodyParts: RequestBodySource?

    init(
        _ request: HTTPRequest,
        _ body: [UInt8]?,
        _ policy: CachePolicy,
        _ freshness: FreshnessClass,
        _ willCache: WillCache?,
        delegates: [any CachingHTTPClientDelegate] = [],
        hasOwnPipeline: Bool? = nil
    ) {
        self.request = request
        self.body = body
        self.policy = policy
        self.freshness = freshness
        self.willCache = willCache
        self.delegates = delegates
        self.hasOwnPipeline = hasOwnPipeline ?? (willCache != nil)
    }

    var context: FetchContext { FetchContext(request: request, policy: policy, freshness: freshness) }

    /// What this call's answer is stored through: its hook, then the delegates' `willCache`.
    var pipeline: StoragePipeline {
        StoragePipeline(willCache: willCache, steps: delegates.map { $0.storageStep(context) })
    }

    /// Tells every delegate of `event`.
    func emit(_ event: FetchEvent) async {
        guard !delegates.isEmpty else { return }
        let context = self.context
        for delegate in delegates { await delegate.fetch(context, didEmit: event) }
    }
}

/// What a call does: answer from the cache, ask the network, or both.
enum Plan: Sendable {
    /// Answer now; nothing more.
    case answer(FetchResult)
    /// Answer now (final), and refresh the entry in the background.
    case answerAndRefresh(FetchResult, NetworkStep)
    /// Answer now (not final), then with the network's answer.
    case answerThenNetwork(FetchResult, NetworkStep)
    /// Answer with the network's answer.
    case network(NetworkStep)
}
