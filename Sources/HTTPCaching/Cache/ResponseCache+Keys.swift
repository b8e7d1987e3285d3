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

    /// The request's fields among `names` as a stored response keeps them
    /// (``CachedResponse/varyingRequestFields``): each field's lines as they came, except a
    /// credential (``VaryRule/credentialFieldNames``), which is kept as one line holding the keyed
    /// digest of its normalized value (``VaryRule/digestPrefix``) — never the value itself.
    func storedVaryingFields(_ names: [String], of request: HTTPRequest) -> HTTPFields {
        var fields = HTTPFields()
        for name in names {
            guard let fieldName = HTTPField.Name(name) else { continue }
            if VaryRule.credentialFieldNames.contains(name) {
                guard let value = VaryRule.normalizedValue(of: fieldName, in: request.headerFields) else { continue }
                fields.append(
                    HTTPField(name: fieldName, value: VaryRule.digestPrefix + tiers.keyedDigest.hex(of: value))
                )
                continue
            }
            for value in request.headerFields[values: fieldName] {
                fields.append(HTTPField(name: fieldName, value: value))
            }
        }
        return fields
    }

    /// The values of `names` in a request's `fields` that a stored variant is compared by
    /// (RFC 9111 §4.1): each normalized (``VaryRule/normalizedValue(of:in:)``), a credential's as
    /// the keyed digest ``storedVaryingFields(_:of:)`` stores; nil for an absent field or a name
    /// that is not a field name.
    func varyValues(of names: [String], in fields: HTTPFields) -> [String?] {
        names.map { name in
            guard let fieldName = HTTPField.Name(name), let value = VaryRule.normalizedValue(of: fieldName, in: fields)
            else { return nil }
            return VaryRule.credentialFieldNames.contains(name) ? digested(value) : value
        }
    }

    /// ``varyValues(of:in:)-([String],_)`` of names already made field names;
    /// `hasCredentials` says whether any of them is a credential (worked out once, by the caller).
    func varyValues(of names: [HTTPField.Name], in fields: HTTPFields, hasCredentials: Bool) -> [String?] {
        guard hasCredentials else { return VaryRule.normalizedValues(of: names, in: fields) }
        return names.map { name in
            guard let value = VaryRule.normalizedValue(of: name, in: fields) else { return nil }
            return VaryRule.credentialFieldNames.contains(name.canonicalName) ? digested(value) : value
        }
    }

    /// A credential's normalized value as the stored response keeps it.
    private func digested(_ value: String) -> String {
        VaryRule.digestPrefix + tiers.keyedDigest.hex(of: value)
    }

    /// The tier key of the variant selected by `request`'s values of `names`: the URL's key, the
    /// names, and a keyed 64-bit digest (SipHash-2-4) of ``varyValues(of:in:)-([String],_)`` —
    /// never the values themselves, and a credential's only as its keyed digest, so that a
    /// credential a response varies on (`Vary: Authorization`, `Cookie`) is not written into a
    /// key. Two value sets that share a digest share a key; the stored response's own varying
    /// fields are still compared on every read, so that costs a miss, never a wrong answer.
    func variantKey(primaryKey: String, names: [String], request: HTTPRequest) -> String {
        Self.variantKey(primaryKey: primaryKey, names: names, values: varyValues(of: names, in: request.headerFields))
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
    /// - Parameter requestValues: the request's values of the box's `Vary` names, when the caller
    ///   has them already (``varyValues(of:in:)-([String],_)``).
    func matches(
        _ box: StoredRecord.Box,
        _ response: CachedResponse,
        _ request: HTTPRequest,
        requestValues: [String?]? = nil
    ) -> Bool {
        guard let names = box.varyFieldNames else { return false }
        guard !names.isEmpty else { return true }
        // The stored request's values were normalized once, when the record was made.
        guard let stored = box.storedVaryValues else { return false }
        return stored == (requestValues ?? varyValues(of: names, in: request.headerFields))
    }
}
