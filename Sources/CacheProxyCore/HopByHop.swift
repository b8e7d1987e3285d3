// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPCaching
import HTTPTypes

/// The header fields that belong to one connection and that a proxy drops in both directions
/// ([RFC 9110 §7.6.1](https://www.rfc-editor.org/rfc/rfc9110#section-7.6.1)): `Connection` and
/// every field it names, `Keep-Alive`, `Proxy-*` (`Proxy-Connection`, `Proxy-Authorization`,
/// `Proxy-Authenticate`), `TE`, `Trailer`, `Transfer-Encoding` and `Upgrade`.
enum HopByHop {
    /// Whether `name` (lowercased) is dropped whatever `Connection` says.
    static func isFixed(_ name: String) -> Bool {
        switch name {
        case "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade": true
        default: name.hasPrefix("proxy-")
        }
    }

    /// `Host`, the framing fields and `Expect`: what a request loses on its way upstream.
    static let requestExtras = ["host", "content-length", "expect"]

    /// `fields` without the hop-by-hop fields, the others in their order, repeated ones kept.
    ///
    /// Fields with nothing to drop come back as they are, without a copy (the common case on
    /// every cache hit: stored responses lost their hop-by-hop fields before they were stored).
    /// - Parameter alsoDropping: more names (lowercased) to drop, such as the framing fields the
    ///   next hop sets itself; a short list, compared with each field's name rather than hashed.
    static func stripped(_ fields: HTTPFields, alsoDropping extra: [String] = []) -> HTTPFields {
        var named: Set<String> = []
        if fields[.connection] != nil {
            for value in fields[values: .connection] {
                for option in value.split(separator: ",") {
                    let name = option.trimmingOWS().lowercased()
                    if !name.isEmpty { named.insert(name) }
                }
            }
        }
        func drops(_ field: HTTPField) -> Bool {
            let name = field.name.canonicalName
            return isFixed(name) || extra.contains(name) || (!named.isEmpty && named.contains(name))
        }
        guard fields.contains(where: drops) else { return fields }
        var kept = HTTPFields()
        kept.reserveCapacity(fields.count)
        for field in fields where !drops(field) { kept.append(field) }
        return kept
    }
}

#endif
