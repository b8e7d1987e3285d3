// SPDX-License-Identifier: Apache-2.0

import CacheTiers
package import HTTPTypes

extension ResponseCache {
    /// The lookup of `request` in the memory tier alone, without suspending: for a server that
    /// answers fresh hits on its event loop. It finds what ``lookup(_:)`` would when the memory
    /// tier holds every record the lookup reads, already decoded, and exactly one stored response
    /// answers the request (a response without `Vary`, or the one variant the request's fields
    /// select); otherwise nil (then ask ``lookup(_:)``, which also reads the lower tiers).
    /// - Complexity: one memory-tier read by the key's bytes, two for a URL with variants (the
    ///   variant's key was made once, when its index was stored); makes no key string, decodes
    ///   nothing.
    package func memoryLookup(_ request: HTTPRequest) -> ResponseLookup? {
        guard let scheme = request.scheme, let authority = request.authority else { return nil }
        return URLKey.withUTF8(
            method: request.method.rawValue,
            scheme: scheme,
            authority: authority,
            path: request.path ?? "/"
        ) { primaryKey in
            guard case .attached(let attachment) = tiers.probeMemory(utf8: primaryKey),
                let primary = Self.record(attachedAs: attachment)
            else { return nil }
            if primary.answersEveryRequest { return ResponseLookup(request: request, deferringKeyOf: primary) }
            if let response = primary.response {
                guard matches(primary, response, request) else { return nil }
                return ResponseLookup(request: request, deferringKeyOf: primary)
            }
            guard let found = memoryVariant(of: primary, for: request, primaryKey: primaryKey) else { return nil }
            return ResponseLookup(request: request, deferringKeyOf: primary, first: found)
        }
    }

    /// The one variant of the index `primary` (stored under the bytes `primaryKey`) that answers
    /// `request`, found as ``matching(_:primaryKey:request:)`` would: only the variant whose key
    /// the request's own fields produce — compared by the digest of its normalized values, no key
    /// string made — and whose stored request fields match. Nil when none does, when more than one
    /// would, or when a record it needs is not decoded in memory (the full lookup decides).
    private func memoryVariant(
        of primary: StoredRecord.Box,
        for request: HTTPRequest,
        primaryKey: UnsafeRawBufferPointer
    ) -> StoredRecord.Box? {
        var found: StoredRecord.Box?
        for probe in primary.variantProbes {
            let values = varyValues(
                of: probe.fieldNames,
                in: request.headerFields,
                hasCredentials: probe.hasCredentials
            )
            guard Self.variantDigest(names: probe.names, values: values) == probe.digest else { continue }
            // The same digest under another URL's key cannot be: the index is stored under this
            // one. A key that cannot be compared byte by byte is left to the full lookup.
            guard probe.startsWith(primaryKey: primaryKey) == true else { return nil }
            guard let entry = tiers.memory.entry(for: probe.key), let attachment = entry.attachment,
                let box = Self.record(attachedAs: attachment)
            else { return nil }
            let known = box.varyFieldNames == probe.names ? values : nil
            guard let response = box.response, matches(box, response, request, requestValues: known) else {
                continue
            }
            guard found == nil else { return nil }
            found = box
        }
        return found
    }
}
