// SPDX-License-Identifier: Apache-2.0

import HTTPTypes

extension ResponseCache {
    /// The tier key of `request`'s responses: method and normalized URL (RFC 9111 §4.1), as
    /// `GET https://host/path?query`.
    static func primaryKey(for request: HTTPRequest, method: HTTPRequest.Method? = nil) -> String? {
        guard let scheme = request.scheme, let authority = request.authority else { return nil }
        return URLKey.make(
            method: (method ?? request.method).rawValue,
            scheme: scheme,
            authority: authority,
            path: request.path ?? "/"
        )
    }

    /// The lowercased, sorted, distinct field names `Vary` lists: empty without `Vary`, nil for
    /// `Vary: *`, which no request matches.
    static func varyFieldNames(_ fields: HTTPFields) -> [String]? {
        VaryRule.fieldNames(in: fields)
    }

    /// The request's fields among `names`, as a response's varying request fields.
    static func fields(_ names: [String], of request: HTTPRequest) -> HTTPFields {
        var fields = HTTPFields()
        for name in names {
            guard let fieldName = HTTPField.Name(name) else { continue }
            for value in request.headerFields[values: fieldName] {
                fields.append(HTTPField(name: fieldName, value: value))
            }
        }
        return fields
    }

    /// The tier key of the variant selected by `request`'s values of `names`.
    static func variantKey(primaryKey: String, names: [String], request: HTTPRequest) -> String {
        var key = primaryKey
        for name in names {
            key += "\u{1F}" + name + "="
            if let fieldName = HTTPField.Name(name),
                let value = VaryRule.normalizedValue(of: fieldName, in: request.headerFields)
            {
                key += value
            } else {
                key += "\u{0}"
            }
        }
        return key
    }

    /// Whether a stored response answers `request`'s varying fields (RFC 9111 §4.1).
    static func matches(_ box: StoredRecord.Box, _ response: CachedResponse, _ request: HTTPRequest) -> Bool {
        guard let names = box.varyFieldNames else { return false }
        return names.isEmpty || VaryRule.matches(names: names, stored: response, request: request)
    }
}
