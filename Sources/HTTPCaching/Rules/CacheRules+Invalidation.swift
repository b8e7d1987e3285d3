// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

extension CacheRules {
    // MARK: - Invalidation (§4.4)

    /// The methods that do not invalidate: the safe ones (RFC 9110 §9.2.1).
    static let safeMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace]

    /// The targets whose stored responses `response` to `request` invalidates
    /// ([RFC 9111 §4.4](https://www.rfc-editor.org/rfc/rfc9111#section-4.4)): for an unsafe (or
    /// unknown) method answered with a non-error status (2xx or 3xx), the target URI, and the URIs
    /// of `Location` and `Content-Location` when they have the same origin. Each is returned as a
    /// `GET` request for it, ready for ``ResponseCache/removeCachedResponse(for:)``.
    public static func invalidatedTargets(of request: HTTPRequest, response: HTTPResponse) -> [HTTPRequest] {
        guard !safeMethods.contains(request.method), (200..<400).contains(response.status.code),
            let scheme = request.scheme, let authority = request.authority
        else { return [] }
        let path = request.path ?? "/"
        var targets = [HTTPRequest(method: .get, scheme: scheme, authority: authority, path: path)]
        for name in [HTTPField.Name.location, .contentLocation] {
            guard let value = response.headerFields[name],
                let target = resolve(value, scheme: scheme, authority: authority, basePath: path)
            else { continue }
            if !targets.contains(where: { $0.path == target.path }) { targets.append(target) }
        }
        return targets
    }

    /// `reference` resolved against the request's URI (RFC 3986 §5.2, without dot-segment
    /// removal), as a `GET` request; nil when it is malformed or of another origin.
    static func resolve(_ reference: String, scheme: String, authority: String, basePath: String) -> HTTPRequest? {
        let reference = reference.trimmingOWS()
        guard !reference.isEmpty, !reference.contains(where: { $0 == " " || $0 == "\t" }) else { return nil }
        if let schemeEnd = Self.schemeSeparator(in: reference) {
            let otherScheme = String(reference[..<schemeEnd])
            let rest = reference[reference.index(schemeEnd, offsetBy: 3)...]
            let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
            let otherAuthority = String(rest[..<slash])
            let theirs = URLKey.make(method: "", scheme: otherScheme, authority: otherAuthority, path: "/")
            let ours = URLKey.make(method: "", scheme: scheme, authority: authority, path: "/")
            guard theirs == ours else { return nil }
            let path = String(rest[slash...])
            return HTTPRequest(method: .get, scheme: scheme, authority: authority, path: path.isEmpty ? "/" : path)
        }
        if reference.hasPrefix("//") { return nil }  // network-path reference: another authority
        if reference.hasPrefix("/") {
            return HTTPRequest(method: .get, scheme: scheme, authority: authority, path: reference)
        }
        if reference.contains(":") && !reference.hasPrefix(".") {
            // A scheme other than ours ("mailto:…"), or a colon in a first segment: not resolvable here.
            if let colon = reference.firstIndex(of: ":"), !reference[..<colon].contains("/") { return nil }
        }
        let baseWithoutQuery =
            basePath.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let directory = baseWithoutQuery.lastIndex(of: "/").map { baseWithoutQuery[...$0] } ?? "/"
        return HTTPRequest(method: .get, scheme: scheme, authority: authority, path: directory + reference)
    }

    /// The index of "://" after a scheme (letters, digits, "+", "-", "."), if `reference` starts
    /// with one.
    private static func schemeSeparator(in reference: String) -> String.Index? {
        var index = reference.startIndex
        while index < reference.endIndex,
            reference[index].isLetter || reference[index].isNumber
                || reference[index] == "+" || reference[index] == "-" || reference[index] == "."
        {
            index = reference.index(after: index)
        }
        guard index > reference.startIndex, reference[index...].hasPrefix("://") else { return nil }
        return index
    }
}
