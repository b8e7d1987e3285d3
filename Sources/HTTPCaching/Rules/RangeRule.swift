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
/// A partial response (206) is never stored (``CacheRules/reasonNotToStore(_:for:)``), so it is
/// never served as whole either.
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
        switch spec {
        case .from(let first, let last):
            guard first < length else { return .unsatisfiable }
            return .partial(first...min(last ?? (length - 1), length - 1))
        case .suffix(let count):
            guard count > 0, length > 0 else { return .unsatisfiable }
            return .partial(max(0, length - count)...(length - 1))
        }
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
            guard let count = CacheControl.seconds(last) else { return nil }
            return .suffix(count)
        }
        guard let start = CacheControl.seconds(first) else { return nil }
        if last.isEmpty { return .from(start, nil) }
        guard let end = CacheControl.seconds(last), end >= start else { return nil }
        return .from(start, end)
    }

    /// §13.1.5: a strong entity tag that equals the response's (strong) `ETag`, or an HTTP date
    /// that equals its `Last-Modified`.
    private static func ifRangeMatches(_ value: String, _ fields: HTTPFields) -> Bool {
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
