// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPCaching
import HTTPTypes

/// Tags an origin gives a response in fields such as Fastly's `Surrogate-Key` (keys separated by
/// spaces) and Cloudflare's `Cache-Tag` (separated by commas): they become the stored response's
/// ``HTTPCaching/CachedResponse/tags``, so that a purge by tag
/// (``HTTPCaching/ResponseCache/invalidate(tag:)``) reaches every response that carries one.
///
/// Both separators are read in every configured field. A hostile or careless origin cannot make a
/// response cost more than ``maximumCount`` tags of at most ``maximumLength`` bytes: longer tags
/// are ignored, and tags past the count too (each tag is a member list the cache writes).
enum SurrogateKeys {
    /// The most tags one response gets.
    static let maximumCount = 64
    /// The longest tag kept, in bytes.
    static let maximumLength = 256

    /// The tags in `fields` under `names`, in order, without repeats, within the limits.
    static func tags(in fields: HTTPFields, names: [HTTPField.Name]) -> [String] {
        var tags: [String] = []
        var seen: Set<Substring> = []
        for name in names {
            for value in fields[values: name] {
                for tag in value.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" }) {
                    guard tag.utf8.count <= maximumLength, seen.insert(tag).inserted else { continue }
                    tags.append(String(tag))
                    if tags.count == maximumCount { return tags }
                }
            }
        }
        return tags
    }

    /// The storage hook that adds the tags of `names` to a stored response; with `strip`, the
    /// fields are not stored (answers from the cache then never carry them).
    static func hook(names: [HTTPField.Name], strip: Bool) -> WillCache {
        WillCache { response, _ in
            guard names.contains(where: { response.response.headerFields[$0] != nil }) else { return response }
            var response = response
            response.tags.formUnion(tags(in: response.response.headerFields, names: names))
            if strip {
                for name in names { response.response.headerFields[name] = nil }
            }
            return response
        }
    }

    /// `fields` without the fields of `names` (nothing copied when none is there).
    static func stripped(_ fields: HTTPFields, names: [HTTPField.Name]) -> HTTPFields {
        guard !names.isEmpty, names.contains(where: { fields[$0] != nil }) else { return fields }
        var fields = fields
        for name in names { fields[name] = nil }
        return fields
    }
}
#endif
