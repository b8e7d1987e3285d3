// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPCaching
import HTTPTypes

/// The preconditions a cache evaluates when it answers a conditional `GET` / `HEAD` from
/// storage ([RFC 9110 §13.1](https://www.rfc-editor.org/rfc/rfc9110#section-13.1)).
enum Conditional {
    /// Whether `request`'s `If-None-Match` (weak comparison), or without it its
    /// `If-Modified-Since`, says the client's copy of the 200 `response` is current.
    static func isNotModified(_ request: HTTPRequest, _ response: HTTPResponse) -> Bool {
        guard request.method == .get || request.method == .head, response.status.code == 200 else { return false }
        let noneMatch = request.headerFields[values: .ifNoneMatch]
        if !noneMatch.isEmpty {
            if noneMatch.contains(where: { $0.trimmingOWS() == "*" }) { return true }
            guard let etag = response.headerFields[.eTag], let current = quotedStrings(etag).first else {
                return false
            }
            return noneMatch.flatMap(quotedStrings).contains(current)
        }
        guard let since = request.headerFields[.ifModifiedSince].flatMap({ HTTPDate.parse($0) }),
            let modified = response.headerFields[.lastModified].flatMap({ HTTPDate.parse($0) })
        else { return false }
        return modified <= since
    }

    /// The opaque tags of an entity-tag list: each `"…"` in order (the `W/` of weak tags does not
    /// matter to the weak comparison).
    static func quotedStrings(_ value: String) -> [Substring] {
        var tags: [Substring] = []
        var rest = Substring(value)
        while let open = rest.firstIndex(of: "\"") {
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "\"") else { break }
            tags.append(rest[afterOpen..<close])
            rest = rest[rest.index(after: close)...]
        }
        return tags
    }
}
#endif
