// SPDX-License-Identifier: Apache-2.0

/// `Accept-Language` read as the origin reads it, to choose among stored variants
/// ([RFC 9110 §12.5.4](https://www.rfc-editor.org/rfc/rfc9110#section-12.5.4), ranges matched by
/// basic filtering, [RFC 4647 §3.3.1](https://www.rfc-editor.org/rfc/rfc4647#section-3.3.1)).
///
/// RFC 9111 §4.1 lets a cache use what a varying field means: a request whose `Accept-Language`
/// is not the same set as a stored variant's may still be answered by a variant in the language
/// the origin would choose for it — one that matches a range of the request's highest weight.
enum LanguagePreference {
    /// Whether a response whose `Content-Language` is `contentLanguage` is the request's first
    /// choice under `acceptLanguage` (its field lines): the response names exactly one language
    /// tag, it matches a range of the highest weight (`*` matches any tag), and no range with
    /// `q=0` excludes it. False when the request states no preference (no valid range with a
    /// weight above 0): the origin's default is then unknown.
    static func isFirstChoice(_ contentLanguage: String, for acceptLanguage: [String]) -> Bool {
        let tag = contentLanguage.trimmingOWS().lowercased()
        guard !tag.isEmpty, !tag.contains(","), !tag.contains(" ") else { return false }
        var best: (weight: Int, ranges: [Substring]) = (0, [])
        var excluded: [Substring] = []
        for line in acceptLanguage {
            for member in line.split(separator: ",") {
                guard let (range, weight) = parse(member) else { continue }
                if weight == 0 {
                    excluded.append(range)
                } else if weight > best.weight {
                    best = (weight, [range])
                } else if weight == best.weight {
                    best.ranges.append(range)
                }
            }
        }
        guard best.weight > 0 else { return false }
        // A more specific exclusion wins (`en, en-gb;q=0` does not take `en-GB`).
        if excluded.contains(where: { $0 != "*" && matches(tag, $0) }) { return false }
        return best.ranges.contains { matches(tag, $0) }
    }

    /// A member `range[;q=weight]`, lowercased, with its weight in thousandths; nil when it is
    /// not a language range or its weight is not a qvalue (RFC 9110 §12.4.2).
    static func parse(_ member: Substring) -> (range: Substring, weight: Int)? {
        var parts = member.split(separator: ";", omittingEmptySubsequences: false).makeIterator()
        guard let rangePart = parts.next() else { return nil }
        let range = Substring(rangePart.trimmingOWS().lowercased())
        guard !range.isEmpty,
            range == "*" || range.allSatisfy({ $0 == "-" || ($0.isASCII && ($0.isLetter || $0.isNumber)) })
        else { return nil }
        var weight = 1000
        for parameter in parts {
            let pair = parameter.trimmingOWS()
            guard pair.lowercased().hasPrefix("q=") else { continue }
            guard let parsed = qvalue(pair.dropFirst(2)) else { return nil }
            weight = parsed
        }
        return (range, weight)
    }

    /// A qvalue (`0`, `0.5`, `1.000`) in thousandths; nil when it is not one.
    private static func qvalue(_ text: Substring) -> Int? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, whole == "0" || whole == "1" else { return nil }
        var fraction = parts.count > 1 ? parts[1] : ""
        guard fraction.count <= 3, fraction.allSatisfy({ $0 >= "0" && $0 <= "9" }) else { return nil }
        if whole == "1" { return fraction.allSatisfy { $0 == "0" } ? 1000 : nil }
        while fraction.count < 3 { fraction += "0" }
        return Int(fraction)
    }

    /// Basic filtering: the range is `*`, the tag, or a prefix of the tag ending at a `-`.
    private static func matches(_ tag: String, _ range: Substring) -> Bool {
        range == "*" || tag == range || (tag.hasPrefix(range) && tag.dropFirst(range.count).first == "-")
    }
}
