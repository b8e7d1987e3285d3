// SPDX-License-Identifier: Apache-2.0

import HTTPTypes

/// Everything a response passes through before it is stored, as one value: after the cache's
/// configuration hook (which the cache always runs first), the call's ``WillCache``, then the
/// asynchronous steps (an app's delegates), in that order. A veto by any step is a veto.
///
/// ``ResponseCache``'s storing and freshening take a pipeline and nothing else, so no door — the
/// client, a middleware, the proxy — and no path — a new answer, a 304 that freshens a stored one —
/// stores around what the app asked for: a field a hook strips stays out, a memory-only answer
/// stays off the disk, a veto holds.
package struct StoragePipeline: Sendable {
    /// The call's hook, after the configuration's.
    package var willCache: WillCache?
    /// The asynchronous steps, in order, after ``willCache``.
    package var steps: [ResponseCache.AsyncHook]

    /// A pipeline of `willCache` and then `steps`.
    package init(willCache: WillCache? = nil, steps: [ResponseCache.AsyncHook] = []) {
        self.willCache = willCache
        self.steps = steps
    }

    /// Runs `first` (the configuration's hook), ``willCache`` and the ``steps`` on `response`.
    /// - Returns: what to store, or nil when a step vetoed.
    func run(
        _ response: CachedResponse,
        for request: HTTPRequest,
        after first: WillCache
    ) async -> CachedResponse? {
        guard var response = first(response, for: request) else { return nil }
        if let willCache {
            guard let changed = willCache(response, for: request) else { return nil }
            response = changed
        }
        for step in steps {
            guard let changed = await step(response, request) else { return nil }
            response = changed
        }
        return response
    }
}
