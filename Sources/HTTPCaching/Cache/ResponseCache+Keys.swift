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
        variantKey(
            primaryKey: primaryKey,
            names: names,
            values: VaryRule.normalizedValues(of: names, in: request.headerFields)
        )
    }

    /// ``variantKey(primaryKey:names:request:)`` from the request's normalized `values` of `names`
    /// (``VaryRule/normalizedValues(of:in:)``), for a caller that needs them again.
    static func variantKey(primaryKey: String, names: [String], values normalized: [String?]) -> String {
        let hex = String(variantDigest(names: names, values: normalized), radix: 16)
        return variantKeyStem(primaryKey: primaryKey, names: names)
            + String(repeating: "0", count: 16 - hex.count)
            + hex
    }

    /// What a variant key holds before its digest: the URL's key and the names, each followed by
    /// a unit separator.
    static func variantKeyStem(primaryKey: String, names: [String]) -> String {
        primaryKey + "\u{1F}" + names.joined(separator: ",") + "\u{1F}"
    }

    /// The digest a variant key ends with (``variantKey(primaryKey:names:values:)``), in 16
    /// lowercase hexadecimal digits.
    static func variantDigest(names: [String], values normalized: [String?]) -> UInt64 {
        var values: [UInt8] = []
        for (name, value) in zip(names, normalized) {
            values.append(contentsOf: name.utf8)
            if let value {
                values.append(UInt8(ascii: "="))
                values.append(contentsOf: value.utf8)
            }
            values.append(0)
        }
        return values.withUnsafeBytes { variantHasher.hash($0) }
    }

    /// The key of ``variantKey(primaryKey:names:request:)``'s digest.
    private static let variantHasher = SipHash24(key: Array("LayeredCache.Vary".utf8.prefix(16)))

    /// Whether a stored response answers `request`'s varying fields (RFC 9111 §4.1).
    /// - Parameter requestValues: the request's normalized values of the box's `Vary` names, when
    ///   the caller has them already (``VaryRule/normalizedValues(of:in:)``).
    static func matches(
        _ box: StoredRecord.Box,
        _ response: CachedResponse,
        _ request: HTTPRequest,
        requestValues: [String?]? = nil
    ) -> Bool {
        guard let names = box.varyFieldNames else { return false }
        guard !names.isEmpty else { return true }
        // The stored request's values were normalized once, when the record was made.
        guard let stored = box.storedVaryValues else { return false }
        return stored == (requestValues ?? VaryRule.normalizedValues(of: names, in: request.headerFields))
    }
}
