// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The rules of [RFC 9111](https://www.rfc-editor.org/rfc/rfc9111) as pure functions over
/// values: storability (§3), freshness and age (§4.2), serving stale (§4.2.4, RFC 5861),
/// validation (§4.3) and invalidation (§4.4). Nothing here reads a clock or does I/O; the time is
/// passed in.
public struct CacheRules: Hashable, Sendable {
    /// Shared or private (RFC 9111 §1).
    public var mode: ResponseCache.Mode
    /// The fraction of the time since `Last-Modified` that a response without explicit freshness
    /// stays fresh (§4.2.2). Defaults to 0.1.
    public var heuristicFraction: Double
    /// The longest heuristic freshness lifetime, in seconds. Defaults to one day.
    public var maximumHeuristicLifetime: TimeInterval
    /// The targeted cache-control fields a shared cache obeys in place of `Cache-Control`, most
    /// specific first ([RFC 9213](https://www.rfc-editor.org/rfc/rfc9213)): the first one a
    /// response carries wins. Defaults to `CDN-Cache-Control`; a private cache ignores them.
    public var targetedCacheControl: [HTTPField.Name]

    /// Creates the rules for a cache of `mode`.
    public init(
        mode: ResponseCache.Mode = .private,
        heuristicFraction: Double = 0.1,
        maximumHeuristicLifetime: TimeInterval = 86_400,
        targetedCacheControl: [HTTPField.Name] = [.cdnCacheControl]
    ) {
        self.mode = mode
        self.heuristicFraction = heuristicFraction
        self.maximumHeuristicLifetime = maximumHeuristicLifetime
        self.targetedCacheControl = targetedCacheControl
    }

    /// Whether these are the rules `CacheRules(mode: mode)` makes: the rules that the facts parsed
    /// once per stored response (``FreshnessFacts``) hold for. Compared with a rule set made once
    /// per mode, so that asking allocates nothing.
    var usesModeDefaults: Bool {
        self == (mode.isShared ? Self.sharedDefaults : Self.privateDefaults)
    }

    static let privateDefaults = CacheRules(mode: .private)
    static let sharedDefaults = CacheRules(mode: .shared)

    /// The status codes that are heuristically cacheable (RFC 9110 §15.1). A 206 is stored as
    /// partial content (see ``reasonNotToStore(_:for:)``).
    public static let heuristicallyCacheableStatuses: Set<Int> = [
        200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501,
    ]

    // MARK: - Storability (§3)

    /// Whether a cache of this mode may store `response` to `request`
    /// ([RFC 9111 §3](https://www.rfc-editor.org/rfc/rfc9111#section-3)).
    ///
    /// A `206` may be stored as partial content (§3.3) when it answers a `GET` with one
    /// `Content-Range` of known complete length, a strong `ETag` and no `Vary`: it then answers
    /// only the ranges it holds, never a request for the whole, and combines with later ranges
    /// of the same entity tag into the whole response (§3.4).
    /// - Returns: nil when it may, else why not (for logs and tests).
    public func reasonNotToStore(_ response: HTTPResponse, for request: HTTPRequest) -> String? {
        storability(of: response, for: request).reason
    }

    /// What §3 decides for `response`, with the response's directives and `Vary` names parsed to
    /// decide it, so that storing it does not parse them again.
    ///
    /// A shared cache decides on a targeted field's directives where the response has one
    /// (``responseDirectives(_:)``); a response with `must-understand` is stored only with an
    /// understood status (``understoodStatuses``), and then despite `no-store` (§5.2.2.3).
    func storability(of response: HTTPResponse, for request: HTTPRequest) -> Storability {
        let cacheControl = CacheControl(response.headerFields)
        let directives = targetedDirectives(response.headerFields) ?? cacheControl
        let varyNames = VaryRule.fieldNames(in: response.headerFields)
        func verdict(_ reason: String?) -> Storability {
            Storability(reason: reason, parsed: .init(directives: cacheControl, varyNames: varyNames))
        }
        guard request.method == .get || request.method == .head else { return verdict("method \(request.method)") }
        let status = response.status.code
        guard status >= 200 else { return verdict("interim status \(status)") }
        guard status != 304 else { return verdict("status \(status)") }
        if status == 206, let reason = Self.partialReason(response, request: request, varyNames: varyNames) {
            return verdict(reason)
        }
        let requestDirectives = CacheControl(request.headerFields, isRequest: true)
        if requestDirectives.noStore { return verdict("request no-store") }
        if directives.mustUnderstand, !Self.understoodStatuses.contains(status) {
            return verdict("must-understand with status \(status)")
        }
        if directives.noStore, !directives.mustUnderstand { return verdict("response no-store") }
        if mode.isShared, directives.isPrivate { return verdict("private in a shared cache") }
        if mode.isShared, request.headerFields[.authorization] != nil,
            !(directives.mustRevalidate || directives.isPublic || directives.sharedMaxAge != nil)
        {
            // §3.5
            return verdict("Authorization in a shared cache")
        }
        if varyNames == nil { return verdict("Vary: *") }
        let explicitlyCacheable =
            directives.isPublic || (directives.isPrivate && !mode.isShared)
            || !response.headerFields[values: .expires].isEmpty || directives.maxAge != nil
            || (mode.isShared && directives.sharedMaxAge != nil)
        guard explicitlyCacheable || Self.heuristicallyCacheableStatuses.contains(status) else {
            return verdict("status \(status) without explicit freshness")
        }
        if Self.isNeverUsable(response, directives: directives, mode: mode) {
            return verdict("never fresh (invalid freshness) and nothing to revalidate or serve stale with")
        }
        return verdict(nil)
    }

    /// Why the `206` `response` to `request` cannot be kept as partial content (RFC 9111 §3.3),
    /// before the rules every response meets: it must answer a `GET`, carry one `Content-Range`
    /// with a known complete length, a strong `ETag` (what later ranges are combined by, §3.4)
    /// and no `Vary`. Nil when it can.
    private static func partialReason(_ response: HTTPResponse, request: HTTPRequest, varyNames: [String]?) -> String? {
        guard request.method == .get else { return "partial content to \(request.method)" }
        let ranges = response.headerFields[values: .contentRange]
        guard ranges.count == 1, PartialContent.parseContentRange(ranges[0]) != nil else {
            return "partial content without one Content-Range of known length"
        }
        guard PartialContent.strongValidator(of: response) != nil else {
            return "partial content without a strong entity tag"
        }
        guard varyNames?.isEmpty == true else { return "partial content with Vary" }
        return nil
    }

    /// Whether a cache of this mode may store `response` to `request` (§3).
    public func isStorable(_ response: HTTPResponse, for request: HTTPRequest) -> Bool {
        reasonNotToStore(response, for: request) == nil
    }

    // MARK: - Freshness (§4.2)

    /// The freshness lifetime of `response`, in seconds
    /// ([RFC 9111 §4.2.1](https://www.rfc-editor.org/rfc/rfc9111#section-4.2.1)): `s-maxage` in
    /// a shared cache, else `max-age`, else `Expires` minus `Date`, else a heuristic from
    /// `Last-Modified` where allowed (§4.2.2), else 0.
    /// - Parameters:
    ///   - response: the response.
    ///   - responseTime: when the response was received; stands in for a missing or invalid `Date`.
    public func freshnessLifetime(of response: HTTPResponse, responseTime: Date) -> TimeInterval {
        freshnessLifetime(
            of: response,
            directives: responseDirectives(response.headerFields),
            responseTime: responseTime
        )
    }

    /// ``freshnessLifetime(of:responseTime:)`` with the response's directives already parsed.
    func freshnessLifetime(of response: HTTPResponse, directives: CacheControl, responseTime: Date) -> TimeInterval {
        if mode.isShared, let sharedMaxAge = directives.sharedMaxAge { return TimeInterval(sharedMaxAge) }
        if let maxAge = directives.maxAge { return TimeInterval(maxAge) }
        let date = Self.dateValue(response.headerFields, responseTime: responseTime)
        let expiresLines = response.headerFields[values: .expires]
        if let first = expiresLines.first {
            // An invalid date (such as "0") is in the past; conflicting lines mean stale (§4.2.1).
            guard expiresLines.allSatisfy({ $0 == first }), let expires = HTTPDate.parse(first, now: responseTime)
            else { return 0 }
            return max(0, expires.timeIntervalSince(date))
        }
        // §4.2.2: heuristics only for heuristically cacheable statuses or explicit `public`.
        guard Self.heuristicallyCacheableStatuses.contains(response.status.code) || directives.isPublic,
            let lastModifiedText = response.headerFields[.lastModified],
            let lastModified = HTTPDate.parse(lastModifiedText, now: responseTime)
        else { return 0 }
        let sinceModified = max(0, date.timeIntervalSince(lastModified))
        return min(maximumHeuristicLifetime, sinceModified * heuristicFraction)
    }

    /// Whether `response` states its own freshness, for longer than nothing: `s-maxage` (in a
    /// shared cache), else `max-age`, else an `Expires` after its `Date` (§4.2.1; without a
    /// `Date`, an `Expires` that is a valid date). A heuristic lifetime is not explicit.
    package func isExplicitlyFresh(_ response: HTTPResponse) -> Bool {
        let directives = responseDirectives(response.headerFields)
        if mode.isShared, let sharedMaxAge = directives.sharedMaxAge { return sharedMaxAge > 0 }
        if let maxAge = directives.maxAge { return maxAge > 0 }
        let expiresLines = response.headerFields[values: .expires]
        guard let first = expiresLines.first, expiresLines.allSatisfy({ $0 == first }),
            let expires = HTTPDate.parse(first)
        else { return false }
        guard let date = response.headerFields[.date].flatMap({ HTTPDate.parse($0) }) else { return true }
        return expires > date
    }

    /// The `Date` of a response, or `responseTime` when it has none or an invalid one.
    static func dateValue(_ fields: HTTPFields, responseTime: Date) -> Date {
        fields[.date].flatMap { HTTPDate.parse($0, now: responseTime) } ?? responseTime
    }

    /// The current age of a stored response, in seconds
    /// ([RFC 9111 §4.2.3](https://www.rfc-editor.org/rfc/rfc9111#section-4.2.3)):
    ///
    /// ```
    /// apparent_age = max(0, response_time - date_value)
    /// response_delay = response_time - request_time
    /// corrected_age_value = age_value + response_delay
    /// corrected_initial_age = max(apparent_age, corrected_age_value)
    /// resident_time = now - response_time
    /// current_age = corrected_initial_age + resident_time
    /// ```
    /// An `Age` that is not a non-negative integer is ignored (§5.1); of a list, the first member
    /// counts.
    public static func currentAge(of stored: CachedResponse, now: Date) -> TimeInterval {
        correctedInitialAge(of: stored) + max(0, now.timeIntervalSince(stored.responseTime))
    }

    /// The part of ``currentAge(of:now:)`` fixed when the response is received:
    /// `corrected_initial_age`.
    static func correctedInitialAge(of stored: CachedResponse) -> TimeInterval {
        let fields = stored.response.headerFields
        let dateValue = dateValue(fields, responseTime: stored.responseTime)
        let apparentAge = max(0, stored.responseTime.timeIntervalSince(dateValue))
        let responseDelay = max(0, stored.responseTime.timeIntervalSince(stored.requestTime))
        let ageValue =
            fields[.age].flatMap { value in
                CacheControl.seconds(value.split(separator: ",").first.map { $0.trimmingOWS() })
            } ?? 0
        let correctedAgeValue = TimeInterval(ageValue) + responseDelay
        return max(apparentAge, correctedAgeValue)
    }

    /// The `Age` field value to send with a stored response served at `now` (§5.1): whole
    /// seconds, capped at 2^31.
    public static func ageHeaderValue(of stored: CachedResponse, now: Date) -> String {
        ageHeaderValue(age: currentAge(of: stored, now: now))
    }

    /// The `Age` field value for a current age of `age` seconds.
    static func ageHeaderValue(age: TimeInterval) -> String {
        String(Int(min(Double(CacheControl.maximumDeltaSeconds), age.rounded(.down))))
    }
}

extension CacheRules {
    /// Whether a stored copy of `response` could never be used: the freshness that applies in
    /// this mode (`s-maxage` in a shared cache when given, else `max-age`) is invalid freshness
    /// information that reads as 0 — an argument that is not delta-seconds, or conflicting ones
    /// with 0 among them (§4.2.1: such a response is stale) — and it has no validator to
    /// revalidate with (`ETag`, `Last-Modified`), no `Expires`, and no `stale-while-revalidate`
    /// or `stale-if-error` to be served stale under. Storing it would only spend space (and, on
    /// disk, writes). A valid `max-age=0` is stored: a client's TTLs may serve it.
    static func isNeverUsable(_ response: HTTPResponse, directives: CacheControl, mode: ResponseCache.Mode) -> Bool {
        let neverFresh =
            if mode.isShared, let sharedMaxAge = directives.sharedMaxAge {
                directives.hasInvalidSharedMaxAge && sharedMaxAge == 0
            } else {
                directives.hasInvalidMaxAge && directives.maxAge == 0
            }
        guard neverFresh else { return false }
        let fields = response.headerFields
        return !fields.contains(.eTag) && !fields.contains(.lastModified) && !fields.contains(.expires)
            && directives.staleWhileRevalidate == nil && directives.staleIfError == nil
    }
}

/// The verdict of ``CacheRules/storability(of:for:)``.
struct Storability {
    /// Why the response may not be stored; nil when it may.
    var reason: String?
    /// What was parsed of the response to decide.
    var parsed: ParsedResponseFields
}

/// A response's `Cache-Control` directives and `Vary` names, parsed once.
struct ParsedResponseFields: Sendable {
    var directives: CacheControl
    /// Empty without `Vary`, nil for `Vary: *`.
    var varyNames: [String]?
}
