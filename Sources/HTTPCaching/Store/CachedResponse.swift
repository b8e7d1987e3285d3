// SPDX-License-Identifier: Apache-2.0

public import CacheTiers
public import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A response as the cache keeps it: head, body, the app's userInfo, where it may be stored, and
/// the times RFC 9111 needs to compute its age.
///
/// A value type with copy-on-write storage: copying one (out of the cache, into a decision or an
/// answer) costs one reference count, however many fields it has; the first change to a shared
/// copy copies the fields.
public struct CachedResponse: Hashable, Sendable {
    /// The fields, shared between copies until one changes.
    private final class Storage: Sendable {
        let response: HTTPResponse
        let body: [UInt8]
        let userInfo: [String: UserInfoValue]
        let storagePolicy: StoragePolicy
        let requestTime: Date
        let responseTime: Date
        let validatedAt: Date
        let varyingRequestFields: HTTPFields
        let fetchedAt: Date
        let tags: Set<String>
        let isComplete: Bool
        let isMarkedStale: Bool

        init(
            response: HTTPResponse,
            body: [UInt8],
            userInfo: [String: UserInfoValue],
            storagePolicy: StoragePolicy,
            requestTime: Date,
            responseTime: Date,
            validatedAt: Date,
            varyingRequestFields: HTTPFields,
            fetchedAt: Date,
            tags: Set<String>,
            isComplete: Bool,
            isMarkedStale: Bool
        ) {
            self.response = response
            self.body = body
            self.userInfo = userInfo
            self.storagePolicy = storagePolicy
            self.requestTime = requestTime
            self.responseTime = responseTime
            self.validatedAt = validatedAt
            self.varyingRequestFields = varyingRequestFields
            self.fetchedAt = fetchedAt
            self.tags = tags
            self.isComplete = isComplete
            self.isMarkedStale = isMarkedStale
        }

        /// A copy with one field changed.
        func with(
            response: HTTPResponse? = nil,
            body: [UInt8]? = nil,
            userInfo: [String: UserInfoValue]? = nil,
            storagePolicy: StoragePolicy? = nil,
            requestTime: Date? = nil,
            responseTime: Date? = nil,
            validatedAt: Date? = nil,
            varyingRequestFields: HTTPFields? = nil,
            fetchedAt: Date? = nil,
            tags: Set<String>? = nil,
            isComplete: Bool? = nil,
            isMarkedStale: Bool? = nil
        ) -> Storage {
            Storage(
                response: response ?? self.response,
                body: body ?? self.body,
                userInfo: userInfo ?? self.userInfo,
                storagePolicy: storagePolicy ?? self.storagePolicy,
                requestTime: requestTime ?? self.requestTime,
                responseTime: responseTime ?? self.responseTime,
                validatedAt: validatedAt ?? self.validatedAt,
                varyingRequestFields: varyingRequestFields ?? self.varyingRequestFields,
                fetchedAt: fetchedAt ?? self.fetchedAt,
                tags: tags ?? self.tags,
                isComplete: isComplete ?? self.isComplete,
                isMarkedStale: isMarkedStale ?? self.isMarkedStale
            )
        }
    }

    private var storage: Storage

    /// The response head: status and header fields, repeated fields kept in order.
    public var response: HTTPResponse {
        get { storage.response }
        set { storage = storage.with(response: newValue) }
    }
    /// The body. An empty body is a cached answer too, distinct from no answer.
    public var body: [UInt8] {
        get { storage.body }
        set { storage = storage.with(body: newValue) }
    }
    /// Values the app keeps with the response; they round-trip through the disk tier.
    public var userInfo: [String: UserInfoValue] {
        get { storage.userInfo }
        set { storage = storage.with(userInfo: newValue) }
    }
    /// Where the cache may keep it.
    public var storagePolicy: StoragePolicy {
        get { storage.storagePolicy }
        set { storage = storage.with(storagePolicy: newValue) }
    }
    /// When the request that produced the response was sent (RFC 9111 §4.2.3 `request_time`).
    public var requestTime: Date {
        get { storage.requestTime }
        set { storage = storage.with(requestTime: newValue) }
    }
    /// When the response was received (RFC 9111 §4.2.3 `response_time`).
    public var responseTime: Date {
        get { storage.responseTime }
        set { storage = storage.with(responseTime: newValue) }
    }
    /// When the origin last confirmed the response (a 200 or a 304); equals ``fetchedAt`` until
    /// a revalidation.
    public var validatedAt: Date {
        get { storage.validatedAt }
        set { storage = storage.with(validatedAt: newValue) }
    }
    /// When the body was fetched: the 200 that carried it. A 304 moves ``validatedAt`` and
    /// ``responseTime`` (the age is counted from the newest exchange) but not this.
    public var fetchedAt: Date {
        get { storage.fetchedAt }
        set { storage = storage.with(fetchedAt: newValue) }
    }
    /// Names that group this response with others, so that
    /// ``ResponseCache/invalidate(tag:)`` and ``ResponseCache/markStale(tag:)`` reach them all
    /// (an app tags a query and the entities it lists with the same name). Kept with the response
    /// on disk. Set them in a ``WillCache`` hook or a delegate.
    public var tags: Set<String> {
        get { storage.tags }
        set { storage = storage.with(tags: newValue) }
    }
    /// Whether the stored answer is whole. An app marks a partial answer (a first page, a summary
    /// without details) incomplete; results report it apart from freshness. Defaults to true.
    public var isComplete: Bool {
        get { storage.isComplete }
        set { storage = storage.with(isComplete: newValue) }
    }
    /// Whether ``ResponseCache/markStale(tag:)`` marked the response stale: it is kept (for
    /// offline use) but the next read revalidates it, whatever its freshness lifetime says. A new
    /// response or a 304 clears the mark.
    public var isMarkedStale: Bool {
        get { storage.isMarkedStale }
        set { storage = storage.with(isMarkedStale: newValue) }
    }
    /// The request header fields named by the response's `Vary`: what selects this variant
    /// (RFC 9111 §4.1). The cache sets them when it stores the response, after every hook: each
    /// field as the request sent it, except `Authorization`, `Proxy-Authorization` and `Cookie`,
    /// which are kept only as a keyed digest of their value (`keyed-digest-v1:…`), never the
    /// value.
    public var varyingRequestFields: HTTPFields {
        get { storage.varyingRequestFields }
        set { storage = storage.with(varyingRequestFields: newValue) }
    }

    /// Creates a cached response.
    public init(
        response: HTTPResponse,
        body: [UInt8],
        userInfo: [String: UserInfoValue] = [:],
        storagePolicy: StoragePolicy = .allowed,
        requestTime: Date,
        responseTime: Date,
        validatedAt: Date? = nil,
        varyingRequestFields: HTTPFields = [:],
        fetchedAt: Date? = nil,
        tags: Set<String> = [],
        isComplete: Bool = true,
        isMarkedStale: Bool = false
    ) {
        storage = Storage(
            response: response,
            body: body,
            userInfo: userInfo,
            storagePolicy: storagePolicy,
            requestTime: requestTime,
            responseTime: responseTime,
            validatedAt: validatedAt ?? responseTime,
            varyingRequestFields: varyingRequestFields,
            fetchedAt: fetchedAt ?? responseTime,
            tags: tags,
            isComplete: isComplete,
            isMarkedStale: isMarkedStale
        )
    }

    public static func == (lhs: CachedResponse, rhs: CachedResponse) -> Bool {
        if lhs.storage === rhs.storage { return true }
        return lhs.response == rhs.response && lhs.body == rhs.body && lhs.userInfo == rhs.userInfo
            && lhs.storagePolicy == rhs.storagePolicy && lhs.requestTime == rhs.requestTime
            && lhs.responseTime == rhs.responseTime && lhs.validatedAt == rhs.validatedAt
            && lhs.varyingRequestFields == rhs.varyingRequestFields && lhs.fetchedAt == rhs.fetchedAt
            && lhs.tags == rhs.tags && lhs.isComplete == rhs.isComplete && lhs.isMarkedStale == rhs.isMarkedStale
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(response)
        hasher.combine(body)
        hasher.combine(userInfo)
        hasher.combine(storagePolicy)
        hasher.combine(requestTime)
        hasher.combine(responseTime)
        hasher.combine(validatedAt)
        hasher.combine(varyingRequestFields)
        hasher.combine(fetchedAt)
        hasher.combine(tags)
        hasher.combine(isComplete)
        hasher.combine(isMarkedStale)
    }
}
