// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPTypes

/// The header fields that belong to one connection and that a proxy drops in both directions
/// ([RFC 9110 §7.6.1](https://www.rfc-editor.org/rfc/rfc9110#section-7.6.1)): `Connection` and
/// every field it names, `Keep-Alive`, `Proxy-*` (`Proxy-Connection`, `Proxy-Authorization`,
/// `Proxy-Authenticate`), `TE`, `Trailer`, `Transfer-Encoding` and `Upgrade`.
enum HopByHop {
    /// The names (lowercased) dropped whatever `Connection` says.
    static let fixedNames: Set<String> = ["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"]

    /// `fields` without the hop-by-hop fields, the others in their order, repeated ones kept.
    /// - Parameter alsoDropping: more names (lowercased) to drop, such as the framing fields the
    ///   next hop sets itself.
    static func stripped(_ fields: HTTPFields, alsoDropping extra: Set<String> = []) -> HTTPFields {
        var named = fixedNames.union(extra)
        for value in fields[values: .connection] {
            for option in value.split(separator: ",") {
                let name = option.trimmingOWS().lowercased()
                if !name.isEmpty { named.insert(name) }
            }
        }
        var kept = HTTPFields()
        kept.reserveCapacity(fields.count)
        for field in fields {
            let name = field.name.canonicalName
            if named.contains(name) || name.hasPrefix("proxy-") { continue }
            kept.append(field)
        }
        return kept
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (RFC 9110 OWS).
    func trimmingOWS() -> SubSequence {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}
#endif
