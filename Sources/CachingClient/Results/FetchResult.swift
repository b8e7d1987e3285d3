// SPDX-License-Identifier: Apache-2.0

public import HTTPCaching
public import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An answer from ``CachingHTTPClient``: the response and body when there is one, where it came
/// from, how fresh it is, and the network's error when the network failed.
///
/// "Never cached" and "cached with an empty body" are different answers: the first has
/// ``freshness`` ``Freshness/missing`` and a nil ``body``; the second has a response and an empty
/// body.
public struct FetchResult: Sendable {
    /// Where an answer came from.
    public struct Source: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable { case cache, network, revalidated, none }
        private let kind: Kind

        /// The cache, without asking the origin.
        public static let cache = Source(kind: .cache)
        /// The origin's full response.
        public static let network = Source(kind: .network)
        /// The cache, after the origin confirmed it with a 304 (Not Modified).
        public static let revalidated = Source(kind: .revalidated)
        /// Nowhere: there is no answer (see ``FetchResult/error``).
        public static let none = Source(kind: .none)

        public var description: String { "\(kind)" }
    }

    /// The response head, nil when there is no answer. For an answer from the cache it carries a
    /// current `Age` field (RFC 9111 §5.1), set when the property is read.
    public var response: HTTPResponse? {
        get {
            guard var head, let age else { return head }
            head.headerFields[.age] = String(age)
            return head
        }
        set {
            parts.head = newValue
            age = nil
        }
    }
    /// For an answer from the cache, its current age in whole seconds (RFC 9111 §4.2.3); nil for
    /// the network's answers.
    public internal(set) var age: Int?
    /// The body, nil when there is no answer. Empty is a real (empty) answer.
    public var body: [UInt8]? {
        get { read({ $0.body }, { $0.body }) }
        set { parts.body = newValue }
    }
    /// Where the answer came from.
    public var source: Source
    /// How fresh the answer is.
    public var freshness: Freshness
    /// When the answer's response was received from the origin.
    public var fetchedAt: Date? {
        get { read({ $0.fetchedAt }, { $0.fetchedAt }) }
        set { parts.fetchedAt = newValue }
    }
    /// When the origin last confirmed the answer (a 200 or a 304).
    public var validatedAt: Date? {
        get { read({ $0.validatedAt }, { $0.validatedAt }) }
        set { parts.validatedAt = newValue }
    }
    /// When the answer stops being fresh: by the request's TTLs when given, else by HTTP
    /// freshness (RFC 9111 §4.2).
    public var expiresAt: Date?
    /// Whether this is the last answer for the request. A stale-while-revalidate read yields an
    /// answer from the cache that is not final, then the network's, which is.
    public var isFinal: Bool
    /// The network's failure when it was tried and failed, or why it was not tried; nil otherwise.
    /// A stale answer served because the network failed carries it too.
    public var error: CachingClientError? {
        get { read({ _ in nil }, { $0.error }) }
        set { if newValue != nil || isParts { parts.error = newValue } }
    }
    /// What went wrong with the cache while the answer was made, beside a good answer:
    /// ``CachingClientError/Code/closed`` (the cache was closed: nothing was read or stored) or
    /// ``CachingClientError/Code/storage`` (the answer could not be stored). Nil otherwise.
    public var cacheError: CachingClientError? {
        get { read({ _ in nil }, { $0.cacheError }) }
        set { if newValue != nil || isParts { parts.cacheError = newValue } }
    }
    /// The userInfo stored with the answer (`userInfo`, after the
    /// hooks and delegates): empty for an answer that was not stored.
    public internal(set) var userInfo: [String: UserInfoValue] {
        get { read({ $0.userInfo }, { $0.userInfo }) }
        set { parts.userInfo = newValue }
    }
    /// Whether the stored answer is whole (`isComplete`), a fact
    /// apart from freshness: an app marks a first page or a summary incomplete. True for answers
    /// that were not stored.
    public internal(set) var isComplete: Bool {
        get { read({ $0.isComplete }, { $0.isComplete }) }
        set { parts.isComplete = newValue }
    }

    /// What the answer is made of: a stored response that an answer from the cache reads in
    /// place (one reference, however many fields it has), or the parts of any other answer (or of
    /// a cache answer once one of them, or an error, is set).
    ///
    /// It is the result's one reference-counted field: a result is returned through every layer
    /// of a call, and with one reference to count it is copied and dropped inline. (With `Parts`
    /// inline, or the errors in a field of their own, every copy went through outlined value
    /// witnesses.)
    private var content: Content

    /// One reference in either case (see ``content``).
    private enum Content: Sendable {
        case stored(CachedResponse)
        case parts(PartsBox)
    }

    /// The parts, boxed: a setter replaces the box (setters are rare; results are copied often).
    private final class PartsBox: Sendable {
        let parts: Parts
        init(_ parts: Parts) { self.parts = parts }
    }

    private struct Parts: Sendable {
        var head: HTTPResponse?
        var body: [UInt8]?
        var fetchedAt: Date?
        var validatedAt: Date?
        var userInfo: [String: UserInfoValue]
        var isComplete: Bool
        var error: CachingClientError?
        var cacheError: CachingClientError?
        /// The body still arriving, for a streamed answer (``body`` is then empty).
        var bodyStream: StreamedBody.Reader? = nil
    }

    /// For an answer streamed from the network (``CachingHTTPClient/fetchStreaming(_:body:)``),
    /// its body as it arrives; ``body`` is then empty. Nil for every other answer.
    package var bodyStream: StreamedBody.Reader? {
        get { read({ _ in nil }, { $0.bodyStream }) }
        set { parts.bodyStream = newValue }
    }

    /// Whether the content is parts (not a stored response read in place).
    private var isParts: Bool {
        if case .parts = content { return true }
        return false
    }

    /// The head without `Age`.
    private var head: HTTPResponse? { read({ $0.response }, { $0.head }) }

    /// A field of the content, from the stored response or from the parts.
    private func read<Value>(_ stored: (CachedResponse) -> Value, _ parts: (Parts) -> Value) -> Value {
        switch content {
        case .stored(let response): stored(response)
        case .parts(let own): parts(own.parts)
        }
    }

    /// The parts, taken out of the stored response first when the answer reads one in place.
    private var parts: Parts {
        get {
            switch content {
            case .stored(let stored):
                Parts(
                    head: stored.response,
                    body: stored.body,
                    fetchedAt: stored.fetchedAt,
                    validatedAt: stored.validatedAt,
                    userInfo: stored.userInfo,
                    isComplete: stored.isComplete,
                    error: nil,
                    cacheError: nil
                )
            case .parts(let own): own.parts
            }
        }
        set { content = .parts(PartsBox(newValue)) }
    }

    /// Takes userInfo and completeness from the stored response the answer came from, or was
    /// stored as.
    mutating func describe(_ stored: CachedResponse) {
        var parts = parts
        parts.userInfo = stored.userInfo
        parts.isComplete = stored.isComplete
        self.parts = parts
    }

    /// Creates a result.
    public init(
        response: HTTPResponse?,
        body: [UInt8]?,
        source: Source,
        freshness: Freshness,
        fetchedAt: Date? = nil,
        validatedAt: Date? = nil,
        expiresAt: Date? = nil,
        isFinal: Bool = true,
        error: CachingClientError? = nil
    ) {
        self.content = .parts(
            PartsBox(
                Parts(
                    head: response,
                    body: body,
                    fetchedAt: fetchedAt,
                    validatedAt: validatedAt,
                    userInfo: [:],
                    isComplete: true,
                    error: error,
                    cacheError: nil
                )
            )
        )
        self.source = source
        self.freshness = freshness
        self.expiresAt = expiresAt
        self.isFinal = isFinal
    }

    /// An answer from the cache: `stored`'s head, body, times, userInfo and completeness, read in
    /// place, with its current `age`.
    init(
        cached stored: CachedResponse,
        age: Int,
        freshness: Freshness,
        expiresAt: Date,
        isFinal: Bool,
        error: CachingClientError?
    ) {
        self.content = .stored(stored)
        self.age = age
        self.source = .cache
        self.freshness = freshness
        self.expiresAt = expiresAt
        self.isFinal = isFinal
        if let error { self.error = error }
    }

    /// Whether there is an answer (a response and a body, possibly empty).
    public var hasAnswer: Bool { head != nil }

    /// The body of a good answer, or the error.
    ///
    /// A good answer is one with a 2xx status (a cached stale one counts, unless it is past its
    /// class's validation window: ``StaleReason/notValidated``). Without one this throws
    /// ``error``, else ``cacheError`` (a closed cache), else ``CachingClientError/Code/notCached``,
    /// and for a non-2xx
    /// response the error that classifies it.
    /// - Throws: ``CachingClientError``.
    public func requireBody() throws(CachingClientError) -> [UInt8] {
        guard let response = head, let body else {
            throw error ?? cacheError ?? CachingClientError(code: .notCached, message: "there is no answer")
        }
        if let failure = CachingClientError.classify(response) { throw failure }
        if freshness.staleReason == .notValidated {
            throw error ?? CachingClientError(code: .notValidated, message: "the answer is past its validation window")
        }
        return body
    }
}

/// How fresh an answer is.
public struct Freshness: Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable {
        case fresh
        case stale(StaleReason)
        case missing
    }
    private let kind: Kind

    /// Within its freshness lifetime (or the request's soft TTL), or just received from the origin.
    public static let fresh = Freshness(kind: .fresh)
    /// No answer at all.
    public static let missing = Freshness(kind: .missing)
    /// Past its freshness lifetime, served for `reason`.
    public static func stale(_ reason: StaleReason) -> Freshness { Freshness(kind: .stale(reason)) }

    /// Whether the answer is fresh.
    public var isFresh: Bool { kind == .fresh }
    /// Why a stale answer was served; nil for fresh and missing.
    public var staleReason: StaleReason? {
        if case .stale(let reason) = kind { return reason }
        return nil
    }

    public var description: String {
        switch kind {
        case .fresh: "fresh"
        case .missing: "missing"
        case .stale(let reason): "stale(\(reason))"
        }
    }
}

/// Why a stale answer was served.
public struct StaleReason: Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable { case expired, revalidationFailed, offline, markedStale, notValidated }
    private let kind: Kind

    /// It is past its freshness lifetime and the policy serves it anyway (cache-first, cache-only,
    /// stale-while-revalidate before the network answers, `max-stale`, `stale-while-revalidate`).
    public static let expired = StaleReason(kind: .expired)
    /// The origin was asked and answered with an error, or timed out: the stale answer stands in.
    public static let revalidationFailed = StaleReason(kind: .revalidationFailed)
    /// The origin could not be reached (no connection, or backing off after failures).
    public static let offline = StaleReason(kind: .offline)
    /// The app marked it stale (`markStale(tag:)`) and the origin has
    /// not confirmed it since.
    public static let markedStale = StaleReason(kind: .markedStale)
    /// Its class's ``FreshnessClass/validationWindow`` has passed and the origin could not confirm
    /// it: shown, not to be acted on (the result's error is ``CachingClientError/Code/notValidated``).
    public static let notValidated = StaleReason(kind: .notValidated)

    public var description: String { "\(kind)" }
}
