// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes
import RawStructuredFieldValues

extension CacheRules {
    /// The directives a cache of this mode obeys for a response with `fields`
    /// ([RFC 9213 §2.1](https://www.rfc-editor.org/rfc/rfc9213#section-2.1)): in a shared cache,
    /// the first field of ``targetedCacheControl`` the response carries, in place of
    /// `Cache-Control` (which is then ignored, as are the targeted fields after it); otherwise,
    /// and in a private cache, `Cache-Control`.
    public func responseDirectives(_ fields: HTTPFields) -> CacheControl {
        targetedDirectives(fields) ?? CacheControl(fields)
    }

    /// The directives of the first valid targeted field `fields` carry, in a shared cache; nil
    /// when there is none (or the cache is private).
    func targetedDirectives(_ fields: HTTPFields) -> CacheControl? {
        guard mode.isShared else { return nil }
        for name in targetedCacheControl {
            let lines = fields[values: name]
            guard !lines.isEmpty, let directives = Self.targetedDirectives(parsing: lines) else { continue }
            return directives
        }
        return nil
    }

    /// A targeted field's directives ([RFC 9213 §2.1](https://www.rfc-editor.org/rfc/rfc9213#section-2.1)):
    /// a Structured Field Dictionary ([RFC 8941](https://www.rfc-editor.org/rfc/rfc8941)), read by
    /// swift-http-structured-headers. Nil — the field is ignored as a whole, as if it were absent —
    /// when it is empty, does not parse, or gives a directive this cache knows a value of the
    /// wrong type: `max-age`, `s-maxage`, `stale-while-revalidate` and `stale-if-error` take an
    /// Integer (`max-age="60"`, `max-age=1.5` or `max-age=a` void the field); `no-store`,
    /// `public`, `must-revalidate`, `proxy-revalidate`, `must-understand`, `no-transform` and
    /// `immutable` a Boolean (`?0` is the directive's absence); `private` and `no-cache` a
    /// Boolean or a String of field names (read unqualified, as in `Cache-Control`). A directive
    /// this cache does not know is ignored whatever its type.
    static func targetedDirectives(parsing lines: [String]) -> CacheControl? {
        let dictionary: OrderedMap<String, ItemOrInnerList>
        do {
            var parser = StructuredFieldValueParser(Array(lines.joined(separator: ", ").utf8))
            dictionary = try parser.parseDictionaryFieldValue()
        } catch {
            return nil  // RFC 9213 §2.1: a field that fails to parse is ignored.
        }
        guard dictionary.count > 0 else { return nil }
        var directives = CacheControl()
        for (name, member) in dictionary {
            let value: RFC9651BareItem?
            if case .item(let item) = member { value = item.rfc9651BareItem } else { value = nil }
            switch name {
            case "max-age", "s-maxage", "stale-while-revalidate", "stale-if-error":
                guard case .integer(let seconds) = value else { return nil }
                directives.merge(parsing: "\(name)=\(seconds)")
            case "no-store", "public", "must-revalidate", "proxy-revalidate", "must-understand", "no-transform",
                "immutable":
                guard case .bool(let present) = value else { return nil }
                if present { directives.merge(parsing: name) }
            case "private", "no-cache":
                switch value {
                case .bool(let present): if present { directives.merge(parsing: name) }
                case .string: directives.merge(parsing: name)
                default: return nil
                }
            default:
                continue
            }
        }
        return directives
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
