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
        let members = values.joined(separator: ",").split(separator: ",", omittingEmptySubsequences: false)
        switch name.canonicalName {
        case "accept-encoding", "accept-language": return acceptedSet(members)
        default: return members.map { $0.trimmingOWS() }.joined(separator: ",")
        }
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

    /// Whether every one of `names` is a valid field name (a name that is not never matches).
    static func areFieldNames(_ names: [String]) -> Bool {
        names.allSatisfy { HTTPField.Name($0) != nil }
    }
}
