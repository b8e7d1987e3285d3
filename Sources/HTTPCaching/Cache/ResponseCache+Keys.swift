// SPDX-License-Identifier: Apache-2.0

package import CacheTiers
package import HTTPTypes

extension ResponseCache {
    /// The tier key of `request`'s responses: method and normalized URL (RFC 9111 §4.1), as
    /// `GET https://host/path?query`, hashed once. Nil without a scheme and authority.
    package static func primaryKey(for request: HTTPRequest, method: HTTPRequest.Method? = nil) -> CacheKey? {
        guard let scheme = request.scheme, let authority = request.authority else { return nil }
        return CacheKey(
            URLKey.make(
                method: (method ?? request.method).rawValue,
                scheme: scheme,
                authority: authority,
                path: request.path ?? "/"
            )
        )
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

    /// The tier key of the variant selected by `request`'s values of `names`: the URL's key, the
    /// names, and a keyed 64-bit digest (SipHash-2-4) of the normalized values — never the values
    /// themselves, so that a credential a response varies on (`Vary: Authorization`, `Cookie`)
    /// is not written into a key. Two value sets that share a digest share a key; the stored
    /// response's own varying fields are still compared on every read, so that costs a miss,
    /// never a wrong answer.
    static func variantKey(primaryKey: String, names: [String], request: HTTPRequest) -> String {
        var values: [UInt8] = []
        for name in names {
            values.append(contentsOf: name.utf8)
            if let fieldName = HTTPField.Name(name),
                let value = VaryRule.normalizedValue(of: fieldName, in: request.headerFields)
            {
                values.append(UInt8(ascii: "="))
                values.append(contentsOf: value.utf8)
            }
            values.append(0)
        }
        let digest = values.withUnsafeBytes { variantHasher.hash($0) }
        let hex = String(digest, radix: 16)
        return primaryKey + "\u{1F}" + names.joined(separator: ",") + "\u{1F}"
            + String(repeating: "0", count: 16 - hex.count)
            + hex
    }

    /// The key of ``variantKey(primaryKey:names:request:)``'s digest.
    private static let variantHasher = SipHash24(key: Array("LayeredCache.Vary".utf8.prefix(16)))

    /// Whether a stored response answers `request`'s varying fields (RFC 9111 §4.1).
    static func matches(_ box: StoredRecord.Box, _ response: CachedResponse, _ request: HTTPRequest) -> Bool {
        guard let names = box.varyFieldNames else { return false }
        return names.isEmpty || VaryRule.matches(names: names, stored: response, request: request)
    }
}
