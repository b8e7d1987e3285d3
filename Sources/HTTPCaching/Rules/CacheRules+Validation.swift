// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension CacheRules {
    // MARK: - Validation (§4.3)

    /// `request` made conditional on what is stored
    /// ([RFC 9111 §4.3.1](https://www.rfc-editor.org/rfc/rfc9111#section-4.3.1)): `If-None-Match`
    /// with the entity tags of every stored response (so a 304 can pick any of the variants), and
    /// `If-Modified-Since` with the newest one's `Last-Modified`. The request's own conditions are
    /// kept; tags it already lists are not repeated. Only `GET` and `HEAD` are made conditional.
    public func conditionalRequest(for request: HTTPRequest, stored: [CachedResponse]) -> HTTPRequest {
        guard request.method == .get || request.method == .head else { return request }
        var conditional = request
        var tags = request.headerFields[values: .ifNoneMatch].flatMap(Self.entityTags)
        for response in stored {
            for tag in response.response.headerFields[values: .eTag].flatMap(Self.entityTags) where !tags.contains(tag)
            {
                tags.append(tag)
            }
        }
        if !tags.isEmpty, !tags.contains("*") {
            conditional.headerFields[.ifNoneMatch] = tags.joined(separator: ", ")
        }
        if conditional.headerFields[.ifModifiedSince] == nil,
            let lastModified = stored.first?.response.headerFields[.lastModified],
            HTTPDate.parse(lastModified) != nil
        {
            conditional.headerFields[.ifModifiedSince] = lastModified
        }
        return conditional
    }

    /// The entity tags of an `ETag` or `If-None-Match` value, as sent (`"x"`, `W/"x"`, `*`);
    /// malformed members are skipped.
    static func entityTags(_ value: String) -> [String] {
        var tags: [String] = []
        var rest = Substring(value)
        while !rest.isEmpty {
            rest = Substring(rest.trimmingOWS())
            if rest.hasPrefix(",") {
                rest.removeFirst()
                continue
            }
            if rest.hasPrefix("*") {
                tags.append("*")
                rest.removeFirst()
                continue
            }
            let weak = rest.hasPrefix("W/")
            if weak { rest.removeFirst(2) }
            guard rest.first == "\"", let close = rest.dropFirst().firstIndex(of: "\"") else {
                // Not a tag: skip to the next comma.
                guard let comma = rest.firstIndex(of: ",") else { break }
                rest = rest[rest.index(after: comma)...]
                continue
            }
            tags.append((weak ? "W/" : "") + rest[rest.startIndex...close])
            rest = rest[rest.index(after: close)...]
        }
        return tags
    }

    /// Whether two entity tags match by weak comparison (RFC 9110 §8.8.3.2).
    public static func weakMatch(_ lhs: String, _ rhs: String) -> Bool {
        func opaque(_ tag: String) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : Substring(tag) }
        return opaque(lhs) == opaque(rhs)
    }

    /// The indices of the stored responses a 304 (Not Modified) applies to
    /// ([RFC 9111 §4.3.4](https://www.rfc-editor.org/rfc/rfc9111#section-4.3.4)): those with its
    /// strong entity tag; else those with its weak tag or, without a tag, its `Last-Modified`
    /// (the newest of them); else, when the 304 has no validator, the one stored response if it
    /// has none either.
    public static func selectForFreshening(_ stored: [CachedResponse], notModified: HTTPResponse) -> [Int] {
        let fields = notModified.headerFields
        if let tag = fields[.eTag].flatMap({ entityTags($0).first }) {
            let matching = stored.indices.filter { index in
                stored[index].response.headerFields[.eTag].flatMap({ entityTags($0).first }).map {
                    tag.hasPrefix("W/") ? weakMatch($0, tag) : $0 == tag
                } ?? false
            }
            return tag.hasPrefix("W/") ? Array(matching.prefix(1)) : matching
        }
        if let lastModified = fields[.lastModified] {
            return Array(
                stored.indices.filter { stored[$0].response.headerFields[.lastModified] == lastModified }.prefix(1)
            )
        }
        if stored.count == 1, stored[0].response.headerFields[.eTag] == nil,
            stored[0].response.headerFields[.lastModified] == nil
        {
            return [0]
        }
        return []
    }

    /// Fields a 304 or a HEAD response never updates in a stored response (RFC 9111 §3.2): the
    /// hop-by-hop fields and `Content-Length`.
    static let fieldsNotUpdated: Set<HTTPField.Name> = [
        .connection, HTTPField.Name("Proxy-Connection")!, HTTPField.Name("Keep-Alive")!, .te, .transferEncoding,
        .upgrade,
        .contentLength,
    ]

    /// `stored` with its header fields updated from a 304 or a HEAD response (RFC 9111 §3.2,
    /// §4.3.4): every field of `response` replaces the stored lines of the same name, except
    /// `fieldsNotUpdated`; the stored `Age` goes (only `response`'s own counts); the times are
    /// those of the exchange that produced `response`.
    public static func freshened(
        _ stored: CachedResponse,
        with response: HTTPResponse,
        requestTime: Date,
        responseTime: Date
    ) -> CachedResponse {
        var updated = stored
        var fields = stored.response.headerFields
        // The stored `Age` was the age when the old response arrived; the exchange that just
        // happened is the new reference (§4.2.3), so only the new response's `Age` may stand.
        fields[values: .age] = []
        var replaced: Set<HTTPField.Name> = []
        for field in response.headerFields where !fieldsNotUpdated.contains(field.name) {
            if replaced.insert(field.name).inserted { fields[values: field.name] = [] }
            fields.append(field)
        }
        updated.response.headerFields = fields
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        updated.validatedAt = responseTime
        updated.isMarkedStale = false
        return updated
    }

    /// What a `HEAD` response means for the stored `GET` response
    /// ([RFC 9111 §4.3.5](https://www.rfc-editor.org/rfc/rfc9111#section-4.3.5)): nil when it
    /// shows the stored representation changed (its `ETag`, `Last-Modified` or `Content-Length`
    /// differ) and the stored response should be removed, else the stored response freshened with
    /// its fields.
    public static func freshenedByHead(
        _ stored: CachedResponse,
        head: HTTPResponse,
        requestTime: Date,
        responseTime: Date
    ) -> CachedResponse? {
        guard head.status.code == 200 else { return stored }
        for name in [HTTPField.Name.eTag, .lastModified, .contentLength] {
            if let new = head.headerFields[name], let old = stored.response.headerFields[name], new != old {
                return nil
            }
        }
        return freshened(stored, with: head, requestTime: requestTime, responseTime: responseTime)
    }
}
