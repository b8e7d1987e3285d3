// SPDX-License-Identifier: Apache-2.0

import HTTPTypes

// Interim stand-ins until the RFC 9111 rules land in Rules/; replaced by them.

enum VaryRule {
    static func fieldNames(in fields: HTTPFields) -> [String]? {
        var names: Set<String> = []
        for value in fields[values: .vary] {
            for part in value.split(separator: ",") {
                let name = trimmed(part).lowercased()
                if name == "*" { return nil }
                if !name.isEmpty { names.insert(name) }
            }
        }
        return names.sorted()
    }

    static func normalizedValue(of name: HTTPField.Name, in fields: HTTPFields) -> String? {
        let values = fields[values: name]
        guard !values.isEmpty else { return nil }
        return values.joined(separator: ",").split(separator: ",", omittingEmptySubsequences: false)
            .map { trimmed($0) }.joined(separator: ",")
    }

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

private func trimmed(_ text: Substring) -> String {
    var text = text
    while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
    while let last = text.last, last == " " || last == "\t" { text.removeLast() }
    return String(text)
}
