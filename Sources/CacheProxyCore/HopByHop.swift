// SPDX-License-Identifier: Apache-2.0

#if Proxy
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPCaching
import HTTPTypes

/// The header fields that belong to one connection and that a proxy drops in both directions
/// ([RFC 9110 §7.6.1](https://www.rfc-editor.org/rfc/rfc9110#section-7.6.1)): `Connection` and
/// every field it names, `Keep-Alive`, `Proxy-*` (`Proxy-Connection`, `Proxy-Authorization`,
/// `Proxy-Authenticate`), `TE`, `Trailer`, `Transfer-Encoding` and `Upgrade`.
enum HopByHop {
    /// Whether `name` (lowercased) is dropped whatever `Connection` says.
    ///
    /// Read from the name's bytes, by length first: a field that is not hop-by-hop (nearly every
    /// field of every message) costs a length test and, mostly, a byte or two compared, where a
    /// `switch` over strings compared it with each literal in turn.
    static func isFixed(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { isFixed(utf8: $0) }
    }

    private static func isFixed(utf8 name: UnsafeBufferPointer<UInt8>) -> Bool {
        let exact: Bool
        switch name.count {
        case 2: exact = matches(name, "te")
        case 7: exact = matches(name, "trailer") || matches(name, "upgrade")
        case 10: exact = matches(name, "connection") || matches(name, "keep-alive")
        case 17: exact = matches(name, "transfer-encoding")
        default: exact = false
        }
        return exact || (name.count >= 6 && matches(UnsafeBufferPointer(rebasing: name[..<6]), "proxy-"))
    }

    /// Whether `bytes` are `literal`'s (ASCII) bytes.
    @inline(__always)
    private static func matches(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        bytes.count == literal.utf8CodeUnitCount && bytes[0] == literal.utf8Start.pointee
            && memcmp(bytes.baseAddress!, literal.utf8Start, bytes.count) == 0
    }

    /// The options of `fields`' `Connection` field, lowercased (RFC 9110 §7.6.1): the fields it
    /// names as hop-by-hop, and `close` or `keep-alive` (RFC 9112 §9.6).
    static func connectionOptions(of fields: HTTPFields) -> Set<String> {
        var options: Set<String> = []
        for value in fields[values: .connection] {
            for option in value.split(separator: ",") {
                let option = option.trimmingOWS().lowercased()
                if !option.isEmpty { options.insert(option) }
            }
        }
        return options
    }

    /// The `Connection` options that say only whether the connection persists.
    static let persistenceOptions: Set<String> = ["close", "keep-alive"]

    /// `Host`, the framing fields and `Expect`: what a request loses on its way upstream.
    static let requestExtras = ["host", "content-length", "expect"]

    /// `fields` without the hop-by-hop fields, the others in their order, repeated ones kept.
    ///
    /// Fields with nothing to drop come back as they are, without a copy (the common case on
    /// every cache hit: stored responses lost their hop-by-hop fields before they were stored).
    /// - Parameter alsoDropping: more names (lowercased) to drop, such as the framing fields the
    ///   next hop sets itself; a short list, compared with each field's name rather than hashed.
    static func stripped(_ fields: HTTPFields, alsoDropping extra: [String] = []) -> HTTPFields {
        // `Connection` is itself a fixed name: fields without a fixed or extra name have no
        // `Connection` either, so nothing else can drop. That is one pass, no set and no copy, for
        // nearly every message.
        func isFixedOrExtra(_ name: String) -> Bool {
            isFixed(name) || (!extra.isEmpty && extra.contains { $0.utf8.count == name.utf8.count && $0 == name })
        }
        guard fields.contains(where: { isFixedOrExtra($0.name.canonicalName) }) else { return fields }
        let named = connectionOptions(of: fields)
        var kept = HTTPFields()
        kept.reserveCapacity(fields.count)
        for field in fields {
            let name = field.name.canonicalName
            if isFixedOrExtra(name) || named.contains(name) { continue }
            kept.append(field)
        }
        return kept
    }
}

#endif
