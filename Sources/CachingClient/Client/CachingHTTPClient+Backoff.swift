// SPDX-License-Identifier: Apache-2.0

import Synchronization

/// Recording each exchange's outcome in the backoff table, per key.
extension CachingHTTPClient {
    func recordFailure(_ key: String, _ error: CachingClientError) {
        let policy = configuration.backoff
        guard policy.maximum > .zero else { return }
        let at = now
        let random = configuration.random
        _ = backoffTable.withLock { $0.recordFailure(key, error: error, now: at, policy: policy, random: random) }
    }

    /// Records the backoff for an answer to store: a failure a shared cache stores (explicitly
    /// fresh) is still a failure to back off from; anything else is a success.
    func recordStorable(_ error: CachingClientError?, for key: String) {
        if let error, error.code == .server {
            recordFailure(key, error)
        } else {
            recordSuccess(key)
        }
    }

    func recordSuccess(_ key: String) {
        backoffTable.withLock { $0.recordSuccess(key) }
    }
}
