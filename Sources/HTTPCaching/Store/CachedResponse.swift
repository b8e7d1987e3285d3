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
public struct CachedResponse: Hashable, Sendable {
    /// The response head: status and header fields, repeated fields kept in order.
    public var response: HTTPResponse
    /// The body. An empty body is a cached answer too, distinct from no answer.
    public var body: [UInt8]
    /// Values the app keeps with the response; they round-trip through the disk tier.
    public var userInfo: [String: UserInfoValue]
    /// Where the cache may keep it.
    public var storagePolicy: StoragePolicy
    /// When the request that produced the response was sent (RFC 9111 §4.2.3 `request_time`).
    public var requestTime: Date
    /// When the response was received (RFC 9111 §4.2.3 `response_time`).
    public var responseTime: Date
    /// When the origin last confirmed the response (a 200 or a 304); equals ``responseTime`` until
    /// a revalidation.
    public var validatedAt: Date
    /// The request header fields named by the response's `Vary`, as the request sent them: what
    /// selects this variant (RFC 9111 §4.1).
    public var varyingRequestFields: HTTPFields

    /// Creates a cached response.
    public init(
        response: HTTPResponse,
        body: [UInt8],
        userInfo: [String: UserInfoValue] = [:],
        storagePolicy: StoragePolicy = .allowed,
        requestTime: Date,
        responseTime: Date,
        validatedAt: Date? = nil,
        varyingRequestFields: HTTPFields = [:]
    ) {
        self.response = response
        self.body = body
        self.userInfo = userInfo
        self.storagePolicy = storagePolicy
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.validatedAt = validatedAt ?? responseTime
        self.varyingRequestFields = varyingRequestFields
    }
}
