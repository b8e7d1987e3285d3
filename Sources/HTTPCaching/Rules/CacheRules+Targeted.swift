// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

extension CacheRules {
    /// The directives a cache of this mode obeys for a response with `fields`
    /// ([RFC 9213 §2.1](https://www.rfc-editor.org/rfc/rfc9213#section-2.1)): in a shared cache,
    /// the first field of ``targetedCacheControl`` the response carries, in place of
    /// `Cache-Control` (which is then ignored, as are the targeted fields after it); otherwise,
    /// and in a private cache, `Cache-Control`.
    public func responseDirectives(_ fields: HTTPFields) -> CacheControl {
        targetedDirectives(fields) ?? CacheControl(fields)
    }

    /// The directives of the first targeted field `fields` carry, in a shared cache; nil when
    /// there is none (or the cache is private).
    func targetedDirectives(_ fields: HTTPFields) -> CacheControl? {
        guard mode.isShared else { return nil }
        for name in targetedCacheControl {
            let lines = fields[values: name]
            // RFC 9213 §2.1: a field without a valid value is ignored.
            guard lines.contains(where: { !$0.trimmingOWS().isEmpty }) else { continue }
            var directives = CacheControl()
            for line in lines { directives.merge(parsing: line) }
            return directives
        }
        return nil
    }

    /// The statuses whose caching requirements this cache understands
    /// ([RFC 9111 §5.2.2.3](https://www.rfc-editor.org/rfc/rfc9111#section-5.2.2.3)): with
    /// `must-understand`, a response of one of these may be stored despite `no-store`, and a
    /// response of any other is not stored.
    public static let understoodStatuses: Set<Int> = heuristicallyCacheableStatuses.union([302, 303, 307])
}

extension HTTPField.Name {
    /// `CDN-Cache-Control` ([RFC 9213 §3](https://www.rfc-editor.org/rfc/rfc9213#section-3)).
    public static let cdnCacheControl = HTTPField.Name("CDN-Cache-Control")!
}
