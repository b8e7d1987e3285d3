// SPDX-License-Identifier: Apache-2.0

import CacheTiers
package import HTTPTypes

extension ResponseCache {
    /// The lookup of `request` in the memory tier alone, without suspending: for a server that
    /// answers fresh hits on its event loop. It finds what ``lookup(_:)`` would when the memory
    /// tier holds every record the lookup reads, already decoded, and exactly one stored response
    /// answers the request (a response without `Vary`, or the one variant the request's fields
    /// select); otherwise nil (then ask ``lookup(_:)``, which also reads the lower tiers).
    /// - Complexity: one memory-tier read (by the key's bytes: a hit on a response without `Vary`
    ///   makes no key string), two for a URL with variants; decodes nothing.
    package func memoryLookup(_ request: HTTPRequest) -> ResponseLookup? {
        let key: CacheKey
        let primary: StoredRecord.Box
        switch probe(request) {
        case .hit(let box): return ResponseLookup(request: request, deferringKeyOf: box)
        case .rest(.attached(let primaryKey, let box)): (key, primary) = (primaryKey, box)
        case .closed, .noURL, .rest: return nil
        }
        if let response = primary.response {
            guard Self.matches(primary, response, request) else { return nil }
            return ResponseLookup(request: request, key: key, primary: primary, first: primary)
        }
        var found: StoredRecord.Box?
        var triedKeys: Set<String> = []
        for variant in primary.variantIndex?.variants ?? [] {
            // As `matching`: only the variant whose key the request's own fields produce.
            let values = VaryRule.normalizedValues(of: variant.fieldNames, in: request.headerFields)
            let variantKey = Self.variantKey(primaryKey: key.string, names: variant.fieldNames, values: values)
            guard variantKey == variant.key, triedKeys.insert(variantKey).inserted else { continue }
            // Not in memory (on disk, say): the full lookup decides.
            guard let box = memoryRecord(CacheKey(variantKey)) else { return nil }
            let known = box.varyFieldNames == variant.fieldNames ? values : nil
            guard let response = box.response, Self.matches(box, response, request, requestValues: known) else {
                continue
            }
            guard found == nil else { return nil }
            found = box
        }
        guard let found else { return nil }
        return ResponseLookup(request: request, key: key, primary: primary, first: found)
    }

    /// The decoded record the memory tier holds for `key`; nil when it holds none, or one not
    /// decoded yet.
    private func memoryRecord(_ key: CacheKey) -> StoredRecord.Box? {
        guard let entry = tiers.memory.entry(for: key), entry.attachment != nil else { return nil }
        return try? StoredRecord.Box.of(entry)
    }
}
