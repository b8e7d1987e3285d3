// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

/// The directives of `Cache-Control` header fields, of a request or of a response
/// ([RFC 9111 §5.2](https://www.rfc-editor.org/rfc/rfc9111#section-5.2)).
///
/// Parsing never fails and never trusts malformed input more than well-formed input:
/// - names are case-insensitive; every `Cache-Control` field line is read, in order;
/// - arguments may be tokens or quoted strings, and commas inside quotes do not split;
/// - unknown directives are ignored;
/// - a directive given more than once with different arguments keeps the most restrictive one
///   (the smallest `max-age`, `s-maxage`, `min-fresh`, `stale-while-revalidate`, `stale-if-error`;
///   RFC 9111 §4.2.1 allows the first or "stale", and the smallest is never fresher than the first);
/// - an invalid `max-age` or `s-maxage` (negative, not digits, missing) reads as 0, so the
///   response is stale (§4.2.1: "invalid freshness information"); an invalid `max-stale`,
///   `min-fresh`, `stale-while-revalidate` or `stale-if-error` is ignored;
/// - a number too large for the cache reads as 2^31 seconds (§1.2.2).
///
/// Without `Cache-Control`, a request's `Pragma: no-cache` reads as `no-cache` (§5.4).
public struct CacheControl: Hashable, Sendable {
    /// `max-age`: in a response, its freshness lifetime; in a request, the oldest response the
    /// client accepts. Seconds.
    public var maxAge: Int?
    /// Whether `max-age` was invalid freshness information (§4.2.1): an argument that is not
    /// delta-seconds (garbage, negative, empty; read as 0), or two that differ (the smaller wins).
    var hasInvalidMaxAge = false
    /// `s-maxage`: a shared cache's freshness lifetime, which overrides `max-age` there. Seconds.
    public var sharedMaxAge: Int?
    /// Whether `s-maxage` was invalid freshness information, as ``hasInvalidMaxAge`` is for
    /// `max-age`.
    var hasInvalidSharedMaxAge = false
    /// `max-stale` in a request: how stale a response the client accepts; ``MaxStale/unlimited``
    /// without an argument.
    public var maxStale: MaxStale?
    /// `min-fresh` in a request: the response must stay fresh at least this long. Seconds.
    public var minFresh: Int?
    /// `no-cache`: in a request, revalidate; in a response, never serve without revalidating.
    public var noCache = false
    /// The field names a response's `no-cache="…"` lists; those fields may not be served without
    /// revalidation. Empty with an unqualified `no-cache`.
    public var noCacheFieldNames: [String] = []
    /// `no-store`: store neither the request nor the response.
    public var noStore = false
    /// `no-transform`.
    public var noTransform = false
    /// `only-if-cached` in a request: answer from the cache or with 504.
    public var onlyIfCached = false
    /// `must-revalidate`: never serve stale.
    public var mustRevalidate = false
    /// `proxy-revalidate`: a shared cache never serves stale.
    public var proxyRevalidate = false
    /// `must-understand` ([RFC 9111 §5.2.2.3](https://www.rfc-editor.org/rfc/rfc9111#section-5.2.2.3)):
    /// store only if the status is understood, and then despite `no-store`.
    public var mustUnderstand = false
    /// `public`: storable even where it would not be (for example with `Authorization`).
    public var isPublic = false
    /// `private`: a shared cache must not store it.
    public var isPrivate = false
    /// The field names of `private="…"`; empty with an unqualified `private`.
    public var privateFieldNames: [String] = []
    /// `immutable` ([RFC 8246](https://www.rfc-editor.org/rfc/rfc8246)): while fresh, a
    /// reload (`no-cache`, `max-age=0` in the request) is answered from the cache.
    public var immutable = false
    /// `stale-while-revalidate` (RFC 5861 §3): serve stale this long while revalidating. Seconds.
    public var staleWhileRevalidate: Int?
    /// `stale-if-error` (RFC 5861 §4): serve stale this long when revalidation fails. Seconds.
    public var staleIfError: Int?

    /// How stale a response a request accepts.
    public struct MaxStale: Hashable, Sendable {
        /// The staleness accepted, in seconds; nil for any.
        public let seconds: Int?
        /// `max-stale` without an argument: any staleness.
        public static let unlimited = MaxStale(seconds: nil)
        /// `max-stale=seconds`.
        public static func seconds(_ seconds: Int) -> MaxStale { MaxStale(seconds: seconds) }
    }

    /// The greatest delta-seconds the cache represents (RFC 9111 §1.2.2).
    public static let maximumDeltaSeconds = 1 << 31

    /// No directives.
    public init() {}

    /// The directives of every `Cache-Control` line of `fields`; for a request without
    /// `Cache-Control`, `Pragma: no-cache` as `no-cache` (RFC 9111 §5.4).
    /// - Parameters:
    ///   - fields: the header fields.
    ///   - isRequest: whether they are a request's (only then does `Pragma` count).
    public init(_ fields: HTTPFields, isRequest: Bool = false) {
        self.init()
        let lines = fields[values: .cacheControl]
        for line in lines { parse(line) }
        if isRequest, lines.isEmpty {
            for line in fields[values: .pragma] where Self.containsNoCache(line) {
                noCache = true
            }
        }
    }

    /// The directives of one `Cache-Control` field value.
    public init(parsing value: String) {
        self.init()
        parse(value)
    }

    /// Adds the directives of one more field line, as the initializers read every line.
    mutating func merge(parsing value: String) {
        parse(value)
    }

    private static func containsNoCache(_ pragma: String) -> Bool {
        var found = false
        DirectiveScanner.scan(pragma) { name, _ in
            if name == "no-cache" { found = true }
        }
        return found
    }

    private mutating func parse(_ value: String) {
        DirectiveScanner.scan(value) { name, argument in
            apply(name, argument)
        }
    }

    private mutating func apply(_ name: String, _ argument: String?) {
        switch name {
        case "max-age":
            let seconds = Self.seconds(argument)
            if seconds == nil || (maxAge != nil && maxAge != seconds) { hasInvalidMaxAge = true }
            maxAge = Self.smaller(maxAge, seconds ?? 0)
        case "s-maxage":
            let seconds = Self.seconds(argument)
            if seconds == nil || (sharedMaxAge != nil && sharedMaxAge != seconds) { hasInvalidSharedMaxAge = true }
            sharedMaxAge = Self.smaller(sharedMaxAge, seconds ?? 0)
        case "max-stale":
            if argument == nil {
                // An unlimited max-stale never overrides a limit given elsewhere.
                if maxStale == nil { maxStale = .unlimited }
            } else if let seconds = Self.seconds(argument) {
                let current = maxStale?.seconds ?? Int.max
                maxStale = .seconds(min(current, seconds))
            }
        case "min-fresh":
            // The larger min-fresh is the more demanding one.
            if let seconds = Self.seconds(argument) { minFresh = max(minFresh ?? 0, seconds) }
        case "no-cache":
            noCache = true
            noCacheFieldNames += Self.fieldNames(argument)
        case "no-store": noStore = true
        case "no-transform": noTransform = true
        case "only-if-cached": onlyIfCached = true
        case "must-revalidate": mustRevalidate = true
        case "proxy-revalidate": proxyRevalidate = true
        case "must-understand": mustUnderstand = true
        case "public": isPublic = true
        case "private":
            isPrivate = true
            privateFieldNames += Self.fieldNames(argument)
        case "immutable": immutable = true
        case "stale-while-revalidate":
            if let seconds = Self.seconds(argument) {
                staleWhileRevalidate = Self.smaller(staleWhileRevalidate, seconds)
            }
        case "stale-if-error":
            if let seconds = Self.seconds(argument) { staleIfError = Self.smaller(staleIfError, seconds) }
        default: break
        }
    }

    private static func smaller(_ current: Int?, _ new: Int) -> Int {
        current.map { min($0, new) } ?? new
    }

    /// delta-seconds (RFC 9111 §1.2.2): digits only; too large reads as 2^31; anything else nil.
    static func seconds(_ argument: String?) -> Int? {
        guard let argument, !argument.isEmpty else { return nil }
        var value = 0
        for byte in argument.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = min(maximumDeltaSeconds, value * 10 + Int(byte - UInt8(ascii: "0")))
        }
        return value
    }

    private static func fieldNames(_ argument: String?) -> [String] {
        guard let argument else { return [] }
        return argument.split(separator: ",").compactMap { part in
            let name = part.trimmingOWS().lowercased()
            return name.isEmpty ? nil : name
        }
    }
}

/// Splits a comma-separated list of `name[=token|quoted-string]` items (RFC 9110 §5.6.1, §5.6.4),
/// calling `body` with each lowercased name and its unquoted argument. Malformed items are
/// skipped; nothing here can fail.
enum DirectiveScanner {
    static func scan(_ value: String, _ body: (String, String?) -> Void) {
        var bytes = Array(value.utf8)[...]
        while !bytes.isEmpty {
            // Name: up to "=", "," or the end.
            var name: [UInt8] = []
            while let byte = bytes.first, byte != UInt8(ascii: "="), byte != UInt8(ascii: ",") {
                name.append(byte)
                bytes.removeFirst()
            }
            var argument: String?
            if bytes.first == UInt8(ascii: "=") {
                bytes.removeFirst()
                skipOWS(&bytes)
                if bytes.first == UInt8(ascii: "\"") {
                    bytes.removeFirst()
                    var text: [UInt8] = []
                    while let byte = bytes.first, byte != UInt8(ascii: "\"") {
                        bytes.removeFirst()
                        if byte == UInt8(ascii: "\\"), let escaped = bytes.first {
                            text.append(escaped)
                            bytes.removeFirst()
                        } else {
                            text.append(byte)
                        }
                    }
                    if !bytes.isEmpty { bytes.removeFirst() }  // the closing quote
                    argument = String(decoding: text, as: UTF8.self)
                    // Anything between the closing quote and the next comma is junk.
                    while let byte = bytes.first, byte != UInt8(ascii: ",") { bytes.removeFirst() }
                } else {
                    var text: [UInt8] = []
                    while let byte = bytes.first, byte != UInt8(ascii: ",") {
                        text.append(byte)
                        bytes.removeFirst()
                    }
                    argument = String(decoding: text, as: UTF8.self).trimmingOWS()
                }
            }
            if bytes.first == UInt8(ascii: ",") { bytes.removeFirst() }
            let trimmedName = String(decoding: name, as: UTF8.self).trimmingOWS().lowercased()
            if !trimmedName.isEmpty { body(trimmedName, argument) }
        }
    }

    private static func skipOWS(_ bytes: inout ArraySlice<UInt8>) {
        while let byte = bytes.first, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { bytes.removeFirst() }
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs (RFC 9110 OWS), scalar by
    /// scalar (by `Character`, a space before a combining mark would stay, one grapheme with it):
    /// the one trimming every layer's field parsing uses.
    package func trimmingOWS() -> String {
        var scalars = Substring(self).unicodeScalars
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(Substring(scalars))
    }
}

extension HTTPField.Name {
    /// `Pragma` (RFC 9111 §5.4), which swift-http-types does not name.
    static let pragma = HTTPField.Name("Pragma")!
}
