// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A typed value an app stores beside a cached response, and gets back after a restart.
///
/// A closed set of value shapes — like JSON's, plus dates and bytes — so that every value
/// round-trips through the disk tier exactly. (An enum rather than a struct: this is a value
/// algebra that callers switch over, not a policy that may grow.)
public enum UserInfoValue: Hashable, Sendable {
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    /// A date, kept to the millisecond.
    case date(Date)
    case bytes([UInt8])
    indirect case array([UserInfoValue])
    indirect case dictionary([String: UserInfoValue])
}

extension UserInfoValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: UserInfoValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, UserInfoValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
