// SPDX-License-Identifier: Apache-2.0

import HTTPTypes

/// The secondary cache key ([RFC 9111 §4.1](https://www.rfc-editor.org/rfc/rfc9111#section-4.1)):
/// a stored response with `Vary` answers only requests whose fields named there match the fields
/// of the request that produced it. Field values match after combining field lines and removing
/// whitespace around list commas; a field absent from both matches; `Vary: *` matches nothing.
enum VaryRule {
    /// The lowercased, sorted, distinct field names `Vary` lists: empty without `Vary`, nil for
    /// `Vary: *`.
    static func fieldNames(in fields: HTTPFields) -> [String]? {
        var names: Set<String> = []
        for value in fields[values: .vary] {
            for part in value.split(separator: ",") {
                let name = part.trimmingOWS().lowercased()
                if name == "*" { return nil }
                if !name.isEmpty { names.insert(name) }
            }
        }
        return names.sorted()
    }

    /// A field's lines combined and normalized for comparison; nil when the field is absent.
    static func normalizedValue(of name: HTTPField.Name, in fields: HTTPFields) -> String? {
        let values = fields[values: name]
        guard !values.isEmpty else { return nil }
        return values.joined(separator: ",").split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingOWS() }.joined(separator: ",")
    }

    /// Whether `request` carries the same values of `names` as the request `stored` answered.
    static func matches(names: [String], stored: CachedResponse, request: HTTPRequest) -> Bool {
        for name in names {
            guard let fieldName = HTTPField.Name(name) else { return false }
            if normalizedValue(of: fieldName, in: stored.varyingRequestFields)
                != normalizedValue(of: fieldName, in: request.headerFields)
            {
                return false
            }
        }
        return true
    }
}
