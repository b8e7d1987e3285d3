// SPDX-License-Identifier: Apache-2.0

import HTTPTypes

/// The secondary cache key ([RFC 9111 §4.1](https://www.rfc-editor.org/rfc/rfc9111#section-4.1)):
/// a stored response with `Vary` answers only requests whose fields named there match the fields
/// of the request that produced it. Field values match after combining field lines and removing
/// whitespace around list commas; a field absent from both matches; `Vary: *` matches nothing.
///
/// `Accept-Encoding` and `Accept-Language` match by what they accept: their members are compared
/// as a set, lowercased, without parameters, members with `q=0` left out — `gzip, br`,
/// `br;q=0.9, GZIP` and `gzip,br,identity;q=0` select one variant (RFC 9110 §12.5.3, §12.5.4).
///
/// A credential field (``credentialFieldNames``) a response varies on is kept only as a keyed
/// digest of its normalized value (``digestPrefix``), and a request's value is digested alike
/// before the two are compared: the cache stores no credential to match one.
enum VaryRule {
    /// The request fields that carry a user's credentials, lowercased: `Authorization`,
    /// `Proxy-Authorization` and `Cookie`.
    static let credentialFieldNames: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// What a stored credential's value starts with: its keyed digest follows (32 hexadecimal
    /// digits; HMAC-SHA256 under the cache's secret, `KeyedDigest`). A record stored before
    /// credentials were digested holds the value itself, which a digest never equals: a miss once.
    static let digestPrefix = "keyed-digest-v1:"

    /// Whether any of the lowercased `names` is a credential field.
    static func containsCredential(_ names: [String]) -> Bool {
        names.contains { credentialFieldNames.contains($0) }
    }

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
        // One field line (the common case) is read as it is; several are combined.
        guard let first = fields.firstIndex(where: { $0.name == name }) else { return nil }
        let rest = fields[fields.index(after: first)...]
        let combined =
            rest.contains(where: { $0.name == name })
            ? fields[values: name].joined(separator: ",") : fields[first].value
        switch name.canonicalName {
        case "accept-encoding", "accept-language":
            return acceptedSetOfPlainTokens(combined)
                ?? acceptedSet(combined.split(separator: ",", omittingEmptySubsequences: false))
        default:
            return combined.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingOWS() }
                .joined(separator: ",")
        }
    }

    /// ``acceptedSet(_:)`` of the members of `list` when each is an ASCII token without
    /// parameters (`gzip, br`), without splitting the list into strings first; nil for any other
    /// list (then ``acceptedSet(_:)`` decides).
    static func acceptedSetOfPlainTokens(_ list: String) -> String? {
        var tokens: [String] = []
        var utf8 = list.utf8[...]
        while true {
            let end = utf8.firstIndex(of: UInt8(ascii: ",")) ?? utf8.endIndex
            var member = utf8[..<end]
            while let byte = member.first, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                member.removeFirst()
            }
            while let byte = member.last, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                member.removeLast()
            }
            var hasUpper = false
            for byte in member {
                guard byte < 0x80, byte != UInt8(ascii: ";") else { return nil }
                if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { hasUpper = true }
            }
            if !member.isEmpty {
                let token = Substring(member)
                tokens.append(hasUpper ? token.lowercased() : String(token))
            }
            guard end < utf8.endIndex else { break }
            utf8 = utf8[utf8.index(after: end)...]
        }
        guard tokens.count > 1 else { return tokens.first ?? "" }
        tokens.sort()
        var joined = tokens[0]
        for (previous, token) in zip(tokens, tokens.dropFirst()) where token != previous {
            joined.append(",")
            joined.append(token)
        }
        return joined
    }

    /// The members of an `Accept-*` list that are accepted (no `q=0`), lowercased, without their
    /// parameters, sorted and distinct, joined with commas.
    static func acceptedSet(_ members: [Substring]) -> String {
        var accepted: Set<String> = []
        for member in members {
            let parts = member.split(separator: ";", omittingEmptySubsequences: false)
            let token = (parts.first ?? "").trimmingOWS().lowercased()
            guard !token.isEmpty else { continue }
            let refused = parts.dropFirst().contains { parameter in
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingOWS().lowercased() == "q" else { return false }
                return Double(pair[1].trimmingOWS()) == 0
            }
            if !refused { accepted.insert(token) }
        }
        return accepted.sorted().joined(separator: ",")
    }

    /// ``normalizedValue(of:in:)`` of each of `names` in `fields`, in order; nil for a name that
    /// is absent or not a field name.
    static func normalizedValues(of names: [String], in fields: HTTPFields) -> [String?] {
        names.map { name in HTTPField.Name(name).flatMap { normalizedValue(of: $0, in: fields) } }
    }

    /// ``normalizedValues(of:in:)`` of names already made field names.
    static func normalizedValues(of names: [HTTPField.Name], in fields: HTTPFields) -> [String?] {
        names.map { normalizedValue(of: $0, in: fields) }
    }

    /// Whether every one of `names` is a valid field name (a name that is not never matches).
    static func areFieldNames(_ names: [String]) -> Bool {
        names.allSatisfy { HTTPField.Name($0) != nil }
    }
}
