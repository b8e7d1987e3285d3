// SPDX-License-Identifier: Apache-2.0

import HTTPCaching

/// How long an app treats cached answers of one kind as fresh, over HTTP freshness: a soft TTL
/// (serve, then refresh) and a hard TTL (refetch before answering).
///
/// Both count from when the origin last confirmed the entry (its ``FetchResult/validatedAt``: a
/// 200 or a 304). Within the soft TTL an entry is fresh; between the soft and the hard TTL it is
/// stale but answers (``CachePolicy/cacheFirst`` and ``CachePolicy/useProtocolCachePolicy``
/// refresh it behind the answer; ``CachePolicy/staleWhileRevalidate`` answers, then loads); past
/// the hard TTL it is not answered without asking the origin first. If the origin cannot be
/// asked, the answer says so — ``Freshness/stale(_:)`` with the reason and the error — rather than
/// quietly serving older data as fresh. A missing TTL falls back to HTTP: no soft TTL means HTTP
/// freshness decides what is fresh; no hard TTL means no limit.
///
/// A validation window is a gate for answers an app acts on (a balance, a permission): past it,
/// the stored answer is not served as good until the origin confirms it; when the origin cannot,
/// the result says so (``StaleReason/notValidated``, ``CachingClientError/Code/notValidated``, and
/// ``FetchResult/requireBody()`` throws) instead of quietly serving older data.
///
/// Three classes are built in (``critical``, ``interactive``, ``reference``); an app changes
/// them by copy, or defines its own:
///
/// ```swift
/// var interactive = FreshnessClass.interactive
/// interactive.softTTL = .seconds(10)
/// let result = await client.fetch(request, policy: .cacheFirst, freshness: interactive)
/// ```
///
/// Setting TTLs is the app taking responsibility for freshness: they apply whatever the
/// response's `Cache-Control` says (except that what HTTP forbids storing is never stored).
public struct FreshnessClass: Hashable, Sendable, CustomStringConvertible {
    /// The class's name, for logs.
    public var name: String
    /// Within this age an entry is fresh; nil: HTTP freshness decides.
    public var softTTL: Duration?
    /// Past this age an entry is refetched before answering; nil: no limit.
    public var hardTTL: Duration?
    /// Past this age an entry is not an answer to act on until the origin confirms it (see the
    /// type's documentation); nil: no gate.
    public var validationWindow: Duration?

    /// Creates a class.
    /// - Parameters:
    ///   - name: a name for logs.
    ///   - softTTL: within this age an entry is fresh; nil: HTTP freshness decides.
    ///   - hardTTL: past this age an entry is refetched first; nil: no limit. Must not be below
    ///     `softTTL`.
    ///   - validationWindow: past this age an entry is not to be acted on until the origin
    ///     confirms it; nil: no gate.
    /// - Throws: ``CachingClientError/Code/invalidArgument`` for a negative duration or a soft TTL
    ///   above the hard TTL (never a trap: the values often come from an app's configuration).
    public init(
        _ name: String,
        softTTL: Duration? = nil,
        hardTTL: Duration? = nil,
        validationWindow: Duration? = nil
    ) throws(CachingClientError) {
        for (label, value) in [("softTTL", softTTL), ("hardTTL", hardTTL), ("validationWindow", validationWindow)] {
            if let value, value < .zero {
                throw CachingClientError(code: .invalidArgument, message: "\(name): \(label) is negative")
            }
        }
        if let softTTL, let hardTTL, softTTL > hardTTL {
            throw CachingClientError(code: .invalidArgument, message: "\(name): the soft TTL is above the hard TTL")
        }
        self.init(unchecked: name, softTTL: softTTL, hardTTL: hardTTL, validationWindow: validationWindow)
    }

    /// A class whose values are known to be valid (the built-in ones).
    private init(unchecked name: String, softTTL: Duration?, hardTTL: Duration?, validationWindow: Duration?) {
        self.name = name
        self.softTTL = softTTL
        self.hardTTL = hardTTL
        self.validationWindow = validationWindow
    }

    /// ``init(_:softTTL:hardTTL:validationWindow:)``, by its earlier name.
    @available(*, deprecated, renamed: "init(_:softTTL:hardTTL:validationWindow:)")
    public static func validated(
        _ name: String,
        softTTL: Duration? = nil,
        hardTTL: Duration? = nil,
        validationWindow: Duration? = nil
    ) throws(CachingClientError) -> FreshnessClass {
        try FreshnessClass(name, softTTL: softTTL, hardTTL: hardTTL, validationWindow: validationWindow)
    }

    /// HTTP freshness alone (RFC 9111), no TTLs: the default.
    public static let http = FreshnessClass(unchecked: "http", softTTL: nil, hardTTL: nil, validationWindow: nil)

    /// Answers an app acts on (a balance, a permission, stock): fresh for 5 s, and not to be acted
    /// on past 30 s without the origin's confirmation (validation window 30 s, no hard TTL).
    public static let critical = FreshnessClass(
        unchecked: "critical",
        softTTL: .seconds(5),
        hardTTL: nil,
        validationWindow: .seconds(30)
    )
    /// What a user is looking at (a feed, a task list): fresh for 60 s, refetched first after
    /// 1 hour.
    public static let interactive = FreshnessClass(
        unchecked: "interactive",
        softTTL: .seconds(60),
        hardTTL: .seconds(3_600),
        validationWindow: nil
    )
    /// Reference data that rarely changes (a country list, a catalogue): fresh for 1 day,
    /// refetched first after 30 days.
    public static let reference = FreshnessClass(
        unchecked: "reference",
        softTTL: .seconds(86_400),
        hardTTL: .seconds(30 * 86_400),
        validationWindow: nil
    )

    /// Whether the class sets any TTL or window, so that it, not HTTP alone, decides.
    var usesTTLs: Bool { softTTL != nil || hardTTL != nil || validationWindow != nil }

    /// The class's TTLs as the request engine reads them.
    var ttl: TTLRule { TTLRule(softTTL: softTTL, hardTTL: hardTTL, validationWindow: validationWindow) }

    public var description: String { name }
}
