// SPDX-License-Identifier: Apache-2.0

/// A query whose result is a list of entities ("tasks due today, by time"): a name and its
/// parameters (filters, sort, page size), with one stable key.
///
/// The key lists the parameters sorted by name, each name and value escaped, so two queries that
/// differ only by the order their parameters were given in share one index:
///
/// ```swift
/// let a = EntityQuery("tasks", parameters: ["due": "today", "sort": "time"])
/// let b = EntityQuery("tasks", parameters: ["sort": "time", "due": "today"])
/// // a == b, a.key == b.key == "tasks?due=today&sort=time"
/// ```
public struct EntityQuery: Hashable, Sendable, CustomStringConvertible {
    /// The query's name.
    public var name: String
    /// The query's parameters, by name.
    public var parameters: [String: String]

    /// Creates a query.
    /// - Parameters:
    ///   - name: the query's name (any characters; escaped in the key).
    ///   - parameters: its filters, sort and other parameters, by name.
    public init(_ name: String, parameters: [String: String] = [:]) {
        self.name = name
        self.parameters = parameters
    }

    /// The query's stable key: the escaped name, then `?` and the parameters sorted by name as
    /// `name=value` pairs joined by `&` (no `?` without parameters).
    public var key: String {
        let name = Self.escape(self.name)
        guard !parameters.isEmpty else { return name }
        let pairs = parameters.sorted { $0.key < $1.key }.map { "\(Self.escape($0.key))=\(Self.escape($0.value))" }
        return name + "?" + pairs.joined(separator: "&")
    }

    public var description: String { key }

    /// Escapes the characters that separate the key's parts (and `%`, and bytes outside printable
    /// ASCII) as `%XX`, so that distinct queries never share a key.
    static func escape(_ string: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(string.utf8.count)
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "&"), UInt8(ascii: "="), UInt8(ascii: "/"),
                0..<0x21, 0x7F...:
                let hex = Array("0123456789ABCDEF".utf8)
                escaped.unicodeScalars.append("%")
                escaped.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                escaped.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0xF)]))
            default:
                escaped.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return escaped
    }
}
