// SPDX-License-Identifier: Apache-2.0

import CacheTiers
package import HTTPTypes

extension ResponseCache {
    /// The lookup of `request` in the memory tier alone, without suspending: for a server that
    /// answers fresh hits on its event loop. It finds what ``lookup(_:)`` would when the memory
    /// tier holds the URL's record already decoded and that record is one response without
    /// `Vary`; otherwise nil (then ask ``lookup(_:)``).
    /// - Complexity: one memory-tier read; decodes nothing.
    package func memoryLookup(_ request: HTTPRequest) -> ResponseLookup? {
        guard let key = Self.primaryKey(for: request), let entry = tiers.memory.entry(for: key),
            entry.attachment != nil, let box = try? StoredRecord.Box.of(entry), box.answersEveryRequest
        else { return nil }
        return ResponseLookup(request: request, key: key, primary: box, first: box)
    }
}
