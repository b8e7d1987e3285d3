// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

/// Answering a `Range` request from a stored complete response
/// ([RFC 9110 §14](https://www.rfc-editor.org/rfc/rfc9110#section-14)).
///
/// One byte range is served: `bytes=first-last`, `bytes=first-` and the suffix `bytes=-length`.
/// A `Range` the cache does not serve — several ranges, another unit, bad syntax, a request
/// other than `GET`, a response other than `200` — is ignored and the whole response sent
/// (§14.2 allows it). `If-Range` (§13.1.5) keeps the range only when its entity tag matches the
/// response's strong `ETag`, or its date equals `Last-Modified`; otherwise the whole response.
/// A stored partial response (206) answers only the ranges it holds, as a 206, and never a request
/// for the whole (see "Partial content" in docs/http-caching.md).
public struct RangeRule: Hashable, Sendable {
    private enum Kind: Hashable {
        case whole
        case partial(ClosedRange<Int>)
        case unsatisfiable
    }
    private let kind: Kind

    /// Send the whole response (`200`).
    public static var whole: Self { Self(kind: .whole) }
    /// Send these bytes of the body (`206` with `Content-Range: bytes first-last/length`).
    public static func partial(_ bytes: ClosedRange<Int>) -> Self { Self(kind: .partial(bytes)) }
    /// No byte of the body is in the range (`416` with `Content-Range: bytes */length`).
    public static var unsatisfiable: Self { Self(kind: .unsatisfiable) }

    /// The bytes to send, for ``partial(_:)``.
    public var bytes: ClosedRange<Int>? {
        if case .partial(let bytes) = kind { return bytes }
        return nil
    }

    /// What to answer `request` with, given the stored `response` and the length of its body.
    public static func evaluate(_ request: HTTPRequest, response: HTTPResponse, length: Int) -> Self {
        guard request.method == .get, response.status.code == 200 else { return .whole }
        let lines = request.headerFields[values: .range]
        guard lines.count == 1, let spec = parse(lines[0]) else { return .whole }
        if let ifRange = request.headerFields[.ifRange], !ifRangeMatches(ifRange, response.headerFields) {
            return .whole
        }
        guard let bytes = resolve(spec, length: length) else { return .unsatisfiable }
        return .partial(bytes)
    }

    /// The one byte range `request` asks for of a representation of `length` bytes whose head
    /// has `fields`: nil when it asks for none the cache serves (no `Range`, several ranges, bad
    /// syntax, an `If-Range` that does not name the representation) or for none within `length`.
    static func requestedBytes(_ request: HTTPRequest, fields: HTTPFields, length: Int) -> ClosedRange<Int>? {
        let lines = request.headerFields[values: .range]
        guard lines.count == 1, let spec = parse(lines[0]) else { return nil }
        if let ifRange = request.headerFields[.ifRange], !ifRangeMatches(ifRange, fields) { return nil }
        return resolve(spec, length: length)
    }

    /// The bytes `spec` names of `length`; nil when none.
    private static func resolve(_ spec: Spec, length: Int) -> ClosedRange<Int>? {
        switch spec {
        case .from(let first, let last):
            guard first < length else { return nil }
            return first...min(last ?? (length - 1), length - 1)
        case .suffix(let count):
            guard count > 0, length > 0 else { return nil }
            return max(0, length - count)...(length - 1)
        }
    }

    /// A byte position or length: digits only, at most 15 of them (beyond any body); nil for
    /// anything else. Unlike delta-seconds, a large value is never capped: a position past 2 GiB
    /// names that byte.
    static func position(_ text: Substring) -> Int? {
        let digits = text.trimmingOWS()
        guard !digits.isEmpty, digits.utf8.count <= 15 else { return nil }
        var value = 0
        for byte in digits.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private enum Spec {
        case from(Int, Int?)
        case suffix(Int)
    }

    /// `bytes=a-b`, `bytes=a-` or `bytes=-n`; nil for anything else, several ranges included.
    private static func parse(_ value: String) -> Spec? {
        let trimmed = value.trimmingOWS()
        guard let equals = trimmed.firstIndex(of: "="),
            trimmed[..<equals].trimmingOWS().lowercased() == "bytes"
        else { return nil }
        let set = trimmed[trimmed.index(after: equals)...].trimmingOWS()
        guard !set.contains(","), let dash = set.firstIndex(of: "-") else { return nil }
        let first = set[..<dash].trimmingOWS()
        let last = set[set.index(after: dash)...].trimmingOWS()
        if first.isEmpty {
            guard let count = position(Substring(last)) else { return nil }
            return .suffix(count)
        }
        guard let start = position(Substring(first)) else { return nil }
        if last.isEmpty { return .from(start, nil) }
        guard let end = position(Substring(last)), end >= start else { return nil }
        return .from(start, end)
    }

    /// §13.1.5: a strong entity tag that equals the response's (strong) `ETag`, or an HTTP date
    /// that equals its `Last-Modified`.
    static func ifRangeMatches(_ value: String, _ fields: HTTPFields) -> Bool {
        let condition = value.trimmingOWS()
        if condition.hasPrefix("\"") || condition.hasPrefix("W/") {
            guard !condition.hasPrefix("W/"), let etag = fields[.eTag]?.trimmingOWS(), !etag.hasPrefix("W/") else {
                return false
            }
            return etag == condition
        }
        guard let date = HTTPDate.parse(condition), let modified = fields[.lastModified].flatMap({ HTTPDate.parse($0) })
        else { return false }
        return date == modified
    }
}
