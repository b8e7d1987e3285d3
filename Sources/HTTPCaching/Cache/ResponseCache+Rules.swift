// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension ResponseCache {
    /// How to answer `request` from this cache at `now` (RFC 9111 §4): the stored responses for
    /// its URL that match its varying fields, judged by ``CacheRules/decide(_:stored:now:)``.
    public func decision(for request: HTTPRequest, now: Date) async -> CacheDecision {
        rules.decide(request, stored: await storedResponses(for: request), now: now)
    }

    /// Applies a 304 (Not Modified) answer to a revalidation of `request` (RFC 9111 §4.3.4): the
    /// stored responses it selects get its header fields and the exchange's times, and are stored
    /// again.
    /// - Returns: the freshened response to answer with, or nil when the 304 selects nothing
    ///   stored (then the request must be sent again without conditions).
    /// - Throws: the disk tier's write error.
    public func freshen(
        with notModified: HTTPResponse,
        for request: HTTPRequest,
        requestTime: Date,
        responseTime: Date
    ) async throws -> CachedResponse? {
        let stored = await storedResponses(for: request)
        var answer: CachedResponse?
        for index in CacheRules.selectForFreshening(stored, notModified: notModified) {
            let updated = CacheRules.freshened(
                stored[index],
                with: notModified,
                requestTime: requestTime,
                responseTime: responseTime
            )
            var origin = request
            for field in updated.varyingRequestFields { origin.headerFields[values: field.name] = [] }
            origin.headerFields.append(contentsOf: updated.varyingRequestFields)
            try await storeCachedResponse(updated, for: origin)
            answer = answer ?? updated
        }
        return answer
    }

    /// Removes what `response` to the unsafe `request` invalidates (RFC 9111 §4.4): the target
    /// URI and same-origin `Location` / `Content-Location`.
    /// - Returns: how many targets were invalidated.
    /// - Throws: the disk tier's error.
    @discardableResult
    public func invalidate(after response: HTTPResponse, to request: HTTPRequest) async throws -> Int {
        let targets = CacheRules.invalidatedTargets(of: request, response: response)
        for target in targets { try await removeCachedResponse(for: target) }
        return targets.count
    }
}
